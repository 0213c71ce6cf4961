# Sourced by tests/real/run.sh after heap.sh (uses bin, src, tmp, tcmalloc,
# ok, bad, and heap.sh's heapknown, hk_start, hk_stop and hk_killed):
# dmprof snapshot of running processes that nobody prepared.  The checks:
#   - heapknown: top --json's heap summary is dmprof heap --json's, and
#     its mallinfo2 is glibc's own, field by field; the known blocks are
#     all counted in their size classes; its threads' stacks are
#     mmap-thread-stacks;
#   - every snapshot adds up: mustbezero 0, the components between the
#     markers sum to total, and total is the kernel's Rss + Swap within
#     0.5% (the snapshot's own, and heapknown's smaps_rollup read apart);
#   - a run: -i 0.2 -n 3 goes on with the numbers already there, and csv
#     and diff read it as one;
#   - a heap that grows (grow, built here, counts its blocks): -i 0.25
#     -n 5 writes 5 snapshots, each holding the blocks grow had made by
#     its Time (within the one being made); csv's malloc components grow
#     at each, diff's malloc-app and size class grew by what grow made
#     from the first to the last (within a block), and html's data has
#     the 5 snapshots and csv's numbers;
#   - python3, sqlite3 and a C++ server snapshotted every 0.1 s while they
#     run: the same output and exit status as without, every snapshot
#     adding up;
#   - a heap that is not glibc's (tcmalloc, a static binary, Debian's
#     redis-server with jemalloc): said, another malloc by its name, and
#     classed by mapping (another malloc's as its NAME-arena component); a corrupt heap: its problem said; a process
#     traced already: refused; one stopped (SIGSTOP): snapshotted, and
#     left stopped; one that exits during a run: the run ends; one killed
#     during a snapshot: an error or a snapshot, no crash; one that exits
#     while held (once read) or right after: its snapshot stands, named
#     after it; dmprof killed while it holds one: the process runs on,
#     not stopped, not traced.
: "${tmp:?tests/real/run.sh sources this file, in its scratch directory}"
mkdir -p "$tmp/snap" && cd "$tmp/snap" || exit 1

