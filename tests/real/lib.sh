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
