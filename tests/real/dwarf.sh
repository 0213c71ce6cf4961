# dmprof's DWARF reader against libbfd's, address by address (sourced by
# run.sh: uses bin, top, tmp, ok and bad).  tests/real/dwarfcmp.c prints
# every logical frame (function, file, line) of each address; it runs
# once with dmprof's reader and once with DMPROF_DWARF=libbfd, on
#   - a C++ program built -O2 -g (tests/real/src/inl.cc): every byte of
#     its code;
#   - libc with libc6-dbg's compressed DWARF: every 7th byte of its code;
#   - the debug build of libstdc++ (libstdc++6-12-dbg), when installed;
# and the two outputs must be the same.  For the first two, dmprof's
# reader must also have answered (not declined in favour of libbfd).
# dmprof's reader answers the same with DMPROF_THREADS=1 (.debug_info
# inflated, then the abbreviation tables read, on one thread).
: "${tmp:?tests/real/run.sh sources this file, in its scratch directory}"
lib=$(dirname "$bin")/libdmprof.a
[ -e "$lib" ] || lib=$(dirname "$bin")/build/libdmprof.a
san=
case $lib in */asan/*) san="-fsanitize=address,undefined" ;; esac
# shellcheck disable=SC2086
if ! gcc -O1 $san -I"$top/include" -D_GNU_SOURCE -o dwarfcmp \
	"$top/tests/real/dwarfcmp.c" "$lib" -lpcre2-8 -lbfd -lcsv \
	-ldeflate -lz -lm -lpthread; then
	bad "dwarf: dwarfcmp does not build"
	return 0 2>/dev/null || exit 0
fi
g++ -O2 -g "$top/tests/real/src/inl.cc" -o inl || exit 1

# dwarf_same NAME BINARY STEP MUST_READ: compare the readers on BINARY's
# .text every STEP bytes (MUST_READ: dmprof's reader must answer).
dwarf_same() {
	d=dw-$1
	sh "$top/tests/bench/gen_symbolize.sh" "$2" 10 "$d" >/dev/null 2>&1 ||
		{ bad "dwarf: $1: no maps"; return; }
	readelf -SW "$2" | awk '$2 == ".text" { print $4, $6 } $3 == ".text" { print $5, $7 }' |
		head -1 | python3 -c '
import sys
s, z = (int(x, 16) for x in sys.stdin.read().split())
for a in range(s, s + z, int(sys.argv[1])): print("%x" % (0x7f0000000000 + a + 1))' "$3" >"$d/all.txt"
	DWARFCMP_VERBOSE=1 ./dwarfcmp "$d/maps.txt" "$d/all.txt" >"$d/own" 2>"$d/own.err"
	DMPROF_DWARF=libbfd ./dwarfcmp "$d/maps.txt" "$d/all.txt" >"$d/bfd" 2>/dev/null
	n=$(wc -l <"$d/all.txt")
	if cmp -s "$d/own" "$d/bfd" && [ "$n" -gt 100 ]; then
		ok
	else
		bad "dwarf: $1: $(diff "$d/own" "$d/bfd" | grep -c '^<') of $n addresses differ from libbfd's, e.g.:"
		diff "$d/own" "$d/bfd" | head -4
	fi
	if [ "$4" = 1 ]; then
		! grep -q "read by libbfd" "$d/own.err" && ok ||
			bad "dwarf: $1: $(grep -o 'read by libbfd.*' "$d/own.err")"
	fi
	# .debug_info inflated on a second thread while the abbreviation
	# tables are read, or before them on one: the same answers.
	DMPROF_THREADS=1 ./dwarfcmp "$d/maps.txt" "$d/all.txt" >"$d/own1" 2>/dev/null
	if cmp -s "$d/own" "$d/own1"; then
		ok
	else
		bad "dwarf: $1: $(diff "$d/own" "$d/own1" | grep -c '^<') of $n addresses differ with one thread, e.g.:"
		diff "$d/own" "$d/own1" | head -4
	fi
}

dwarf_same inl "$tmp/inl" 1 1
libc=/usr/lib/x86_64-linux-gnu/libc.so.6
# (Where two functions' ranges are as long, libbfd answers with the one
# whose record lies higher in its heap: in a plain build the later one,
# but under ASan's allocator, and after other allocations, not always:
# a few of libc's and libstdc++'s addresses.  So the big libraries are
# compared in plain builds only.)
stdcxx=/usr/lib/x86_64-linux-gnu/debug/libstdc++.so.6
if [ -n "$san" ]; then
	echo "real: note: libc's and libstdc++'s DWARF are compared in the plain build only (libbfd breaks ties by heap address)"
else
	if [ -n "$(find /usr/lib/debug/.build-id -name '*.debug' 2>/dev/null | head -1)" ] &&
		dpkg -s libc6-dbg >/dev/null 2>&1; then
		dwarf_same libc "$libc" 7 1
	else
		echo "real: note: libc6-dbg is not installed (make check installs it); libc's DWARF is not compared"
	fi
	[ -e "$stdcxx" ] && dwarf_same libstdcxx "$(readlink -f "$stdcxx")" 3 0
fi
