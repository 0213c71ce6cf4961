# Python programs under dmprof record (sourced by run.sh, which set bin,
# src, top, tmp and ok/bad): Debian's /usr/bin/python3.11 (libpython
# linked in, stripped), and a python3 of another build first in PATH
# where there is one (a shared libpython).  The checks:
#   - the recorder's table of CPython's offsets (include/python_offsets.h)
#     is what the installed internal headers say (python3.11-dev), for
#     each interpreter whose headers are here;
#   - src/pyapp/app.py (two files, four kept sites in three functions, a
#     site reached through map(), a cache that grows, temporaries freed
#     each round): top --json at the run's peak gives each line of the
#     program's the bytes tracemalloc's statistics('lineno') gives it
#     (within 2%, in the same order); diff FIRST names the cache's line
#     first among growers, a leak suspect, and the temporaries' line grew
#     nothing; every dump adds up, its total the kernel's Rss + Swap;
#   - the same under python3 -m, PYTHONMALLOC=malloc and =debug;
#   - children: subprocess, multiprocessing (spawn), os.fork() without
#     exec: their Python frames are named;
#   - a function called from three lines of another, a generator resumed
#     from two: each line's stack keeps its own strings, to the object;
#   - a program that sets sys.setprofile, and a C extension whose thread
#     never held the GIL (its blocks keep their native frames);
#   - a recorder built without the table (-DPYTHON_OFFSETS_NONE) says
#     once which version it saw, and records native frames only.
: "${tmp:?tests/real/run.sh sources this file, in its scratch directory}"
pyd=/usr/bin/python3.11
pysrc=$src/pyapp
if [ ! -x "$pyd" ]; then
	echo "real: note: $pyd is not installed: no Python tests"
	return 0 2>/dev/null || exit 0
fi

