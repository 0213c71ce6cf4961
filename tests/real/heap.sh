# Sourced by tests/real/run.sh: dmprof heap on live processes (uses bin,
# src, tmp, tcmalloc, ok and bad).  src/heapknown.c knows its own heap,
# and glibc's mallinfo2() of it; the checks:
#   - every block it holds is found at its address, in use, with its
#     usable size (malloc_usable_size);
#   - the walk's states are glibc's count, field by field: in use +
#     tcache + the arenas' own headers = uordblks; top + bins + unsorted
#     + fastbins = fordblks; fastbins = fsmblks (smblks); mmapped chunks
#     = hblks (hblkhd); the arenas' system memory = arena; ...
#   - 9 arenas (main and 8 threads), 9 tcaches, every kind of free chunk
#     seen, and no problem;
#   - the same walk with libc's debug file hidden (an empty tmpfs on
#     /usr/lib/debug in a mount namespace of its own, root only; no
#     DEBUGINFOD_URLS): the same JSON, as exact; and, under strace, no
#     debug file looked for at all;
#   - a free chunk whose size field the program zeroed: its heap's walk
#     stops there, said with the address, the rest counted as unknown;
#   - refusals: no such process, a zombie, a process traced already, a
#     malloc that is not glibc's (tcmalloc, jemalloc), a static binary;
#   - a process killed during the walk: an error or a result, no crash.
: "${tmp:?tests/real/run.sh sources this file, in its scratch directory}"
mkdir -p "$tmp/heap" && cd "$tmp/heap" || exit 1
gcc -g -O1 -pthread "$src/heapknown.c" -o heapknown || exit 1

# Start heapknown OUT [MODE...] (or another command line) in the
# background, as hk_pid, and wait for it to say it is ready.
hk_start() {
	hk_out=$1
	shift
	# (Not the ready of a process started before under the same name.)
	rm -f "$hk_out.ready"
	"$@" >"$hk_out.ready" 2>&1 &
	hk_pid=$!
	wait_line "$hk_out.ready" '^ready$' $hk_pid && return 0
	bad "heap: '$*' did not get ready: $(cat "$hk_out.ready")"
	return 1
}
hk_stop() {
	kill -9 $hk_pid 2>/dev/null
	wait $hk_pid 2>/dev/null
}

# Checks of dmprof heap --json --blocks (JSON) against heapknown's file
# (KNOWN), a line each: "ok" or "bad WHY".
hk_check() { # KNOWN JSON [corrupt]
	python3 - "$@" <<'PY'
import json, sys
known, doc = sys.argv[1], json.load(open(sys.argv[2]))
mode = sys.argv[3] if len(sys.argv) > 3 else ""
blocks = {int(b["address"], 16): b for b in doc["blocks"]}
want, mi, corrupt = [], {}, None
for line in open(known):
    f = line.split()
    if f[0] == "block":
        want.append((int(f[1], 16), int(f[2])))
    elif f[0] == "mallinfo2":
        mi = {f[i]: int(f[i + 1]) for i in range(1, len(f), 2)}
    elif f[0] == "corrupt":
        corrupt = int(f[1], 16)
def check(cond, why):
    print("ok" if cond else "bad " + why)
if mode == "corrupt":
    a0 = doc["arenas"][0]
    check(a0["corrupt"] and a0["unknown"] > 0,
          "the main arena is not marked corrupt with unknown bytes")
    check(any(int(p["address"], 16) == corrupt and "size field 0x0" in
              p["message"] for p in doc["problems"]),
          "no problem names the corrupt chunk 0x%x: %s" %
          (corrupt, doc["problems"][:3]))
    check(not any(a["corrupt"] for a in doc["arenas"][1:]),
          "a thread arena is marked corrupt too")
    sys.exit(0)
wrong = [(a, u, blocks.get(a)) for a, u in want
         if a not in blocks or blocks[a]["usable"] != u or
         blocks[a]["state"] != "in-use"]
check(want and not wrong, "%d of %d known blocks not found in use with "
      "their size, first: %s" % (len(wrong), len(want), wrong[:1]))
t, arenas = doc["total"], doc["arenas"]
def nbytes(s): return t[s]["bytes"]
def n(s): return t[s]["count"]
for field, got in [
        ("uordblks", nbytes("in-use") + nbytes("tcache") + t["overhead"]),
        ("fordblks", nbytes("top") + nbytes("bin") + nbytes("unsorted") +
                     nbytes("fastbin")),
        ("fsmblks", nbytes("fastbin")), ("smblks", n("fastbin")),
        ("hblks", doc["mmapped"]["count"]),
        ("hblkhd", doc["mmapped"]["bytes"]),
        ("arena", sum(a["system_mem"] for a in arenas)),
        ("ordblks", n("bin") + n("unsorted") + len(arenas)),
        ("keepcost", arenas[0]["top"]["bytes"]), ("usmblks", 0)]:
    check(got == mi[field], "%s: the walk gives %d, mallinfo2 %d" %
          (field, got, mi[field]))
check(t["unknown"] == 0 and n("unlisted") == 0 and not doc["problems"],
      "problems on a sound heap: %s" % doc["problems"][:3])
check(len(arenas) == 9 and len(doc["tcaches"]) == 9,
      "%d arenas and %d tcaches, not 9 and 9" %
      (len(arenas), len(doc["tcaches"])))
check(all(n(s) > 0 for s in ("tcache", "fastbin", "unsorted", "bin")),
      "some kind of free chunk was not seen: %s" % t)
PY
}

