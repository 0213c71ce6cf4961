#!/bin/sh
# make demo: run dmprof on the sample run in samples/ (see samples/README),
# then on a live program it records.
# Usage: samples/demo.sh DMPROF_BINARY
set -e
dmprof=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
cd "$(dirname "$0")"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dmprof-demo.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
run() {
	echo
	echo "\$ dmprof $*"
	"$dmprof" "$@"
}
echo "dmprof demo: a cache server, profiled three times 10 s apart."
echo "What is eating its memory at the last dump?"
run top -n 6 cachesrv.04242.0003.heap
echo
echo "What grew over the run, and which stacks did it?"
run diff -n 3 cachesrv.04242.0001.heap
echo
echo "The stacks behind one component, two frames deep:"
run expand cachesrv.04242.0003.heap linux malloc-cxx-string 1
echo
echo "The timeline, a row per snapshot, for a spreadsheet (sizes in bytes):"
run csv --bytes -p l1 cachesrv.04242.0001.heap
echo
echo "All of it in one page, under two policies:"
run html -p linux,l1 -o "$tmp/cachesrv.html" cachesrv.04242.0001.heap

# A recording of a live program, if this machine has python3.
py=$(command -v python3 || true)
[ -x /usr/bin/python3 ] && py=/usr/bin/python3
if [ -n "$py" ]; then
	echo
	echo "Now a live program: Python building lists for 2 s, a dump every"
	echo "half second, recorded by dmprof's own recorder."
	run record -o "$tmp/py" -i 0.5 -- "$py" -c '
import time
keep, t = [], time.time()
while time.time() - t < 2:
    keep.append(["row %d" % i for i in range(20000)])
    time.sleep(0.05)
'
	first=$(ls "$tmp"/py.*.0001.heap | head -1)
	last=$(ls "${first%.0001.heap}".*.heap | sort | tail -2 | head -1)
	echo
	echo "What is big at the end (the kernel's Rss beside the components):"
	run top -n 5 "$last"
	echo
	echo "What grew until then, and the leak suspects (stacks that kept"
	echo "growing):"
	echo
	echo "\$ dmprof diff -n 3 $first $last | head -24"
	"$dmprof" diff -n 3 "$first" "$last" >"$tmp/diff" 2>&1
	head -24 "$tmp/diff"
fi
echo
echo "Try 'dmprof html samples/cachesrv.04242.0001.heap' and open the page."
