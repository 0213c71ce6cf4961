#!/bin/sh
# make bench: dmprof's speed against a baseline measured in the same run,
# on inputs generated here (nothing large is committed).  Prints one table
# row per case: what was measured, the baseline's and dmprof's wall time
# and peak RSS, and the ratio baseline/dmprof; then the recorder's
# overhead beside heaptrack's and gperftools' on the same program, as the
# slowdown over the program alone; then the targets (issues 14, 27, 36,
# 41), met or not.  The figures that ratios are taken of are each the
# best of three runs.
# Usage: tests/bench/run.sh DMPROF_BINARY [CASE...]
set -u
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
shift
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
work=${BENCH_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/dmprof-bench.XXXXXX")}
[ -n "${BENCH_DIR:-}" ] || trap 'rm -rf "$work"' EXIT INT TERM
mkdir -p "$work"
export LC_ALL=C DMPROF_POLICY_PATH="$top/policies" XDG_CACHE_HOME="$work/cache"
cases=${*:-gperf-1m gperf-pool deep parse gperf-series symbolize-dynsym symbolize-dwarf recorder recorder-programs python snapshot daemon python-heap core}

# wait_ready SECONDS: until the program started in the background says
# "ready" in $d/ready, or SECONDS have gone by.
wait_ready() {
	for _ in $(seq $(($1 * 10))); do
		grep -q '^ready$' "$d/ready" 2>/dev/null && break
		sleep 0.1
	done
}

# measure NAME COMMAND...: run it, set $secs (wall, to the millisecond:
# time(1) says only hundredths), $rss_kb (peak) and $cpu (percent of one
# core).  The measuring's own cost (time(1) started, the clock read by
# date: 4-5 ms here, a fifth of a 25 ms run) is taken off: the fastest
# of five runs of true, measured so, the first time.
wrap_ns=
measure() {
	name=$1
	shift
	if [ -z "$wrap_ns" ]; then
		wrap_ns=0
		for _ in 1 2 3 4 5; do
			t0=$(date +%s%N)
			/usr/bin/time -f '%e %M %P' -o "$work/time.wrap" true
			t1=$(date +%s%N)
			if [ "$wrap_ns" = 0 ] || [ $((t1 - t0)) -lt "$wrap_ns" ]; then
				wrap_ns=$((t1 - t0))
			fi
		done
	fi
	t0=$(date +%s%N)
	/usr/bin/time -f '%e %M %P' -o "$work/time.$name" "$@" \
		>"$work/out.$name" 2>"$work/err.$name"
	rc=$?
	t1=$(date +%s%N)
	read -r secs rss_kb cpu <"$work/time.$name"
	cpu=${cpu%\%}
	t1=$((t1 - wrap_ns))
	[ "$t1" -gt "$t0" ] || t1=$((t0 + 1000000))
	secs=$(echo "($t1 - $t0) / 1000000000" | bc -l)
	[ $rc = 0 ] || { echo "bench: $name failed:"; tail -3 "$work/err.$name"; }
	return $rc
}

# best3 NAME COMMAND...: measure three times and keep the fastest run's
# figures.  (Runs on this 2-core machine vary by a third: the floor of
# three is what a ratio can be taken of.)  $before, if set, runs first
# each time.
before=
best3() {
	b_s= b_kb= b_cpu=
	for i in 1 2 3; do
		[ -z "$before" ] || $before
		measure "$@" || return
		if [ -z "$b_s" ] || [ "$(echo "$secs < $b_s" | bc)" = 1 ]; then
			b_s=$secs b_kb=$rss_kb b_cpu=$cpu
		fi
	done
	secs=$b_s rss_kb=$b_kb cpu=$b_cpu
}

# best3_short NAME COMMAND...: best3 for what runs under 5 s (where a
# third's noise matters), one run for what takes longer (addr2line on a
# .dynsym: 20-30 s a run).
best3_short() {
	measure "$@" || return
	[ "$(echo "$secs < 5" | bc)" = 1 ] || return 0
	best3 "$@"
}

row() { # CASE WHAT BASE_S BASE_KB DMPROF_S DMPROF_KB
	printf '%-22s %-34s %9.2f s %8d MB %9.3f s %6d MB %8.3gx\n' "$1" "$2" \
		"$3" $(($4 / 1024)) "$5" $(($6 / 1024)) \
		"$(echo "$3 / ($5 + 0.0005)" | bc -l)"
}

printf '%-22s %-34s %22s %20s %9s\n' case measured baseline dmprof ratio

# The targets (issues 14, 27, 36, 41), as the cases meet them: printed at
# the end.
targets=$work/targets
: >"$targets"
target() { # WHAT MEASURED VERDICT
	printf '%-52s %-24s %s\n' "$1" "$2" "$3" >>"$targets"
}
# "met" if A <= B (or, with ge, A >= B), else "not met".
at_most() { [ "$(echo "$1 <= $2" | bc -l)" = 1 ] && echo met || echo "not met"; }
at_least() { [ "$(echo "$1 >= $2" | bc -l)" = 1 ] && echo met || echo "not met"; }
ratio_of() { printf '%.2fx' "$(echo "$1 / ($2 + 0.0005)" | bc -l)"; }
# Within F times the time of BASE: WHAT BASE_S DMPROF_S F.
within() {
	r=$(echo "$3 / ($2 + 0.0005)" | bc -l)
	target "$1" "$(printf '%.2fx its time' "$r")" "$(at_most "$r" "$4")"
}

# What fresh memory costs now (tests/bench/faultcost.c: 256 MB written a
# byte a page, in 4 KiB pages, then in huge ones), at the start and at the
# end: dmprof's big cases fault in hundreds of MB where awk faults in two,
# and on this virtual machine a huge page cost 2 ms after a pause and 0.2
# ms just after a free (README, "Speed"), so it says what phase the rows
# were measured in.
fault_cost() { # WHEN
	[ -x "$work/faultcost" ] ||
		gcc -O2 -o "$work/faultcost" "$here/faultcost.c" || return
	# shellcheck disable=SC2046 # (two numbers)
	set -- "$1" $("$work/faultcost" 256)
	[ $# = 3 ] || return
	printf '%-22s %-34s 4 KiB pages %.0f ms, huge pages %.0f ms\n' \
		machine "fresh 256 MB written ($1)" "$2" "$3"
	target "machine: fresh 256 MB at the $1, 4 KiB/huge pages" \
		"$(printf '%.0f ms, %.0f ms' "$2" "$3")" stated
}

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
	best3_short a2l-$case sh -c 'exec addr2line -f -C $1 -e "$2" <"$3"' sh \
		"$flags" "$target" "$d/addrs.txt" || return
	base_s=$secs base_kb=$rss_kb
	best3 cold-$case "$bin" stacktrace --no-symbol-cache "$d/sym.0001.heap"
	row "$case" "$n addrs, cold, vs addr2line $flags" $base_s $base_kb $secs $rss_kb
	cold_s=$secs cold_kb=$rss_kb
	[ -n "$flags" ] && target "DWARF cold: 5x addr2line -i" \
		"$(ratio_of "$base_s" "$secs")" "$(at_least "$(echo "$base_s / $secs" | bc -l)" 5)"
	# pprof's symbolizer of choice: one batch, inlined frames as dmprof.
	if command -v llvm-symbolizer >/dev/null 2>&1; then
		sed 's/^/0x/' "$d/addrs.txt" >"$d/addrs0x.txt"
		inl=--no-inlines
		[ -n "$flags" ] && inl=--inlines
		best3 llvm-$case sh -c 'exec llvm-symbolizer --obj="$1" "$2" <"$3"' \
			sh "$target" $inl "$d/addrs0x.txt" || return
		row "$case" "$n addrs, cold, vs llvm-symbolizer" $secs $rss_kb \
			$cold_s $cold_kb
		[ -n "$flags" ] && target "DWARF cold: 2x llvm-symbolizer" \
			"$(ratio_of "$secs" "$cold_s")" \
			"$(at_least "$(echo "$secs / $cold_s" | bc -l)" 2)"
	else
		echo "bench: $case: llvm-symbolizer is missing (make bench installs llvm)"
	fi
	# Fill the cache, then read it.
	XDG_CACHE_HOME=$d/cache "$bin" stacktrace "$d/sym.0001.heap" >/dev/null 2>&1
	XDG_CACHE_HOME=$d/cache best3 warm-$case "$bin" stacktrace \
		"$d/sym.0001.heap"
	row "$case" "$n addrs, cache warm" $base_s $base_kb $secs $rss_kb
	[ -n "$flags" ] && target "DWARF warm (cache): 20x addr2line -i" \
		"$(ratio_of "$base_s" "$secs")" "$(at_least "$(echo "$base_s / $secs" | bc -l)" 20)"
	cmp -s "$work/out.cold-$case" "$work/out.warm-$case" ||
		echo "bench: $case: the warm cache changed the output!"
}

# The big synthetic deep run (gen_deep.c): 100 snapshots of 100,000 stack
# lines over 1,000,000 buckets 10 to 30 frames deep, with MMAP_LIST, and
# symbols for Chromium-like names; generated once for deep and parse.
deep_run() {
	d=$work/deep
	if [ ! -e "$d/deep.01234.0100.heap" ]; then
		gcc -O2 -o "$work/gen_deep" "$here/gen_deep.c" || return 1
		"$work/gen_deep" "$d" 100 100000 1000000 || return 1
	fi
	deep_files=$(ls "$d"/deep.01234.*.heap "$d"/deep.01234.*.buckets)
	# shellcheck disable=SC2086
	deep_mb=$(cat $deep_files | wc -c | awk '{ printf "%.0f", $1 / 1048576 }')
}

# One awk pass over FILES...: the floor for reading text at all (each
# line's second field summed, as one would total a profile by hand).
awk_pass() { # NAME FILE...
	n=$1
	shift
	best3 "$n" awk '{ s += $2 } END { print s }' "$@" || return
}

# keep_best PREFIX: the last measure into PREFIX_s, PREFIX_kb, PREFIX_cpu
# when it is the fastest so far (PREFIX_s empty: none yet).
keep_best() {
	eval "_b=\${${1}_s}"
	if [ -z "$_b" ] || [ "$(echo "$secs < $_b" | bc)" = 1 ]; then
		eval "${1}_s=\$secs ${1}_kb=\$rss_kb ${1}_cpu=\$cpu"
	fi
}

# csv_vs_awk AWK_NAME CSV_NAME FILE: one awk pass over FILE and dmprof's
# csv of it, in turns, three times each, each's fastest run kept (as
# best3): base_s and base_kb are awk's, secs and rss_kb dmprof's.  (In
# turns: this machine's speed moved by a tenth and more within a minute,
# awk 0.47 to 0.54 s, so that a ratio of two runs taken one after the
# other said as much of the machine as of dmprof.)
csv_vs_awk() {
	a_s= c_s=
	for _ in 1 2 3; do
		measure "$1" awk '{ s += $2 } END { print s }' "$3" || return
		keep_best a
		measure "$2" "$bin" csv --no-symbol-cache "$3" || return
		keep_best c
	done
	base_s=$a_s base_kb=$a_kb secs=$c_s rss_kb=$c_kb cpu=$c_cpu
}

deep() {
	deep_run || return
	# shellcheck disable=SC2086
	awk_pass awk-deep $deep_files || return
	base_s=$secs base_kb=$rss_kb
	best3 csv-l2 "$bin" csv -p l2 "$d/deep.01234.0001.heap" || return
	row deep "$deep_mb MB: csv -p l2, vs awk" $base_s $base_kb $secs $rss_kb
	csv_s=$secs csv_kb=$rss_kb
	within "deep: csv -p l2 within 0.7x of one awk pass" $base_s $secs 0.7
	target "deep: csv -p l2 under 2.5 s" "$(printf '%.2f s' "$secs")" \
		"$(at_most "$secs" 2.5)"
	target "deep: both cores busy (CPU over 150% of one)" "$cpu%" \
		"$(at_least "$cpu" 150)"
	target "deep: peak RSS no higher than 307 MB" "$((rss_kb / 1024)) MB" \
		"$(at_most $((rss_kb / 1024)) 307)"
	measure expand-l2 "$bin" expand "$d/deep.01234.0050.heap" l2 \
		tc-webkit-catch-all 3 || return
	row deep "one snapshot: expand -p l2 depth 3" $base_s $base_kb $secs $rss_kb
	# The answers, beside csv's time and peak RSS over the same run: top
	# and folded read one snapshot, diff and html all of them.
	measure top-l2 "$bin" top -p l2 "$d/deep.01234.0100.heap" || return
	row deep "top -p l2, 1 snapshot, vs csv" $csv_s $csv_kb $secs $rss_kb
	within "deep: top within 1.2x of csv's time" $csv_s $secs 1.2
	measure folded-l2 "$bin" folded -p l2 "$d/deep.01234.0100.heap" || return
	row deep "folded -p l2, 1 snapshot, vs csv" $csv_s $csv_kb $secs $rss_kb
	within "deep: folded within 1.2x of csv's time" $csv_s $secs 1.2
	best3 diff-l2 "$bin" diff -p l2 "$d/deep.01234.0001.heap" || return
	row deep "diff -p l2, 100 snaps, vs csv" $csv_s $csv_kb $secs $rss_kb
	within "deep: diff within 1.2x of csv's time" $csv_s $secs 1.2
	# (The page with two policies, beside csv asked for the same two.)
	best3 csv-l2l1 "$bin" csv -p l2,l1 "$d/deep.01234.0001.heap" || return
	csv2_s=$secs csv2_kb=$rss_kb
	best3 html-l2 "$bin" html -p l2,l1 -o "$work/deep.html" \
		"$d/deep.01234.0001.heap" || return
	row deep "html -p l2,l1, vs csv -p l2,l1" $csv2_s $csv2_kb $secs $rss_kb
	within "deep: html within 1.2x of csv's time (2 policies)" $csv2_s $secs 1.2
	html_page "$work/deep.html"
	# How cost grows: the same million buckets over 10, 30 and 1000
	# snapshots instead of 100 (time should follow the input, memory
	# the distinct buckets), per snapshot.
	for k in 10 30 100 1000; do
		if [ $k = 100 ]; then
			grow deep "csv -p l2, 100 snapshots" $csv_s $csv_kb 100 \
				snapshot
			continue
		fi
		dk=$work/deep$k
		last=$(printf '%s/deep.01234.%04d.heap' "$dk" $k)
		[ -e "$last" ] ||
			"$work/gen_deep" "$dk" $k 100000 1000000 || return
		cat "$dk"/deep.01234.*.heap "$dk"/deep.01234.*.buckets \
			>/dev/null
		measure csv-l2-$k "$bin" csv -p l2 "$dk/deep.01234.0001.heap" ||
			return
		grow deep "csv -p l2, $k snapshots" $secs $rss_kb $k snapshot
	done
}

# A row of how cost grows: CASE WHAT SECONDS KB [UNITS UNIT]: with
# UNITS, what one UNIT costs, in time and in peak RSS.
grow() {
	printf '%-22s %-34s %22s %9.3f s %6d MB' "$1" "$2" "" "$3" \
		$(($4 / 1024))
	if [ $# -ge 6 ]; then
		printf '   %8.2f us, %7.1f B per %s' \
			"$(echo "1000000 * $3 / $5" | bc -l)" \
			"$(echo "1024 * $4 / $5" | bc -l)" "$6"
	fi
	printf '\n'
}

# The 1,000,000-stack gperftools profile: frames are call sites in real
# Debian ELF files (libLLVM's, libc's, libstdc++'s exported functions),
# so symbolizing them is real work.  Beside one awk pass over the file,
# and go tool pprof -top where go is installed; then 10^4 and 10^5 stacks
# of the same kind, to show how cost grows.
# call_sites DIR CASE N MIN LIB...: N call sites in each LIB of Debian's
# (those installed; MIN of them at least, else CASE says so and fails),
# the K-th mapped at 0x7f0000000000 + K * 2^36, into DIR/addrs (return
# addresses, one per line) and DIR/maps (their mappings); made once.
call_sites() {
	dir=$1 what=$2 n=$3 min=$4
	shift 4
	[ -s "$dir/addrs" ] && return
	: >"$dir/addrs.tmp"
	: >"$dir/maps"
	k=0
	for lib in "$@"; do
		lib=/usr/lib/x86_64-linux-gnu/$lib
		if [ ! -r "$lib" ]; then
			echo "bench: $what: $lib is missing: left out"
			continue
		fi
		k=$((k + 1))
		sh "$here/gen_symbolize.sh" "$lib" $n "$dir/lib$k" \
			"$(printf '0x%x' $((0x7f0000000000 + k * 0x1000000000)))" ||
			return 1
		cat "$dir/lib$k/frames.txt" >>"$dir/addrs.tmp"
		cat "$dir/lib$k/maps.txt" >>"$dir/maps"
	done
	if [ $k -lt $min ]; then
		echo "bench: $what: $k binaries found, $min wanted"
		return 1
	fi
	mv "$dir/addrs.tmp" "$dir/addrs"
}

gperf_1m() {
	d=$work/gperf1m
	mkdir -p "$d"
	gcc -O2 -o "$work/gen_gperf" "$here/gen_gperf.c" || return
	call_sites "$d" gperf-1m 40000 3 libLLVM-14.so.1 libc.so.6 \
		libstdc++.so.6 || return
	for n in 10000 100000 1000000 10000000; do
		[ -s "$d/p$n.0001.heap" ] ||
			"$work/gen_gperf" $n "$d/addrs" "$d/maps" >"$d/p$n.0001.heap" ||
			return
	done
	f=$d/p1000000.0001.heap
	mb=$(($(wc -c <"$f") / 1048576))
	csv_vs_awk awk-1m csv-1m "$f" || return
	row gperf-1m "$mb MB, 10^6 stacks: csv, vs awk" $base_s $base_kb $secs $rss_kb
	csv_s=$secs csv_kb=$rss_kb
	within "gperf-1m: csv within 1.0x of one awk pass" $base_s $secs 1.0
	target "gperf-1m: peak RSS below the file's $mb MB" \
		"$((rss_kb / 1024)) MB" "$(at_most $((rss_kb / 1024)) $((mb - 1)))"
	if command -v go >/dev/null 2>&1; then
		export GOCACHE="$work/gocache"
		measure pprof-1m go tool pprof -top "$f" || return
		row gperf-1m "the same, vs go tool pprof -top" $secs $rss_kb \
			$csv_s $csv_kb
	else
		echo "bench: gperf-1m: go is missing (make check installs golang-go)"
	fi
	# How cost grows, per stack: 10^4 to 10^7 stacks of the same kind.
	for n in 10000 100000 1000000 10000000; do
		if [ $n = 1000000 ]; then
			grow gperf-1m "csv, 10^6 stacks" $csv_s $csv_kb $n stack
			continue
		fi
		# (Measured once: read first, so that the page cache is
		# warm for it as for the best of three.)
		cat "$d/p$n.0001.heap" >/dev/null
		measure csv-$n "$bin" csv --no-symbol-cache "$d/p$n.0001.heap" ||
			return
		grow gperf-1m "csv, 10^$((${#n} - 1)) stacks" $secs $rss_kb $n stack
	done
}

# The same profile's size and shape from a second generator (issue 41):
# its frames drawn from a larger pool, 60,000 call sites in each of up
# to eight binaries (those installed; four at least), down a call tree
# four times as wide, so that stacks share fewer frames.
gperf_pool() {
	d=$work/gperfpool
	mkdir -p "$d"
	gcc -O2 -o "$work/gen_gperf" "$here/gen_gperf.c" || return
	call_sites "$d" gperf-pool 60000 4 libLLVM-14.so.1 libc.so.6 \
		libstdc++.so.6 libpython3.11.so.1.0 libcrypto.so.3 \
		libbfd-2.40-system.so libpcre2-8.so.0 libicuuc.so.72 || return
	f=$d/p1000000.0001.heap
	[ -s "$f" ] || "$work/gen_gperf" 1000000 "$d/addrs" "$d/maps" wide >"$f" ||
		return
	mb=$(($(wc -c <"$f") / 1048576))
	nbin=$(grep -c ' r-xp ' "$d/maps")
	csv_vs_awk awk-pool csv-pool "$f" || return
	row gperf-pool "$mb MB, 10^6 stacks, $nbin binaries: csv, vs awk" \
		$base_s $base_kb $secs $rss_kb
	within "gperf-pool: csv within 1.0x of one awk pass" $base_s $secs 1.0
	target "gperf-pool: peak RSS below the file's $mb MB" \
		"$((rss_kb / 1024)) MB" "$(at_most $((rss_kb / 1024)) $((mb - 1)))"
}

# The page's size, and how long a headless chromium takes to load it and
# run its script (the script's own time, in the DOM, beside).
html_page() {
	kb=$(($(wc -c <"$1") / 1024))
	if ! command -v chromium >/dev/null 2>&1; then
		printf '%-22s %-34s %9d KB  (chromium missing: no load time)\n' \
			deep "html page size" "$kb"
		return
	fi
	measure chromium chromium --headless --no-sandbox --disable-gpu \
		--user-data-dir="$work/chromium" --dump-dom "file://$1" || return
	init=$(grep -o 'data-init-ms="[0-9]*"' "$work/out.chromium" | tr -dc 0-9)
	printf '%-22s %-34s %9d KB %9.3f s load (script %s ms) %6d MB\n' deep \
		"html page: size, chromium load" "$kb" "$secs" "${init:-?}" \
		$((rss_kb / 1024))
}

# Parsing alone: the same files under a policy of three catch-alls.
parse() {
	deep_run || return
	printf 'dmprof-policy 1\ncolumns second malloc mmap unhooked\n%s\n%s\n%s\n' \
		'rule malloc malloc' 'rule mmap mmap' 'rule unhooked unhooked' \
		>"$work/min.policy"
	# shellcheck disable=SC2086
	awk_pass awk-parse $deep_files || return
	base_s=$secs base_kb=$rss_kb
	best3 parse "$bin" csv -p "$work/min.policy" "$d/deep.01234.0001.heap" ||
		return
	row parse "$deep_mb MB: csv, 3 rules, vs awk" $base_s $base_kb $secs $rss_kb
	printf '%-22s %-34s %17.0f MB/s %15.0f MB/s\n' parse "throughput" \
		"$(echo "$deep_mb / ($base_s + 0.0005)" | bc -l)" \
		"$(echo "$deep_mb / ($secs + 0.0005)" | bc -l)"
	mbs=$(echo "$deep_mb / ($secs + 0.0005)" | bc -l)
	target "parse: raw parse of the deep run at 1 GB/s" \
		"$(printf '%.0f MB/s' "$mbs")" "$(at_least "$mbs" 1000)"
}

# A gperftools series of a real program (the recorder's workload under
# Debian's tcmalloc heap profiler): dmprof over the whole series against
# google-pprof --text once per snapshot, and on one snapshot.
gperf_series() {
	tcmalloc=/usr/lib/x86_64-linux-gnu/libtcmalloc.so.4
	libgcc=/lib/x86_64-linux-gnu/libgcc_s.so.1
	if [ ! -r $tcmalloc ] || ! command -v google-pprof >/dev/null; then
		echo "bench: gperf-series: tcmalloc or google-pprof missing (make bench installs them)"
		return
	fi
	d=$work/gperf
	mkdir -p "$d"
	g++ -O2 -g -pthread "$here/alloc_workload.cc" -o "$d/workload" || return
	env LD_PRELOAD="$libgcc $tcmalloc" TCMALLOC_STACKTRACE_METHOD=libgcc \
		HEAPPROFILE="$d/prof" HEAP_PROFILE_ALLOCATION_INTERVAL=2000000 \
		"$d/workload" 2 >/dev/null 2>&1
	n=$(ls "$d"/prof.*.heap | wc -l)
	last=$(ls "$d"/prof.*.heap | sort | tail -1)
	measure pprof-loop sh -c 'for f in "$1"/prof.*.heap; do
		google-pprof --text "$1/workload" "$f" >/dev/null 2>&1 || exit 1
	done' sh "$d" || return
	base_s=$secs base_kb=$rss_kb
	measure csv-gperf "$bin" csv "$d/prof.0001.heap" || return
	row gperf-series "$n snapshots: csv, vs pprof --text each" $base_s $base_kb \
		$secs $rss_kb
	measure pprof-one google-pprof --text "$d/workload" "$last" || return
	base_s=$secs base_kb=$rss_kb
	measure expand-gperf "$bin" expand --no-symbol-cache "$last" linux \
		malloc-cxx-string 1 ||
		return
	row gperf-series "one snapshot: expand, vs pprof --text" $base_s $base_kb \
		$secs $rss_kb
}

# The recorder's overhead: wall time of an allocation-heavy program run
# under each heap profiler, over its time alone; every one of them keeps
# the stack of every allocation (no sampling), 32 frames deep.
recorder() {
	rec=$(dirname "$bin")/libdmprof-recorder.so
	tcmalloc=/usr/lib/x86_64-linux-gnu/libtcmalloc.so.4
	libgcc=/lib/x86_64-linux-gnu/libgcc_s.so.1
	d=$work/recorder
	mkdir -p "$d"
	g++ -O2 -g -pthread "$here/alloc_workload.cc" -o "$d/workload" || return
	rounds=40
	printf '\n%-22s %-34s %9s %9s %9s\n' case profiler wall "peak RSS" slowdown
	# (Each run writes its dumps afresh.)
	fresh_out() { rm -rf "$d/out" && mkdir -p "$d/out"; }
	before=fresh_out
	line() { # WHAT
		printf '%-22s %-34s %7.2f s %6d MB %8.1fx\n' recorder "$1" "$secs" \
			$((rss_kb / 1024)) "$(echo "$secs / $plain_s" | bc -l)"
	}
	best3 plain "$d/workload" $rounds || return
	plain_s=$secs plain_kb=$rss_kb
	line "none (the program alone)"
	if best3 dmprof env HEAPPROFILE="$d/out/prof" HEAP_PROFILE_MMAP=1 \
		DEEP_HEAP_PROFILE=1 LD_PRELOAD="$rec" "$d/workload" $rounds; then
		line "dmprof record"
		r=$(echo "$secs / $plain_s" | bc -l)
		target "recorder: slowdown 1.3x or less, every stack kept" \
			"$(printf '%.2fx' "$r")" "$(at_most "$r" 1.3)"
		target "recorder: its memory, stated" \
			"+$(((rss_kb - plain_kb) / 1024)) MB peak RSS" stated
	fi
	if command -v heaptrack >/dev/null 2>&1; then
		best3 heaptrack heaptrack -o "$d/out/ht" "$d/workload" $rounds &&
			line "heaptrack"
	else
		echo "bench: heaptrack is missing (make bench installs it)"
	fi
	if [ -r $tcmalloc ]; then
		# Its fastest setup (see gperftools-format.md): libgcc's
		# unwinder, preloaded before libtcmalloc.
		best3 tcmalloc env LD_PRELOAD="$libgcc $tcmalloc" \
			TCMALLOC_STACKTRACE_METHOD=libgcc HEAPPROFILE="$d/out/tc" \
			HEAP_PROFILE_MMAP=1 "$d/workload" $rounds &&
			line "tcmalloc heap profiler"
	else
		echo "bench: $tcmalloc is missing (make bench installs it)"
	fi
	cmp -s "$work/out.plain" "$work/out.dmprof" ||
		echo "bench: recorder: the program's output changed under dmprof!"
	before=
}

# The recorder on programs of Debian, under dmprof record against the
# plain run: make -j2 of a generated C project of 100 files (a process
# per compiler stage of each: short processes, each starting and exiting
# under the recorder), sqlite3 filling a table, ruby and node building a
# hash of a million entries (node also with the flags that have it write
# a perf map, which names its JavaScript frames).  Runs alternate, plain then recorded, three
# of each; the slowdown is the medians' ratio, of the wall time (CPU time,
# user + system, beside it).  Every stack is kept (no sampling).
recorder_programs() {
	d=$work/recorder-programs
	mkdir -p "$d/proj"
	# The C project: 100 small files and a Makefile.
	i=0
	while [ $i -lt 100 ]; do
		printf '#include <stdio.h>\nint f%d(int x);\nint f%d(int x)\n{\n\tchar b[32];\n\tsnprintf(b, sizeof(b), "%%d", x * %d);\n\treturn b[0] + x;\n}\n' \
			$i $i $i >"$d/proj/f$i.c"
		i=$((i + 1))
	done
	{
		printf 'int f0(int x);\nint main(void) { return f0(1) == 0; }\n'
	} >"$d/proj/main.c"
	# shellcheck disable=SC2016 # (make's variables, not the shell's)
	printf '%s\n' 'SRCS = $(wildcard *.c)' 'prog: $(SRCS:.c=.o)' \
		'	$(CC) -o $@ $^' '%.o: %.c' '	$(CC) -O1 -c -o $@ $<' \
		'clean:' '	rm -f *.o prog' >"$d/proj/Makefile"
	# The table: 200,000 rows in one transaction.
	awk 'BEGIN { print "CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, n REAL);"
		print "BEGIN;"
		for (i = 0; i < 200000; i++)
			printf "INSERT INTO t VALUES(%d, \x27name-%d-%s\x27, %d.5);\n", i, i * 7, substr("abcdefghijklmnopqrstuvwxyz", i % 26 + 1), i % 1000
		print "COMMIT;"
		print "SELECT count(*), sum(n) FROM t;" }' >"$d/fill.sql"
	printf '\n%-22s %-34s %9s %9s %9s %9s\n' case program plain record slowdown \
		"cpu"
	prog_row make "make -j2, 101 files" make -s -C "$d/proj" -j2
	prog_row sqlite3 "sqlite3, 200k INSERTs" sqlite3 "$d/db" ".read $d/fill.sql"
	if command -v ruby >/dev/null 2>&1; then
		prog_row ruby "ruby, a hash of 10^6" ruby -e \
			'h = {}; 1_000_000.times { |i| h["k#{i}"] = i }; puts h.size'
	else
		echo "bench: ruby is missing"
	fi
	if command -v node >/dev/null 2>&1; then
		prog_row node "node, a Map of 10^6" node -e \
			'const m = new Map(); for (let i = 0; i < 1e6; i++) m.set("k" + i, i); console.log(m.size)'
		# The same with the flags that name its JavaScript frames
		# (README; V8's log, which they start, not written), the perf
		# maps it writes in /tmp removed after.
		maps_before=$(ls /tmp/perf-*.map 2>/dev/null)
		prog_row node-perfmap "node --perf-basic-prof, Map 10^6" \
			node --perf-basic-prof --interpreted-frames-native-stack \
			--logfile=/dev/null -e \
			'const m = new Map(); for (let i = 0; i < 1e6; i++) m.set("k" + i, i); console.log(m.size)'
		for f in /tmp/perf-*.map; do
			case " $(echo $maps_before) " in
			*" $f "*) ;;
			*) rm -f "$f" ;;
			esac
		done
	else
		echo "bench: node is missing"
	fi
}

