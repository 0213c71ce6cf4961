# Sourced by tests/real/run.sh: allocator wrappers (dmprof(1), Allocator
# wrappers), under dmprof record.
#   - a C program (src/wrappers.c) allocating through GLib (g_new,
#     g_strdup, g_ptr_array_add), through an xmalloc of its own (a
#     built-in family) and through a pool_take of its own: each caller
#     owns its exact bytes, as the program counted them; pool_take only
#     with --alloc-fn; -v names what was passed over and by which
#     pattern; --owner pprof gives xmalloc the bytes, pprof's flat; the
#     functions' bytes add up to the same under both rules;
#   - Debian's redis-server, filled by redis-benchmark (200,000 SETs of
#     200-byte values over 100,000 random keys): its own functions (sds,
#     object, dict) own the bytes, no z*alloc* frame among the owners,
#     and the totals are pprof's.
: "${tmp:?tests/real/run.sh sources this file, in its scratch directory}"
mkdir -p wrap && cd wrap || exit 1

# top --json's flat bytes of NAME in DUMP, with more options (0: absent).
wrap_flat() { # DUMP NAME [OPTIONS...]
	d=$1 n=$2
	shift 2
	"$bin" top -b --json -n 100000 "$@" "$d" 2>/dev/null |
		sed -n "s/.*\"name\": \"$n\",.*\"flat\": \\([0-9]*\\),.*/\\1/p" |
		head -1
}
# The sum of every function's flat bytes, and the functions with any.
wrap_sum() { # DUMP [OPTIONS...]
	d=$1
	shift
	"$bin" top -b --json -n 100000 "$@" "$d" 2>/dev/null |
		sed -n '/"functions"/,/^  \]/s/.*"flat": \([0-9]*\),.*/\1/p' |
		awk '{ s += $1 } END { print s + 0 }'
}
# The first N functions that own bytes (flat), largest first.
wrap_owners() { # DUMP N [OPTIONS...]
	d=$1 n=$2
	shift 2
	"$bin" top --json -n "$n" "$@" "$d" 2>/dev/null |
		sed -n '/"functions"/,/^  \]/s/.*"name": "\([^"]*\)".*"flat": \([1-9][0-9]*\),.*/\1/p'
}

if ! pkg-config --exists glib-2.0; then
	bad "wrappers: GLib's headers (libglib2.0-dev) are not installed (make check installs them)"
elif ! gcc -g -O1 -fno-inline "$src/wrappers.c" -o wrappers \
	$(pkg-config --cflags --libs glib-2.0); then
	bad "wrappers: gcc failed"
