#!/bin/sh
# The verdict of make check, from the results of tests/suites.sh on each
# build: a line per suite, why suites were skipped, and last
# "N passed, N failed" (", N skipped" where a suite skipped).  A build
# whose results are missing did not get to run: a failure.  Then what
# failed, the lines tests/suites.sh kept in RESULTS.failed.
# Usage: tests/verdict.sh RESULTS...
pass=0 fail=0 skip=0
echo
echo "make check:"
for r in "$@"; do
	if [ ! -s "$r" ]; then
		echo "  $r: no results (the build or the run stopped early)"
		fail=$((fail + 1))
		continue
	fi
	while read -r label suite p f s; do
		if [ "$s" != 0 ]; then
			printf '  %-6s %-9s skipped (see its SKIP line above)\n' "$label" "$suite"
		else
			printf '  %-6s %-9s %5d passed, %d failed\n' "$label" "$suite" "$p" "$f"
		fi
		pass=$((pass + p)) fail=$((fail + f)) skip=$((skip + s))
	done <"$r"
done
# What failed, as each suite said it (its first lines of FAIL).
for r in "$@"; do
	[ -s "$r.failed" ] && { echo "failures ($r):"; cat "$r.failed"; }
done
if [ $skip -gt 0 ]; then
	echo "$pass passed, $fail failed, $skip skipped"
else
	echo "$pass passed, $fail failed"
fi
[ $fail = 0 ]
