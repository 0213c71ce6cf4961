# Sourced by tests/real/run.sh after core.sh (uses heap.sh's hk_start and
# hk_stop, core.sh's kernel_core): what a heap's blocks are and which of them are leaked, found
# from outside, on src/heapobjs.cc, which knows (its KNOWN file).  A
# snapshot of the live process and the core gcore writes of it must both
# say:
#   - 75 blocks leaked, 65 of them unreferenced, with their bytes (the
#     chunks': KNOWN's usable sizes + 8); every one listed at its address
#     with its first bytes; none of the blocks anchored only from another
#     thread's stack, its TLS, a global or through an interior pointer;
#   - the classes by their vtables: 100 Session, 37 ns::Conn<int>, 250
#     Shape, and made by make_shared, named by their classes, 42 Record
#     (make_shared) and 25 Point (make_shared); the layouts: 50 string
#     bodies, 31 vector bodies, one hash table's buckets and its 90
#     nodes, 70 tree nodes (all exact);
#   - the same blocks, types and leaks in both (the HEAP sections equal
#     but for committed bytes);
#   - top's types table (--json): each class and layout with its blocks
#     and their bytes, exact, of the snapshot and of each core read
#     directly;
# and top names malloc-leaked, expand lists the leaked blocks' bytes, a
# core read directly by top says what its snapshot says.
: "${tmp:?tests/real/run.sh sources this file, in its scratch directory}"
cd "$tmp/heap" || exit 1

# The blocks in use of SNAP by type: "TYPE COUNT" lines, sorted (leaked
# ones too; types named as the snapshot names them, unknown ones left
# out).
snap_types() { # SNAP
	awk '/^in-use / {
		n = $4; i = 7
		if ($i == "leaked") i++
		if ($i == "class") { i += 2 } else if ($i == "layout") { i++ } else next
		t = $i; for (k = i + 1; k <= NF; k++) t = t " " $k
		sum[t] += n
	} END { for (t in sum) print t " " sum[t] }' "$1" | sort
}

# top's types table of DUMP (a snapshot or a core) against KNOWN: every
# class and layout KNOWN names, its blocks and their bytes (the chunks':
# the usable sizes + 8), exact in top --json.
types_check() { # WHAT DUMP KNOWN
	"$bin" top --json -n 1000 $2 >types.json 2>types.err &&
		python3 - types.json $3 >types.out 2>&1 <<-'EOPY' && ok || bad "objects: $1: top --json's types: $(cat types.err types.out | head -5)"
		import json, sys
		layouts = {"long-string": "string body", "vector-body": "vector body",
		       "unordered-buckets": "unordered_map/set buckets",
		       "unordered-node": "unordered_map/set node",
		       "map-node": "map/set node"}
		types = {t["name"]: t for t in json.load(open(sys.argv[1]))["types"]}
		for line in open(sys.argv[2]):
		    f = line.split()
		    if f[0] == "class":
		        name = " ".join(f[1:-2])
		    elif f[0] == "layout":
		        name = layouts[f[1]]
		    else:
		        continue
		    count, usable = int(f[-2]), int(f[-1])
		    got = types.get(name, {"count": 0, "bytes": 0})
		    assert (got["count"], got["bytes"]) == (count, usable + 8 * count), \
		        (name, got, count, usable + 8 * count)
		EOPY
}