# Before each run of recorder_programs' programs: no build, no database.
# (The dumps stay until the row is done: on ext4 without a journal, a
# file made within 30 s of many deleted costs a scan past each of them,
# which a run would pay for the one before it.)
prog_fresh() {
	make -s -C "$d/proj" clean >/dev/null 2>&1
	rm -f "$d/db"
}

# prog_row NAME WHAT COMMAND...: five runs plain and five recorded,
# alternating; a row of the medians and a target.  (Of three, the make
# row moved between 1.60x and 1.81x in two runs of the bench minutes
# apart, and 1.54x in eight alternated runs between them.)
prog_row() {
	pname=$1 what=$2
	shift 2
	: >"$d/plain.t"
	: >"$d/rec.t"
	rm -rf "$d/out"
	for i in 1 2 3 4 5; do
		for how in plain rec; do
			prog_fresh
			if [ $how = plain ]; then
				set -- env "$@"
			else
				mkdir -p "$d/out/$i"
				set -- "$bin" record -o "$d/out/$i/" -- "$@"
			fi
			t0=$(date +%s%N)
			/usr/bin/time -f '%U %S' -o "$d/cpu" "$@" \
				>"$d/out.$pname.$how" 2>"$d/err.$pname.$how"
			rc=$?
			t1=$(date +%s%N)
			if [ $how = plain ]; then shift 1; else shift 5; fi
			if [ $rc != 0 ]; then
				echo "bench: $pname ($how) failed:"
				tail -3 "$d/err.$pname.$how"
				return
			fi
			read -r u s <"$d/cpu"
			echo "$(echo "($t1 - $t0) / 1000000000" | bc -l) $(echo "$u + $s" | bc -l)" \
				>>"$d/$how.t"
		done
		[ $i = 1 ] && [ "$pname" = make ] &&
			nproc_rec=$(find "$d/out/1" -name '*.0001.heap' | wc -l)
	done
	rm -rf "$d/out"
	med() { sort -g -k"$2" "$1" | sed -n '3p' | cut -d' ' -f"$2"; }
	p_s=$(med "$d/plain.t" 1) r_s=$(med "$d/rec.t" 1)
	p_c=$(med "$d/plain.t" 2) r_c=$(med "$d/rec.t" 2)
	r=$(echo "$r_s / ($p_s + 0.0005)" | bc -l)
	[ "$pname" = make ] && what="$what, $nproc_rec processes"
	printf '%-22s %-34s %7.2f s %7.2f s %8.2fx %8.2fx\n' recorder-programs \
		"$what" "$p_s" "$r_s" "$r" "$(echo "$r_c / ($p_c + 0.0005)" | bc -l)"
	target "recorder: $pname 1.3x or less, every stack kept" \
		"$(printf '%.2fx' "$r")" "$(at_most "$r" 1.3)"
	cmp -s "$d/out.$pname.plain" "$d/out.$pname.rec" ||
		echo "bench: recorder: $pname's output changed under dmprof record!"
}

