#!/bin/sh
# make demo: run dmprof on the sample run in samples/ (see samples/README).
# Usage: samples/demo.sh DMPROF_BINARY
set -e
dmprof=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
cd "$(dirname "$0")"
run() {
	echo
	echo "\$ dmprof $*"
	"$dmprof" "$@"
}
echo "dmprof demo: a cache server, profiled three times 10 s apart."
echo "Where did its memory go, and how did that change? (sizes in bytes)"
run csv --bytes -p l1 cachesrv.04242.0001.heap
echo
echo "tc-catch-all grows fastest.  Which stacks allocated it?"
run expand cachesrv.04242.0003.heap l1 tc-catch-all 2
echo
echo "And the mmap'd regions outside tcmalloc?"
run expand cachesrv.04242.0003.heap l1 mmap-catch-all 1

# A recording of a live program, if this machine has python3.
py=$(command -v python3 || true)
[ -x /usr/bin/python3 ] && py=/usr/bin/python3
if [ -n "$py" ]; then
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/dmprof-demo.XXXXXX")
	trap 'rm -rf "$tmp"' EXIT INT TERM
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
	echo
	echo "Every byte of it, in MiB, beside what the kernel counted (rss):"
	run csv "$first"
	last=$(ls "${first%.0001.heap}".*.heap | sort | tail -2 | head -1)
	echo
	echo "Who allocated malloc-python, in $(basename "$last")?  (the top ten)"
	echo
	echo "\$ dmprof expand $last linux malloc-python 3 | head"
	"$dmprof" expand "$last" linux malloc-python 3 >"$tmp/expand"
	head "$tmp/expand"
fi
