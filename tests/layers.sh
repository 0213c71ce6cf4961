#!/bin/sh
# The pipeline's layering: a file of one stage may include the headers of
# its own stage and of those before it, never of a later one (see
# README's source layout).  A header's stage is that of the .c file of
# its name; the header-only ones are listed below.  Prints each upward
# include as FILE:LINE: what is wrong, and exits 1 if there is one.
# Usage: tests/layers.sh [TOP]
set -u
top=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$top" || exit 2
stages="core model read memory symbol load policy analyze cli"
# Headers without a .c of their own: NAME STAGE.
header_only="search.h core
leb128.h core
python_offsets.h core
perfmap_name.h core"

rank() {
	i=0
	for s in $stages; do
		[ "$s" = "$1" ] && { echo $i; return; }
		i=$((i + 1))
	done
	echo -1
}

# The stage of header H (its base name), or nothing if not the project's.
stage_of() {
	for s in $stages; do
		[ -f "src/$s/${1%.h}.c" ] && { echo "$s"; return; }
	done
	echo "$header_only" | awk -v h="$1" '$1 == h { print $2 }'
}

# check FILE STAGE: the project's headers FILE includes.
status=0
check() {
	r=$(rank "$2")
	grep -n '^#include "[^"]*"' "$1" | while IFS= read -r l; do
		line=${l%%:*}
		h=$(echo "$l" | sed 's/.*#include "\([^"]*\)".*/\1/')
		hs=$(stage_of "$(basename "$h")")
		[ -n "$hs" ] || continue
		if [ "$(rank "$hs")" -gt "$r" ]; then
			echo "$1:$line: a $2 file includes \"$h\", of the later stage $hs"
		fi
	done
}

out=$(
	for s in $stages; do
		for f in src/$s/*.c src/$s/*.h; do
			[ -f "$f" ] && check "$f" "$s"
		done
	done
	for f in include/*.h; do
		s=$(stage_of "$(basename "$f")")
		[ -n "$s" ] && check "$f" "$s"
	done
)
if [ -n "$out" ]; then
	echo "$out"
	status=1
fi
for f in include/*.h; do
	[ -n "$(stage_of "$(basename "$f")")" ] ||
		{ echo "$f: of no stage (no src/STAGE/$(basename "${f%.h}").c; list it in tests/layers.sh)"; status=1; }
done
exit $status