# dmprof describe of TARGET (a process or a core) on KNOWN's addresses,
# as chap's describe answers them: inside a leaked block (its start,
# leaked and unreferenced, nothing pointing at it, LEAKED- bytes), a live
# Session (anchored from the binary's data), a make_shared Record, the
# second block of the leaked chain (the chain's head points at it, it at
# the third), a chunk in a fastbin, no mapping, and then the thread's stack word that anchors a block
# (in that thread's stack, above its stack pointer) and the Session's
# vtable (in the binary's mapping).  Prints "ok" or "bad WHY" lines.
describe_check() { # TARGET KNOWN
	python3 - "$bin" "$@" <<'PY'
import re, subprocess, sys
dmprof, target, known = sys.argv[1:4]
k = [l.split() for l in open(known)]
first = lambda at, pred: next(int(f[at], 16) for f in k if pred(f))
plain = first(1, lambda f: f[0] == "leaked" and f[3] == "plain")
session = first(-2, lambda f: f[:2] == ["block", "Session"])
record = first(-2, lambda f: f[:3] == ["block", "Record", "(make_shared)"])
chain = [int(f[1], 16) for f in k if f[0] == "leaked" and f[3].startswith("chain")]
fast = [int(f[1], 16) for f in k if f[0] == "freed" and f[3] == "fastbin"][-1]
stack_block = first(2, lambda f: f[:2] == ["anchored-by", "stack"])

def describe(*addrs):
    r = subprocess.run([dmprof, "describe", target] + ["0x%x" % a for a in addrs],
                       capture_output=True, text=True)
    if r.returncode:
        print("bad describe %s: status %d: %s" % (target, r.returncode, r.stderr[:300]))
        sys.exit(0)
    return {int(p.split(":")[0], 16): p for p in r.stdout.split("\n\n")[1:]}

def check(what, text, *want):
    for w in want:
        if not re.search(w, text):
            print("bad %s: no /%s/ in: %s" % (what, w, text[:600]))
            return
    print("ok")

d = describe(plain + 8, session, record, chain[1], fast, 0x10, stack_block)
check("inside a leaked block", d[plain + 8],
      "8 bytes into a block in use at 0x%x" % plain,
      "leaked and unreferenced", "pointed at by 0 words",
      "00000000  4c 45 41 4b 45 44 2d 30")
check("a Session", d[session], "^0x%x: a block in use" % session,
      "type: Session\n", "anchored", "pointed at by 1 word:\n.*the (data|\\.bss) of .*heapobjs \\(a root\\)")
check("a make_shared Record", d[record], r"type: Record \(make_shared\)", "anchored")
check("the chain's second block", d[chain[1]], "leaked: nothing reachable",
      r"pointed at by 1 word:\n +0x0*%x  at \+0 of block 0x%x \(size-57..72, 72 bytes, leaked, unreferenced\)" % (chain[0], chain[0]),
      r"points at 1 block in use:\n +\+0 +0x0*%x  block 0x%x" % (chain[2], chain[2]))
check("a fastbin's chunk", d[fast],
      r"16 bytes into a free chunk at 0x%x \(48 bytes in arena 0, free: fastbin\)" % (fast - 16),
      "free: what it holds is stale")
check("no mapping", d[0x10], "^0x10: in no mapping")
m = re.search(r"\n +0x([0-9a-f]+)  the stack of thread (\d+) \(a root\)", d[stack_block])
vt = bytes.fromhex("".join(re.search(r"00000000  ((?:[0-9a-f]{2} ){8})", d[session]).group(1).split()))
if not m:
    print("bad the thread's anchor: not from a thread's stack: %s" % d[stack_block][:400])
    sys.exit(0)
d2 = describe(int(m.group(1), 16), int.from_bytes(vt, "little"))
check("a thread's stack", d2[int(m.group(1), 16)],
      r"in the stack of thread %s, \d+ bytes above its stack pointer" % m.group(2))
check("the Session's vtable", d2[int.from_bytes(vt, "little")],
      r"in a mapping of .*/heapobjs \(r")
PY
}

# describe_check's lines in describe.out, counted (WHAT: of what).
describe_count() { # WHAT
	while read -r verdict why; do
		if [ "$verdict" = ok ]; then ok; else bad "objects: describe of $1: $why"; fi
	done <describe.out
}

