# Shared by the real-program tests (sourced): a scratch directory removed
# at exit, a private symbol cache, the repository's policies, and the
# ok/bad counters.  Sets tmp (and uses top, set by the caller).
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dmprof-real.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
export XDG_CACHE_HOME="$tmp/cache" DMPROF_POLICY_PATH="$top/policies" LC_ALL=C
# (For a sanitizer build run by hand; make sets it too.)
export LSAN_OPTIONS="${LSAN_OPTIONS:-suppressions=$top/tests/lsan.supp:print_suppressions=0}"
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { echo "FAIL $*"; fail=$((fail + 1)); }

# Wait (30 s at most) for a line matching PATTERN in FILE, written by
# process PID: 0, or 1 if it ended or the time ran out.
wait_line() { # FILE PATTERN PID
	for _ in $(seq 300); do
		grep -q "$2" "$1" 2>/dev/null && return 0
		kill -0 "$3" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

# Wait (10 s at most) for the redis-server on 127.0.0.1:PORT to answer.
redis_wait() { # PORT
	i=0
	until redis-cli -p "$1" ping >/dev/null 2>&1 || [ $i -ge 100 ]; do
		sleep 0.1
		i=$((i + 1))
	done
}

# A dump's numbers add up (the components between the markers to
# total-exclude-profiler), its total the kernel's Rss + Swap (0.5%).
dump_sums() { # LABEL FIRST_DUMP
	"$bin" csv --bytes "$2" >sums.csv 2>sums.err ||
		{ bad "$1: csv: $(head -2 sums.err)"; return; }
	grep -v 'has no symbols (stripped' sums.err >sums.warn
	[ -s sums.warn ] && bad "$1: the analyzer warns: $(head -2 sums.warn)" || ok
	awk -F, -v label="$1" '
	NR == 1 { for (i = 1; i <= NF; i++) { c[$i] = i; if ($i == "FROM_HERE_FOR_TOTAL") f = i; if ($i == "UNTIL_HERE_FOR_TOTAL") u = i } next }
	{
		s = 0; for (i = f + 1; i < u; i++) s += $i
		if (s != $c["total-exclude-profiler"]) { printf "FAIL %s: row %d: components %d, total-exclude-profiler %d\n", label, NR, s, $c["total-exclude-profiler"]; bad = 1 }
		k = $c["rss"] + $c["swap"]
		if ($c["total"] - k > k * 0.005 || k - $c["total"] > k * 0.005) { printf "FAIL %s: row %d: total %d, Rss+Swap %d\n", label, NR, $c["total"], k; bad = 1 }
		if ($c["mustbezero"] != 0) { printf "FAIL %s: row %d: mustbezero %d\n", label, NR, $c["mustbezero"]; bad = 1 }
	}
	END { exit bad }' sums.csv && ok || fail=$((fail + 1))
}
