# A Python process's heap from outside (sourced by run.sh after
# python.sh; uses bin, src, top, tmp, ok and bad): src/pyapp/census.py,
# whose objects are known, run by Debian's python3.11 and by a python3 of
# another build first in PATH where there is one, waits after printing
# its own census (gc.get_objects() by type) and sys._debugmallocstats().
# The checks, on the running process (dmprof heap and snapshot), on gdb's
# core of it (heap, top) and on the kernel's core of it killed (top):
#   - pymalloc's counts are sys._debugmallocstats()'s, to the block: per
#     size class the pools, blocks in use and available blocks, then the
#     arenas, the bytes in allocated and available blocks, in unused
#     pools, lost to pool headers, quantization and arena alignment, and
#     the total;
#   - each of census.py's classes (a plain class, a str subclass, a dict
#     subclass, one with __slots__) has its instances' count as a type
#     of pymalloc's blocks, and the plain class's values and the dict
#     subclass's keys are typed after them;
#   - a snapshot's and a core's components hold every byte (mustbezero
#     0, the components summing to total; live, total within 0.5% of the
#     kernel's Rss + Swap), pymalloc's free space malloc-python-free;
#   - expand -t of the size class of most blocks of no known type (most
#     of them pymalloc's) lists as many as top --json counts;
#   - under PYTHONMALLOC=malloc: said (no arenas), the glibc heap walked
#     all the same.
: "${tmp:?tests/real/run.sh sources this file, in its scratch directory}"
pyd=/usr/bin/python3.11
if [ ! -x "$pyd" ]; then
	echo "real: note: $pyd is not installed: no Python heap tests"
	return 0 2>/dev/null || exit 0
fi
mkdir -p "$tmp/pyheap" && cd "$tmp/pyheap" || exit 1

# (At scale 0.1, the big dict's entries.)
ph_big=100000

# Start census.py (PYTHON SCALE, ENV...) as LABEL: sets ph_pid once it is
# ready (its census in LABEL.out, its stats in LABEL.stats).
ph_start() { # LABEL PYTHON [ENV=VALUE...]
	label=$1 py=$2
	shift 2
	rm -f "$label.out"
	env "$@" "$py" "$src/pyapp/census.py" 0.1 >"$label.out" 2>"$label.stats" &
	ph_pid=$!
	wait_line "$label.out" '^waiting$' $ph_pid && return 0
	bad "pyheap: $label: census.py did not get ready: $(tail -3 "$label.stats")"
	return 1
}
ph_stop() {
	kill -9 $ph_pid 2>/dev/null
	wait $ph_pid 2>/dev/null
}

ph_count() { # FILE: the lines of pycheck.py
	while read -r verdict why; do
		if [ "$verdict" = ok ]; then ok; else bad "pyheap: $why"; fi
	done <"$1"
}

# The checks of a snapshot or a core (FILE) of census.py's process.
ph_snap() { # LABEL WHAT FILE [ROLLUP]
	"$bin" top --json -n 1000 "$3" >"$1.top" 2>"$1.terr" &&
		"$bin" csv --bytes "$3" >"$1.csv" 2>>"$1.terr" ||
		{ bad "pyheap: $1: $2: top or csv failed: $(head -3 "$1.terr")"; return; }
	python3 "$src/pyapp/pycheck.py" snap "$1" "$2" "$1.top" "$1.csv" ${4:-} \
		>"$1.checks" 2>&1
	ph_count "$1.checks"
}

# Single objects (describe, expand -t) of census.py's process or core
# (WHAT): the big dict by its address, its first key, a Plain, and every
# Slotted and Plain listed with the census's count.
ph_inspect() { # LABEL WHAT PID_OR_CORE
	big=$(awk '$1 == "id" && $2 == "big" { print $3 }' "$1.out")
	key=$(awk '$1 == "id" && $2 == "key" { print $3 }' "$1.out")
	plain=$(awk '$1 == "id" && $2 == "plain" { print $3 }' "$1.out")
	"$bin" describe "$3" "$big" "$key" "$plain" >"$1.desc" 2>"$1.derr" ||
		{ bad "pyheap: $1: $2: describe failed: $(head -3 "$1.derr")"; return; }
	grep -q "^$big: .*a Python object" "$1.desc" &&
		grep -q "^  type: dict len=$ph_big\$" "$1.desc" &&
		grep -q "^  type: str 'key-0'\$" "$1.desc" &&
		grep -q "^  type: Plain\$" "$1.desc" && ok ||
		bad "pyheap: $1: $2: describe: $(head -30 "$1.desc" | tr '\n' '|')"
	for t in Plain Slotted; do
		want=$(awk -v t=$t '$1 == "type" && $2 == t { print $3 }' "$1.out")
		"$bin" expand -t $t "$3" >"$1.exp" 2>"$1.eerr" &&
			grep -q "^$t: $want blocks in use, " "$1.exp" &&
			[ "$(grep -c "^  0x[0-9a-f]*  [0-9]* bytes  $t\$" "$1.exp")" = "$want" ] &&
			ok || bad "pyheap: $1: $2: expand -t $t: $(head -2 "$1.exp" "$1.eerr" | tr '\n' '|')"
	done
	"$bin" expand -t dict "$3" >"$1.exp" 2>"$1.eerr" &&
		grep -q "^  0x[0-9a-f]*  [0-9]* bytes  dict len=$ph_big\$" "$1.exp" && ok ||
		bad "pyheap: $1: $2: expand -t dict: none of len $ph_big: $(head -3 "$1.exp" "$1.eerr" | tr '\n' '|')"
}

