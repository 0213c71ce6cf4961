#!/bin/sh
# Hostile inputs, generated here (nothing large is committed): deep
# nesting, a stack of a million frames, 10 MB lines, NUL bytes, numbers at
# and past 2^64, a dump that claims 10^12 buckets, and inputs fuzzing
# found.  Each command must end within its time limit, with status 0 or 1
# (and a message on stderr for 1), within its memory limit, and never by a
# signal.
# Usage: tests/hostile/run.sh DMPROF_BINARY
set -u
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
top=$(cd "$(dirname "$0")/../.." && pwd)
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dmprof-hostile.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
export DMPROF_POLICY_PATH="$top/policies" XDG_CACHE_HOME="$tmp/cache" LC_ALL=C
export LSAN_OPTIONS="${LSAN_OPTIONS:-suppressions=$top/tests/lsan.supp:print_suppressions=0}"
pass=0 fail=0
# Sanitizer builds need more memory and time.
case $bin in */asan/*) mem_mb=3072 limit=240 ;; *) mem_mb=1024 limit=60 ;; esac

# check NAME WANT COMMAND...: WANT is the exit status expected (0 or 1),
# or "any" for 0 or 1.
check() {
	name=$1 want=$2
	shift 2
	/usr/bin/time -f '%M' -o "$tmp/rss" timeout -s KILL $limit "$@" \
		>"$tmp/out" 2>"$tmp/err"
	rc=$?
	rss=$(tail -1 "$tmp/rss" 2>/dev/null)
	case $rc in
	0 | 1) ;;
	*)
		echo "FAIL $name: exit status $rc (killed, timed out or crashed)"
		sed 's/^/    /' "$tmp/err" | head -5
		fail=$((fail + 1))
		return ;;
	esac
	if [ "$want" != any ] && [ "$rc" != "$want" ]; then
		echo "FAIL $name: exit status $rc, expected $want"
		sed 's/^/    /' "$tmp/err" | head -5
		fail=$((fail + 1))
	elif [ $rc = 1 ] && ! grep -q '^dmprof: ' "$tmp/err"; then
		echo "FAIL $name: failed without saying why"
		fail=$((fail + 1))
	elif [ -n "$rss" ] && [ "$rss" -gt $((mem_mb * 1024)) ]; then
		echo "FAIL $name: peak RSS ${rss} KB over $mem_mb MB"
		fail=$((fail + 1))
	else
		pass=$((pass + 1))
	fi
}

cd "$tmp" || exit 1

# A small valid run to vary: heap, buckets, maps.
run() { # PREFIX STACK_LINES BUCKETS_LINES
	{
		printf 'heap profile: DUMP_DEEP_6\nMETA:\nTime: 1700000000\n'
		printf 'MMAP_LIST:\n00400000-00401000 r-xp 00000000 00:00 1 /bin/x\n'
		printf '  400000 - 401000  unhooked 4096 / 4096\n'
		printf 'GLOBAL_STATS:\n'
		for r in total absent file-exec file-nonexec anonymous stack other \
			nonprofiled-absent nonprofiled-anonymous nonprofiled-file-exec \
			nonprofiled-file-nonexec nonprofiled-stack nonprofiled-other \
			profiled-mmap profiled-malloc; do
			printf '%25s %12d %12d\n' $r 0 0
		done
		printf 'STACKTRACES:\n   virtual  committed\n%s' "$2"
	} >"$1.0001.heap"
	printf '%s' "$3" >"$1.0001.buckets"
	printf '00400000-00401000 r-xp 00000000 00:00 1 /bin/x\n' >"$1.maps"
}

# 1. A stack of a million frames, classified by every shipped policy
#    (regexes over a 10 MB string: their limits must hold).
awk 'BEGIN { printf "1 malloc"; for (i = 0; i < 1000000; i++) printf " 0x%x", 4194304 + i % 4096; printf "\n" }' >big.buckets
run deep '     4096       4096      1      0 @ 1
' "$(cat big.buckets)"
check million-frames-stacktrace 0 "$bin" stacktrace deep.0001.heap
for p in l0 l1 l2 t0 sourcefile linux android.browser; do
	check "million-frames-csv-$p" any "$bin" csv -p $p deep.0001.heap
done

# 2. 10 MB lines: in META, as a stack line, in buckets, maps, a policy.
awk 'BEGIN { printf "CommandLine: "; for (i = 0; i < 10485760 / 64; i++) printf "%064d", i; printf "\n" }' >long.txt
run longmeta '     4096       4096      1      0 @ 1
' '1 malloc 0x400010
'
sed -i "/^Time:/r long.txt" longmeta.0001.heap
check long-meta-line any "$bin" list longmeta.0001.heap
run longline '' '1 malloc 0x400010
'
awk 'BEGIN { for (i = 0; i < 10485760 / 8; i++) printf "       1"; printf " @ 1\n" }' >>longline.0001.heap
check long-stack-line 1 "$bin" list longline.0001.heap
run longbucket '     4096       4096      1      0 @ 1
' "$(awk 'BEGIN { printf "1 malloc n"; for (i = 0; i < 10485760 / 8; i++) printf "NNNNNNNN"; printf " 0x400010\n" }')"
check long-bucket-name any "$bin" buckets longbucket.0001.heap
awk 'BEGIN { for (i = 0; i < 10485760 / 16; i++) printf "0123456789abcdef"; printf "\n" }' >longmaps.maps
cp longbucket.0001.heap longmaps.0001.heap
printf '1 malloc 0x400010\n' >longmaps.0001.buckets
check long-maps-line any "$bin" stacktrace longmaps.0001.heap
{ printf "dmprof-policy 1\ncolumns a\nrule a malloc stack='"; cat long.txt; printf "'\nrule a mmap\nrule a unhooked\n"; } >long.policy
check long-policy-line any "$bin" policy check long.policy

# 3. Deep nesting: JSON policies and a symbol map's files.json.
awk 'BEGIN { for (i = 0; i < 200000; i++) printf "["; for (i = 0; i < 200000; i++) printf "]"; printf "\n" }' >deep.json
check deep-json-policy 1 "$bin" policy check deep.json
awk 'BEGIN { printf "{\"components\": "; for (i = 0; i < 100000; i++) printf "{\"a\":"; printf "1"; for (i = 0; i < 100000; i++) printf "}"; printf "}\n" }' >deep2.json
check deep-json-object 1 "$bin" policy check deep2.json
run nest '     4096       4096      1      0 @ 1
' '1 malloc 0x400010
'
rm nest.maps
mkdir nest.symmap
cp deep.json nest.symmap/files.json
printf '00400000-00401000 r-xp 00000000 00:00 1 /bin/x\n' >nest.symmap/maps
check deep-files-json any "$bin" stacktrace nest.0001.heap
awk 'BEGIN { for (i = 0; i < 100000; i++) printf "("; printf "a"; for (i = 0; i < 100000; i++) printf ")"; printf "\n" }' >nested.re
{ printf "dmprof-policy 1\ncolumns a\nrule a malloc stack='"; cat nested.re; printf "'\nrule a mmap\nrule a unhooked\n"; } >nested.policy
check nested-regex any "$bin" policy check nested.policy

# 4. NUL bytes everywhere.
run nul '     4096       4096      1      0 @ 1
' '1 malloc 0x400010
'
printf 'heap profile: DUMP_DEEP_6\n\000\000STACKTRACES:\n 1 1 1 0 @ 1\n' >nul1.0001.heap
check nul-in-dump 1 "$bin" list nul1.0001.heap
printf '1 mal\000loc 0x400010\n' >nul.0001.buckets
check nul-in-buckets 1 "$bin" buckets nul.0001.heap
printf '1 malloc 0x400010\n' >nul.0001.buckets
printf '00400000-00401000 r-xp 00000000 00:00 1 /bin/\000x\n' >nul.maps
check nul-in-maps any "$bin" stacktrace nul.0001.heap
printf 'dmprof-policy 1\ncolumns a\000b\nrule a malloc\n' >nul.policy
check nul-in-policy 1 "$bin" policy check nul.policy

# 5. Numbers at and past 2^64.
run big1 '18446744073709551615 18446744073709551615 1 0 @ 18446744073709551615
' '18446744073709551615 malloc 0xffffffffffffffff 0xfffffffffffffffe
'
check max-u64-values any "$bin" list big1.0001.heap
run big2 '18446744073709551616 1 1 0 @ 1
' '1 malloc 0x400010
'
check past-u64-value 1 "$bin" list big2.0001.heap
run big3 '     4096       4096      1      0 @ 1
' '1 malloc 0x1ffffffffffffffff
'
check past-u64-address 1 "$bin" buckets big3.0001.heap
run big4 '9223372036854775807 9223372036854775807 1 0 @ 1
9223372036854775807 9223372036854775807 1 0 @ 2
' '1 malloc 0x400010
2 malloc 0x400020
'
check sums-past-i64 1 "$bin" csv --bytes big4.0001.heap
printf 'ffffffffffff0000-ffffffffffffffff rw-p 00000000 00:00 0 \n' >big5.maps
run big5x '     4096       4096      1      0 @ 1
' '1 malloc 0x400010
'
cp big5.maps big5x.maps
check top-of-address-space any "$bin" stacktrace big5x.0001.heap

# 6. Claims of 10^12: bucket ids, a gperftools header.
run claim '     4096       4096      1      0 @ 1000000000000
     4096       4096      1      0 @ 999999999999
' '1000000000000 malloc 0x400010
999999999999 mmap 0x400020
'
check bucket-ids-1e12 0 "$bin" csv claim.0001.heap
# One large id must not cost a table of all the ids below it.
run sparse '     4096       4096      1      0 @ 67108863
' '67108863 malloc 0x400010
'
save=$mem_mb
case $bin in */asan/*) mem_mb=384 ;; *) mem_mb=128 ;; esac
check sparse-bucket-id 0 "$bin" csv sparse.0001.heap
mem_mb=$save
printf 'heap profile: 1000000000000: 1000000000000000 [1000000000000: 1000000000000000] @ heapprofile\n     1:        8 [     1:        8] @ 0x00401000\n\nMAPPED_LIBRARIES:\n' >claim2.0001.heap
check gperftools-claims any "$bin" csv claim2.0001.heap
printf 'heap profile: 1: 8 [1: 8] @ heap_v2/1\n 1000000000000: 1000000000000000 [1000000000000: 1000000000000000] @ 0x00401000\n\nMAPPED_LIBRARIES:\n' >claim3.0001.heap
check gperftools-sampled-huge any "$bin" csv claim3.0001.heap

# 7. The answers on the worst of the above: a million frames (every
#    function counted once per stack, a 10 MB folded line, a page with a
#    million-frame stack), sizes at and past 2^63.
cp deep.0001.heap deep.0002.heap
for c in top folded; do
	check "million-frames-$c" any "$bin" $c deep.0002.heap
	check "max-u64-values-$c" any "$bin" $c big1.0001.heap
done
check sums-past-i64-top 1 "$bin" top big4.0001.heap
# (Each of its two stacks on a line of its own: nothing is added up.)
check sums-past-i64-folded 0 "$bin" folded big4.0001.heap
check million-frames-diff any "$bin" diff deep.0001.heap
check million-frames-html any "$bin" html -o deep.html deep.0001.heap
cp big4.0001.heap big4.0002.heap
check sums-past-i64-diff 1 "$bin" diff big4.0001.heap
check sums-past-i64-html 1 "$bin" html -o big4.html big4.0001.heap
check bucket-ids-1e12-diff 0 "$bin" diff claim.0001.heap claim.0001.heap
# Sizes of either sign near 2^63, whose differences and running sums do
# not fit.
printf 'heap profile: 1: 1 [ 1: 1] @ heapprofile\n 1: -9000000000000000000 [ -9000000000000000000: -9000000000000000000] @ 0x401000\n' >neg.0001.heap
printf 'heap profile: 1: 1 [ 1: 1] @ heapprofile\n 1: 9000000000000000000 [ 9000000000000000000: 9000000000000000000] @ 0x401000\n' >neg.0002.heap
check sizes-near-2e63-diff any "$bin" diff -b neg.0001.heap
check sizes-near-2e63-html any "$bin" html -o neg.html neg.0001.heap
awk 'BEGIN { print "heap profile: 1: 1 [ 1: 1] @ heapprofile"
	for (i = 0; i < 5; i++) printf " 1: %s9000000000000000000 [ 1: 1] @ 0x%x\n", i % 2 ? "-" : "", 4198400 + 16 * i }' >neg3.0001.heap
check sizes-near-2e63-top-1 any "$bin" top -n 1 neg3.0001.heap
check sizes-near-2e63-top-9 any "$bin" top -n 9 neg3.0001.heap

# 8. Inputs the fuzzers found (tests/hostile/found/NAME.KIND, run by kind).
for f in "$here"/found/*; do
	[ -f "$f" ] || continue
	name=$(basename "$f")
	case $name in
	*.buckets)
		run found '     4096       4096      1      0 @ 10
' "$(cat "$f")"
		cp "$f" found.0001.buckets
		check "found-$name" any "$bin" buckets found.0001.heap ;;
	*.heap)
		cp "$f" found2.0001.heap
		check "found-$name" any "$bin" csv found2.0001.heap ;;
	*.policy)
		check "found-$name" any "$bin" policy check "$f" ;;
	esac
done

echo "hostile: $pass passed, $fail failed"
[ $fail = 0 ]