hk_count() { # FILE: the lines of hk_check
	while read -r verdict why; do
		if [ "$verdict" = ok ]; then ok; else bad "heap: $why"; fi
	done <"$1"
}

# The walk of hk_pid again, with libc's debug file out of reach: a mount
# namespace of its own (root only) lays an empty tmpfs over
# /usr/lib/debug, where libc6-dbg puts it by build-id, and no
# DEBUGINFOD_URLS fetches it.  main_arena, mp_ and the tcaches are found
# by structure, so the JSON is the same but for the times it took, and
# as exact against glibc's mallinfo2 (hk_check).  Where strace is
# installed: the walk opens no debug file at all, hidden or not.
hk_nodebug() { # KNOWN
	if command -v strace >/dev/null 2>&1; then
		strace -f -qq -e trace=%file -o nodebug.trace \
			"$bin" heap --json $hk_pid >/dev/null 2>&1
		grep -q '^[0-9]* *execve(' nodebug.trace &&
			! grep -q '/usr/lib/debug\|\.debug"\|debuginfod' nodebug.trace &&
			ok || bad "heap: the walk looks for a debug file: $(grep 'debug' nodebug.trace | head -3)"
	fi
	if [ "$(id -u)" != 0 ] || ! unshare -m true 2>/dev/null; then
		echo "real: SKIP heap without libc's debug file: not root, or no mount namespace here (unshare -m)"
		return
	fi
	libc=$(awk '$6 ~ /\/libc\.so\.6$/ { print $6; exit }' /proc/$hk_pid/maps)
	build_id=$(readelf -n "$libc" 2>/dev/null | sed -n 's/^ *Build ID: *//p')
	debug=/usr/lib/debug/.build-id/$(echo "$build_id" | cut -c1-2)/$(echo "$build_id" | cut -c3-).debug
	[ -n "$build_id" ] && [ -e "$debug" ] ||
		echo "real: note: libc's debug file ($debug) is not installed (libc6-dbg; make check installs it): the walk above was without it already"
	env -u DEBUGINFOD_URLS unshare -m sh -c '
		if [ -d /usr/lib/debug ]; then
			mount -t tmpfs none /usr/lib/debug || exit 99
		fi
		[ ! -e "$1" ] || exit 98
		exec "$2" heap --json --blocks "$3"' sh "$debug" "$bin" $hk_pid \
		>nodebug.json 2>nodebug.err
	case $? in
	0) ;;
	98) bad "heap: $debug is still there under the tmpfs"; return ;;
	99) echo "real: SKIP heap without libc's debug file: no tmpfs can be mounted on /usr/lib/debug: $(cat nodebug.err)"; return ;;
	*) bad "heap: without libc's debug file: dmprof heap failed: $(cat nodebug.err)"; return ;;
	esac
	python3 - heap.json nodebug.json >checks.out 2>&1 <<'PY' ||
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
for d in (a, b):
    for k in ("held_seconds", "stopping_seconds", "walk_seconds"):
        d.pop(k)
keys = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
print("ok" if a == b else "bad its JSON differs in %s" % keys)
PY
		echo "bad the checker failed" >>checks.out
	hk_check "$1" nodebug.json >>checks.out 2>&1 ||
		echo "bad the checker failed" >>checks.out
	sed "s/^bad /bad without libc's debug file: /" checks.out >checks.nodebug
	hk_count checks.nodebug
}

if ! command -v python3 >/dev/null 2>&1; then
	bad "heap: python3 is not installed (make check installs it)"
elif hk_start known ./heapknown known; then
	"$bin" heap --json --blocks $hk_pid >heap.json 2>heap.err &&
		ok || bad "heap: dmprof heap failed: $(cat heap.err)"
	"$bin" heap $hk_pid >heap.txt 2>>heap.err &&
		grep -q "^process $hk_pid: 9 threads held .* ms" heap.txt &&
		grep -q '^mmapped  *72 ' heap.txt &&
		ok || bad "heap: the text summary: $(head -3 heap.txt)"
	hk_nodebug known
	hk_stop
	hk_check known heap.json >checks.out 2>&1 || echo "bad the checker failed" >>checks.out
	hk_count checks.out
fi

