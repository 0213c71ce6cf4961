#!/bin/sh
# Classification on every core (classify_snapshot), reading the next
# deep dump while this one is classified (run_reader_load), and printing
# stacktrace's lines while their frames are named, change no output:
# each command gives, byte for byte, what it gives with one thread
# (DMPROF_THREADS=1), on inputs with enough new buckets per snapshot for
# the helper threads to start: a gperftools profile of 30,000 stacks over
# libc's functions (the linux policy), and a deep run of 3 snapshots over
# 60,000 buckets (l2 and linux).  Built with SANITIZE=thread, make check
# runs this suite for ThreadSanitizer's verdict on the same runs.
# And what one thread gives must be what is expected: the SHA-256 of
# each command's stdout, status and stderr, in tests/threads/expected
# (the outputs are megabytes; the inputs are made from Debian 12's
# libc.so.6, as the other suites assume), so that one thread and many
# going wrong alike is seen too.  THREADS_UPDATE=1 rewrites it: review
# the outputs first.
# Usage: tests/threads/run.sh DMPROF_BINARY
set -u
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
top=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dmprof-threads.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
export DMPROF_POLICY_PATH="$top/policies" XDG_CACHE_HOME="$tmp/cache" LC_ALL=C
export LSAN_OPTIONS="${LSAN_OPTIONS:-suppressions=$top/tests/lsan.supp:print_suppressions=0}"
export TSAN_OPTIONS="${TSAN_OPTIONS:-halt_on_error=1}"
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { echo "FAIL $*"; fail=$((fail + 1)); }
cd "$tmp" || exit 1

libc=$(ls /usr/lib/*/libc.so.6 /lib/*/libc.so.6 2>/dev/null | head -1)
gcc -O2 -o gen_gperf "$top/tests/bench/gen_gperf.c" &&
	gcc -O2 -o gen_deep "$top/tests/bench/gen_deep.c" || exit 1
sh "$top/tests/bench/gen_symbolize.sh" "$libc" 20000 lib >/dev/null || exit 1
./gen_gperf 30000 lib/frames.txt lib/maps.txt >g.0001.heap || exit 1
# Its binary gone: naming its frames warns, after what reading it warns
# (its header counts more bytes than its lines hold), on any number of
# cores.
sed '1s/^\(heap profile: *[0-9]*: *[0-9]*\)/\19/
	s|/[^ ]*/libc\.so\.6$|/nonexistent/libc.so.6|' g.0001.heap >gone.0001.heap
# A run of two whose second dump's stacks are all new, each a frame
# longer, over 2,000 new frames: its buckets are classified on every core
# too, the frames' entries of the clean scans filled before (not while
# the helpers read them: ThreadSanitizer saw that once).
# Frames of two binaries, libc's and libstdc++'s, their lines in turn:
# named on two cores at once (bfd_code_batch), a binary each; and the
# second gone, its warning where naming one by one says it.
libstdcxx=$(ls /usr/lib/*/libstdc++.so.6 /lib/*/libstdc++.so.6 2>/dev/null | head -1)
sh "$top/tests/bench/gen_symbolize.sh" "$libstdcxx" 6000 lib2 0x7f2000000000 \
	>/dev/null || exit 1
grep ' @ 0x' lib/sym.0001.heap | head -6000 >two.a
grep ' @ 0x' lib2/sym.0001.heap >two.b
{
	cat two.a two.b | awk '{ n += $1; b += $2 }
		END { printf "heap profile: %d: %d [%d: %d] @ heapprofile\n", n, b, n, b }'
	paste -d '\n' two.a two.b | grep .
	printf '\nMAPPED_LIBRARIES:\n'
	cat lib/maps.txt lib2/maps.txt
} >two.0001.heap
sed 's|/[^ ]*/libstdc++\.so\.6$|/nonexistent/libstdc++.so.6|' two.0001.heap \
	>twogone.0001.heap
mkdir -p ser && cp g.0001.heap ser/s.0001.heap || exit 1
awk '/MAPPED_LIBRARIES/ { maps = 1 }
	NR > 1 && !maps && /@/ {
		printf "%s 0x7f00001%05x\n", $0, (NR % 2000) * 16
		next
	}
	{ print }' g.0001.heap >ser/s.0002.heap || exit 1
