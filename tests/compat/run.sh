#!/bin/sh
# Compatibility tests: dmprof against what the original printed on its own
# test data (../shared/compat/chromium, see its expected/README.md).  The
# data is read where it lies, never copied into the repository; tests that
# need pinned modification times work on a scratch copy.  Skips, saying so,
# when the shared directory is absent.
# Usage: tests/compat/run.sh DMPROF_BINARY [SHARED_DIR]

set -u
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
shared=${2:-$(dirname "$0")/../../../shared}
compat=$shared/compat/chromium
if [ ! -d "$compat/tests/data" ] || [ ! -d "$compat/expected" ]; then
	echo "compat: SKIP: $compat not found (the original's test data lives outside the repository)"
	exit 0
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dmprof-compat.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
# A scratch copy with the dump times the expected outputs were made with.
cp -R "$compat/tests/data" "$tmp/data"
chmod -R u+w "$tmp/data"
touch -d @1700000000 "$tmp/data/heap.01234.0001.heap"
touch -d @1700000010 "$tmp/data/heap.01234.0002.heap"

pass=0 fail=0
# check NAME EXPECTED_FILE DIR COMMAND...: stdout of COMMAND run in DIR
# must equal EXPECTED_FILE byte for byte, and it must exit 0.
check() {
	name=$1 expected=$2 dir=$3
	shift 3
	if ! (cd "$dir" && env LC_ALL=C TZ=UTC XDG_CACHE_HOME="$tmp/cache" \
		"$bin" "$@" >"$tmp/out" 2>"$tmp/err"); then
		echo "FAIL $name: exit status $?"; sed 's/^/    /' "$tmp/err"
		fail=$((fail + 1))
		return
	fi
	if cmp -s "$expected" "$tmp/out"; then
		pass=$((pass + 1))
	else
		echo "FAIL $name: output differs from $expected"
		diff -u "$expected" "$tmp/out" | head -30 | sed 's/^/    /'
		fail=$((fail + 1))
	fi
}

data=$compat/tests/data
exp=$compat/expected
# Read in place: the shared copy is read-only and dmprof must not write.
check buckets "$compat/tests/output/buckets" "$data" buckets heap.01234.0001.heap
check buckets-abs "$compat/tests/output/buckets" / buckets "$(cd "$data" && pwd)/heap.01234.0001.heap"
check stacktrace "$exp/stacktrace.stdout" "$data" stacktrace heap.01234.0001.heap

echo "compat: $pass passed, $fail failed"
[ $fail = 0 ]
