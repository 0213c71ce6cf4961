#!/bin/sh
# Hostile inputs, generated here (nothing large is committed): deep
# nesting, a stack of a million frames, 10 MB lines, NUL bytes, numbers at
# and past 2^64, a dump that claims 10^12 buckets, hostile cores, a
# JIT's perf map (10 MB names, a million overlapping lines), and
# inputs fuzzing found.  Each command must end within its time limit, with
# status 0 or 1 (and a message on stderr for 1), within its memory limit,
# and never by a signal.
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

# 2b. Escaped META values (command lines of any bytes, escape.h): 10 MB
#     of escapes, and escapes cut short or of no kind, in a deep dump's
#     CommandLine and a snapshot file's values, read to the end (nothing
#     of it is an error); describe of that snapshot.
awk 'BEGIN { printf "CommandLine: "; for (i = 0; i < 10485760 / 24; i++) printf "\\\\\\n\\t\\xff\\x4\\q\\x00\\xZ"; printf "\\\n" }' >esc.txt
run escmeta '     4096       4096      1      0 @ 1
' '1 malloc 0x400010
'
sed -i "/^Time:/r esc.txt" escmeta.0001.heap
check escaped-meta-deep 0 "$bin" top --json escmeta.0001.heap
{ printf 'dmprof-snapshot 1\nMETA:\n'; cat esc.txt
  printf 'Core: \\x\\\\\\x0a\\\nHeap: \\xff\\xfe\\x\nMAPS:\n'
  printf '4096 4096 0 1000-2000 r--p 00000000 00:00 0\n'; } >esc.00001.0001.snap
check escaped-meta-snap 0 "$bin" top --json esc.00001.0001.snap
check escaped-meta-describe 0 "$bin" describe esc.00001.0001.snap 0x1000 0x10

# 2c. A JIT's perf map beside a run whose frames are in code of no
#     binary: a 10 MB name, NUL bytes, a size past 2^64, a million lines
#     over one range (each later one wins), a last line cut short.
run jit '     4096       4096      1      0 @ 1
' '1 malloc 0x7f0000001011 0x7f0000002011 0x7f0000003011
'
{
	printf '7f0000001000 100 JS:*'; cat long.txt
	printf '7f0000002000 100 JS:~a\000b /x.js:1:1\n'
	printf 'ffffffffffffff00 fffffffffffffff0 JS:*big /x.js:1:1\n'
	awk 'BEGIN { for (i = 0; i < 1000000; i++) printf "7f0000003000 %x JS:*f%d /x.js:%d:1\n", 4096 - i % 4096, i, i }'
	printf '7f0000004000 100 JS:*cut /x.j'
} >jit.perf.map
check perf-map-hostile 0 "$bin" stacktrace jit.0001.heap

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

# 8. The other profiles' formats: pprof protobuf, DHAT, text variants.
pb() { python3 "$top/tests/golden/proto-base/make.py" "$@"; }
pb truncated-gzip cut.pb.gz && check proto-truncated-gzip 1 "$bin" top cut.pb.gz
pb huge-length huge.pb && check proto-huge-length 1 "$bin" top huge.pb
pb string badstr.pb && check proto-string-index 1 "$bin" top badstr.pb
pb location badloc.pb && check proto-location-id 1 "$bin" top badloc.pb
# 256 MB of zeros, gzipped (256 KB): inflated, then refused.
head -c 268435456 /dev/zero | gzip -1 >zeros.pb.gz
check proto-gzip-of-zeros 1 "$bin" top zeros.pb.gz
# A sample of a million locations, and 200,000 samples of one each.
python3 - <<'P'
import gzip
def varint(v):
    out = b""
    while True:
        b = v & 0x7f; v >>= 7
        if v: out += bytes([b | 0x80])
        else: return out + bytes([b])
