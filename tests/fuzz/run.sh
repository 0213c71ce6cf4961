#!/bin/sh
# make fuzz: run each libFuzzer target (tests/fuzz/fuzz.c) for SECONDS,
# starting from seeds taken from samples/ and tests/ (and the original's
# test data when ../shared has it), then print a line per target:
# executions per second, coverage, corpus size, and what it found.
# Crashes stay in build/fuzz/artifacts/ and fail the run.
# Usage: tests/fuzz/run.sh BUILD_DIR SECONDS TARGET...
set -u
build=$1
secs=$2
shift 2
top=$(cd "$(dirname "$0")/../.." && pwd)
shared=$(cd "$top/../shared" 2>/dev/null && pwd || true)
cd "$top" || exit 1
status=0

# seed TARGET DIR: the inputs the target starts from.
seed() {
	t=$1 d=$2
	mkdir -p "$d"
	case $t in
	deep)
		cp samples/*.heap tests/golden/gperf-base/*.heap "$d"/ 2>/dev/null
		find tests/golden -name '*.heap' -size -200k -exec cp {} "$d"/ \; 2>/dev/null
		[ -n "$shared" ] && cp "$shared"/compat/chromium/tests/data/*.heap "$d"/ 2>/dev/null ;;
	gperf)
		# Without the "heap profile: " the target puts back.
		n=0
		for f in tests/golden/*/*.heap samples/*.heap; do
			[ -f "$f" ] || continue
			head -c 13 "$f" | grep -q '^heap profile:' || continue
			head -c 40 "$f" | grep -q DUMP_DEEP && continue
			tail -c +15 "$f" | head -c 200000 >"$d/seed$n"
			n=$((n + 1))
		done ;;
	jemalloc)
		n=0
		for f in tests/golden/*/*.heap; do
			head -c 8 "$f" | grep -q '^heap_v2/' || continue
			tail -c +9 "$f" | head -c 200000 >"$d/seed$n"
			n=$((n + 1))
		done ;;
	proto)
		# A 0 byte first: the protobuf as is; a 1: gzipped by the target
		# (so the fuzzer mutates the protobuf, not its gzip).
		n=0
		for k in step1 step2 step3 raw string location no-empty-string; do
			python3 tests/golden/proto-base/make.py $k "$d/p.tmp" 2>/dev/null || continue
			{ printf '\000'; gzip -dc "$d/p.tmp" 2>/dev/null || cat "$d/p.tmp"; } >"$d/seed$n"
			n=$((n + 1))
		done
		rm -f "$d/p.tmp"
		# dmprof's own export: functions with files and lines, labels.
		if [ -x ./dmprof ] && ./dmprof pprof --proto samples/cachesrv.04242.0002.heap l0 >"$d/p.tmp" 2>/dev/null; then
			{ printf '\000'; gzip -dc "$d/p.tmp"; } >"$d/seed$n"
		fi
		rm -f "$d/p.tmp" ;;
	snap)
		find tests/golden -name '*.snap' -size -200k -exec cp {} "$d"/ \; 2>/dev/null ;;
	buckets)
		cp samples/*.buckets "$d"/ 2>/dev/null
		# A dump's own sections, lines ending in "=N" among them.
		printf 'heap profile: DUMP_DEEP_6\nBUCKETS:\n1 malloc 0x1 0x2 0x3\n2 malloc 0x9 =2\nframe 0x7\tf\tf.py\t3\n3 mmap =3\nMAPS:\n00400000-00401000 r-xp 00000000 00:00 0 /bin/x\nSTACKTRACES:\n' >"$d/sections.heap"
		find tests/golden -name '*.buckets' -size -200k -exec cp {} "$d"/ \; 2>/dev/null
		[ -n "$shared" ] && cp "$shared"/compat/chromium/tests/data/*.buckets "$d"/ 2>/dev/null ;;
	maps)
		cp samples/*.maps "$d"/ 2>/dev/null
		find tests/golden -name '*.maps' -size -200k -exec cp {} "$d"/ \; 2>/dev/null
		cp /proc/self/maps "$d"/self.maps ;;
	symmap)
		# The first byte picks the parser: 0 nm, 1 nm (mangled),
		# 2 readelf, 3 decoded lines.
		n=0
		for f in samples/*.symmap/* tests/golden/*/*.symmap/*; do
			[ -f "$f" ] || continue
			case $f in
			*.nm) b='\000' ;;
			*readelf*) b='\002' ;;
			*) b='\003' ;;
			esac
			{ printf "$b"; head -c 100000 "$f"; } >"$d/seed$n"
			n=$((n + 1))
		done ;;
	policy)
		cp policies/*.policy "$d"/
		[ -n "$shared" ] && cp "$shared"/compat/chromium/policy.*.json "$d"/ 2>/dev/null ;;
	symcache)
		# dmprof's own caches: of its own symbols, and of libc's
		# with its debug file (inlined frames, file names).  (Not of
		# /bin/true: gen_symbolize.sh finds no function in it, and
		# loops.)
		libc=$(ls /usr/lib/*/libc.so.6 /lib/*/libc.so.6 2>/dev/null | head -1)
		for bin in "$top/dmprof" $libc; do
			[ -x ./dmprof ] || break
			XDG_CACHE_HOME=$d/tmp sh tests/bench/gen_symbolize.sh \
				"$bin" 300 "$d/tmp" >/dev/null 2>&1 &&
			XDG_CACHE_HOME=$d/tmp ./dmprof stacktrace "$d/tmp/sym.0001.heap" \
				>/dev/null 2>&1
			for f in "$d"/tmp/dmprof/symbols/*.bin; do
				[ -f "$f" ] && cp "$f" "$d"/
			done
			rm -rf "$d/tmp"
		done ;;
	dwarf)
		# Small programs with DWARF 2 to 5, compressed or not, from gcc
		# and clang (whose DWARF 5 the reader declines), split DWARF
		# (skeleton units, and the .dwo files themselves), C++ with
		# chains of inlined functions and cold parts (range lists),
		# and libc6-dbg's debug files (compressed) of up to 300 KB.
		n=0
		for cc in gcc clang; do
			command -v $cc >/dev/null || continue
			for opts in "-g" "-gdwarf-4" "-gdwarf-3" "-gdwarf-2" \
				"-g -O2 -gz" "-g -O2 -gdwarf-4 -gz" \
				"-g -O2 -gsplit-dwarf" "-g -O2 -ffunction-sections"; do
				# shellcheck disable=SC2086
				(cd "$d" && $cc $opts -o "seed$n" \
					"$top/tests/real/src/capp.c" -ldl) 2>/dev/null
				n=$((n + 1))
			done
			cxx=$(echo $cc | sed 's/gcc/g++/; s/clang$/clang++/')
			for opts in "-g -O2" "-g -O2 -gdwarf-4 -gz" "-g -O1 -gdwarf-4"; do
				# shellcheck disable=SC2086
				$cxx $opts -o "$d/seed$n" tests/real/src/inl.cc 2>/dev/null
				n=$((n + 1))
			done
		done
		for f in "$d"/*.dwo; do
			[ -f "$f" ] && mv "$f" "$d/seed$n.dwo" && n=$((n + 1))
		done
		# (Every 13th by size under 300 KB: small to middling.)
		find /usr/lib/debug/.build-id -name '*.debug' -size -300k \
			-printf '%s %p\n' 2>/dev/null | sort -n |
			awk 'NR % 13 == 0 { print $2 }' | while read -r f; do
			cp "$f" "$d/"
		done ;;
	core)
		# Small synthetic cores (tests/fuzz/coreseeds.py), a core gcore
		# took of tests/hostile/coreprog.c made small, and one of a
		# Python process (with ./dmprof built: its heap --json says
		# where pymalloc's table is).
		python3 tests/fuzz/coreseeds.py "$d"
		if command -v gcore >/dev/null &&
			gcc -O0 -o "$d/prog" tests/hostile/coreprog.c; then
			"$d/prog" 50 >"$d/out" 2>/dev/null &
			p=$!
			for _ in 1 2 3 4 5 6 7 8 9 10; do
				[ -s "$d/out" ] && break
				sleep 0.2
			done
			gcore -o "$d/g" $p >/dev/null 2>&1
			kill $p
			wait $p 2>/dev/null
			[ -s "$d/g.$p" ] && python3 tests/fuzz/coreseeds.py \
				--from "$d/g.$p" "$(cut -d' ' -f2 "$d/out")" \
				"$d/gcore-small.core"
			rm -f "$d/prog" "$d/out" "$d/g.$p"
		fi
		# A core of a CPython 3.11 process (census.py) made small:
		# pymalloc's table, two of its pools and their objects' types.
		if [ -x /usr/bin/python3.11 ] && [ -x ./dmprof ] &&
			command -v gcore >/dev/null; then
			/usr/bin/python3.11 tests/real/src/pyapp/census.py 0.01 \
				>"$d/out" 2>/dev/null &
			p=$!
			for _ in $(seq 100); do
				grep -q '^waiting$' "$d/out" 2>/dev/null && break
				sleep 0.1
			done
			gcore -o "$d/g" $p >/dev/null 2>&1
			kill -9 $p
			wait $p 2>/dev/null
			[ -s "$d/g.$p" ] &&
				./dmprof heap --json "$d/g.$p" >"$d/py.json" 2>/dev/null &&
				python3 tests/fuzz/coreseeds.py --python "$d/g.$p" \
					"$d/py.json" "$d/python-small.core"
			rm -f "$d/out" "$d/g.$p" "$d/py.json"
		fi ;;
	json)
		find samples tests/golden -name '*.json' -size -200k -exec cp {} "$d"/ \; 2>/dev/null
		[ -n "$shared" ] && cp "$shared"/compat/chromium/policy.*.json "$d"/ 2>/dev/null
		printf '{"a": [1, 2.5e10, -3, true, null, "x\\u00e9"]}' >"$d/small.json" ;;
	*)
		# A reader's (a row of the readers' table) with no seeds of
		# its own above, such as dhat's: the inputs of its golden
		# cases, tests/golden/NAME*/.
		find tests/golden/"$t"* -type f -size -200k ! -name cmd \
			! -name 'expected.*' -exec cp {} "$d"/ \; 2>/dev/null ;;
	esac
	true
}

printf '%-8s %10s %8s %8s %8s  %s\n' target execs/s coverage features corpus result
for t in "$@"; do
	corpus=$build/corpus/$t
	[ -d "$corpus" ] || { mkdir -p "$corpus"; seed "$t" "$corpus"; }
	mkdir -p "$build/artifacts"
	log=$build/$t.log
	"$build/fuzz_$t" -max_total_time="$secs" -print_final_stats=1 \
		-rss_limit_mb=2048 -timeout=10 -max_len=1048576 \
		-artifact_prefix="$build/artifacts/$t-" "$corpus" >"$log" 2>&1
	rc=$?
	done_line=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -1)
	cov=$(echo "$done_line" | sed -n 's/.*cov: \([0-9]*\).*/\1/p')
	ft=$(echo "$done_line" | sed -n 's/.*ft: \([0-9]*\).*/\1/p')
	eps=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
	units=$(ls "$corpus" | wc -l)
	if [ $rc = 0 ]; then
		result="no finding"
	else
		result="FOUND something: see $log and $build/artifacts/"
		status=1
	fi
	printf '%-8s %10s %8s %8s %8s  %s\n' "$t" "${eps:-?}" "${cov:-?}" \
		"${ft:-?}" "$units" "$result"
done
exit $status