# Checks of SNAPSHOT's run, a line each: "ok" or "bad WHY".  With
# KNOWN (heapknown's file) and HEAP (dmprof heap --json of it), also
# the heap against them; with ROLLUP (Rss + Swap of smaps_rollup), the
# total against it.
snap_check() { # SNAPSHOT [KNOWN HEAP ROLLUP]
	"$bin" csv -b "$1" >snap.csv 2>snap.err ||
		{ echo "bad csv failed: $(cat snap.err)"; return; }
	[ $# -gt 1 ] && "$bin" top --json "$1" >snap.top 2>>snap.err
	python3 - "$@" <<'PY'
import csv, json, sys
def check(cond, why):
    print("ok" if cond else "bad " + why)
rows = list(csv.reader(open("snap.csv")))
head, rows = rows[0], rows[1:]
a, b = head.index("FROM_HERE_FOR_TOTAL"), head.index("UNTIL_HERE_FOR_TOTAL")
for k, r in enumerate(rows):
    v = {h: int(x) for h, x in zip(head[1:], r[1:])}
    parts = sum(int(x) for x in r[a + 1:b])
    kernel = v["rss"] + v["swap"]
    check(v["mustbezero"] == 0, "snapshot %d: mustbezero %d" %
          (k + 1, v["mustbezero"]))
    check(parts == v["total"], "snapshot %d: the components add up to %d, "
          "total %d" % (k + 1, parts, v["total"]))
    check(kernel and abs(v["total"] - kernel) <= kernel * 0.005,
          "snapshot %d: total %d, Rss + Swap %d" % (k + 1, v["total"], kernel))
if len(sys.argv) < 3:
    sys.exit(0)
known, heap = sys.argv[2], json.load(open(sys.argv[3]))
rollup, top = int(sys.argv[4]), json.load(open("snap.top"))["heap"]
for k in ("total", "mmapped", "mallinfo2"):
    check(top[k] == heap[k], "%s: top %s, heap %s" % (k, top[k], heap[k]))
mi, sizes = {}, {}
for line in open(known):
    f = line.split()
    if f[0] == "block":
        sizes[int(f[2])] = sizes.get(int(f[2]), 0) + 1
    elif f[0] == "mallinfo2":
        mi = {f[i]: int(f[i + 1]) for i in range(1, len(f), 2)}
check(all(top["mallinfo2"][f] == mi[f] for f in mi if f != "usmblks"),
      "mallinfo2: the snapshot's %s, glibc's %s" % (top["mallinfo2"], mi))
check(top["arenas"] == 9 and top["tcaches"] == 9 and top["problems"] == 0,
      "%d arenas, %d tcaches, %d problems" %
      (top["arenas"], top["tcaches"], top["problems"]))
check(int(rows[0][head.index("mmap-thread-stacks")]) > 0,
      "the 8 threads' stacks are not mmap-thread-stacks")
check(abs(int(rows[0][head.index("total")]) - rollup) <= rollup * 0.005,
      "total %s, smaps_rollup's Rss + Swap %d" %
      (rows[0][head.index("total")], rollup))
PY
}

snap_count() { # FILE: the lines of snap_check
	while read -r verdict why; do
		if [ "$verdict" = ok ]; then ok; else bad "snapshot: $why"; fi
	done <"$1"
}

# A size class of heapknown's holds at least the blocks it knows of.
snap_classes() { # SNAPSHOT KNOWN
	awk '$1 == "in-use" { split($2, r, /\.\./); n[r[1] " " r[2]] += $4 }
	     END { for (k in n) print k, n[k] }' "$1" >classes
	awk 'NR == FNR { lo[NR] = $1; hi[NR] = $2; have[NR] = $3; c = NR; next }
	     $1 == "block" { for (i = 1; i <= c; i++)
			if ($3 >= lo[i] && $3 <= hi[i]) { want[i]++; next }
		missing++ }
	     END { for (i = 1; i <= c; i++) if (want[i] > have[i]) missing++
		exit missing > 0 }' classes "$2"
}

rollup() { # PID: Rss + Swap of smaps_rollup, in bytes
	awk '$1 == "Rss:" || $1 == "Swap:" { s += $2 } END { print s * 1024 }' \
		"/proc/$1/smaps_rollup"
}

if hk_start snapknown "$tmp/heap/heapknown" snapknown; then
	"$bin" heap --json $hk_pid >heap.json 2>/dev/null
	rss=$(rollup $hk_pid)
	"$bin" snapshot -o run/ $hk_pid >snap.out 2>snap.err &&
		[ ! -s snap.out ] &&
		grep -q "^dmprof snapshot: run/heapknown.$(printf %05d $hk_pid).0001.snap: process $hk_pid stood still [0-9.]* ms (the snapshot took [0-9.]* ms)$" snap.err &&
		ok || bad "snapshot: heapknown: $(cat snap.err)"
	first=run/heapknown.$(printf %05d $hk_pid).0001.snap
	grep -q "^Reason: snapshot$" $first && grep -q "^Threads: 9$" $first &&
		grep -q "^HeldSeconds: [0-9.]*$" $first &&
		grep -q "^Heap: glibc 2.36, main_arena 0x[0-9a-f]*, 9 arenas, 9 tcaches, 72 mmapped chunks$" $first &&
		ok || bad "snapshot: heapknown: its META: $(sed -n '2,14p' $first)"
	snap_check $first snapknown heap.json "$rss" >checks.out 2>&1 ||
		echo "bad the checker failed" >>checks.out
	snap_count checks.out
	snap_classes $first snapknown && ok ||
		bad "snapshot: heapknown: a size class lacks blocks it holds: $(cat classes)"
	"$bin" top $first 2>/dev/null | head -1 |
		grep -q "^heap: 9 arenas holding .*, 9 tcaches$" &&
		ok || bad "snapshot: top does not start with the heap: $("$bin" top $first 2>&1 | head -3)"
	# A run goes on with the numbers there: 0002 to 0004.
	"$bin" snapshot -o run/ -i 0.2 -n 3 $hk_pid 2>snap.err &&
		grep -q "^dmprof snapshot: 3 snapshots of process $hk_pid: .*\.0002\.snap \.\. .*\.0004\.snap; it stood still up to [0-9.]* ms ([0-9.]* ms on average; a snapshot took up to [0-9.]* ms)$" snap.err &&
		ok || bad "snapshot: -i 0.2 -n 3: $(cat snap.err)"
	rows=$("$bin" csv $first 2>/dev/null | wc -l)
	[ "$rows" = 5 ] && ok || bad "snapshot: csv of the run: $rows lines, not 5"
	"$bin" diff $first >diff.out 2>diff.err &&
		grep -q "^A .*\.0001\.snap -> B .*\.0004\.snap: " diff.out &&
		ok || bad "snapshot: diff of the run: $(cat diff.err)"
	hk_stop
fi

# A heap that grows: grow mallocs a block of 10000 bytes every ms, fills
# it, and then writes "COUNT TIME" (CLOCK_REALTIME, as the snapshot's
# Time: is read once every thread is held).  So a count written before
# a snapshot's Time is in its heap, and at most one block more (allocated,
# perhaps half filled, not yet written): each end of the run is off by
# a block at most, and its growth is what grow says within one chunk
# (10016 bytes) either way.  -i 0.25 -n 5: a second, some 900 blocks.
cat >grow.c <<'C'
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#define SIZE 10000
#define MAX 10000 /* blocks (100 MB, 10 s or more); a minute later, gone */
char *volatile last; /* (so that no compiler drops a block unused) */
char *kept[MAX]; /* (and none is leaked: not static, not optimised away) */
static void put(int fd, const char *s) /* not stdio: it would allocate */
{
	if (write(fd, s, strlen(s)) != (ssize_t)strlen(s))
		abort();
}
int main(int argc, char **argv)
{
	struct timespec t, ms = { 0, 1000000 };
	char line[64];
	int fd = argc > 1 ? open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644) : -1;
	if (fd < 0)
		return 2;
	put(1, "ready\n");
	for (long n = 1; n <= MAX + 60000; n++) {
		if (n <= MAX) {
			char *p = malloc(SIZE);
			if (!p)
				abort();
			memset(p, n, SIZE);
			last = kept[n - 1] = p;
			clock_gettime(CLOCK_REALTIME, &t);
			snprintf(line, sizeof(line), "%ld %lld.%09ld\n", n,
				 (long long)t.tv_sec, t.tv_nsec);
			put(fd, line);
		}
		nanosleep(&ms, NULL);
	}
	return 0;
}
C
if ! gcc -O1 grow.c -o grow; then
	bad "snapshot: grow.c does not build"
