# The newcomer's path on a small leaking program (src/leak.c: a flat
# cache, a leak from two callers, churn, a shrinking pool), profiled by
# Debian's tcmalloc and by dmprof record (sourced by run.sh: uses bin,
# src, tmp, tcmalloc, libgcc, ok and bad).  The checks:
#   - top: each function's flat bytes exactly as google-pprof --text
#     --show_bytes gives them for the same gperftools dump;
#   - diff over the run: the leak is the first function and the first two
#     stacks among growers, with its exact growth (4 rounds of 6 blocks of
#     3000 bytes: +72000), marked as a leak suspect; the pool shrank by
#     4 rounds of 4 blocks of 8 KiB; the churn allocated 1 MiB a round;
#   - expand ... 0: leak_record on one line, its two callers' 30 blocks
#     summed;
#   - folded -c: the lines add up to the component's csv bytes;
#   - the same story from dmprof record's dumps.
: "${tmp:?tests/real/run.sh sources this file, in its scratch directory}"
gcc -g -O0 -fno-pie -no-pie "$src/leak.c" -o leak -ldl || exit 1
mkdir -p leaktc
env LD_PRELOAD="$libgcc $tcmalloc" TCMALLOC_STACKTRACE_METHOD=libgcc \
	HEAPPROFILE="$tmp/leaktc/prof" \
	HEAP_PROFILE_ALLOCATION_INTERVAL=1099511627776 \
	HEAP_PROFILE_INUSE_INTERVAL=1099511627776 ./leak >/dev/null 2>&1
lfirst=leaktc/prof.0001.heap lfifth=leaktc/prof.0005.heap

leak_checks() { # WHAT FIRST FIFTH: the checks both profilers' runs pass
	what=$1 first=$2 fifth=$3
	"$bin" diff -b --json "$first" "$fifth" 2>/dev/null >diff.json
	sed -n '/"functions": \[/,/^  \]/p' diff.json | sed -n 2p |
		grep -q '"name": "leak_record", .*"change": 72000, "allocs": 24, "frees": 0, .*"leak_suspect": true' &&
		ok || bad "$what: diff: leak_record is not the first grower with +72000: $(sed -n '/"functions"/{n;p;}' diff.json)"
	sed -n '/"stacks": \[/,/^  \]/p' diff.json | sed -n '2,3p' >stacks.json
	grep -c '"stack": "leak_record .* <- handle_\(get\|put\) .*"change": \(48000\|24000\),.*"leak_suspect": true' stacks.json |
		grep -qx 2 && ok || bad "$what: diff: the two leaking stacks do not come first"
	grep -q '"name": "pool_init", .*"change": -131072, .*"frees": 16,' diff.json &&
		ok || bad "$what: diff: the pool did not shrink by 131072"
	grep -q '"name": "churn", .*"change": 0, "allocs": 64, "frees": 64' diff.json &&
		ok || bad "$what: diff: churn's 64 blocks allocated and freed are not shown"
	"$bin" diff "$first" "$fifth" 2>/dev/null | grep -q '^ *+70\.3 KiB .*\* leak_record (' &&
		ok || bad "$what: diff's text does not mark the leak"
	"$bin" expand "$fifth" linux malloc-app 0 2>/dev/null >expand.out
	[ "$(grep -c ' leak_record (' expand.out)" = 1 ] &&
		grep -q '^ *90000  alloc=30 free=0  leak_record (' expand.out &&
		ok || bad "$what: expand 0 does not print leak_record once, 30 blocks: $(grep leak_record expand.out)"
	want=$("$bin" csv -b "$fifth" 2>/dev/null | awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "malloc-app") c = i } NR == 2 { print $c }')
	got=$("$bin" folded -c malloc-app "$fifth" 2>/dev/null | awk '{ s += $NF } END { print s + 0 }')
	[ -n "$want" ] && [ "$want" = "$got" ] &&
		ok || bad "$what: folded -c malloc-app sums to $got, csv says $want"
}

if [ -e "$lfifth" ]; then
	# top's flat bytes against google-pprof's, function by function.
	google-pprof --text --show_bytes ./leak "$lfifth" 2>/dev/null |
		awk 'NR > 1 && $1 > 0 { print $6, $1 }' | sort >pprof.flat
	"$bin" top -b --json --owner=pprof -n 1000 "$lfifth" 2>/dev/null |
		sed -n 's/.*"name": "\([^"]*\)".*"flat": \([1-9][0-9]*\),.*/\1 \2/p' | sort >top.flat
	if [ -s pprof.flat ] && cmp -s pprof.flat top.flat; then ok; else
		bad "top's flat bytes differ from google-pprof --text:"
		paste -d'|' pprof.flat top.flat
	fi
	grep -qx 'leak_record 90000' top.flat && ok ||
		bad "top: leak_record does not own its 90000 bytes"
	leak_checks tcmalloc "$lfirst" "$lfifth"
else
	bad "the leak program under tcmalloc wrote no fifth dump"
fi

"$bin" record -o "$tmp/leakrec/r" -i 0 -- ./leak >/dev/null 2>&1 ||
	bad "dmprof record ./leak failed"
rfirst=$(ls leakrec/r.*.0001.heap 2>/dev/null | head -1)
rfifth=$(ls leakrec/r.*.0005.heap 2>/dev/null | head -1)
if [ -n "$rfifth" ]; then
	leak_checks "dmprof record" "$rfirst" "$rfifth"
	# Over the whole run, with its at-exit dump: still a suspect.
	"$bin" diff --json "$rfirst" 2>/dev/null |
		grep -q '"name": "leak_record", .*"leak_suspect": true' &&
		ok || bad "dmprof record: over the whole run the leak is no suspect"
else
	bad "dmprof record ./leak wrote no fifth dump"
fi

# csv --long of both runs into sqlite3, README's query: the leak run's
# malloc-app lost 59072 bytes from its first dump to its last (the pool
# shrank more than the leak grew).
if command -v sqlite3 >/dev/null 2>&1 && [ -e "$lfifth" ]; then
	"$bin" csv --long "$lfirst" "$rfirst" 2>/dev/null >rows.csv
	sqlite3 -cmd 'CREATE TABLE rows(run TEXT, pid INT, snapshot INT, time REAL, policy TEXT, component TEXT, bytes INT)' \
		-cmd '.import --csv --skip 1 rows.csv rows' :memory: "
		SELECT run, max(last) - max(first) FROM (SELECT run, component,
		  first_value(bytes) OVER w AS first, last_value(bytes) OVER w AS last
		  FROM rows WHERE policy = 'linux' AND component = 'malloc-app'
		  AND snapshot <= 5
		  WINDOW w AS (PARTITION BY run, component ORDER BY snapshot
		    ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING))
		GROUP BY run ORDER BY run" >sql.out 2>&1
	[ "$(cut -d'|' -f2 sql.out | sort -u)" = -59072 ] && [ "$(wc -l <sql.out)" = 2 ] &&
		ok || bad "csv --long into sqlite3: $(cat sql.out)"
fi