# CPython programs (tests/bench/pywork.py: dicts and strings, json round
# trips, class instances) alone, under dmprof record, and under Python's
# own tracemalloc keeping 25 frames: alternated, three of each, medians.
# dmprof records every object with its Python frames (no sampling).
python_rows() {
	d=$work/python
	py=/usr/bin/python3.11
	if [ ! -x "$py" ]; then
		echo "bench: python: $py is missing"
		return
	fi
	mkdir -p "$d"
	printf '\n%-22s %-24s %8s %8s %11s %9s %9s\n' case workload plain record \
		tracemalloc "record" "tracemalloc"
	for w in dictstr json objects; do
		python_row "$w"
	done
	echo "python                 memray, its own published figures (not measured here): about 1.45x"
	echo "python                 by default, about 2.3x tracking Python's allocator (pyperformance means)"
}

# Plain and record alternated seven times, tracemalloc in the first three
# rounds: the medians.  (A run on this machine is now and then a third
# slower, plain or recorded: the median of three was hit one time in
# three or so, of seven seldom.)
python_row() { # WORKLOAD
	w=$1
	: >"$d/plain.t"
	: >"$d/rec.t"
	: >"$d/tm.t"
	for i in 1 2 3 4 5 6 7; do
		for how in plain rec tm; do
			[ $how = tm ] && [ $i -gt 3 ] && continue
			rm -rf "$d/out"
			case $how in
			plain) set -- "$py" ;;
			rec) set -- "$bin" record -o "$d/out/" -- "$py" ;;
			tm) set -- "$py" -X tracemalloc=25 ;;
			esac
			t0=$(date +%s%N)
			"$@" "$here/pywork.py" "$w" >"$d/out.$how" 2>"$d/err.$how" ||
				{ echo "bench: python $w ($how) failed:"; tail -3 "$d/err.$how"; return; }
			t1=$(date +%s%N)
			echo "($t1 - $t0) / 1000000000" | bc -l >>"$d/$how.t"
		done
	done
	rm -rf "$d/out"
	med() { sort -g "$1" | sed -n "$((($(wc -l <"$1") + 1) / 2))p"; }
	p_s=$(med "$d/plain.t") r_s=$(med "$d/rec.t") t_s=$(med "$d/tm.t")
	r=$(echo "$r_s / ($p_s + 0.0005)" | bc -l)
	t=$(echo "$t_s / ($p_s + 0.0005)" | bc -l)
	printf '%-22s %-24s %6.2f s %6.2f s %9.2f s %8.2fx %8.2fx\n' python "$w" \
		"$p_s" "$r_s" "$t_s" "$r" "$t"
	target "python: $w under record 1.5x or less" "$(printf '%.2fx' "$r")" \
		"$(at_most "$r" 1.5)"
	target "python: $w, a fifth of tracemalloc's slowdown" \
		"$(printf '%.2fx of %.2fx' "$r" "$t")" "$(at_most "$r" "$(echo "$t / 5" | bc -l)")"
	cmp -s "$d/out.plain" "$d/out.rec" ||
		echo "bench: python: $w's output changed under dmprof record!"
}