# The offsets: the headers' against the table, per interpreter.
py_offsets() { # PYTHON
	inc=$("$1" -c 'import sysconfig; print(sysconfig.get_paths()["include"])' 2>/dev/null)
	if [ ! -r "$inc/internal/pycore_frame.h" ]; then
		echo "real: note: $1: no internal headers (python3-dev): its offsets not checked"
		return
	fi
	gcc -I"$inc" "$src/pyoffsets.c" -o pyoffsets 2>pyo.err ||
		{ bad "python offsets: cannot build against $inc: $(head -2 pyo.err)"; return; }
	gcc -I"$top/include" "$src/pytable.c" -o pytable || { bad "pytable"; return; }
	./pyoffsets >pyo.have
	set -- $(head -2 pyo.have | awk '{ print $2 }')
	if ./pytable "$1" "$2" >pyo.table; then
		diff pyo.table pyo.have >pyo.diff && ok ||
			bad "python offsets of $1.$2 ($inc) differ from the table: $(tr '\n' ' ' <pyo.diff)"
	else
		echo "real: note: python $1.$2 has no row in the table ($inc)"
	fi
}
py_offsets "$pyd"
pyp=$(command -v python3)
case $(readlink -f "$pyp" 2>/dev/null) in
/usr/bin/*) pyp= ;;
esac
# (pyenv's shims are scripts: the interpreter they run.)
[ -n "$pyp" ] && pyp=$("$pyp" -c 'import sys; print(sys.executable)' 2>/dev/null)
[ -n "$pyp" ] && py_offsets "$pyp"

# The run of PYTHON ARGS... under record into DIR: its first dump, in
# py_peak the dump top names the peak, and in py_final the dump taken as
# Python began to finalize (the instant app.py prints tracemalloc's
# statistics: at the peak, which the dumps at new peaks may find in the
# middle of a round, the round's temporaries may be alive), else the
# peak.
py_record() { # DIR PYTHON ARGS...
	d=$1
	shift
	PYTHONHASHSEED=0 "$bin" record -o "$tmp/$d/" -- "$@" >"$d.out" 2>"$d.err" ||
		{ bad "$d: record exited $?: $(tail -3 "$d.err")"; py_first=; return 1; }
	pid=$(sed -n 's/^dmprof record: [0-9]* dumps\{0,1\} of pid \([0-9]*\):.*/\1/p' "$d.err")
	py_first=$(ls "$d"/*."$(printf %05d "${pid:-0}")".0001.heap 2>/dev/null | head -1)
	[ -n "$py_first" ] || { bad "$d: no first dump: $(tail -3 "$d.err")"; return 1; }
	py_peak=$("$bin" top --json "$py_first" 2>/dev/null | python3 -c '
import json, sys; print(json.load(sys.stdin)["run"]["peak"]["dump"])')
	[ -n "$py_peak" ] || { bad "$d: top names no peak"; return 1; }
	py_final=$(grep -l '^Reason: python finalizing' \
		"${py_first%.0001.heap}".*.heap 2>/dev/null | tail -1)
	py_final=${py_final:-$py_peak}
}

# tracemalloc's statistics by line for app.py ARGS (a run of its own).
PYTHONHASHSEED=0 "$pyd" -X tracemalloc "$pysrc/app.py" >traced.txt 2>traced.err ||
	bad "app.py under tracemalloc: $(tail -2 traced.err)"

py_app() { # LABEL DIR [ENV=VALUE...]: app.py under record, checked
	label=$1 d=$2
	shift 2
	py_record "$d" env "$@" "$pyd" "$pysrc/app.py" || return
	dump_sums "$label" "$py_first"
	"$bin" top --json "$py_final" >"$d.top" 2>"$d.top.err" ||
		{ bad "$label: top: $(head -2 "$d.top.err")"; return; }
	python3 "$pysrc/compare.py" "$pysrc" "$d.top" traced.txt >"$d.cmp" 2>&1 &&
		ok || bad "$label: against tracemalloc: $(tr '\n' ' ' <"$d.cmp")"
	"$bin" diff --json "$py_first" >"$d.diff" 2>"$d.diff.err" ||
		{ bad "$label: diff FIRST: $(head -2 "$d.diff.err")"; return; }
	python3 -c '
import json, os, sys
d = json.load(open(sys.argv[1]))
grew = [f for f in d["functions"] if f["change"] > 0]
first = grew[0] if grew else {}
if os.path.basename(first.get("file", "")) != "store.py" or first.get("line") != 19:
    sys.exit("the first grower is %s, not store.py:19" % first)
# (A stack is a suspect when it grew at two steps or more: on a loaded
# machine a dump is slower, the next peak dump comes later, and a run may
# have only the first, one peak and the last: nothing to tell then.)
if not first.get("leak_suspect") and d["snapshots"] >= 4:
    sys.exit("store.py:19 is not a leak suspect (%d snapshots)" % d["snapshots"])
temp = [f for f in grew if os.path.basename(f.get("file", "")) == "app.py" and f.get("line") == 22]
if temp:
    sys.exit("the temporaries grew: %s" % temp)
' "$d.diff" 2>"$d.why" && ok || bad "$label: diff FIRST: $(cat "$d.why")"
}
py_app "python3.11" pyd
py_app "PYTHONMALLOC=malloc" pym PYTHONMALLOC=malloc
py_app "PYTHONMALLOC=debug" pydbg PYTHONMALLOC=debug

# python3 -m: the same lines (the module run from its directory).
if (cd "$pysrc" && PYTHONHASHSEED=0 "$bin" record -o "$tmp/pymod/" -- "$pyd" -m app 1 5000 \
	>"$tmp/pymod.out" 2>"$tmp/pymod.err"); then
	grep -q "	make_words.<locals>.<listcomp>	.*app.py	18$" pymod/*.heap &&
		ok || bad "python3 -m app: no named frame of app.py:18"
else
	bad "python3 -m app: $(tail -2 pymod.err)"
fi

# The named frame FUNCTION at FILE:LINE is in one of the dumps of DIR's
# process whose command line matches PATTERN, and holds bytes in its
# dump before teardown.
py_child() { # LABEL DIR PATTERN FUNCTION FILE LINE
	found=
	for f in "$2"/*.0001.heap; do
		grep -q "^CommandLine: .*$3" "$f" || continue
		b=${f%.0001.heap}
		t=$(grep -l '^Reason: python finalizing' "$b".*.heap | head -1)
		[ -n "$t" ] || continue
		"$bin" top --json "$t" 2>/dev/null | python3 -c '
import json, os, sys
fn, file, line = sys.argv[1], sys.argv[2], int(sys.argv[3])
for f in json.load(sys.stdin)["functions"]:
    for l in f.get("lines", []):
        if f["name"] == fn and os.path.basename(l.get("file", "")) == file and l["line"] == line and l["flat"] > 0:
            sys.exit(0)
sys.exit(1)' "$4" "$5" "$6" && found=$t
	done
	[ -n "$found" ] && ok || bad "$1: no dump before teardown of '$3' holds $4 ($5:$6)"
}
S=$pysrc/scenarios.py
at() { grep -n "# $1\$" "$S" | cut -d: -f1; } # the line of scenarios.py marked so
py_record pysub "$pyd" "$S" subprocess &&
	py_child "subprocess" pysub "app.py 1 5000" "make_words.<locals>.<listcomp>" app.py 18
py_record pyspawn "$pyd" "$S" spawn &&
	py_child "multiprocessing (spawn)" pyspawn "spawn_main" "child_strings.<locals>.<listcomp>" scenarios.py "$(at "child site")"
py_record pyfork "$pyd" "$S" fork && {
	n=$(ls pyfork/*.0001.heap | wc -l)
	[ "$n" = 2 ] && ok || bad "os.fork(): $n processes wrote dumps, want 2"
	py_child "os.fork()" pyfork "scenarios.py fork" "child_strings.<locals>.<listcomp>" scenarios.py "$(at "child site")"
}
# Each caller's line holds its strings, to the object: the recorder's
# cache of stacks tells a frame at the same address, running the same
# code at the same instruction, called from another line.
py_record pycallers "$pyd" "$S" callers && {
	"$bin" expand "$py_final" linux malloc-python-app 2>/dev/null >pycallers.exp
	for n in 3000 2000 1000 1500 2500; do
		line=$(grep -n "# caller $n\$" "$S" | cut -d: -f1)
		case $n in
		1500 | 2500) site=$(grep -n "# the generated site" "$S" | cut -d: -f1) fn=generated ;;
		*) site=$(grep -n "# the listed site" "$S" | cut -d: -f1) fn="listed.<locals>.<listcomp>" ;;
		esac
		awk -v n="$n" -v fn="<- $fn (" -v site="scenarios.py:$site) <- " \
			-v line="scenarios.py:$line) <- " '
			$2 == "alloc=" n && $3 == "free=0" && index($0, fn) &&
			index($0, site) && index($0, line) { f = 1 }
			END { exit !f }' pycallers.exp && ok ||
			bad "callers: no stack of $n strings from scenarios.py:$line: $(grep -c . pycallers.exp) stacks"
	done
}
# Objects CPython serves from its free lists (dicts, lists, tuples,
# floats: dropped on one line, kept on the next) are the kept line's, as
# tracemalloc counts them (the old recorder gave them all to the line
# that first made them).
PYTHONHASHSEED=0 "$pyd" -X tracemalloc "$S" reborn >reborn.traced 2>reborn.terr ||
	bad "reborn under tracemalloc: $(tail -2 reborn.terr)"
py_record pyreborn "$pyd" "$S" reborn && {
	"$bin" top --json "$py_final" >pyreborn.top 2>pyreborn.top.err &&
		python3 "$pysrc/compare.py" "$pysrc" pyreborn.top reborn.traced 3 >pyreborn.cmp 2>&1 &&
		ok || bad "reborn: against tracemalloc: $(tr '\n' ' ' <pyreborn.cmp) $(head -2 pyreborn.top.err)"
}
# Code objects freed and others made at their addresses (twelve
# functions compiled from one text, each run and freed before the next):
# each file's line its own strings, as tracemalloc counts them (the names
# kept of the old code objects' instructions would give them all to the
# first two), and each file's "make" a function of its own (-n: twelve
# of them and the rest).
PYTHONHASHSEED=0 "$pyd" -X tracemalloc "$S" recompiled >recompiled.traced 2>recompiled.terr ||
	bad "recompiled under tracemalloc: $(tail -2 recompiled.terr)"
py_record pyrecompiled "$pyd" "$S" recompiled && {
	"$bin" top --json -n 40 "$py_final" >pyrecompiled.top 2>pyrecompiled.top.err &&
		python3 "$pysrc/compare.py" "$pysrc" pyrecompiled.top recompiled.traced 12 \
			>pyrecompiled.cmp 2>&1 &&
		ok || bad "recompiled: against tracemalloc: $(tr '\n' ' ' <pyrecompiled.cmp | cut -c1-400)"
}
# Chains of nested containers freed (the recorder's deallocs of dicts,
# lists and tuples keep CPython's trashcan: without it, a crash).
py_record pynested "$pyd" "$S" nested && {
	grep -qx nested pynested.out && ok || bad "nested: $(tail -2 pynested.err)"
}
py_record pyprof "$pyd" "$S" setprofile &&
	py_child "sys.setprofile" pyprof "setprofile" "setprofile.<locals>.<listcomp>" scenarios.py "$(at profiled)"

# A thread of a C extension that never held the GIL: its blocks (3000 of
# 1 KiB) have its native frames, no Python frame (and nothing crashes).
inc=$("$pyd" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
if [ -r "$inc/Python.h" ] && gcc -g -O1 -shared -fPIC -I"$inc" "$src/pyext.c" -o pyext.so 2>pyext.err; then
	py_record pyext "$pyd" "$S" ext 3000 && {
		grep -q '^3000$' pyext.out && ok || bad "pyext: $(cat pyext.out)"
		t=$(grep -l '^Reason: python finalizing' pyext/*.heap | head -1)
		"$bin" expand "$t" linux malloc-app 3 2>/dev/null >pyext.exp
		awk '/native_worker/ && $1 >= 3000 * 1024 { f = 1 } END { exit !f }' pyext.exp &&
			ok || bad "pyext: the native thread's 3000 KiB are not native_worker's: $(head -3 pyext.exp)"
		dump_sums "pyext" "$py_first"
	}
else
	echo "real: note: no Python.h ($inc): the C extension is not tested"
fi

# A recorder without the table: said once, native frames only.
# (Built as the Makefile builds it, but for the switch and warnings.)
if gcc -O2 -g -std=gnu11 -I"$top/include" -D_GNU_SOURCE -DPYTHON_OFFSETS_NONE \
	-fPIC -fvisibility=hidden -ftls-model=initial-exec -pthread -shared \
	-Wl,-z,defs -Wl,-z,now -o nopy.so \
	$(ls "$top"/src/recorder/*.c | grep -v rec_tsan.c) -ldl >nopy.build 2>&1; then
	mkdir -p nopy-run
	HEAPPROFILE="$tmp/nopy-run/p" LD_PRELOAD="$tmp/nopy.so" \
		"$pyd" "$pysrc/app.py" 1 2000 >/dev/null 2>nopy.err
	n=$(grep -c 'python 3\.11\.[0-9]*: no table of this version' nopy-run/p.log 2>/dev/null)
	[ "$n" = 1 ] && ok || bad "no table: said $n times: $(cat nopy-run/p.log nopy.err 2>/dev/null | head -3)"
	grep -q '^frame ' nopy-run/*.heap && bad "no table: Python frames named all the same" || ok
	[ -s nopy.err ] && bad "no table: the program's stderr: $(head -2 nopy.err)" || ok
else
	bad "a recorder without the table: $(tail -3 nopy.build)"
fi

# The other build of python3 first in PATH (a shared libpython).
if [ -n "$pyp" ] && [ -x "$pyp" ]; then
	if py_record pyother "$pyp" "$pysrc/app.py" 1 5000; then
		grep -q "	Store.remember	.*store.py	19$" pyother/*.heap &&
			ok || bad "$pyp: no named frame of store.py:19"
		grep -q "^Runtime: python 3\.[0-9.]* /" "$py_first" &&
			ok || bad "$pyp: no Runtime line in META"
		dump_sums "$pyp" "$py_first"
	fi
fi
