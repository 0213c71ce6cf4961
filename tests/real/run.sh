#!/bin/sh
# Tests on real programs: small C and C++ programs are compiled here (PIE
# and non-PIE, with a library loaded by dlopen), run under Debian's
# tcmalloc heap profiler, and dmprof reads the profiles they leave, with
# symbols from the binaries themselves.  The checks:
#   - stacktrace and expand name the allocation functions of the
#     executable and of the library, for PIE and non-PIE;
#   - a type_info address (data, in a PIE) resolves to its type;
#   - csv over a 20+ snapshot series has a row per snapshot whose malloc
#     components add up to the profile's in-use bytes;
#   - expand's top functions agree with google-pprof --text;
#   - top, diff, expand and folded on a leaking program (leak.sh), and
#     the owners of a leaking C++ server, counted by hand (cxxserver.sh);
#   - a stripped binary's symbols from a debuginfod server
#     (debuginfod.sh);
#   - dmprof's DWARF reader gives libbfd's answers, address by address
#     (dwarf.sh);
#   - dmprof heap accounts for a live process's glibc heap as glibc's own
#     mallinfo2() does (heap.sh), and for a core of it that gcore wrote
#     (core.sh);
#   - a C++ program's classes, layouts and leaked blocks, each found from
#     outside in a snapshot and in gcore's and the kernel's cores
#     (objects.sh);
#   - dmprof snapshot of running processes: heapknown's heap as heap and
#     glibc say it, python3, sqlite3 and a C++ server snapshotted mid-run
#     unchanged, every byte in a component (snapshot.sh);
#   - allocator wrappers passed over for owners: a GLib program's and its
#     own (--alloc-fn), and redis-server's zmalloc under redis-benchmark
#     (wrappers.sh);
#   - Python programs under dmprof record: their lines' bytes as
#     tracemalloc counts them, children, allocator modes, a C extension
#     (python.sh);
#   - node programs under dmprof record: the JavaScript functions that
#     made its Buffers own exactly their bytes, the growing cache's
#     first in diff FIRST, a dump before node's teardown (node.sh).
# Usage: tests/real/run.sh DMPROF_BINARY
set -u
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
src=$(cd "$(dirname "$0")/src" && pwd)
top=$(cd "$(dirname "$0")/../.." && pwd)
tcmalloc=/usr/lib/x86_64-linux-gnu/libtcmalloc.so.4
libgcc=/lib/x86_64-linux-gnu/libgcc_s.so.1
for need in gcc g++ google-pprof; do
	if ! command -v $need >/dev/null 2>&1; then
		echo "real: SKIP: $need is not installed (make check installs it)"
		exit 0
	fi
done
if [ ! -e $tcmalloc ]; then
	echo "real: SKIP: $tcmalloc is not installed (make check installs it)"
	exit 0
fi
. "$(dirname "$0")/lib.sh"

cd "$tmp" || exit 1
gcc -g -O1 -shared -fPIC "$src/plug.c" -o libplug.so || exit 1
g++ -g -O1 -fPIE -pie "$src/app.cc" -o app -ldl || exit 1
gcc -g -O1 -fno-pie -no-pie "$src/capp.c" -o capp -ldl || exit 1

# Under the heap profiler; libgcc first spares libunwind's slowness.
profile() { # PREFIX PROGRAM ARGS...
	prefix=$1
	shift
	mkdir -p "$(dirname "$prefix")"
	env LD_PRELOAD="$libgcc $tcmalloc" TCMALLOC_STACKTRACE_METHOD=libgcc \
		HEAPPROFILE="$prefix" HEAP_PROFILE_ALLOCATION_INTERVAL=1048576 \
		HEAP_PROFILE_INUSE_INTERVAL=1099511627776 "$@" >/dev/null 2>&1
}
profile "$tmp/pie/prof" ./app "$tmp/libplug.so" 32
profile "$tmp/nopie/prof" ./capp "$tmp/libplug.so"

last_pie=$(ls pie/prof.*.heap | sort | tail -1)
for kind in pie nopie; do
	n=$(ls $kind/prof.*.heap 2>/dev/null | wc -l)
	[ "$n" -ge 2 ] || { bad "$kind: the profiler wrote $n dumps"; continue; }
	last=$(ls $kind/prof.*.heap | sort | tail -1)
	if [ $kind = pie ]; then exe=alloc_in_exe_widgets; else exe=alloc_in_c_exe; fi
	"$bin" stacktrace "$last" 2>/dev/null >st.out
	grep -q "^[0-9]* [0-9]* [0-9]* [0-9]* $exe " st.out &&
		ok || bad "$kind: stacktrace does not start a stack at $exe"
	grep -q "^[0-9]* [0-9]* [0-9]* [0-9]* plugin_alloc_blocks " st.out &&
		ok || bad "$kind: stacktrace does not start a stack at plugin_alloc_blocks (library)"
	"$bin" expand --original -l "$last" linux malloc-app 1 2>/dev/null >ex.out
	grep -q " $exe(@$src/" ex.out &&
		ok || bad "$kind: expand lacks $exe with its source file"
	grep -q " plugin_alloc_blocks(@$src/plug.c:" ex.out &&
		ok || bad "$kind: expand lacks plugin_alloc_blocks with file:line"