# A row of how long a process stood still: WHAT FLOOR_S HELD_S.
stop_row() {
	printf '%-22s %-34s %9.2f s %11s %9.3f s %9s %8.3gx\n' snapshot "$1" \
		"$2" "" "$3" "" "$(echo "$2 / ($3 + 0.0005)" | bc -l)"
}

# held_thrice DIR PID: three snapshots of PID into DIR/out/, each after
# reading its anonymous memory once (heapread all): the least of each,
# in seconds, in floor, held (it stood still) and took (in all).
held_thrice() {
	floor= held= took=
	for i in 1 2 3; do
		f=$("$1/heapread" $2 all | awk '{ print $2 / 1000 }')
		"$bin" snapshot -o "$1/out/" $2 >"$1/snap.err" 2>&1
		h=$(sed -n 's/.* stood still \([0-9.]*\) ms.*/\1/p' "$1/snap.err" |
			awk '{ print $1 / 1000 }')
		t=$(sed -n 's/.*the snapshot took \([0-9.]*\) ms.*/\1/p' "$1/snap.err" |
			awk '{ print $1 / 1000 }')
		floor=$(least "$floor" "$f") held=$(least "$held" "$h")
		took=$(least "$took" "$t")
	done
}

least() { # A B: the smaller number (A may be empty)
	if [ -z "$1" ] || [ "$(echo "$2 < $1" | bc -l)" = 1 ]; then
		echo "$2"
	else
		echo "$1"
	fi
}
most() { # A B: the greater number (A may be empty)
	if [ -z "$1" ] || [ "$(echo "$2 > $1" | bc -l)" = 1 ]; then
		echo "$2"
	else
		echo "$1"
	fi
}