# The blocks of no known type (pymalloc's among them): expand -t of the
# size class top --json counts most blocks of lists them all.
ph_sizes() { # LABEL WHAT CORE
	set -- "$1" "$2" "$3" $(python3 -c 'import json, sys
t = [t for t in json.load(open(sys.argv[1]))["types"] if t["name"].startswith("size-")]
t.sort(key=lambda t: -t["count"])
print(t[0]["name"], t[0]["count"]) if t else None' "$1.top")
	[ $# = 5 ] || { bad "pyheap: $1: $2: no size class among top's types"; return; }
	"$bin" expand -t "$4" "$3" >"$1.exp" 2>"$1.eerr" &&
		grep -q "^$4: $5 blocks in use, " "$1.exp" &&
		[ "$(grep -c '^  0x[0-9a-f]*  [0-9]* bytes' "$1.exp")" = "$5" ] && ok ||
		bad "pyheap: $1: $2: expand -t $4: not top's $5 blocks: $(head -1 "$1.exp") $(grep -c '^  0x' "$1.exp") listed"
}

ph_run() { # LABEL PYTHON
	if ph_start "$1" "$2"; then
		"$bin" heap --json $ph_pid >"$1.json" 2>"$1.err" ||
			bad "pyheap: $1: dmprof heap failed: $(cat "$1.err")"
		python3 "$src/pyapp/pycheck.py" heap "$1" live "$1.json" \
			>"$1.checks" 2>&1
		ph_count "$1.checks"
		ph_inspect "$1" live $ph_pid
		rm -rf "$1.snaps"
		"$bin" snapshot -o "$1.snaps/" $ph_pid >/dev/null 2>"$1.serr" ||
			bad "pyheap: $1: dmprof snapshot failed: $(cat "$1.serr")"
		rollup=$(awk '/^(Rss|Swap):/ { n += $2 } END { print n * 1024 }' \
			/proc/$ph_pid/smaps_rollup)
		f=$(ls "$1.snaps"/*.snap 2>/dev/null | head -1)
		[ -n "$f" ] && ph_snap "$1" snapshot "$f" "$rollup"
		grep -qv "^dmprof snapshot: " "$1.serr" &&
			bad "pyheap: $1: snapshot warned: $(cat "$1.serr")"
		if command -v gcore >/dev/null 2>&1; then
			gcore -o "$1.core" $ph_pid >/dev/null 2>&1
			if [ -s "$1.core.$ph_pid" ]; then
				"$bin" heap --json "$1.core.$ph_pid" >"$1.cjson" 2>"$1.cerr" ||
					bad "pyheap: $1: dmprof heap of its core failed: $(cat "$1.cerr")"
				python3 "$src/pyapp/pycheck.py" heap "$1" core "$1.cjson" \
					>"$1.cchecks" 2>&1
				ph_count "$1.cchecks"
				ph_snap "$1" "gcore's core" "$1.core.$ph_pid"
				ph_inspect "$1" "gcore's core" "$1.core.$ph_pid"
				ph_sizes "$1" "gcore's core" "$1.core.$ph_pid"
				rm -f "$1.core.$ph_pid"
			else
				bad "pyheap: $1: gcore wrote no core"
			fi
		fi
		ph_stop
	fi
}
ph_run debian "$pyd"
pyp=$(command -v python3)
case $(readlink -f "$pyp" 2>/dev/null) in
/usr/bin/*) pyp= ;;
esac
[ -n "$pyp" ] && pyp=$("$pyp" -c 'import sys; print(sys.executable)' 2>/dev/null)
[ -n "$pyp" ] && [ -x "$pyp" ] && ph_run other "$pyp"

# The kernel's core of census.py killed by SIGSEGV (it lifts its own
# core limit), where core_pattern names a file here.
if [ "$(cat /proc/sys/kernel/core_pattern)" != core ]; then
	echo "real: SKIP pyheap: core_pattern is not 'core': no kernel core here"
elif ph_start kernel "$pyd" CENSUS_CORE=1; then
	rm -f core core.$ph_pid
	kill -SEGV $ph_pid
	wait $ph_pid 2>/dev/null
	kc=$(ls core core.$ph_pid 2>/dev/null | head -1)
	if [ -n "$kc" ]; then
		ph_snap kernel "the kernel's core" "$kc"
		rm -f "$kc"
	else
		echo "real: SKIP pyheap: the kernel wrote no core (a container?)"
	fi
fi

# PYTHONMALLOC=malloc: no arenas, said; glibc's heap walked.
if ph_start nopymalloc "$pyd" PYTHONMALLOC=malloc; then
	"$bin" heap $ph_pid >nopy.out 2>nopy.err
	rc=$?
	[ $rc = 0 ] && grep -q "^glibc malloc: main_arena" nopy.out &&
		grep -q "^dmprof: warning: process $ph_pid: python 3\.11\.[0-9]* ($pyd): no pymalloc arenas found (PYTHONMALLOC=malloc, or debug?)$" nopy.err &&
		ok || bad "pyheap: PYTHONMALLOC=malloc: status $rc: $(cat nopy.err)"
	ph_stop
fi
cd "$tmp" || exit 1