elif hk_start growlog ./grow growlog; then
	"$bin" snapshot -o growing/ -i 0.25 -n 5 $hk_pid 2>grow.err
	rc=$?
	hk_stop
	run=growing/grow.$(printf %05d $hk_pid)
	ls growing/*.snap 2>/dev/null >grow.files
	printf "$run.%04d.snap\n" 1 2 3 4 5 >grow.want
	[ $rc = 0 ] && cmp -s grow.files grow.want &&
		grep -q "^dmprof snapshot: 5 snapshots of process $hk_pid: $run\.0001\.snap \.\. $run\.0005\.snap; " grow.err &&
		ok || bad "snapshot: grow -i 0.25 -n 5: status $rc, $(wc -l <grow.files) files: $(cat grow.err)"
	"$bin" csv -b $run.0001.snap >grow.csv 2>grow.err ||
		bad "snapshot: grow: csv failed: $(cat grow.err)"
	"$bin" diff -b $run.0001.snap $run.0005.snap >grow.diff 2>grow.err ||
		bad "snapshot: grow: diff failed: $(cat grow.err)"
	"$bin" html -o grow.html $run.0001.snap >/dev/null 2>grow.err &&
		grep -q "^dmprof: wrote grow.html ([0-9.]* [KM]iB, 5 snapshots)" grow.err ||
		bad "snapshot: grow: html failed: $(cat grow.err)"
	python3 - $run growlog >checks.out 2>&1 <<'PY' ||
import csv, json, re, sys
run, log = sys.argv[1], sys.argv[2]
def check(cond, why):
    print("ok" if cond else "bad grow: " + why)
chunk = (10000 + 8 + 15) & ~15  # malloc(10000)'s chunk: 10016 bytes
said = [(float(t), int(n)) for n, t in (l.split() for l in open(log))]
def logged(time):  # the last count grow wrote before TIME
    return max([n for t, n in said if t < time] or [0])
# Each snapshot: its blocks of grow's size class, against grow's count.
held, counted = [], []
for k in range(1, 6):
    snap = open("%s.%04d.snap" % (run, k)).read()
    time = float(re.search(r"^Time: ([0-9.]+)$", snap, re.M).group(1))
    blocks = sum(int(m.group(3)) for m in re.finditer(
        r"^in-use (\d+)\.\.(\d+) arena-0 (\d+) ", snap, re.M)
        if int(m.group(1)) <= 10008 <= int(m.group(2)))
    held.append(blocks)
    counted.append(logged(time))
    check(counted[-1] <= blocks <= counted[-1] + 1,
          "snapshot %d holds %d blocks of 10000 bytes, grow had written "
          "%d before its Time" % (k, blocks, counted[-1]))
# csv: a row per snapshot, the malloc components growing.
rows = list(csv.DictReader(open("grow.csv")))
check(len(rows) == 5, "csv: %d rows, not 5" % len(rows))
app = [int(r["malloc-app"]) for r in rows]
total = [int(r["malloc-total"]) for r in rows]
check(all(a < b for a, b in zip(app, app[1:])) and
      all(a < b for a, b in zip(total, total[1:])),
      "csv: malloc-app %s, malloc-total %s do not grow at each snapshot" %
      (app, total))
# diff: malloc-app grew by what grow allocated between the first and
# the last, named by its size class.
diff = open("grow.diff").read()
check(re.match(r"A %s\.0001\.snap -> B %s\.0005\.snap: " % (run, run), diff),
      "diff: its first line: %s" % diff.split("\n")[0])
grew = diff.split("components that grew")[1].split("\n\n")[0]
m = re.search(r"^ *([-+]\d+) +(\d+) +(\d+) .* malloc-app$", grew, re.M)
want = (counted[4] - counted[0]) * chunk
check(m and int(m.group(1)) > 0 and
      int(m.group(1)) == int(m.group(3)) - int(m.group(2)) ==
      app[4] - app[0] and abs(int(m.group(1)) - want) <= chunk,
      "diff: malloc-app grew %s; csv says %d; grow wrote %d blocks "
      "(%d bytes) between the first snapshot and the last" %
      (m and m.group(1), app[4] - app[0], counted[4] - counted[0], want))
fn = diff.split("functions that grew")[1].split("\n\n")[0]
f = re.search(r"^ *\+(\d+) .* size-(\d+)\.\.(\d+)$", fn, re.M)
check(f and int(f.group(2)) <= 10008 <= int(f.group(3)) and
      abs(int(f.group(1)) - want) <= chunk,
      "diff: the function that grew is not grow's size class, by grow's "
      "%d bytes: %s" % (want, fn.strip()))
# html: the page's data, 5 snapshots and the csv's numbers.
page = open("grow.html").read()
data = json.loads(page.split('id="data">\n', 1)[1].split("\n", 1)[0])
comps = {c["name"]: c["values"] for c in data["policies"][0]["components"]}
check(len(data["snapshots"]) == 5 and comps.get("malloc-app") == app,
      "html: %d snapshots, malloc-app %s (csv: %s)" %
      (len(data["snapshots"]), comps.get("malloc-app"), app))
g = data["answer"]["grew"]
check(g and f and g[0]["name"] == "size-%s..%s" % f.group(2, 3) and
      g[0]["bytes"] == int(f.group(1)) and g[0]["component"] == "malloc-app",
      "html: what grew is not grow's size class: %s" % g[:2])
PY
		echo "bad grow: the checker failed" >>checks.out
	snap_count checks.out
fi

# PROGRAM's output and status with snapshots every 0.1 s as without, and
# each snapshot adding up.
snap_while() { # NAME COMMAND...
	name=$1
	shift
	"$@" >"$name.plain" 2>&1
	plain=$?
	"$@" >"$name.snapped" 2>&1 &
	pid=$!
	"$bin" snapshot -o "$name/" -i 0.1 $pid 2>"$name.err"
	wait $pid
	snapped=$?
	[ $snapped = $plain ] && cmp -s "$name.plain" "$name.snapped" && ok ||
		bad "snapshot: $name: status $snapped (not $plain), or its output differs: $(diff "$name.plain" "$name.snapped" | head -5)"
	n=$(ls "$name"/*.snap 2>/dev/null | wc -l)
	[ "$n" -ge 3 ] && grep -q "^dmprof snapshot: process $pid has exited$" "$name.err" &&
		ok || bad "snapshot: $name: $n snapshots: $(cat "$name.err")"
	[ "$n" -gt 0 ] || return
	snap_check $(ls "$name"/*.snap | head -1) >checks.out 2>&1 ||
		echo "bad the checker failed" >>checks.out
	sed "s/^bad /bad $name: /" checks.out >checks.$name
	snap_count checks.$name
}

# (python3 waits half a second first: on a busy machine it could end
# before the first snapshot.)
snap_while python3 python3 -c '
import time
time.sleep(0.5)
d, l = {}, []
for i in range(600000):
    d[i] = str(i) * 8
    if i % 5 == 0:
        l.append(bytearray(64 + i % 300))
    if i % 7 == 0:
        d.pop(i // 2, None)
print(len(d), len(l), sum(len(b) for b in l))'
if command -v sqlite3 >/dev/null 2>&1; then
	snap_while sqlite3 sqlite3 :memory: "
		create table t(a integer, b text);
		with recursive n(i) as (select 1 union all select i + 1 from n
					 where i < 400000)
		insert into t select i, hex(randomblob(16)) || i from n;
		create index tb on t(b);
		select count(*), count(distinct substr(b, 1, 3)) from t;
		select sum(a) from t where a % 7 = 0;"
else
	bad "snapshot: sqlite3 is not installed (make check installs it)"
fi
mkdir -p cxx && (cd cxx && . "$top/tests/real/cxxserver-build.sh" &&
	cxxserver_build) || bad "snapshot: the C++ server did not build"
[ -x cxx/cxxserver ] &&
	snap_while cxxserver env CXXSERVER_IDLE_MS=500 ./cxx/cxxserver hand

# Not glibc's heap: said (another malloc by name), and the mappings are
# classed all the same: another malloc's as its NAME-arena component (a
# component of the partition: the total is still the kernel's).
other_check() { # WHAT FILE PATTERN [NAME]
	what=$1 f=$2 pattern=$3 name=${4:-}
	grep -q "^dmprof: warning: .*$pattern$" snap.err &&
		grep -q "^Heap: none (" "$f" &&
		"$bin" top "$f" >snap.txt 2>/dev/null &&
		head -1 snap.txt | grep -q "^heap: none (" && ok ||
		bad "snapshot: $what: $(cat snap.err)"
	if [ -n "$name" ]; then
		grep -q "^Allocator: $name$" "$f" &&
			grep -q "^functions: none (.* holds no allocation stacks" snap.txt &&
			! grep -q "dmprof_" snap.txt && ok ||
			bad "snapshot: $what: no Allocator: $name, or a functions table: $(cat snap.txt)"
		"$bin" csv -b "$f" 2>/dev/null | python3 -c '
import csv, sys
head, row = list(csv.reader(sys.stdin))[:2]
v = dict(zip(head, row))
c, a = int(v[sys.argv[1] + "-arena"]), int(v["unhooked-anonymous"])
print("ok" if c > 4 << 20 and c > 4 * a else
      "bad %s-arena %d bytes, unhooked-anonymous %d" % (sys.argv[1], c, a))
' "$name" >arena.out 2>&1
		snap_count arena.out
	fi
	snap_check "$f" >checks.out 2>&1
	sed "s/^bad /bad $what: /" checks.out >checks.$what
	snap_count checks.$what
}
notglibc() { # WHAT PATTERN NAME COMMAND...
	what=$1 pattern=$2 name=$3
	shift 3
	if hk_start snap$what "$@"; then
		"$bin" snapshot -o other/ $hk_pid >/dev/null 2>snap.err
		rc=$?
		f=$(ls other/*.$(printf %05d $hk_pid).0001.snap 2>/dev/null)
		if [ $rc != 0 ] || [ -z "$f" ]; then
			bad "snapshot: $what: status $rc: $(cat snap.err)"
		else
			other_check $what "$f" "$pattern" $name
		fi
		hk_stop
	fi
}
notglibc tcmalloc "malloc is tcmalloc's (.*/libtcmalloc[^)]*), whose heap dmprof does not walk (glibc's only); its mappings are classed as tcmalloc-arena, by mapping only" \
	tcmalloc env LD_PRELOAD=$tcmalloc "$tmp/heap/heapknown" snaptc
[ -x "$tmp/heap/heapknown-static" ] &&
	notglibc static "no libc.so mapped.*; its memory is classed by mapping only" "" \
		"$tmp/heap/heapknown-static" snapstatic

# redis (Debian's: jemalloc, linked with libjemalloc.so.2) filled by a
# bounded redis-benchmark on 127.0.0.1: jemalloc named, its mappings
# jemalloc-arena, the total the kernel's.
if command -v redis-server >/dev/null 2>&1 &&
	command -v redis-benchmark >/dev/null 2>&1; then
	port=$((20000 + ($$ + 7) % 20000))
	redis-server --port $port --bind 127.0.0.1 --save '' --appendonly no \
		>redis.log 2>&1 &
	rpid=$!
	redis_wait $port
	timeout 60 redis-benchmark -p $port -n 50000 -r 50000 -d 200 -t set -q \
		>redis.bench 2>&1 || bad "snapshot: redis-benchmark failed: $(tail -2 redis.bench)"
	"$bin" snapshot -o redis/ $rpid >/dev/null 2>snap.err
	rc=$?
	f=$(ls redis/*.$(printf %05d $rpid).0001.snap 2>/dev/null)
	if [ $rc != 0 ] || [ -z "$f" ]; then
		bad "snapshot: redis: status $rc: $(cat snap.err)"
	else
		other_check redis "$f" "malloc is jemalloc's (.*/libjemalloc.so[^)]*), whose heap dmprof does not walk (glibc's only); its mappings are classed as jemalloc-arena, by mapping only" jemalloc
		case $f in redis/redis-server.*) ok ;;
		*) bad "snapshot: redis: named $f" ;; esac
	fi
	redis-cli -p $port shutdown nosave >/dev/null 2>&1
	wait $rpid