# A running process's 1 GB heap of 10 M blocks (tests/real/src/heapknown.c
# in its big mode): how long dmprof heap and dmprof snapshot hold it
# still, against reading the same heap's bytes with process_vm_readv, the
# floor of any walk from outside; and chap's count leaked on a core of it
# (gcore), where chap is found.  The best of three each.
snapshot() {
	d=$work/snapshot
	mkdir -p "$d"
	gcc -O2 -pthread "$top/tests/real/src/heapknown.c" -o "$d/heapknown" &&
		gcc -O2 "$here/heapread.c" -o "$d/heapread" || return
	"$d/heapknown" "$d/known" big 10000000 >"$d/ready" 2>&1 &
	pid=$!
	wait_ready 60
	floor= walk= held= took= noscan= rss=$(awk '/^VmRSS/ { print $2 }' /proc/$pid/status)
	for i in 1 2 3; do
		f=$("$d/heapread" $pid | awk '{ print $2 / 1000 }')
		w=$("$bin" heap $pid 2>/dev/null |
			sed -n '1s/.* held \([0-9.]*\) ms.*/\1/p' |
			awk '{ print $1 / 1000 }')
		"$bin" snapshot -o "$d/out/" $pid >"$d/snap.err" 2>&1
		h=$(sed -n 's/.* stood still \([0-9.]*\) ms.*/\1/p' "$d/snap.err" |
			awk '{ print $1 / 1000 }')
		t=$(sed -n 's/.*the snapshot took \([0-9.]*\) ms.*/\1/p' "$d/snap.err" |
			awk '{ print $1 / 1000 }')
		n=$("$bin" snapshot --no-scan -o "$d/out/" $pid 2>&1 |
			sed -n 's/.* stood still \([0-9.]*\) ms.*/\1/p' |
			awk '{ print $1 / 1000 }')
		floor=$(least "$floor" "$f") walk=$(least "$walk" "$w")
		held=$(least "$held" "$h") noscan=$(least "$noscan" "$n")
		took=$(least "$took" "$t")
	done
	# The same heap as a core (gdb's gcore), for chap's count leaked on
	# it (CHAP=PATH, or on PATH): with 4 GB free, deleted after.
	chap=${CHAP:-$(command -v chap || true)} chap_s=
	free_kb=$(df -Pk "$d" | awk 'NR == 2 { print $4 }')
	if [ -n "$chap" ] && [ -x "$chap" ] && command -v gcore >/dev/null 2>&1 &&
		[ "$free_kb" -ge $((4 << 20)) ]; then
		gcore -o "$d/core" $pid >"$d/gcore.out" 2>&1
	fi
	kill $pid
	wait $pid 2>/dev/null
	if [ -s "$d/core.$pid" ]; then
		best3 snapshot-chap sh -c 'echo "count leaked" | "$0" "$1"' \
			"$chap" "$d/core.$pid" && chap_s=$secs
		rm -f "$d/core.$pid" "$d/core.$pid.symreqs"
	else
		echo "bench: snapshot: no chap (CHAP=PATH, or on PATH), gcore or 4 GB free: chap not compared"
	fi
	stop_row "$((rss / 1024)) MB heap, 10M blocks: heap" "$floor" "$walk"
	stop_row "the same: snapshot --no-scan" "$floor" "$noscan"
	stop_row "the same: snapshot (types, leaks)" "$floor" "$held"
	stop_row "the same: its whole time, the scan too" "$floor" "$took"
	[ -z "$chap_s" ] ||
		stop_row "the same: chap's count leaked, its core" "$floor" "$chap_s"
	target "snapshot --no-scan: a stop within 2x reading the heap" \
		"$(ratio_of "$noscan" "$floor")" "$(at_most "$noscan" "$(echo "2 * $floor" | bc -l)")"
	target "snapshot with the scan: a stop within 2x reading the heap" \
		"$(ratio_of "$held" "$floor")" "$(at_most "$held" "$(echo "2 * $floor" | bc -l)")"
	[ -z "$chap_s" ] ||
		target "snapshot: its whole time against chap's on its core" \
			"$(printf '%.2fx its time' "$(echo "$took / ($chap_s + 0.0005)" | bc -l)")" \
			stated
}

