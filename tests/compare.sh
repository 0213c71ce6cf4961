#!/bin/sh
# Do two dmprof binaries print the same?  For a change that must not
# change any output (a refactoring, a speed-up): every command line below
# is run with OLD and with NEW on the same inputs, and stdout, stderr,
# the exit status and any file written are compared byte for byte (a
# gzipped stdout by what it holds).
#
# Usage: tests/compare.sh OLD_DMPROF NEW_DMPROF [CORPUS_DIR]
#
# The inputs are made once into CORPUS_DIR (default
# ${TMPDIR:-/tmp}/dmprof-corpus) and kept there for the next comparison:
# the samples; the original's test data (../shared, when present); a
# tcmalloc series of python3; a `dmprof record` run of python3 with
# children (recorded by OLD); the C++ server of tests/real under tcmalloc
# and under record; jemalloc, Go pprof and DHAT profiles where their tools
# are installed; a process nobody prepared (tests/real/src/heapobjs.cc:
# classes, layouts, leaks): a run of live snapshots of it (taken by OLD),
# the core gdb's gcore writes of it and the one the kernel writes when it
# crashes (where core_pattern names a file).  What cannot be made here is
# skipped, saying so.
# Prints the count of command lines compared; exits 1 on any difference.

set -u
[ $# -ge 2 ] || { echo "usage: $0 OLD_DMPROF NEW_DMPROF [CORPUS_DIR]" >&2; exit 2; }
abs() { (cd "$(dirname "$1")" && printf '%s/%s\n' "$(pwd)" "$(basename "$1")"); }
old=$(abs "$1") new=$(abs "$2")
top=$(cd "$(dirname "$0")/.." && pwd)
c=${3:-${TMPDIR:-/tmp}/dmprof-corpus}
shared=$top/../shared/compat/chromium
export LC_ALL=C TZ=UTC
mkdir -p "$c" && c=$(cd "$c" && pwd)

# ---- the corpus ----
work='d = {}
for i in range(200000):
    d[i] = str(i) * 8
l = [bytearray(100) for _ in range(20000)]
'
tcmalloc=$(ls /usr/lib/x86_64-linux-gnu/libtcmalloc.so.4 2>/dev/null)
make_corpus() {
	mkdir -p "$c/samples" && cp -R "$top"/samples/cachesrv.* "$c/samples/"
	if [ -d "$shared/tests/data" ]; then
		cp -R "$shared/tests/data" "$c/compat" && chmod -R u+w "$c/compat"
		touch -d @1700000000 "$c/compat/heap.01234.0001.heap"
		touch -d @1700000010 "$c/compat/heap.01234.0002.heap"
	fi
	if [ -n "$tcmalloc" ]; then
		mkdir -p "$c/tc"
		LD_PRELOAD=$tcmalloc HEAPPROFILE=$c/tc/py \
			HEAP_PROFILE_ALLOCATION_INTERVAL=4000000 \
			python3 -c "$work" 2>/dev/null
	fi
	mkdir -p "$c/rec"
	"$old" record -o "$c/rec/py" -i 0.2 -- python3 -c "$work
import subprocess
for k in range(3):
    subprocess.run(['python3', '-c', 'x = [str(i) for i in range(50000)]'])
" >/dev/null 2>&1
	mkdir -p "$c/cxx"
	(cd "$c/cxx" && src=$top/tests/real/src bin=$old \
		tcmalloc=$tcmalloc libgcc=$(gcc -print-libgcc-file-name) &&
		. "$top/tests/real/cxxserver-build.sh" 2>/dev/null &&
		cxxserver_build >/dev/null 2>&1 &&
		{ [ -z "$tcmalloc" ] || cxxserver_tcmalloc "$c/cxx/tc" >/dev/null 2>&1; } &&
		cxxserver_record "$c/cxx/rec" >/dev/null 2>&1) ||
		echo "compare: the C++ server could not be built; left out"
	je=$(ls /usr/lib/x86_64-linux-gnu/libjemalloc.so.2 2>/dev/null)
	if [ -n "$je" ]; then
		mkdir -p "$c/je"
		LD_PRELOAD=$je MALLOC_CONF=prof:true,prof_final:true,lg_prof_sample:12,lg_prof_interval:22,prof_prefix:"$c/je/p" \
			python3 -c "$work" 2>/dev/null
	fi
	if command -v valgrind >/dev/null 2>&1; then
		mkdir -p "$c/dhat" && (cd "$c/dhat" &&
			gcc -g -o dhat_prog "$top/tests/real/src/dhat_prog.c" &&
			valgrind --tool=dhat --dhat-out-file=dhat.out \
				./dhat_prog) >/dev/null 2>&1 ||
			echo "compare: no DHAT profile could be made; left out"
	fi
	if command -v go >/dev/null 2>&1; then
		mkdir -p "$c/go" && (cd "$c/go" &&
			go build -o growheap "$top/tests/real/src/growheap.go" &&
			./growheap g >/dev/null) >/dev/null 2>&1 ||
			echo "compare: the Go program could not be built; left out"
	fi
	: >"$c/.made"
}
[ -f "$c/.made" ] || make_corpus

# A process nobody prepared: snapshots of it live, its cores.  (Made apart
# from the rest: a corpus made before these were compared gets them.)
objs_start() { # DIR
	(cd "$1" && exec ./heapobjs known) >"$1/ready" 2>&1 &
	objs_pid=$!
	for _ in $(seq 300); do
		grep -q '^ready$' "$1/ready" 2>/dev/null && return 0
		sleep 0.1
	done
	echo "compare: heapobjs did not get ready; left out"
	kill -9 $objs_pid 2>/dev/null
	return 1
}
make_objs() {
	o=$c/objs
	mkdir -p "$o" && g++ -g -O1 -pthread "$top/tests/real/src/heapobjs.cc" \
		-o "$o/heapobjs" 2>/dev/null ||
		{ echo "compare: heapobjs does not build; left out"; return; }
	if objs_start "$o"; then
		"$old" snapshot -o "$o/live/" -n 3 -i 0.2 $objs_pid >/dev/null 2>&1
		if command -v gcore >/dev/null 2>&1; then
			gcore -o "$o/gcore" $objs_pid >/dev/null 2>&1 &&
				mv "$o/gcore.$objs_pid" "$o/heapobjs.gcore"
		fi
		kill -9 $objs_pid
		wait $objs_pid 2>/dev/null
	fi
	# The kernel's: killed by SIGSEGV, where core_pattern says "core".
	if [ "$(cat /proc/sys/kernel/core_pattern)" = core ]; then
		(cd "$o" && ulimit -c unlimited && exec ./heapobjs kknown) \
			>"$o/kready" 2>&1 &
		kpid=$!
		for _ in $(seq 300); do
			grep -q '^ready$' "$o/kready" 2>/dev/null && break
			sleep 0.1
		done
		kill -SEGV $kpid
		wait $kpid 2>/dev/null
		kc=$(ls "$o/core" "$o/core.$kpid" 2>/dev/null | head -1)
		[ -n "$kc" ] && mv "$kc" "$o/heapobjs.kcore"
	fi
	[ -f "$o/heapobjs.kcore" ] ||
		echo "compare: the kernel wrote no core of heapobjs; left out"
	: >"$o/.made"
}
[ -f "$c/objs/.made" ] || make_objs

# ---- the command lines ----
n=0 diffs=0 ok=0
# run DIR ARGS...: one command line, in DIR, with both binaries; "@OUT"
# in ARGS names a file the command writes, compared too.
run() {
	dir=$1
	shift
	n=$((n + 1))
	for which in old new; do
		eval "exe=\$$which"
		o=$c/.out.$which
		rm -rf "$o" && mkdir -p "$o"
		set_args=$(printf '%s\n' "$@" | sed "s|@OUT|$o/file|")
		(cd "$dir" && IFS='
' && XDG_CACHE_HOME=$c/.cache-$which "$exe" $set_args \
			>"$o/stdout" 2>"$o/stderr"; echo $? >"$o/status")
		# (The binary's own path is not output.)
		sed -i "s|$exe|DMPROF|g; s|$o/|OUT/|g" "$o/stderr"
		# (A gzip stream is compared by what it holds: compressors
		# differ, and may change.)
		if [ "$(head -c2 "$o/stdout" | od -An -tx1 | tr -d ' ')" = 1f8b ]; then
			gzip -dc <"$o/stdout" >"$o/gunzipped" && : >"$o/stdout"
		fi
		# (Each binary reads the policies beside it, and names them.)
		sed -i "s|$(dirname "$exe")/policies|BINDIR/policies|g" "$o/stdout"
		[ "$(cat "$o/status")" = 0 ] && [ $which = new ] && ok=$((ok + 1))
	done
	if ! diff -r "$c/.out.old" "$c/.out.new" >"$c/.diff" 2>&1; then
		diffs=$((diffs + 1))
		echo "DIFFERS (in $dir): dmprof $*"
		head -20 "$c/.diff" | sed 's/^/    /'
	fi
}

# The first dump in DIR, and the last of its series.
first() { ls "$1" | grep -E '\.heap$' | head -1; }
last() { ls "$1" | grep -F "${2%.*.heap}." | grep -E '\.heap$' | tail -1; }

# Every command on one series: DIR, its first dump, its last.
series() {
	dir=$1 a=$2 b=$3
	shift 3
	for p in l0 l1 l2 linux "$@"; do
		run "$dir" csv -p "$p" "$a"
		run "$dir" json -p "$p" "$a"
		run "$dir" list -p "$p" "$b"
		run "$dir" top -p "$p" "$b"
		run "$dir" top -p "$p" --json "$b"
	done
	run "$dir" csv --bytes -p l2 "$a"
	run "$dir" top --owner=pprof -n 20 "$b"
	run "$dir" top --json --owner=pprof "$b"
	run "$dir" top -c malloc-app "$b"
	run "$dir" diff "$a" "$b"
	run "$dir" diff --json "$a" "$b"
	run "$dir" diff -n 5 --owner=pprof "$a" "$b"
	run "$dir" diff "$a"
	run "$dir" diff --json "$a"
	run "$dir" folded "$b"
	run "$dir" folded -p l2 "$b"
	run "$dir" expand -p l2 "$b" mmap-v8-heap 1
	run "$dir" expand -p linux "$b" malloc-app 0
	run "$dir" pprof -p l1 "$b"
	run "$dir" pprof --proto "$b"
	run "$dir" expand --original -p l2 "$b" mmap-v8-heap 1
	run "$dir" html -o @OUT "$a"
	run "$dir" html -p linux,l2 -o @OUT "$a"
	run "$dir" buckets "$b"
	run "$dir" stacktrace "$b"
	run "$dir" map -p l2 "$b"
	run "$dir" policy check "$b"
}

run "$c" policy list
run "$c" policy show linux
run "$c" policy show l2
run "$c" policy convert -p l2
run "$c" top
run "$c" top "$c/nonexistent.heap"
run "$c" diff "$c/samples/cachesrv.04242.0001.heap"
series "$c/samples" cachesrv.04242.0001.heap cachesrv.04242.0003.heap
[ -d "$c/compat" ] && series "$c/compat" heap.01234.0001.heap \
	heap.01234.0002.heap t0 sourcefile
for d in tc rec cxx/tc cxx/rec je; do
	[ -d "$c/$d" ] || { echo "compare: no $d series; left out"; continue; }
	a=$(first "$c/$d") && b=$(last "$c/$d" "$a")
	[ -n "$a" ] && series "$c/$d" "$a" "$b"
done
# The live snapshots, as a run; each core, as a run of one, and written as
# a snapshot.
if [ -d "$c/objs/live" ]; then
	a=$(ls "$c/objs/live" | head -1) && b=$(ls "$c/objs/live" | tail -1)
	series "$c/objs/live" "$a" "$b"
else
	echo "compare: no live snapshots; left out"
fi
for k in gcore kcore; do
	f=$c/objs/heapobjs.$k
	[ -f "$f" ] || { echo "compare: no $k core; left out"; continue; }
	series "$c/objs" "$f" "$f"
	run "$c/objs" snapshot -o @OUT "$f"
	run "$c/objs" expand "$f" malloc-leaked
	run "$c/objs" top -n 40 --json "$f"
done
for f in "$c"/go/g.0* "$c/dhat/dhat.out"; do
	[ -f "$f" ] || continue
	run "$(dirname "$f")" top "$f"
	run "$(dirname "$f")" top --json "$f"
	run "$(dirname "$f")" csv "$f"
	run "$(dirname "$f")" folded "$f"
	run "$(dirname "$f")" html -o @OUT "$f"
done
echo "compare: $n command lines compared ($ok exit 0), $diffs differ"
[ "$diffs" = 0 ]
