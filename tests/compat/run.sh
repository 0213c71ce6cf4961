#!/bin/sh
# Compatibility tests: dmprof against what the original printed on its own
# test data (../shared/compat/chromium, see its expected/README.md).  The
# data is read where it lies, never copied into the repository; tests that
# need pinned modification times work on a scratch copy.  Skips, saying so,
# when the shared directory is absent.
# Usage: tests/compat/run.sh DMPROF_BINARY [SHARED_DIR]

set -u
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
top=$(cd "$(dirname "$0")/../.." && pwd)
export DMPROF_POLICY_PATH="$top/policies"
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

# Section g.4: the component of every bucket under every policy (the
# reference's table; mmap buckets 4 and 7 classify the same everywhere).
while read -r policy want; do
	(cd "$data" && "$bin" buckets -p "$policy" heap.01234.0001.heap 2>/dev/null) |
		awk '{ sub(/^[^=]*=/, "", $2); printf "%s%s", sep, $2; sep = " " } END { print "" }' >"$tmp/got"
	if [ "$(cat "$tmp/got")" = "$want" ]; then
		pass=$((pass + 1))
	else
		echo "FAIL classify $policy: got '$(cat "$tmp/got")', want '$want'"
		fail=$((fail + 1))
	fi
done <<'TABLE'
l0 tc-used-all tc-used-all tc-used-all mmap-profiler tc-used-all tc-used-all mmap-tcmalloc
l1 tc-catch-all tc-webkit-catch-all tc-webkit-catch-all mmap-profiler tc-catch-all tc-v8 mmap-tcmalloc
l2 tc-catch-all tc-webcore-docwriter-add tc-webkit-catch-all mmap-profiler tc-catch-all tc-wtf-HashTable-user-catch-all mmap-tcmalloc
android.renderer tc-catch-all tc-webcore-docwriter-add tc-webkit-catch-all mmap-profiler tc-catch-all tc-wtf-HashTable-user-catch-all mmap-tcmalloc
android.webview tc-catch-all tc-webcore-docwriter-add tc-webkit-catch-all mmap-profiler tc-catch-all tc-wtf-HashTable-user-catch-all mmap-tcmalloc
t0 tc-no-typeinfo-other tc-other tc-other mmap-profiler tc-no-typeinfo-other tc-no-typeinfo-other mmap-tcmalloc
sourcefile tc-catch-all tc-catch-all tc-catch-all mmap-profiler tc-catch-all tc-catch-all mmap-tcmalloc
android.browser tc-catch-all tc-catch-all tc-catch-all mmap-profiler tc-catch-all tc-catch-all mmap-tcmalloc
TABLE

# Sections g.5-g.9 on the scratch copy, whose dump times are pinned.
d=$tmp/data
for p in l0 l1 l2 t0 sourcefile; do
	# The original measured each dump's time from itself (reference f.7):
	# the second dump is 10 s after the first, and dmprof says so.
	awk '/ for heap.01234.0002.heap:$/ { two = 1 }
	     two && $1 == "second" { printf "%40s %12.3f\n", "second", 10; two = 0; next }
	     { print }' "$exp/list-$p.stdout" >"$tmp/list-$p.expected"
	check "list-$p" "$tmp/list-$p.expected" "$d" list -p "$p" heap.01234.0001.heap
done
check csv-l0 "$exp/csv-l0.stdout" "$d" csv -p l0 heap.01234.0001.heap
check csv-l0-t0 "$exp/csv-l0-t0.stdout" "$d" csv -p l0,t0 heap.01234.0001.heap
# Blocks come in label order, whatever the order of -p.
check csv-t0-l0 "$exp/csv-l0-t0.stdout" "$d" csv -p t0,l0 heap.01234.0001.heap
# The original ended its JSON without a newline; dmprof ends the line.
{ cat "$exp/json-l0.stdout"; echo; } >"$tmp/json-l0.expected"
check json-l0 "$tmp/json-l0.expected" "$d" json -p l0 heap.01234.0001.heap
check expand-0 "$exp/expand-l0-tcusedall-0.stdout" "$d" expand --original heap.01234.0001.heap l0 tc-used-all 0
check expand-2 "$exp/expand-l0-tcusedall-2.stdout" "$d" expand --original heap.01234.0001.heap l0 tc-used-all 2
check expand-l2 "$exp/expand-l2-docwriter-0.stdout" "$d" expand --original heap.01234.0001.heap l2 tc-webcore-docwriter-add 0
# pprof appends PREFIX.maps, which the data lacks: the fallback is used.
check pprof-l0 "$exp/pprof-l0.stdout" "$d" pprof --original heap.01234.0001.heap l0
# Every shipped policy is the original, rule for rule.
for p in l0 l1 l2 t0 sourcefile android.browser android.renderer android.webview; do
	"$bin" policy convert "$compat/policy.$p.json" | sed '1,2d' >"$tmp/conv-$p.expected"
	check "policy-$p" "$tmp/conv-$p.expected" . policy convert "$top/policies/$p.policy"
done

echo "compat: $pass passed, $fail failed"
[ $fail = 0 ]