# A real daemon under a bounded load: Debian's pdns-recursor (C++, glibc's
# malloc, two threads), on 127.0.0.1 only, serving a zone of 200,000
# names it holds (--auth-zones) to the bench's own client
# (tests/bench/dnsload.c: 8 queries in flight, for 6 s at most), its
# packet cache filled by a query for every name first.  How long dmprof
# snapshot holds it, idle and loaded, against reading its anonymous
# memory once (heapread all: the floor); and the slowest answer the
# client saw in the three loaded runs with a snapshot in each (the worst
# of them, not the best), against one without.
daemon() {
	d=$work/daemon
	pdns=$(command -v pdns_recursor || ls /usr/sbin/pdns_recursor 2>/dev/null)
	if [ -z "$pdns" ]; then
		echo "bench: daemon: pdns_recursor is missing (make bench installs pdns-recursor)"
		return
	fi
	mkdir -p "$d"
	gcc -O2 "$here/dnsload.c" -o "$d/dnsload" &&
		gcc -O2 "$here/heapread.c" -o "$d/heapread" || return
	names=200000
	python3 - "$d/zone" $names <<'PY'
import sys
with open(sys.argv[1], "w") as f:
    f.write("$ORIGIN bench.test.\n$TTL 3600\n"
            "@ IN SOA ns hostmaster 1 3600 600 86400 3600\n"
            "@ IN NS ns\nns IN A 127.0.0.1\n")
    for i in range(int(sys.argv[2])):
        f.write("h%d IN A 10.%d.%d.%d\n" % (i, i >> 16 & 255, i >> 8 & 255, i & 255))
PY
	port=$((30000 + $$ % 20000))
	"$pdns" --daemon=no --local-address=127.0.0.1 --local-port=$port \
		--socket-dir="$d" --config-dir="$d" --threads=2 \
		--auth-zones=bench.test="$d/zone" --security-poll-suffix= \
		--disable-syslog --loglevel=3 >"$d/log" 2>&1 &
	pid=$!
	# (Ready when it answers: the zone loaded.)
	for _ in $(seq 100); do
		[ "$("$d/dnsload" $port 1 0.2 | awk '{ print $4 }')" = 0 ] && break
		sleep 0.2
	done
	timeout 120 "$d/dnsload" $port $names fill >"$d/fill" ||
		{ echo "bench: daemon: the fill failed: $(tail -2 "$d/log")"; kill $pid; return; }
	rss=$(awk '/^VmRSS/ { print $2 }' /proc/$pid/status)
	held_thrice "$d" $pid
	idle=$held
	# As before the copy: held while walked and scanned (--max-copy 0).
	"$bin" snapshot --max-copy 0 -o "$d/out/" $pid >"$d/snap.err" 2>&1
	nocopy=$(sed -n 's/.* stood still \([0-9.]*\) ms.*/\1/p' "$d/snap.err" |
		awk '{ print $1 / 1000 }')
	# Loaded: a run alone, then three with a snapshot 2 s in.
	timeout 30 "$d/dnsload" $port $names 6 >"$d/alone"
	loaded= worst=
	for i in 1 2 3; do
		timeout 30 "$d/dnsload" $port $names 6 >"$d/load" &
		lpid=$!
		sleep 2
		"$bin" snapshot -o "$d/out/" $pid >"$d/snap.err" 2>&1
		wait $lpid
		h=$(sed -n 's/.* stood still \([0-9.]*\) ms.*/\1/p' "$d/snap.err" |
			awk '{ print $1 / 1000 }')
		w=$(awk '{ print $6 / 1000 }' "$d/load")
		loaded=$(least "$loaded" "$h") worst=$(most "$worst" "$w")
	done
	qps=$(awk '{ printf "%d", $2 / 6 }' "$d/alone")
	alone=$(awk '{ print $6 / 1000 }' "$d/alone")
	p99=$(awk '{ print $8 }' "$d/alone")
	kill $pid
	wait $pid 2>/dev/null
	stop_row "pdns_recursor $((rss / 1024)) MB: held, idle" "$floor" "$idle"
	stop_row "the same: its whole time, idle" "$floor" "$took"
	stop_row "the same: held, $qps queries/s" "$floor" "$loaded"
	stop_row "the same: held all along (no copy), idle" "$floor" "$nocopy"
	printf '%-22s %-34s %9.3f s %11s %9.3f s %9s %8.3gx
' snapshot \
		"slowest answer, alone vs in a hold" "$alone" "" "$worst" "" \
		"$(echo "$alone / ($worst + 0.0005)" | bc -l)"
	target "daemon: a stop within 2x reading its memory, idle" \
		"$(ratio_of "$idle" "$floor")" "$(at_most "$idle" "$(echo "2 * $floor" | bc -l)")"
	target "daemon: a stop within 2x reading it, loaded" \
		"$(ratio_of "$loaded" "$floor")" "$(at_most "$loaded" "$(echo "2 * $floor" | bc -l)")"
	target "daemon: slowest answer in a hold (alone ${p99} ms p99)" \
		"$(printf '%.1f ms' "$(echo "$worst * 1000" | bc -l)")" stated
}