done

# A type_info object of the PIE, by address: a deep dump that names it.
addr=$(DMPROF_TEST_MAPS="$tmp/ti.00001.maps" ./app "$tmp/libplug.so" 2>/dev/null)
printf '1 malloc t%s n6Widget 0x1\n' "$addr" > ti.00001.0001.buckets
printf 'heap profile: DUMP_DEEP_6\nGLOBAL_STATS:\n total 1 1\nSTACKTRACES:\n 10 10 1 0 @ 1\n' > ti.00001.0001.heap
"$bin" buckets ti.00001.0001.heap 2>/dev/null | grep -q '^1: malloc tWidget n6Widget ' &&
	ok || bad "typeinfo: $addr did not resolve to Widget"

# The C++ series: 20+ snapshots, malloc components = in-use bytes.
n=$(ls pie/prof.*.heap | wc -l)
[ "$n" -ge 20 ] && ok || bad "pie: $n snapshots, want 20 or more"
"$bin" csv --bytes pie/prof.0001.heap 2>/dev/null >csv.out
rows=$(($(wc -l <csv.out) - 1))
[ "$rows" = "$n" ] && ok || bad "csv: $rows rows for $n snapshots"
for f in $(ls pie/prof.*.heap | sort); do
	sed -n '1s/^heap profile: *[0-9-]*: *\([0-9-]*\) .*/\1/p' "$f"
done >inuse.out
awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i ~ /^malloc-/ && $i != "malloc-unused" && $i != "malloc-total") m[i] = 1; next }
	{ s = 0; for (i in m) s += $i; print s }' csv.out >sums.out
if cmp -s inuse.out sums.out; then ok; else
	bad "csv: malloc components do not add up to the in-use bytes"
	paste inuse.out sums.out | head -5
fi

# google-pprof's flat view (frame 0 of each stack) against dmprof's.
mid=pie/prof.0015.heap
google-pprof --text --show_bytes ./app "$mid" 2>/dev/null |
	awk 'NR > 1 && $1 > 0 { n = $1; $1 = $2 = $3 = $4 = $5 = ""; sub(/^ */, ""); sub(/ \(inline\)$/, ""); print n, $0 }' |
	head -4 >pprof.top
"$bin" expand --original "$mid" l0 tc-used-all 0 2>/dev/null |
	awk '{ n = $1; $1 = ""; sub(/^ \(alloc=[0-9-]*\) \(free=[0-9-]*\) /, ""); sub(/\(@[^)]*\) *$/, ""); s[$0] += n }
	     END { for (k in s) print s[k], k }' | sort -rn | head -4 >dmprof.top
if [ -s pprof.top ] && cmp -s pprof.top dmprof.top; then ok; else
	bad "the top functions differ from google-pprof --text:"
	paste -d'|' pprof.top dmprof.top
fi

# Binaries moved after the run: --alternative-dirs and --symfs find them.
mkdir -p moved/here root/"$tmp"
cp app libplug.so moved/here/
cp app libplug.so root/"$tmp"/
mv app app.orig
mv libplug.so libplug.so.orig
"$bin" stacktrace "$last_pie" 2>&1 | grep -q "cannot read '$tmp/app'" &&
	ok || bad "a missing binary gives no warning"
"$bin" stacktrace --alternative-dirs "$tmp@$tmp/moved/here" "$last_pie" 2>/dev/null |
	grep -q ' alloc_in_exe_widgets .* plugin_alloc_blocks \| plugin_alloc_blocks ' &&
	ok || bad "--alternative-dirs: symbols not found in the moved binaries"
"$bin" stacktrace --symfs "$tmp/root" "$last_pie" 2>/dev/null | grep -q ' alloc_in_exe_widgets ' &&
	ok || bad "--symfs: symbols not found under the root"
mv app.orig app
mv libplug.so.orig libplug.so