else
	"$bin" record -o "$tmp/wrap/rec/" -- ./wrappers "$tmp/wrap/count" \
		2>/dev/null
	d=$(grep -l '^Reason: main returned$' rec/*.heap 2>/dev/null)
	if [ -z "$d" ]; then
		bad "wrappers: no dump when main returned"
	else
		for fn in load_records copy_names parse_args; do
			want=$(awk -v f=$fn '$1 == f { print $2 }' count)
			got=$(wrap_flat "$d" $fn)
			[ -n "$want" ] && [ "$got" = "$want" ] && ok ||
				bad "wrappers: $fn owns '$got', the program counted '$want'"
		done
		want=$(awk '$1 == "make_requests" { print $2 }' count)
		got=$(wrap_flat "$d" make_requests --alloc-fn 'pool_t[a]ke')
		[ "$got" = "$want" ] && ok ||
			bad "wrappers: with --alloc-fn, make_requests owns '$got', not '$want'"
		got=$(wrap_flat "$d" pool_take)
		[ "$got" = "$want" ] && ok ||
			bad "wrappers: without --alloc-fn, pool_take owns '$got', not '$want'"
		# GLib's containers: the caller owns at least the 1000 pointers.
		got=$(wrap_flat "$d" collect)
		[ "${got:-0}" -ge 8000 ] && ok ||
			bad "wrappers: collect owns '$got', not the array's 8000+"
		for fn in xmalloc g_strdup g_ptr_array_add g_malloc_n; do
			got=$(wrap_flat "$d" $fn --alloc-fn pool_take)
			[ "${got:-0}" = 0 ] && ok ||
				bad "wrappers: the wrapper $fn owns $got bytes"
		done
		"$bin" top -v --alloc-fn 'pool_t[a]ke' "$d" 2>&1 >/dev/null |
			grep 'passed over\|  [a-z_]*: [0-9]* bytes' >passed
		grep -q "^dmprof:   xmalloc: 15800 bytes in 2 stacks, by built-in xmalloc '" passed &&
			grep -q "^dmprof:   pool_take: 12800 bytes in 1 stack, by --alloc-fn 'pool_t\[a\]ke'$" passed &&
			grep -q "^dmprof:   g_strdup: 790 bytes in 1 stack, by built-in glib '" passed &&
			ok || bad "wrappers: -v does not say what it passed over: $(cat passed)"
		# pprof's rule: the first frame past malloc, wrappers or not.
		got=$(wrap_flat "$d" xmalloc --owner pprof)
		[ "$got" = 15800 ] && ok ||
			bad "wrappers: --owner pprof gives xmalloc '$got', not 15800"
		a=$(wrap_sum "$d" --alloc-fn pool_take)
		b=$(wrap_sum "$d" --owner pprof)
		[ "$a" -gt 0 ] && [ "$a" = "$b" ] && ok ||
			bad "wrappers: the functions' bytes add up to $a, and $b under pprof's rule"
	fi
fi

if ! command -v redis-server >/dev/null 2>&1 ||
	! command -v redis-benchmark >/dev/null 2>&1; then
	bad "wrappers: redis-server or redis-benchmark is not installed (make check installs them)"
else
	port=$((20000 + $$ % 20000))
	"$bin" record -o "$tmp/wrap/redis/" -- redis-server --port $port \
		--save '' --appendonly no --bind 127.0.0.1 >redis.log 2>&1 &
	rec=$!
	redis_wait $port
	# (Bounded in time too: against a server that died under the
	# recorder, redis-benchmark retries for ever.)
	timeout 120 redis-benchmark -p $port -n 200000 -r 100000 -d 200 -t set -q \
		>bench.out 2>&1 || bad "wrappers: redis-benchmark failed: $(tail -2 bench.out)"
	timeout 30 redis-cli -p $port shutdown nosave >/dev/null 2>&1
	wait $rec
	last=$(ls redis/*.heap 2>/dev/null | sort | tail -1)
	peak=$("$bin" top --json "$last" 2>/dev/null |
		sed -n 's/.*"run": .*"peak": { "dump": "\([^"]*\)".*/\1/p')
	if [ -z "$peak" ]; then
		bad "wrappers: redis under dmprof record left no run with a peak: $(tail -3 redis.log)"
	else
		wrap_owners "$peak" 8 >owners
		grep -q '^_\{0,1\}sdsnewlen$' owners && grep -q '^dictAddRaw$' owners &&
			grep -q '^createObject$\|^createStringObject$' owners && ok ||
			bad "wrappers: redis's owners are not sds, dict and object's: $(tr '\n' ' ' <owners)"
		wrap_owners "$peak" 100000 | grep -q '^z[a-z_]*alloc' &&
			bad "wrappers: a z*alloc* frame owns bytes in redis: $(wrap_owners "$peak" 100000 | grep '^z[a-z_]*alloc' | tr '\n' ' ')" || ok
		first=$(head -1 owners)
		got=$(wrap_flat "$peak" "$first")
		[ "${got:-0}" -gt 10000000 ] && ok ||
			bad "wrappers: redis's first owner $first holds $got bytes, not the 200-byte values' 10+ MB"
		a=$(wrap_sum "$peak")
		b=$(wrap_sum "$peak" --owner pprof)
		[ "$a" -gt 0 ] && [ "$a" = "$b" ] && ok ||
			bad "wrappers: redis's functions add up to $a, and $b under pprof's rule"
		wrap_owners "$peak" 3 --owner pprof | grep -q '^zmalloc' && ok ||
			bad "wrappers: pprof's rule does not give redis's bytes to zmalloc*"
	fi
fi
cd "$tmp" || exit 1