./gen_deep deep 3 30000 60000 >/dev/null || exit 1
# A deep run whose later dumps warn and fail: what reading a dump ahead
# (run_reader_load) says must come where reading it then would say it.
./gen_deep warn 4 3000 6000 >/dev/null || exit 1
sed -i '/^ *nonprofiled-stack /d' warn/deep.01234.0002.heap
echo "       100        100      1      0 @ 99999999" >>warn/deep.01234.0003.heap
printf '       100        100      1' >>warn/deep.01234.0003.heap
cp -r warn broken
sed -i 's/^STACKTRACES:/STACKTRACES:\ngarbage here/' broken/deep.01234.0002.heap
# (Made here, now: dated, for outputs that say when, pprof's.)
t=1700000000
for f in g.0001.heap gone.0001.heap two.0001.heap twogone.0001.heap ser/*.heap deep/*.heap warn/*.heap \
	broken/*.heap; do
	touch -d @$t "$f"
	t=$((t + 10))
done

# same NAME COMMAND...: its output and status with 1 thread, then 2 and 4
# (2 only under ThreadSanitizer, which is slow).
case $bin in */tsan/*) counts=2 ;; *) counts="2 4" ;; esac
expected=$top/tests/threads/expected
[ "${THREADS_UPDATE:-}" = 1 ] && : >"$expected"
same() {
	name=$1
	shift
	DMPROF_THREADS=1 "$bin" "$@" >one.out 2>one.err
	echo $? >>one.out
	sum=$(cat one.out one.err | sha256sum | cut -d' ' -f1)
	if [ "${THREADS_UPDATE:-}" = 1 ]; then
		echo "$name $sum" >>"$expected"
	elif [ "$(awk -v n="$name" '$1 == n { print $2 }' "$expected")" = "$sum" ]; then
		ok
	else
		bad "$name: one thread's output is not the one expected (tests/threads/expected):"
		tail -3 one.err
	fi
	for n in $counts; do
		DMPROF_THREADS=$n "$bin" "$@" >many.out 2>many.err
		echo $? >>many.out
		if cmp -s one.out many.out && cmp -s one.err many.err; then
			ok
		else
			bad "$name: $n threads differ from one:"
			diff one.out many.out | head -5
			diff one.err many.err | head -5
		fi
		if grep -q 'ThreadSanitizer' many.err; then
			bad "$name: ThreadSanitizer with $n threads:"
			grep -A20 'WARNING: ThreadSanitizer' many.err | head -30
		fi
	done
}

same gperf-csv csv -b --no-symbol-cache g.0001.heap
same gperf-csv-gone csv -b --no-symbol-cache gone.0001.heap
same gperf-expand-gone expand -vv gone.0001.heap linux malloc-app 2
same gperf-series-csv csv -b --no-symbol-cache ser/s.0001.heap
same gperf-two-csv csv -b --no-symbol-cache two.0001.heap
same gperf-two-stacktrace stacktrace -v --no-symbol-cache two.0001.heap
same gperf-two-stacktrace-cached stacktrace two.0001.heap
same gperf-two-gone stacktrace -v --no-symbol-cache twogone.0001.heap
same gperf-top top -b -n 30 g.0001.heap
same gperf-folded folded g.0001.heap
same gperf-pprof pprof --proto g.0001.heap
# (Printed while the names are made: cold, then from the cache.)
same gperf-stacktrace stacktrace --no-symbol-cache g.0001.heap
same gperf-stacktrace-cached stacktrace g.0001.heap
same deep-stacktrace stacktrace deep/deep.01234.0002.heap
same deep-csv-l2 csv -b -p l2,linux deep/deep.01234.0001.heap
same deep-diff diff -b -p l2 deep/deep.01234.0001.heap
same deep-expand expand deep/deep.01234.0003.heap l2 tc-webkit-catch-all 2
same deep-warnings csv -b -p l2 warn/deep.01234.0001.heap
same deep-broken csv -b -p l2 broken/deep.01234.0001.heap
same deep-broken-diff diff -b -p l2 broken/deep.01234.0001.heap
echo "threads: $pass passed, $fail failed"
[ $fail = 0 ]
