#!/bin/sh
# make demo: README's first example, a small C++ server (tests/real/src,
# built as tests/real/cxxserver-build.sh builds it) recorded by dmprof
# record with no options, then read by top, diff and html; then a Python
# program recorded the same way (its lines named); then the sample run in
# samples/ (see samples/README) for expand and csv.  The pages it writes
# stay in build/demo/.
# Usage: samples/demo.sh DMPROF_BINARY
set -e
dmprof=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
out=$top/build/demo
mkdir -p "$out"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dmprof-demo.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
cd "$tmp"
run() {
	echo
	echo "\$ dmprof $*"
	"$dmprof" "$@"
}

if command -v g++ >/dev/null 2>&1; then
	echo "dmprof demo: README's C++ server (tests/real/src/cxxserver.cc: four threads,"
	echo "sessions never evicted, a plugin keeping a line per request, a 3 MiB arena),"
	echo "built g++ -g -O2, recorded with no options.  Who holds its memory?"
	src=$top/tests/real/src
	. "$top/tests/real/cxxserver-build.sh"
	cxxserver_build
	# (The server's one line of output is not dmprof's.)
	echo
	echo "\$ dmprof record -o prof/ -- ./cxxserver"
	"$dmprof" record -o prof/ -- ./cxxserver >/dev/null
	first=$(ls prof/cxxserver.*.heap | sort | head -1)
	before=$(grep -l '^Reason: main returned$' prof/cxxserver.*.heap | head -1)
	run top -n 4 "${before:-$(ls prof/cxxserver.*.heap | sort | tail -1)}"
	echo
	echo "What grew from the first dump up to teardown, which stacks did it,"
	echo "and which never stopped growing (leak suspects, marked *):"
	run diff -n 3 "$first"
	echo
	echo "All of it in one page: the answer, the chart, stacks and flame graphs:"
	run html -o "$out/cxxserver.html" "$first"
else
	echo "dmprof demo: no g++ here for README's C++ server; on to Python and the samples."
fi

# A Python program, if this machine has Debian's python3 (3.11).
py=$(command -v python3 || true)
[ -x /usr/bin/python3 ] && py=/usr/bin/python3
if [ -n "$py" ]; then
	app=$top/tests/real/src/pyapp/app.py
	echo
	echo "Now a Python program (tests/real/src/pyapp/app.py: words made by a"
	echo "comprehension, copies made through map(), a cache that grows, records"
	echo "kept), recorded the same way.  Its Python frames are named: each line"
	echo "owns the bytes it allocated, as Python's own tracemalloc counts them."
	echo
	echo "\$ dmprof record -o py/ -- python3 app.py"
	"$dmprof" record -o py/ -- "$py" "$app"
	first=$(ls py/*.0001.heap | head -1)
	# (At the run's peak, as top names it: before the interpreter's
	# teardown.)
	peak=$("$dmprof" top --json "$first" 2>/dev/null |
		sed -n 's/.*"peak": { "dump": "\([^"]*\)".*/\1/p')
	run top --lines -n 6 "${peak:-$first}"
	echo
	echo "\$ dmprof diff -n 3 $first | sed -n '/functions that grew/,/^\$/p'"
	"$dmprof" diff -n 3 "$first" 2>&1 | sed -n '/functions that grew/,/^$/p'
fi

cd "$here"
echo
echo "Further in, on samples/ (a cache server profiled by Chromium's deep heap"
echo "profiler): the stacks behind one component, two frames deep,"
run expand cachesrv.04242.0003.heap linux malloc-cxx-string 1
echo
echo "and the timeline, a row per snapshot, for a spreadsheet (sizes in bytes):"
run csv --bytes -p l1 cachesrv.04242.0001.heap
run html -p linux,l1 -o "$out/cachesrv.html" cachesrv.04242.0001.heap
echo
echo "Open the pages in build/demo/ in a browser."