def field(n, v): return varint(n << 3) + varint(v)
def msg(n, body): return varint(n << 3 | 2) + varint(len(body)) + body
def packed(n, vals): return msg(n, b"".join(varint(v) for v in vals))
strs = ["", "inuse_objects", "count", "inuse_space", "bytes", "f"]
head = (msg(1, field(1, 1) + field(2, 2)) + msg(1, field(1, 3) + field(2, 4)) +
        msg(5, field(1, 1) + field(2, 5)) +
        b"".join(msg(6, s.encode()) for s in strs))
locs = lambda n: b"".join(msg(4, field(1, i) + msg(4, field(1, 1))) for i in range(1, n + 1))
deep = head + locs(1000) + msg(2, packed(1, [1 + i % 1000 for i in range(1000000)]) + packed(2, [1, 64]))
open("deep.pb.gz", "wb").write(gzip.compress(deep, 1))
wide = head + locs(1000) + b"".join(msg(2, packed(1, [1 + i % 1000]) + packed(2, [1, i + 1])) for i in range(200000))
open("wide.pb.gz", "wb").write(gzip.compress(wide, 1))
P
check proto-million-frames any "$bin" top deep.pb.gz
check proto-many-samples 0 "$bin" top wide.pb.gz
dh=$top/tests/golden/dhat/dhat.out.4242
sed 's/"fs":\[7,3\]/"fs":[7,4294967296]/' "$dh" >range.dhat
check dhat-frame-out-of-range 1 "$bin" csv -b range.dhat
sed 's/,"fs":\[1,2,3\]//' "$dh" >nofs.dhat
check dhat-missing-frames 1 "$bin" top nofs.dhat
sed 's/,"ftbl":/,"nothing":/' "$dh" >noftbl.dhat
check dhat-missing-ftbl 1 "$bin" top noftbl.dhat
sed 's/"tb":65536/"tb":-65536/; s/"gb":65536/"gb":1e300/' "$dh" >neg.dhat
check dhat-bad-numbers 1 "$bin" csv -b neg.dhat
head -c 700 "$dh" >cut.dhat
check dhat-truncated 1 "$bin" csv -b cut.dhat
# 200,000 program points of 100 frames each over a 100,000-entry table.
python3 - <<'P'
with open("big.dhat", "w") as f:
    f.write('{"dhatFileVersion":2,"mode":"heap","verb":"Allocated","bklt":true,'
            '"bkacc":false,"tu":"instrs","Mtu":"instr","cmd":"x","pid":1,'
            '"te":1000,"tg":500,"pps":[')
    fs = ",".join(str(1 + k) for k in range(100))
    f.write(",".join('{"tb":%d,"tbk":1,"tl":1,"mb":1,"mbk":1,"gb":%d,"gbk":1,'
                     '"eb":1,"ebk":1,"fs":[%d,%s]}' % (i + 1, i, 1 + i % 99999, fs)
                     for i in range(200000)))
    f.write('],"ftbl":["[root]",')
    f.write(",".join('"0x%x: f%d (a.c:%d)"' % (0x400000 + k, k, k) for k in range(100000)))
    f.write(']}\n')
P
check dhat-big any "$bin" csv -b big.dhat
# Go's debug=1 profile with a million comment lines; jemalloc with a
# million thread lines under one stack.
{ printf 'heap profile: 1: 100 [1: 100] @ heap/1048576\n1: 100 [1: 100] @ 0x401000\n'
  awk 'BEGIN { for (i = 0; i < 1000000; i++) printf "#\t0x401000\tmain.f+0x%x\t/a.go:%d\n", i, i }'
} >gocomments.heap
check go-million-comments 0 "$bin" top gocomments.heap
{ printf 'heap_v2/524288\n  t*: 1000000: 1000000 [0: 0]\n'
  awk 'BEGIN { for (i = 0; i < 1000000; i++) printf "  t%d: 1: 1 [0: 0]\n", i }'
  printf '@ 0x401000\n  t*: 1: 1 [0: 0]\n'
  awk 'BEGIN { for (i = 0; i < 1000000; i++) printf "  t%d: 1: 1 [0: 0]\n", i }'
  printf '\nMAPPED_LIBRARIES:\n'
} >je.heap
check jemalloc-million-threads any "$bin" top je.heap