# The checks of SNAP (WHAT says which) against KNOWN.
objs_check() { # WHAT SNAP KNOWN
	what=$1 snap=$2 known=$3
	want=$(awk '$1 == "total" && $2 == "leaked" { l = $3 }
		$1 == "total" && $2 == "unreferenced" { u = $3 }
		$1 == "leaked" { lb += $3 + 8 }
		$1 == "unreferenced" { ub += $3 + 8 }
		END { printf "leaked %d %d unreferenced %d %d listed %d", l, lb, u, ub, l }' $known)
	got=$(sed -n 's/^reach anchored [0-9]* [0-9]* //p' $snap)
	[ "$got" = "$want" ] && ok || bad "objects: $what: reach '$got', KNOWN says '$want'"
	awk '$1 == "leaked" { print $2 " " $3 + 8 }' $known | sort >want.leaked
	awk '$1 == "block" { print $2 " " $3 }' $snap | sort >got.leaked
	cmp -s want.leaked got.leaked && ok ||
		bad "objects: $what: the leaked blocks listed are not KNOWN's: $(diff want.leaked got.leaked | head -5)"
	awk '$1 == "unreferenced" { print $2 }' $known | sort >want.unref
	awk '$1 == "block" && $5 == "unreferenced" { print $2 }' $snap | sort >got.unref
	cmp -s want.unref got.unref && ok ||
		bad "objects: $what: the unreferenced blocks are not KNOWN's: $(diff want.unref got.unref | head -5)"
	n=$(awk '$1 == "block" && $6 ~ /^4c45414b45442d/' $snap | wc -l)
	[ "$n" = 64 ] && ok || bad "objects: $what: $n leaked blocks start with LEAKED-, not 64"
	for a in $(awk '$1 == "anchored-by" { print $3 }' $known); do
		grep -q "^block $a " $snap && bad "objects: $what: $a, anchored, called leaked"
	done
	snap_types $snap >got.types
	cat >want.types <<-EOT
	Point (make_shared) 25
	Record (make_shared) 42
	Session 100
	Shape 250
	map/set node 70
	ns::Conn<int> 37
	string body 50
	unordered_map/set buckets 1
	unordered_map/set node 90
	vector body 31
	EOT
	sort want.types -o want.types
	cmp -s want.types got.types && ok ||
		bad "objects: $what: types: $(diff want.types got.types | grep '^[<>]' | tr '\n' ';')"
}

if ! command -v g++ >/dev/null 2>&1; then
	echo "real: SKIP objects: no g++"
elif ! g++ -g -O1 -pthread "$src/heapobjs.cc" -o heapobjs 2>build.err; then
	bad "objects: heapobjs does not build: $(head -3 build.err)"
elif hk_start objs ./heapobjs objs; then
	rm -rf osnap && mkdir osnap
	"$bin" snapshot -o osnap/ $hk_pid >osnap.out 2>osnap.err &&
		ok || bad "objects: snapshot failed: $(cat osnap.err)"
	live=$(ls osnap/*.snap | head -1)
	objs_check "the live snapshot" "$live" objs
	types_check "the live snapshot" "$live" objs
	describe_check $hk_pid objs >describe.out 2>&1
	describe_count "the process"
	# --no-scan: the walk only (no types, no leaks: a shorter stop).
	rm -rf nsnap && mkdir nsnap
	"$bin" snapshot --no-scan -o nsnap/ $hk_pid >nsnap.out 2>nsnap.err &&
		! grep -v '^#' nsnap/*.snap | grep -q '^reach \|^block \| class \| layout \| leaked' &&
		grep -q '^in-use ' nsnap/*.snap &&
		ok || bad "objects: snapshot --no-scan: $(cat nsnap.err)"
	if command -v gcore >/dev/null 2>&1; then
		gcore -o ho.core $hk_pid >gcore.out 2>&1
		core=ho.core.$hk_pid
		hk_stop
		rm -rf csnap && mkdir csnap
		"$bin" snapshot -o csnap/ $core >csnap.out 2>csnap.err &&
			ok || bad "objects: snapshot of the core failed: $(cat csnap.err)"
		csnap=$(ls csnap/*.snap | head -1)
		objs_check "gcore's core" "$csnap" objs
		types_check "gcore's core" $core objs
		describe_check $core objs >describe.out 2>&1
		describe_count "gcore's core"
		# The same heap: the HEAP sections but for committed bytes.
		strip() { sed -n '/^HEAP:/,/^MAPS:/p' $1 | awk '$1 == "in-use" { $6 = "-" } $1 ~ /^(tcache|fastbin|unsorted|bin|top|unlisted)$/ { $5 = "-" } { print }'; }
		strip $live >live.heap
		strip $csnap >core.heap
		cmp -s live.heap core.heap && ok ||
			bad "objects: the live snapshot and the core differ: $(diff live.heap core.heap | head -6 | tr '\n' ';')"
		# The core read directly: top and expand.
		"$bin" top --json $core >core-top.json 2>core-top.err &&
			python3 - core-top.json <<-'EOPY' && ok || bad "objects: top --json of the core: $(cat core-top.err)"
			import json, sys
			t = json.load(open(sys.argv[1]))
			r = t["heap"]["reach"]
			assert r["leaked"]["count"] == 75, r
			assert r["unreferenced"]["count"] == 65, r
			names = [c["name"] for c in t["components"]]
			assert "malloc-leaked" in names, names
			EOPY
		"$bin" expand $core malloc-leaked >core-expand.out 2>core-expand.err &&
			grep -q '^75 leaked blocks, ' core-expand.out &&
			[ "$(grep -c '^    00000000  4c 45 41 4b 45 44 2d 30 ' core-expand.out)" = 64 ] &&
			ok || bad "objects: expand of the core: $(head -3 core-expand.err) $(grep -c LEAKED core-expand.out)"
		# The binary elsewhere (another machine's core): --symfs finds it.
		rm -rf symfs && mkdir -p "symfs$PWD" && cp heapobjs "symfs$PWD/" &&
			mv heapobjs heapobjs.away
		"$bin" top -n 40 $core >nosym.out 2>&1
		"$bin" top -n 40 --symfs symfs $core >symfs.out 2>&1
		# (snapshot of a core takes the symbol options too.)
		rm -rf nosnap symsnap
		"$bin" snapshot -o nosnap/ $core >/dev/null 2>&1
		"$bin" snapshot --symfs symfs -o symsnap/ $core >/dev/null 2>&1
		mv heapobjs.away heapobjs
		! grep -q ' Session$' nosym.out && grep -q ' Session$' symfs.out &&
			ok || bad "objects: --symfs: the classes not found in the binary moved there"
		! grep -q ' class 0x[0-9a-f]* Session$' nosnap/*.snap &&
			grep -q ' class 0x[0-9a-f]* Session$' symsnap/*.snap &&
			ok || bad "objects: snapshot --symfs: the classes not found in the binary moved there"
		rm -f $core
	else
		hk_stop
		echo "real: SKIP objects: no gcore"
	fi
fi

# The kernel's core of heapobjs crashed (where core_pattern names a file
# here): its file-backed pages are not in it, so the classes' vtables and
# names come from the files.
kcore=
[ -x heapobjs ] && kernel_core objects kobjs ./heapobjs kobjs
if [ -n "$kcore" ]; then
	rm -rf ksnap && mkdir ksnap
	"$bin" snapshot -o ksnap/ $kcore >ksnap.out 2>ksnap.err &&
		ok || bad "objects: snapshot of the kernel's core failed: $(cat ksnap.err)"
	objs_check "the kernel's core" "$(ls ksnap/*.snap | head -1)" kobjs
	types_check "the kernel's core" $kcore kobjs
	describe_check $kcore kobjs >describe.out 2>&1
	describe_count "the kernel's core"
	rm -f $kcore
fi
