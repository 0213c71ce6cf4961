#!/bin/sh
# Every test suite on one build, one after the other (a failing suite
# does not stop the others).  Each prints its own last line,
# "NAME: N passed, N failed" or "NAME: SKIP: why"; this collects them in
# RESULTS, a line per suite: "LABEL NAME PASSED FAILED SKIPPED", which
# tests/verdict.sh sums up.
# Usage: tests/suites.sh LABEL DMPROF UNIT_TESTS SHARED RESULTS [SUITE...]
set -u
label=$1 bin=$2 unit=$3 shared=$4 results=$5
shift 5
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dmprof-suites.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
: >"$results"
rm -f "$results.failed"
failed=0
[ $# -gt 0 ] || set -- unit golden compat real recorder hostile browser threads

for suite in "$@"; do
	case $suite in
	unit)
		# (Under ASan one test at a time: Criterion 2.4.1's runner
		# leaks a block when tests with a .timeout run in parallel
		# jobs, and LeakSanitizer would count it.)
		if [ "$label" = asan ]; then
			set -- "$unit" --jobs 1
		else
			set -- "$unit"
		fi ;;
	golden) set -- sh tests/golden/run.sh "$bin" ;;
	compat) set -- sh tests/compat/run.sh "$bin" "$shared" ;;
	real) set -- sh tests/real/run.sh "$bin" ;;
	recorder) set -- sh tests/real/recorder.sh "$bin" ;;
	hostile) set -- sh tests/hostile/run.sh "$bin" ;;
	browser) set -- sh tests/browser/run.sh "$bin" ;;
	threads) set -- sh tests/threads/run.sh "$bin" ;;
	install) set -- sh tests/install/run.sh ;;
	*) echo "suites: unknown suite '$suite'" >&2; exit 2 ;;
	esac
	{ "$@"; echo $? >"$tmp/rc"; } 2>&1 | tee "$tmp/log"
	rc=$(cat "$tmp/rc" 2>/dev/null || echo 1)
	if [ "$suite" = unit ]; then
		# Criterion: "Synthesis: Tested: T | Passing: P | Failing: F | Crashing: C"
		line=$(sed -n 's/.*Synthesis: Tested: *[0-9]* | Passing: *\([0-9]*\) | Failing: *\([0-9]*\) | Crashing: *\([0-9]*\).*/\1 \2 \3/p' "$tmp/log" | tail -1)
		set -- $line
		if [ $# = 3 ]; then p=$1 f=$(($2 + $3)); else p=0 f=1; fi
		s=0
	else
		last=$(grep "^$suite: " "$tmp/log" | tail -1)
		case $last in
		*": SKIP: "*) p=0 f=0 s=1 ;;
		*" passed, "*" failed")
			p=$(echo "$last" | sed 's/.*: \([0-9]*\) passed.*/\1/')
			f=$(echo "$last" | sed 's/.* \([0-9]*\) failed.*/\1/')
			s=0 ;;
		*) p=0 f=1 s=0 ;; # it died before its verdict
		esac
	fi
	# A suite that failed without counting it is one failure, and so is
	# a sanitizer's report that no test counted (a leak at exit).
	[ "$rc" != 0 ] && [ "$f" = 0 ] && [ "$s" = 0 ] && f=1
	if [ "$f" = 0 ] && grep -q 'ERROR: \(Address\|Leak\|Thread\)Sanitizer\|: runtime error: ' "$tmp/log"; then
		echo "$suite: a sanitizer reported an error above"
		f=1
	fi
	echo "$label $suite $p $f $s" >>"$results"
	# What failed, for the verdict at the very end (a long log's middle
	# may be cut where it is shown): its FAIL lines, or its last lines.
	if [ "$f" != 0 ]; then
		grep -E '^FAIL|\[FAIL\]|Assertion Failed|ERROR: (Address|Leak|Thread)Sanitizer|: runtime error: ' \
			"$tmp/log" >"$tmp/failed" || tail -5 "$tmp/log" >"$tmp/failed"
		head -20 "$tmp/failed" | cut -c1-300 |
			sed "s/^/  $label $suite: /" >>"$results.failed"
	fi
	[ "$f" = 0 ] || failed=1
done
exit $failed