# A gperftools profile over 64 MB, whose text the reader frees before it
# builds the buckets (under ASan: no use after that): its total must be
# the header's in-use bytes.
libc=$(ls /usr/lib/*/libc.so.6 /lib/*/libc.so.6 2>/dev/null | head -1)
if gcc -O2 -o gen_gperf "$top/tests/bench/gen_gperf.c" &&
	sh "$top/tests/bench/gen_symbolize.sh" "$libc" 20000 libc >/dev/null &&
	./gen_gperf 250000 libc/frames.txt libc/maps.txt >big.0001.heap; then
	check gperf-over-64mb 0 "$bin" csv -b big.0001.heap
	want=$(sed -n '1s/^heap profile: *[0-9]*: *\([0-9]*\) .*/\1/p' big.0001.heap)
	got=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "total") t = i; next }
		{ print $t }' "$tmp/out")
	if [ "$got" = "$want" ]; then pass=$((pass + 1)); else
		echo "FAIL gperf-over-64mb: total '$got', the header says '$want'"
		fail=$((fail + 1)); fi
else
	echo "FAIL gperf-over-64mb: cannot generate the profile"
	fail=$((fail + 1))
fi

# 9. Cores: gcore's of a small program (tests/hostile/coreprog.c) and of
#    a Python one (pycores.py garbling its objects and arenas), a
#    kernel's of it crashing, a static binary's, a 32-bit one's, and the
#    hostile ones tests/hostile/cores.py makes of them (cut short, heap
#    bytes replaced, chunk headers and main_arena garbled, notes and
#    program headers lying), each read by every command a core serves.
#    said PATTERN: the last command's stderr says it.
said() {
	if grep -q "$1" "$tmp/err"; then pass=$((pass + 1)); else
		echo "FAIL $name: stderr does not say '$1'"
		sed 's/^/    /' "$tmp/err" | head -5
		fail=$((fail + 1)); fi
}
# (describe: the addresses in $core_addrs, the program's blocks, and one
# in no mapping; expand -t: blocks of a size class, or none of it.)
core_checks() { # NAME WANT CORE
	check "core-$1-top" "$2" "$bin" top "$3"
	rm -rf snapdir && mkdir snapdir
	check "core-$1-snapshot" "$2" "$bin" snapshot -o snapdir "$3"
	check "core-$1-expand" "$2" "$bin" expand "$3" malloc-leaked
	check "core-$1-heap" "$2" "$bin" heap --blocks "$3"
	# shellcheck disable=SC2086
	check "core-$1-describe" "$2" "$bin" describe "$3" 0x10 $core_addrs
	check "core-$1-expand-type" any "$bin" expand -t size-25..40 "$3"
}
# take_core PROGRAM PREFIX ARGS...: run PROGRAM, gcore it into
# PREFIX.core once it has written its line (coreprog's: "PID HEAP_BLOCK
# MMAPPED_BLOCK") into PREFIX.out.
take_core() {
	prog=$1 out=$2
	shift 2
	"$prog" "$@" >"$out.out" 2>/dev/null &
	cpid=$!
	for _ in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
		[ -s "$out.out" ] && break
		sleep 0.25
	done
	gcore -o "$out" $cpid >/dev/null 2>&1 && mv "$out.$cpid" "$out.core"
	kill $cpid 2>/dev/null
	wait $cpid 2>/dev/null
	[ -s "$out.core" ] && [ -s "$out.out" ]
}
# cases LIST DIR PREFIX: the cores cores.py listed ("NAME WANT
# [SECONDS]": a tighter time limit, four times longer with a sanitizer).
cases() {
	while read -r cname cwant csecs; do
		save=$limit
		if [ -n "$csecs" ]; then
			case $bin in */asan/*) limit=$((4 * csecs)) ;;
			*) limit=$csecs ;; esac
		fi
		core_checks "$3-$cname" "$cwant" "$2/$cname.core"
		limit=$save
	done <"$1"
}
if ! command -v gcore >/dev/null || ! command -v python3 >/dev/null; then
	echo "skip cores: no gcore (gdb) or no python3"
elif ! gcc -O0 -o coreprog "$here/coreprog.c" ||
	! take_core ./coreprog gc 300; then
	echo "FAIL cores: cannot build coreprog or gcore it"
	fail=$((fail + 1))
else
	core_addrs=$(cut -d' ' -f2,3 gc.out)
	core_checks gcore 0 gc.core
	check core-gcore-leaks 0 "$bin" top gc.core
	if grep -q '^ *[0-9.]* [KMG]*i*B *100  in use, leaked' "$tmp/out"; then
		pass=$((pass + 1)); else
		echo "FAIL core-gcore-leaks: not the 100 blocks it dropped"
		sed 's/^/    /' "$tmp/out" | head -14
		fail=$((fail + 1)); fi
	mkdir -p gv
	# shellcheck disable=SC2046
	python3 "$here/cores.py" gc.core gv $(cut -d' ' -f2,3 gc.out) >gv.list
	cases gv.list gv gc
	check core-cut-half-heap 1 "$bin" heap gv/cut-half.core
	said 'cut short'
	# (Every command that reads it as a snapshot says so too.)
	check core-cut-half-top 0 "$bin" top gv/cut-half.core
	said 'is cut short at'
	said 'its malloc heap cannot be walked (the core is cut short'
	check core-elf32-flipped 1 "$bin" top gv/hdr-elf32.core
	said '32-bit'
	# A dense graph: 200,000 blocks, every word of them a pointer into
	# one of them; the scan must stay within its limits.
	if take_core ./coreprog dense 200000; then
		# shellcheck disable=SC2046
		python3 "$here/cores.py" dense.core . $(cut -d' ' -f2,3 \
			dense.out) dense >/dev/null
		core_checks dense-graph 0 dense.core
	else
		echo "FAIL cores: cannot gcore coreprog 200000"
		fail=$((fail + 1))
	fi
	# A static binary's: no libc.so, so no heap walk, and why.
	if gcc -static -O0 -o coreprog-static "$here/coreprog.c" 2>/dev/null &&
		take_core ./coreprog-static st 300; then
		core_checks static any st.core
		check core-static-why 1 "$bin" heap st.core
		said 'static binary'
	else
		echo "skip core-static: gcc -static or gcore of it failed"
	fi
fi
# The kernel's core of the program crashing (and cut, and its NT_FILE
# lying: a kernel's core leaves code out, which is read from the files).
# (The shell's stderr away meanwhile: it says "Segmentation fault".)
kc=
if [ "$(cat /proc/sys/kernel/core_pattern 2>/dev/null)" = core ] &&
	[ -x coreprog ] && mkdir -p kc; then
	exec 3>&2 2>/dev/null
	# shellcheck disable=SC3045 # (dash's, bash's and busybox's have -c)
	(cd kc && ulimit -c unlimited && exec ../coreprog 300 crash >out)
	exec 2>&3 3>&-
	[ -s kc/out ] && kc=$(ls kc/core* 2>/dev/null | head -1)
fi
if [ "$(cat /proc/sys/kernel/core_pattern 2>/dev/null)" != core ]; then
	echo "skip core-kernel: core_pattern is not 'core'" \
		"('$(cat /proc/sys/kernel/core_pattern 2>/dev/null)')"
elif [ -z "$kc" ] || [ ! -s "$kc" ]; then
	echo "skip core-kernel: no core written (ulimit -c, or a container?)"
else
	core_addrs=$(cut -d' ' -f2,3 kc/out)
	core_checks kernel 0 "$kc"
	mkdir -p kv
	# shellcheck disable=SC2046
	python3 "$here/cores.py" "$kc" kv $(cut -d' ' -f2,3 kc/out) kernel \
		>kv.list
	cases kv.list kv kc
fi
# A CPython process's core (census.py, a few thousand objects) and the
# hostile ones pycores.py makes of it: garbled ob_types, pool headers of
# no size class or another arena, free lists that loop or leave, arenas
# outside the core, a table of garbage, type cycles, endless type names.
py=/usr/bin/python3.11
if [ -x "$py" ] && command -v gcore >/dev/null; then
	"$py" "$here/../real/src/pyapp/census.py" 0.01 >pyc.out 2>/dev/null &
	ppid=$!
	for _ in $(seq 300); do
		grep -q '^waiting$' pyc.out 2>/dev/null && break
		sleep 0.1
	done
	gcore -o pyc $ppid >/dev/null 2>&1
	kill -9 $ppid
	wait $ppid 2>/dev/null
	if [ -s pyc.$ppid ] && mv pyc.$ppid pyc.core &&
		"$bin" heap --json pyc.core >pyc.json 2>/dev/null; then
		core_checks python 0 pyc.core
		mkdir -p pv
		python3 "$here/pycores.py" pyc.core pyc.json pv >pv.list
		cases pv.list pv pyc
		check core-py-pool-headers-said 0 "$bin" heap pv/py-pool-headers.core
		said 'its header says arena'
		check core-py-free-lists-said 0 "$bin" heap pv/py-free-lists.core
		said 'its free list goes to'
		check core-py-arenas-outside-said 0 "$bin" heap pv/py-arenas-outside.core
		said 'cannot be read'
		check core-py-obtype-garbled-said 0 "$bin" heap pv/py-obtype-garbled.core
		said 'no type that reads as one'
		check core-py-type-cycles-said 0 "$bin" heap pv/py-type-cycles.core
		said 'a cycle of types'
		# (A tuple whose type is garbled is not an object of another
		# layout: its first item taken for a class's type.)
		"$bin" top --json pv/py-type-cycles.core 2>/dev/null >pcy.json
		python3 -c '
import json, sys
t = json.load(open(sys.argv[1]))
names = {x.get("name") for x in t.get("types", [])}
bad = [n for n in ("BuiltinImporter", "FrozenImporter") if n in names]
sys.exit("typed as %s" % bad if bad else 0)' pcy.json 2>pcy.err &&
			pass=$((pass + 1)) || {
			echo "FAIL core-py-type-cycles: blocks typed by a layout they are not of: $(cat pcy.err)"
			fail=$((fail + 1))
		}
		rm -f pyc.core pv/*.core
	else
		echo "FAIL cores: census.py's core could not be taken or walked"
		fail=$((fail + 1))
	fi
else
	echo "skip python cores: no $py or no gcore"
fi
# A 32-bit program's core: said, not read.  (Without gcc -m32's
# libraries, a program of a few instructions: it writes a line, waits.)
cat >pause32.s <<'S'
	.globl _start
_start:	movl $4, %eax
	movl $1, %ebx
	movl $line, %ecx
	movl $2, %edx
	int $0x80
	movl $29, %eax
	int $0x80
line:	.ascii "x\n"
S
if command -v gcore >/dev/null &&
	{ gcc -m32 -O0 -o prog32 "$here/coreprog.c" 2>/dev/null ||
	  gcc -m32 -nostdlib -static -o prog32 pause32.s 2>/dev/null; } &&
	take_core ./prog32 c32; then
	check core-32-bit 1 "$bin" top c32.core
	said '32-bit'
else
	echo "skip core-32-bit: no 32-bit program could be built or gcored"
fi
# An ELF file that is not a core (garbage: cores.py's garbage-*).
check core-not-a-core 1 "$bin" top "$bin"
said 'not a core file'

# 10. Inputs the fuzzers found (tests/hostile/found/NAME.KIND, run by kind).
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
	*.pb | *.core)
		check "found-$name" any "$bin" top "$f" ;;
	esac
done

echo "hostile: $pass passed, $fail failed"
[ $fail = 0 ]
