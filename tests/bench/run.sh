#!/bin/sh
# make bench: dmprof's speed against a baseline measured in the same run,
# on inputs generated here (nothing large is committed).  Prints one table
# row per case: what was measured, the baseline's and dmprof's wall time
# and peak RSS, and the ratio baseline/dmprof.
# Usage: tests/bench/run.sh DMPROF_BINARY [CASE...]
set -u
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
shift
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
work=${BENCH_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/dmprof-bench.XXXXXX")}
[ -n "${BENCH_DIR:-}" ] || trap 'rm -rf "$work"' EXIT INT TERM
mkdir -p "$work"
export LC_ALL=C DMPROF_POLICY_PATH="$top/policies"
cases=${*:-symbolize-dynsym symbolize-dwarf}

# measure NAME COMMAND...: run it, set $secs and $rss_kb.
measure() {
	name=$1
	shift
	/usr/bin/time -f '%e %M' -o "$work/time.$name" "$@" \
		>"$work/out.$name" 2>"$work/err.$name"
	rc=$?
	read -r secs rss_kb <"$work/time.$name"
	[ $rc = 0 ] || { echo "bench: $name failed:"; tail -3 "$work/err.$name"; }
	return $rc
}

row() { # CASE WHAT BASE_S BASE_KB DMPROF_S DMPROF_KB
	printf '%-22s %-34s %9.2f s %8d MB %9.3f s %6d MB %8.1fx\n' "$1" "$2" \
		"$3" $(($4 / 1024)) "$5" $(($6 / 1024)) \
		"$(echo "$3 / ($5 + 0.0005)" | bc -l)"
}

printf '%-22s %-34s %22s %20s %9s\n' case measured baseline dmprof ratio

symbolize() { # CASE BINARY [ADDR2LINE_FLAGS]
	case=$1 target=$2 flags=${3:-}
	if [ ! -r "$target" ]; then
		echo "bench: $case: $target is missing (make bench installs it)"
		return
	fi
	d=$work/$case
	sh "$here/gen_symbolize.sh" "$target" 100000 "$d" || return
	n=$(sort -u "$d/addrs.txt" | wc -l)
	# shellcheck disable=SC2086
	measure a2l-$case addr2line -f -C $flags -e "$target" <"$d/addrs.txt" || return
	base_s=$secs base_kb=$rss_kb
	measure cold-$case "$bin" stacktrace --no-symbol-cache "$d/sym.0001.heap"
	row "$case" "$n addrs, cold, vs addr2line $flags" $base_s $base_kb $secs $rss_kb
	# Fill the cache, then read it.
	XDG_CACHE_HOME=$d/cache "$bin" stacktrace "$d/sym.0001.heap" >/dev/null 2>&1
	XDG_CACHE_HOME=$d/cache measure warm-$case "$bin" stacktrace "$d/sym.0001.heap"
	row "$case" "$n addrs, cache warm" $base_s $base_kb $secs $rss_kb
	cmp -s "$work/out.cold-$case" "$work/out.warm-$case" ||
		echo "bench: $case: the warm cache changed the output!"
}

for c in $cases; do
	case $c in
	symbolize-dynsym)
		# A large Debian binary: 110 MB, 35,000 exported functions.
		symbolize $c /usr/lib/x86_64-linux-gnu/libLLVM-14.so.1 ;;
	symbolize-dwarf)
		# libc, with libc6-dbg's compressed DWARF: dmprof resolves
		# inlined frames, so addr2line does too (-i).
		symbolize $c /usr/lib/x86_64-linux-gnu/libc.so.6 -i ;;
	*)
		echo "bench: unknown case $c" ;;
	esac
done
