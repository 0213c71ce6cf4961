# A Python process's heap from outside (sourced by run.sh after
# python.sh; uses bin, src, top, tmp, ok and bad): src/pyapp/census.py,
# whose objects are known, run by Debian's python3.11 and by a python3 of
# another build first in PATH where there is one, waits after printing
# its own census (gc.get_objects() by type) and sys._debugmallocstats().
# The checks, on the running process (dmprof heap) and on gdb's core of
# it:
#   - pymalloc's counts are sys._debugmallocstats()'s, to the block: per
#     size class the pools, blocks in use and available blocks, then the
#     arenas, the bytes in allocated and available blocks, in unused
#     pools, lost to pool headers, quantization and arena alignment, and
#     the total;
#   - each of census.py's classes (a plain class, a str subclass, a dict
#     subclass, one with __slots__) has its instances' count as a type
#     of pymalloc's blocks, and the plain class's values and the dict
#     subclass's keys are typed after them;
#   - under PYTHONMALLOC=malloc: said (no arenas), the glibc heap walked
#     all the same.
pyd=/usr/bin/python3.11
if [ ! -x "$pyd" ]; then
	echo "real: note: $pyd is not installed: no Python heap tests"
	return 0 2>/dev/null || exit 0
fi
mkdir -p "$tmp/pyheap" && cd "$tmp/pyheap" || exit 1

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

# Checks of dmprof heap --json (JSON) against census.py's own (LABEL),
# a line each: "ok" or "bad WHY".
ph_check() { # LABEL JSON WHAT
	python3 - "$@" <<'PY'
import json, re, sys
label, doc, what = sys.argv[1], json.load(open(sys.argv[2])), sys.argv[3]
def check(cond, why):
    print("ok" if cond else "bad %s: %s: %s" % (label, what, why))
py = doc.get("python")
if not py or "classes" not in py:
    check(False, "no pymalloc walked: %s" % (py and py.get("not_walked")))
    sys.exit(0)
rows, sums = {}, {}
for line in open(label + ".stats"):
    m = re.match(r"\s*(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)$", line)
    if m:
        k, size, pools, used, avail = map(int, m.groups())
        rows[k] = (size, pools, used, avail)
        continue
    m = re.match(r"(.*?)\s*=\s*([\d,]+)$", line)
    if m and m.group(1) not in sums:
        sums[m.group(1)] = int(m.group(2).replace(",", ""))
have = {c["class"]: (c["size"], c["pools"], c["blocks"], c["avail"])
        for c in py["classes"]}
check(rows and have == rows, "size classes differ: %s" %
      sorted(set(have.items()) ^ set(rows.items()))[:6])
want = {"# arenas allocated current": py["arenas"],
        "# bytes in allocated blocks": py["allocated_bytes"],
        "# bytes in available blocks": py["available_bytes"],
        "# bytes lost to pool headers": py["pool_header_bytes"],
        "# bytes lost to quantization": py["quantization_bytes"],
        "# bytes lost to arena alignment": py["arena_alignment_bytes"],
        "Total": py["total_bytes"]}
unused = [v for k, v in sums.items() if k.endswith("unused pools * 16384 bytes")]
check(unused == [py["unused_pool_bytes"]],
      "unused pools: %s, walked %d" % (unused, py["unused_pool_bytes"]))
for k, v in want.items():
    check(sums.get(k) == v, "%s: %s, walked %d" % (k, sums.get(k), v))
types = {t["type"]: t["count"] for t in py["types"]}
census = {}
for line in open(label + ".out"):
    f = line.split()
    if f[0] == "type":
        census[f[1]] = int(f[2])
for t, n in census.items():
    check(types.get(t) == n, "%s: %s instances, census %d" %
          (t, types.get(t), n))
check(types.get("Plain values") == census["Plain"] and
      types.get("Bag keys") == census["Bag"],
      "Plain values %s, Bag keys %s" % (types.get("Plain values"),
                                        types.get("Bag keys")))
check(not py["problems"], "problems: %s" % py["problems"][:3])
PY
}

ph_count() { # FILE: the lines of ph_check
	while read -r verdict why; do
		if [ "$verdict" = ok ]; then ok; else bad "pyheap: $why"; fi
	done <"$1"
}

ph_run() { # LABEL PYTHON
	if ph_start "$1" "$2"; then
		"$bin" heap --json $ph_pid >"$1.json" 2>"$1.err" ||
			bad "pyheap: $1: dmprof heap failed: $(cat "$1.err")"
		ph_check "$1" "$1.json" live >"$1.checks" 2>&1
		ph_count "$1.checks"
		if command -v gcore >/dev/null 2>&1; then
			gcore -o "$1.core" $ph_pid >/dev/null 2>&1
			if [ -s "$1.core.$ph_pid" ]; then
				"$bin" heap --json "$1.core.$ph_pid" >"$1.cjson" 2>"$1.cerr" ||
					bad "pyheap: $1: dmprof heap of its core failed: $(cat "$1.cerr")"
				ph_check "$1" "$1.cjson" core >"$1.cchecks" 2>&1
				ph_count "$1.cchecks"
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