# A rebuilt binary is another identity: its cached names are not reused.
"$bin" stacktrace "$last_pie" 2>/dev/null | grep -q ' alloc_in_exe_widgets ' || bad "cache: first run"
ls "$XDG_CACHE_HOME"/dmprof/symbols/*.bin >/dev/null 2>&1 && ok || bad "cache: nothing written"
sed 's/alloc_in_exe_widgets/alloc_in_exe_gadgets/' "$src/app.cc" >app2.cc
g++ -g -O1 -fPIE -pie app2.cc -o app -ldl || exit 1
"$bin" stacktrace "$last_pie" 2>/dev/null >st2.out
grep -q ' alloc_in_exe_gadgets ' st2.out && ! grep -q ' alloc_in_exe_widgets ' st2.out &&
	ok || bad "cache: a stale entry was used after the binary changed"
g++ -g -O1 -fPIE -pie "$src/app.cc" -o app -ldl || exit 1
"$bin" stacktrace --no-symbol-cache "$last_pie" 2>/dev/null | grep -q ' alloc_in_exe_widgets ' &&
	ok || bad "--no-symbol-cache: symbols lost"

# source= rules need DWARF file names, looked up on demand.
cat >src.policy <<P
dmprof-policy 1
columns plugin app other m u
rule plugin malloc source='[^ ]*plug\.c .*'
rule app    malloc source='.*app\.cc.*'
rule other  malloc
rule m mmap
rule u unhooked
P
"$bin" csv --bytes -p ./src.policy "$last_pie" 2>/dev/null | awk -F, 'NR == 2 { exit !($1 > 0 && $2 > 0) }' &&
	ok || bad "source= rules: nothing classified by source file"

# -v says where each binary's symbols come from; -vv why a frame stays
# unresolved (here: the executable stripped of its .symtab).
"$bin" stacktrace -v --no-symbol-cache "$last_pie" 2>&1 >/dev/null |
	grep -v '^dmprof: warning: ' >v.out
grep -q "^dmprof: $tmp/app: symbols from .symtab; lines and inlined frames from the DWARF of $tmp/app; no symbol cache" v.out &&
	ok || bad "-v does not say where the symbols of app come from"
# libstdc++: .dynsym, or a debug file where its -dbg package is there.
grep -q '/libstdc++\.so[.0-9]*: symbols from \(\.dynsym (stripped\|\.symtab of .*, found by build-id\)' v.out &&
	ok || bad "-v does not say where the symbols of libstdc++ come from: $(grep libstdc v.out)"
# libc: its debug file by build-id, where libc6-dbg is installed.
if [ -d /usr/lib/debug/.build-id ] && dpkg -s libc6-dbg >/dev/null 2>&1; then
	grep -q '/libc\.so\.6: symbols from \.symtab of /usr/lib/debug/\.build-id/.*\.debug, found by build-id; lines and inlined frames from the DWARF of ' v.out &&
		ok || bad "-v does not name libc's debug file: $(grep libc.so v.out)"
fi
grep -q ": [0-9]* addresses: 0 from the symbol cache, [0-9]* looked up$" v.out &&
	ok || bad "-v does not say how many addresses were looked up"
"$bin" stacktrace "$last_pie" >/dev/null 2>&1
"$bin" stacktrace -v "$last_pie" 2>&1 >/dev/null |
	grep -q "^dmprof: $tmp/app: [0-9]* addresses: \([0-9]*\) from the symbol cache, 0 looked up$" &&
	ok || bad "-v does not say the addresses came from the cache"
cp app app.full && strip app
"$bin" stacktrace -vv --no-symbol-cache "$last_pie" 2>&1 >/dev/null |
	grep -q "^dmprof: 0x[0-9a-f]* stays unresolved: $tmp/app has no symbols (said above)" &&
	ok || bad "-vv does not say why frames of a stripped app stay unresolved"
mv app.full app

# HEAP_PROFILE_MMAP=1: mmap lines are the allocator's arenas, not malloc.
mkdir -p mm
env LD_PRELOAD="$libgcc $tcmalloc" TCMALLOC_STACKTRACE_METHOD=libgcc \
	HEAPPROFILE="$tmp/mm/prof" HEAP_PROFILE_ALLOCATION_INTERVAL=4194304 \
	HEAP_PROFILE_INUSE_INTERVAL=1099511627776 HEAP_PROFILE_MMAP=1 \
	./app "$tmp/libplug.so" 8 >/dev/null 2>&1
mlast=$(ls mm/prof.*.heap 2>/dev/null | sort | tail -1)
if [ -n "$mlast" ]; then
	"$bin" csv --bytes "$mlast" 2>/dev/null >mm.csv
	inuse=$(sed -n '1s/^heap profile: *[0-9-]*: *\([0-9-]*\) .*/\1/p' "$mlast")
	awk -F, -v inuse="$inuse" 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
		{ s = 0; for (k in c) if (k ~ /^malloc-/ && k != "malloc-unused" && k != "malloc-total") s += $c[k]
		  exit !(s == inuse && $c["allocator-arena"] > 0 && $c["malloc-unused"] >= 0) }' mm.csv &&
		ok || bad "HEAP_PROFILE_MMAP=1: mmap lines counted as malloc, or no arena"
else
	bad "HEAP_PROFILE_MMAP=1: no profile written"
fi

. "$top/tests/real/leak.sh"
. "$top/tests/real/cxxserver.sh"
. "$top/tests/real/debuginfod.sh"
. "$top/tests/real/pprof.sh"
. "$top/tests/real/dhat.sh"
. "$top/tests/real/jemalloc.sh"
. "$top/tests/real/dwarf.sh"
. "$top/tests/real/heap.sh"
. "$top/tests/real/core.sh"
. "$top/tests/real/objects.sh"
. "$top/tests/real/snapshot.sh"
. "$top/tests/real/wrappers.sh"
. "$top/tests/real/python.sh"
. "$top/tests/real/pyheap.sh"
. "$top/tests/real/node.sh"

echo "real: $pass passed, $fail failed"
[ $fail = 0 ]