# A corrupt free chunk.
if hk_start corrupt ./heapknown corrupt corrupt; then
	"$bin" heap --json --blocks $hk_pid >corrupt.json 2>corrupt.err &&
		ok || bad "heap: corrupt: dmprof heap failed: $(cat corrupt.err)"
	addr=$(sed -n 's/^corrupt //p' corrupt)
	grep -q "^dmprof: warning: arena 0: chunk at $addr: size field 0x0 too small; the rest of its heap" corrupt.err &&
		ok || bad "heap: corrupt: no warning names $addr: $(cat corrupt.err)"
	hk_stop
	hk_check corrupt corrupt.json corrupt >checks.out 2>&1 || echo "bad the checker failed" >>checks.out
	hk_count checks.out
fi

# Refusals, each naming the process and what is wrong.
refused() { # WHAT PATTERN PID
	"$bin" heap $3 >refused.out 2>refused.err
	rc=$?
	[ $rc = 1 ] && [ ! -s refused.out ] && grep -q "$2" refused.err &&
		ok || bad "heap: $1: status $rc, said: $(cat refused.err)"
}
none=$(cat /proc/sys/kernel/pid_max)
refused "no such process" "^dmprof: no process $none\$" $none
# (The child ends after its parent became a sleep that never waits.)
sh -c 'sleep 0.2 & echo $!; exec sleep 20' >zombie.pid &
sleeper=$!
# (A zombie once its state says so: 0.7 s was not always enough on a
# loaded machine; 10 s at most.)
for _ in $(seq 100); do
	sleep 0.1
	[ -s zombie.pid ] &&
		[ "$(sed 's/.*) \(.\).*/\1/' /proc/$(cat zombie.pid)/stat 2>/dev/null)" = Z ] &&
		break
done
refused "a zombie" "^dmprof: process $(cat zombie.pid) has exited (a zombie" "$(cat zombie.pid)"
kill $sleeper
wait $sleeper 2>/dev/null
if hk_start traced ./heapknown traced traced; then
	refused "traced" "^dmprof: process $hk_pid is traced already, by process [0-9]* (a debugger, strace?): detach that first" $hk_pid
	hk_stop
fi

# Another user's process: dmprof run as nobody on root's heapknown (as
# root only; setpriv from util-linux).
if [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null 2>&1; then
	echo "real: SKIP heap: another user's process (not root, or no setpriv)"
elif hk_start otheruser ./heapknown otheruser; then
	setpriv --reuid=65534 --regid=65534 --clear-groups "$bin" heap $hk_pid \
		>other.out 2>other.err
	rc=$?
	[ $rc = 1 ] && [ ! -s other.out ] &&
		grep -q "^dmprof: process $hk_pid belongs to user 0: run dmprof as that user, or as root" other.err &&
		ok || bad "heap: another user's process: status $rc: $(cat other.err)"
	hk_stop
fi
# (Another malloc, named: by the library mapped.)
for lib in $tcmalloc $(ls /usr/lib/*/libjemalloc.so.2 2>/dev/null | head -1); do
	name=$(basename $lib | sed 's/^lib\([a-z]*\).*/\1/')
	if hk_start other env LD_PRELOAD=$lib ./heapknown other; then
		refused "$(basename $lib)" "^dmprof: process $hk_pid: malloc is $name's ($lib[.0-9]*), whose heap dmprof does not walk (glibc's only)$" $hk_pid
		hk_stop
	fi
done
if gcc -O1 -static -pthread "$src/heapknown.c" -o heapknown-static 2>/dev/null; then
	if hk_start static ./heapknown-static static; then
		refused "static" "^dmprof: process $hk_pid has no libc.so mapped (a static binary, or not glibc)" $hk_pid
		hk_stop
	fi
else
	bad "heap: cannot link a static binary (libc6-dev's libc.a?)"
fi
"$bin" heap 12ab >/dev/null 2>refused.err
[ $? = 2 ] && grep -q "'12ab' is not a process id" refused.err &&
	ok || bad "heap: a bad pid: $(cat refused.err)"

# Kill heapknown (hk_pid) 50 ms into COMMAND on it: a result, or an
# error that says it exited, never a crash or a hang.  (Or that there is
# no such process: the shell's wait for COMMAND reaps heapknown too, and
# a slow start, a sanitizer build's, came to it only then.)
hk_killed() { # WHAT COMMAND...
	what=$1
	shift
	timeout 60 "$@" >killed.out 2>killed.err &
	dm=$!
	sleep 0.05
	kill -9 $hk_pid
	wait $dm
	rc=$?
	wait $hk_pid 2>/dev/null
	{ [ $rc = 0 ] || { [ $rc = 1 ] &&
		grep -q "^dmprof: .*exited\|^dmprof: no process $hk_pid\$" killed.err; }; } &&
		ok || bad "$what: killed during it: status $rc: $(cat killed.err)"
}
if hk_start big ./heapknown big big 2000000; then
	hk_killed heap "$bin" heap $hk_pid
fi
cd "$tmp" || exit 1
