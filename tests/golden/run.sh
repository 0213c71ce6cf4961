#!/bin/sh
# Golden end-to-end tests.  Each directory tests/golden/CASE/ holds:
#   cmd              shell commands, run with sh in a scratch copy of CASE/,
#                    with `dmprof` on PATH being the binary under test
#   expected.stdout  exact expected standard output (absent: must be empty)
#   expected.stderr  exact expected standard error (absent: must be empty)
#   expected.status  expected exit status (absent: 0)
# Inputs live beside cmd.  The environment is clean: LC_ALL=C, TZ=UTC.
# Usage: tests/golden/run.sh DMPROF_BINARY [CASE...]
# Updating goldens is deliberate: GOLDEN_UPDATE=1 rewrites expected files.

set -u
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
shift
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dmprof-golden.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
mkdir "$tmp/bin"
ln -s "$bin" "$tmp/bin/dmprof"

if [ $# -gt 0 ]; then cases=$*; else cases=$(cd "$here" && ls -d */ | tr -d /); fi
pass=0 fail=0
for c in $cases; do
	src=$here/$c
	[ -f "$src/cmd" ] || continue
	work=$tmp/work/$c
	mkdir -p "$work"
	cp -R "$src/." "$work/"
	(
		cd "$work" || exit 1
		env -i PATH="$tmp/bin:/usr/bin:/bin" HOME="$tmp" LC_ALL=C \
			TZ=UTC TOP="$top" XDG_CACHE_HOME="$tmp/cache" \
			DMPROF_POLICY_PATH="$top/policies" \
			sh ./cmd >"$tmp/out" 2>"$tmp/err"
		echo $? >"$tmp/status"
	)
	want_status=0
	[ -f "$src/expected.status" ] && want_status=$(cat "$src/expected.status")
	got_status=$(cat "$tmp/status")
	ok=1
	for s in stdout stderr; do
		f=out; [ $s = stderr ] && f=err
		if [ "${GOLDEN_UPDATE:-}" = 1 ]; then
			if [ -s "$tmp/$f" ]; then cp "$tmp/$f" "$src/expected.$s"
			else rm -f "$src/expected.$s"; fi
			continue
		fi
		if [ -f "$src/expected.$s" ]; then
			if ! diff -u "$src/expected.$s" "$tmp/$f" >"$tmp/diff"; then
				echo "FAIL $c: $s differs"; sed 's/^/    /' "$tmp/diff" | head -40; ok=0
			fi
		elif [ -s "$tmp/$f" ]; then
			echo "FAIL $c: unexpected $s:"; sed 's/^/    /' "$tmp/$f" | head -20; ok=0
		fi
	done
	if [ "${GOLDEN_UPDATE:-}" = 1 ]; then
		if [ "$got_status" != 0 ]; then echo "$got_status" >"$src/expected.status"
		else rm -f "$src/expected.status"; fi
	elif [ "$got_status" != "$want_status" ]; then
		echo "FAIL $c: exit status $got_status, expected $want_status"; ok=0
	fi
	if [ $ok = 1 ]; then pass=$((pass + 1)); else fail=$((fail + 1)); fi
done
echo "golden: $pass passed, $fail failed"
[ $fail = 0 ]
