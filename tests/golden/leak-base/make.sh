#!/bin/sh
# Writes the leak-* golden cases' input: tests/real/src/leak.c (a flat
# cache, a leak from two callers, churn, a shrinking pool; see there), run
# under Debian's tcmalloc heap profiler, which dumps after each of its five
# rounds.  Kept: prof.0001.heap ... prof.0005.heap (not the at-exit dump),
# with the binary's path made /opt/leak/bin/leak, and prof.symmap/, the
# binary's symbols as the original's symbol maps hold them (nm, readelf -e,
# and the source file of each address), so the cases need no binary.
# Not part of the build: run it by hand after changing leak.c (needs gcc
# and libgoogle-perftools4), then review the goldens it changes.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/leak-base.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
cp "$here/../../real/src/leak.c" "$tmp/"
cd "$tmp"
gcc -g -O0 -fno-pie -no-pie leak.c -o leak -ldl
env LD_PRELOAD="/lib/x86_64-linux-gnu/libgcc_s.so.1 /usr/lib/x86_64-linux-gnu/libtcmalloc.so.4" \
	TCMALLOC_STACKTRACE_METHOD=libgcc HEAPPROFILE="$tmp/prof" \
	HEAP_PROFILE_ALLOCATION_INTERVAL=1099511627776 \
	HEAP_PROFILE_INUSE_INTERVAL=1099511627776 ./leak >/dev/null 2>&1
for n in 1 2 3 4 5; do
	sed "s|$tmp/leak\$|/opt/leak/bin/leak|" prof.000$n.heap >"$here/prof.000$n.heap"
done
sm=$here/prof.symmap
rm -rf "$sm"
mkdir "$sm"
# The symbol map's maps, as the original's hold them: the last dump's.
sed '1,/^MAPPED_LIBRARIES:/d' "$here/prof.0005.heap" >"$sm/maps"
nm -n --format bsd -C leak >"$sm/leak.nm"
readelf -eW leak >"$sm/leak.readelf-e"
# ADDRESS FILE, from the line table.
readelf -wL leak | awk '$3 ~ /^0x/ { print substr($3, 3), $1 }' >"$sm/leak.readelf-wL"
cat >"$sm/files.json" <<'JSON'
{
  "/opt/leak/bin/leak": {
    "nm": {"file": "leak.nm", "format": "bsd", "mangled": false},
    "readelf-e": {"file": "leak.readelf-e"},
    "readelf-debug-decodedline-file": {"file": "leak.readelf-wL"}
  }
}
JSON
