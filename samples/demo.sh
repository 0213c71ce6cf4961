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
echo "dmprof demo: a cache server profiled three times, 10 s apart."
run stacktrace cachesrv.04242.0003.heap
run buckets cachesrv.04242.0001.heap