else
	bad "snapshot: redis-server is not installed (make check installs it)"
fi

# A corrupt heap is snapshotted, its problem said and kept.
if hk_start snapcorrupt "$tmp/heap/heapknown" snapcorrupt corrupt; then
	"$bin" snapshot -o corrupt/ $hk_pid >/dev/null 2>snap.err
	f=$(ls corrupt/*.snap)
	grep -q "^dmprof: warning: $f: [0-9]* problems\{0,1\} in the heap walk, the first: arena 0: chunk at $(sed -n 's/^corrupt //p' snapcorrupt): size field 0x0 too small" snap.err &&
		grep -q "^problem 0x[0-9a-f]* 0 arena 0: chunk at" "$f" &&
		"$bin" top "$f" 2>/dev/null | head -1 | grep -q "; [0-9]* problems\{0,1\} in the walk$" &&
		ok || bad "snapshot: corrupt: $(cat snap.err)"
	hk_stop
fi

# Refused: a process traced already; nothing written.
if hk_start snaptraced "$tmp/heap/heapknown" snaptraced traced; then
	"$bin" snapshot -o traced/ $hk_pid >/dev/null 2>snap.err
	[ $? = 1 ] && [ ! -e traced ] &&
		grep -q "^dmprof: process $hk_pid is traced already" snap.err &&
		ok || bad "snapshot: traced: $(cat snap.err)"
	hk_stop
fi
# A process stopped (SIGSTOP, a shell's ^Z) is snapshotted and stays
# stopped.
sleep 30 &
sleeper=$!
kill -STOP $sleeper
sleep 0.1
"$bin" snapshot -o stopped/ $sleeper >/dev/null 2>snap.err &&
	[ "$(sed -n 's/^State:[[:space:]]*\(.\).*/\1/p' /proc/$sleeper/status)" = T ] &&
	ok || bad "snapshot: a stopped process: $(cat snap.err)"
kill -9 $sleeper
wait $sleeper 2>/dev/null

# Gone right after it was let go (SIGTERM, sent while held, delivered
# then), or while held, once read (SIGKILL): the snapshot stands, named
# after the process, and adds up.
for sig in 15 9; do
	if hk_start snapexit$sig "$tmp/heap/heapknown" snapexit$sig; then
		DMPROF_TEST_SIGNAL_HELD=$sig "$bin" snapshot -o exit$sig/ $hk_pid \
			>/dev/null 2>snap.err
		rc=$?
		f=$(ls exit$sig/heapknown.$(printf %05d $hk_pid).0001.snap 2>/dev/null)
		wait $hk_pid 2>/dev/null
		[ $rc = 0 ] && [ -n "$f" ] && ! kill -0 $hk_pid 2>/dev/null &&
			ok || bad "snapshot: exit after signal $sig: rc $rc, $(ls exit$sig 2>&1) $(cat snap.err)"
		if [ -n "$f" ]; then
			snap_check "$f" >checks.out 2>&1
			sed "s/^bad /bad exit after signal $sig: /" checks.out >checks.exit
			snap_count checks.exit
		fi
	fi
done

# dmprof killed while it holds the process (held all along: --max-copy
# 1): the process runs on, neither stopped nor traced.
if hk_start snapheld "$tmp/heap/heapknown" snapheld big 2000000; then
	"$bin" snapshot --max-copy 1 -o held/ $hk_pid >/dev/null 2>&1 &
	dm=$!
	# (Killed once it holds: a kill before the hold would test nothing.)
	seen=
	for _ in $(seq 200); do
		[ "$(awk '/^TracerPid/ { print $2 }' /proc/$hk_pid/status)" != 0 ] &&
			seen=yes && break
		sleep 0.01
	done
	kill -9 $dm
	wait $dm 2>/dev/null
	sleep 0.2
	# (Every thread: none left stopped or traced.)
	st=$(sed -n 's/^State:[[:space:]]*\(.\).*/\1/p' /proc/$hk_pid/task/*/status |
		sort -u | tr -d '\n')
	tr=$(awk '/^TracerPid/ { print $2 }' /proc/$hk_pid/task/*/status | sort -u |
		tr -d '\n')
	[ "$seen" = yes ] && [ "${st#*[Tt]}" = "$st" ] && [ "$tr" = 0 ] &&
		kill -0 $hk_pid && ok ||
		bad "snapshot: dmprof killed while holding: held ${seen:-never seen}, states $st, tracers $tr"
	hk_stop
fi

# Killed in the middle: a snapshot or an error, never a crash or a hang.
if hk_start snapbig "$tmp/heap/heapknown" snapbig big 2000000; then
	hk_killed snapshot "$bin" snapshot -o killed/ $hk_pid
fi
cd "$tmp" || exit 1
