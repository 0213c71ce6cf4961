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