# A Python process's heap: Debian's python3.11 holding 3.4 million
# tuples of an int and a 100-to-200-byte string (10.2 M objects, about
# 1 GB, every one in pymalloc's arenas).  How long dmprof snapshot holds
# it and takes in all (pymalloc walked, every object typed), against
# reading its anonymous memory once (heapread all: the floor); then gdb's
# core of it: snapshot of the core, against chap's count used on it where
# chap is found (CHAP=PATH, or on PATH).  Stated per GB and per million
# objects.
python_heap() {
	py=/usr/bin/python3.11
	d=$work/pyheap
	if [ ! -x "$py" ]; then
		echo "bench: python-heap: $py is missing"
		return
	fi
	mkdir -p "$d"
	gcc -O2 "$here/heapread.c" -o "$d/heapread" || return
	"$py" -c '
import os, sys, time
objs = [(i, str(i) * 16) for i in range(3400000)]
print("ready", flush=True)
time.sleep(3600)' >"$d/ready" 2>&1 &
	pid=$!
	wait_ready 120
	rss=$(awk '/^VmRSS/ { print $2 }' /proc/$pid/status)
	rm -rf "$d/out"
	held_thrice "$d" $pid
	objs=$(awk '/^Python:/ { for (i = 1; i <= NF; i++) if ($i == "blocks") print $(i - 1) }' \
		"$d"/out/*.snap | head -1)
	gcore -o "$d/core" $pid >"$d/gcore.out" 2>&1
	kill $pid
	wait $pid 2>/dev/null
	gb=$(echo "$rss / 1048576" | bc -l)
	mo=$(echo "${objs:-0} / 1000000" | bc -l)
	stop_row "python $((rss / 1024)) MB, $(printf %.1f "$mo") M objects: held" \
		"$floor" "$held"
	stop_row "the same: its whole time" "$floor" "$took"
	printf '%-22s %-34s %9.2f s/GB %8.3f s/M objects\n' snapshot \
		"the same, per GB and M objects" "$(echo "$took / $gb" | bc -l)" \
		"$(echo "$took / ($mo + 0.000001)" | bc -l)"
	target "python heap: a stop within 2x reading its memory" \
		"$(ratio_of "$held" "$floor")" "$(at_most "$held" "$(echo "2 * $floor" | bc -l)")"
	if [ -s "$d/core.$pid" ]; then
		cat "$d/core.$pid" >/dev/null
		best3 pycore-snapshot sh -c 'rm -rf "$1" && exec "$0" snapshot -o "$1/" "$2"' \
			"$bin" "$d/cout" "$d/core.$pid" || return
		snap_s=$secs snap_kb=$rss_kb
		printf '%-22s %-34s %9.2f s/GB %8.3f s/M objects\n' core \
			"python core: snapshot per GB and M" "$(echo "$snap_s / $gb" | bc -l)" \
			"$(echo "$snap_s / ($mo + 0.000001)" | bc -l)"
		chap=${CHAP:-$(command -v chap || true)}
		if [ -n "$chap" ] && [ -x "$chap" ]; then
			best3 pycore-chap sh -c 'echo "count used" | "$0" "$1"' \
				"$chap" "$d/core.$pid" || return
			row core "python core: snapshot, vs chap's count used" \
				$secs $rss_kb $snap_s $snap_kb
			target "python core: snapshot against chap's count used" \
				"$(printf '%.2fx its time' "$(echo "$snap_s / ($secs + 0.0005)" | bc -l)")" \
				stated
		else
			printf '%-22s %-34s %9.2f s %8d MB\n' core \
				"python core: snapshot" "$snap_s" $((snap_kb / 1024))
			echo "bench: python-heap: no chap (CHAP=PATH, or on PATH): not compared"
		fi
	else
		echo "bench: python-heap: gcore failed: $(tail -2 "$d/gcore.out")"
	fi
	rm -f "$d/core.$pid"
}

# A core of a C++ program's 1 GB heap of 10 M blocks that point at each
# other (tests/bench/core_heap.cc: objects of four classes with vtables,
# std::string bodies, vectors, hash tables, trees, C lists, and leaked
# groups of them), written by gdb's gcore: dmprof snapshot and top read,
# walk, type and leak-scan it, against reading the heap's bytes from the
# core once (the core's PT_LOAD segments over [heap], with pread:
# tests/bench/heapread.c).  The page cache is warm for every run: the
# core is read whole before.  The core (1 GB) is deleted at the end, and
# the case skipped with under 4 GB free.
core() {
	d=$work/core
	if ! command -v gcore >/dev/null 2>&1; then
		echo "bench: core: gdb's gcore is missing (make bench installs gdb)"
		return
	fi
	mkdir -p "$d"
	free_kb=$(df -Pk "$d" | awk 'NR == 2 { print $4 }')
	if [ "$free_kb" -lt $((4 << 20)) ]; then
		echo "bench: core: skipped: $((free_kb >> 20)) GB free in $d, not 4"
		return
	fi
	g++ -O2 -g "$here/core_heap.cc" -o "$d/core_heap" &&
		gcc -O2 "$here/heapread.c" -o "$d/heapread" || return
	"$d/core_heap" >"$d/ready" 2>&1 &
	pid=$!
	wait_ready 60
	heap=$(awk '$NF == "[heap]" { print $1 }' /proc/$pid/maps)
	gcore -o "$d/core" $pid >"$d/gcore.out" 2>&1
	kill $pid
	wait $pid 2>/dev/null
	if [ -s "$d/core.$pid" ] && [ -n "$heap" ]; then
		core_run "$d/core.$pid" "$heap"
	else
		echo "bench: core: gcore failed: $(tail -2 "$d/gcore.out")"
	fi
	rm -f "$d/core.$pid"
}

core_run() { # CORE START-END
	cat "$1" >/dev/null
	best3 core-floor "$d/heapread" "$1" "$2" || return
	base_s=$secs base_kb=$rss_kb
	read -r heap_bytes _ <"$work/out.core-floor"
	# (snapshot numbers its files on from those in the directory.)
	fresh_out() { rm -rf "$d/out" && mkdir -p "$d/out"; }
	before=fresh_out
	best3 core-snapshot "$bin" snapshot -o "$d/out/" "$1"
	rc=$?
	before=
	[ $rc = 0 ] || return
	snap_s=$secs snap_kb=$rss_kb
	blocks=$(awk '$1 == "in-use" { n += $4 } END { print n }' "$d"/out/*.snap)
	mb=$((heap_bytes >> 20))
	mblocks=$(echo "$blocks / 1000000" | bc -l)
	row core "$mb MB, $(printf %.1f "$mblocks") M blocks: snapshot, vs read" \
		$base_s $base_kb $snap_s $snap_kb
	measure core-heap "$bin" heap "$1" || return
	row core "the same: heap (the walk only)" $base_s $base_kb $secs $rss_kb
	best3 core-top "$bin" top "$1" || return
	row core "the same: top" $base_s $base_kb $secs $rss_kb
	# chap (VMware's core analyzer: not a Debian package; CHAP=PATH, or
	# on PATH), its leak count, which walks, scans and anchors as
	# snapshot does.
	chap=${CHAP:-$(command -v chap || true)}
	if [ -n "$chap" ] && [ -x "$chap" ]; then
		best3 core-chap sh -c 'echo "count leaked" | "$0" "$1"' \
			"$chap" "$1" || return
		row core "the same: chap's count leaked" $base_s $base_kb \
			$secs $rss_kb
		target "core: snapshot against chap's count leaked" \
			"$(printf '%.2fx its time' "$(echo "$snap_s / ($secs + 0.0005)" | bc -l)")" \
			stated
	else
		echo "bench: core: no chap (CHAP=PATH, or on PATH): not compared"
	fi
	gb=$(echo "$heap_bytes / 1073741824" | bc -l)
	printf '%-22s %-34s %9.3f s %11s %9.3f s\n' core "per GB of heap" \
		"$(echo "$base_s / $gb" | bc -l)" "" "$(echo "$snap_s / $gb" | bc -l)"
	printf '%-22s %-34s %8.1f ms %11s %8.0f ms\n' core "per million blocks" \
		"$(echo "1000 * $base_s / $mblocks" | bc -l)" "" \
		"$(echo "1000 * $snap_s / $mblocks" | bc -l)"
	printf '%-22s %-34s %9d MB %11s %6d MB %8.2fx\n' core \
		"heap size; snapshot's peak RSS" $mb "" $((snap_kb >> 10)) \
		"$(echo "$snap_kb / 1024 / $mb" | bc -l)"
	target "core: snapshot of 1 GB, 10 M blocks, vs reading it" \
		"$(printf '%.1fx its time' "$(echo "$snap_s / ($base_s + 0.0005)" | bc -l)")" \
		stated
	target "core: snapshot's peak RSS over the heap's size" \
		"$(printf '%.2fx' "$(echo "$snap_kb / 1024 / $mb" | bc -l)")" stated
}

fault_cost start
for c in $cases; do
	case $c in
	snapshot)
		snapshot ;;
	core)
		core ;;
	symbolize-dynsym)
		# A large Debian binary: 110 MB, 35,000 exported functions.
		symbolize $c /usr/lib/x86_64-linux-gnu/libLLVM-14.so.1 ;;
	symbolize-dwarf)
		# libc, with libc6-dbg's compressed DWARF: dmprof resolves
		# inlined frames, so addr2line does too (-i).
		symbolize $c /usr/lib/x86_64-linux-gnu/libc.so.6 -i ;;
	recorder)
		recorder ;;
	daemon)
		daemon ;;
	python-heap)
		python_heap ;;
	recorder-programs)
		recorder_programs ;;
	python)
		python_rows ;;
	deep)
		deep ;;
	gperf-1m)
		gperf_1m ;;
	gperf-pool)
		gperf_pool ;;
	parse)
		parse ;;
	gperf-series)
		gperf_series ;;
	*)
		echo "bench: unknown case $c" ;;
	esac
done

fault_cost end

if [ -s "$targets" ]; then
	printf '\n%-52s %-24s %s\n' target measured verdict
	cat "$targets"
fi
