# node programs under dmprof record (sourced by run.sh, which set bin,
# src, top, tmp and ok/bad): src/nodeapp/app.js, whose Buffers are known
# (2000 of 4 KiB kept by fillBuffers, 1000 of 2 KiB made by square
# through Array.prototype.map, 32000 of 1 KiB in a Map that growCache
# grows a round at a time) and whose strings are in the JavaScript heap.
# The checks, recorded with --perf-basic-prof
# --interpreted-frames-native-stack (--logfile=/dev/null: V8's log not
# written):
#   - the program's output is a plain run's; the run has a dump before
#     teardown, at node's exit event ("node exiting"), which holds the
#     peak's bytes (within 5%: the collector's garbage);
#     the copy of the perf map beside the dumps is the map, and serves
#     once the map in /tmp is gone;
#   - top --json at that dump, under a policy that puts the Buffers'
#     backing stores apart: fillBuffers, growCache and square (app.js,
#     their lines) own exactly the bytes their Buffer.alloc calls asked
#     for; under linux, the JavaScript heap is mmap-v8, a component of its
#     own, and no owner is node's own (node:...) or V8's;
#   - diff FIRST names growCache first among growers, a leak suspect;
#   - every dump adds up, its total the kernel's Rss + Swap;
# and without the flags: the JIT's frames are "JIT code 0x...", said
# once, the dump before teardown still there.  The hook comes after the
# caller's NODE_OPTIONS.
: "${tmp:?tests/real/run.sh sources this file, in its scratch directory}"
if ! command -v node >/dev/null 2>&1; then
	echo "real: note: node is not installed: no node tests"
	return 0 2>/dev/null || exit 0
fi
ndsrc=$src/nodeapp
nd_flags="--perf-basic-prof --interpreted-frames-native-stack --logfile=/dev/null"

node "$ndsrc/app.js" >nd-plain.out 2>&1 || bad "node app.js: $(tail -2 nd-plain.out)"

# The run of node ARGS... under record into DIR: nd_pid, nd_first (its
# first dump), nd_peak (the dump top names the peak).  A dump each 8 MB
# more in use: the dumps at new peaks come at each doubling, and no
# sooner than the program can run nine tenths of the time (on a busy
# machine, a second apart or more), so the cache's growth (app.js's
# rounds are 0.15 s apart) could fall between two, where a leak
# suspect's growth must be seen at two steps.
nd_record() { # DIR ARGS...
	d=$1
	shift
	"$bin" record --inuse-interval 8M -o "$tmp/$d/" -- node "$@" >"$d.out" 2>"$d.err" ||
		{ bad "$d: record exited $?: $(tail -3 "$d.err")"; return 1; }
	nd_pid=$(sed -n 's/^dmprof record: [0-9]* dumps\{0,1\} of pid \([0-9]*\):.*/\1/p' "$d.err")
	nd_first=$(ls "$d"/*."$(printf %05d "${nd_pid:-0}")".0001.heap 2>/dev/null | head -1)
	[ -n "$nd_first" ] || { bad "$d: no first dump: $(tail -3 "$d.err")"; return 1; }
	nd_peak=$("$bin" top --json "$nd_first" 2>/dev/null | python3 -c '
import json, sys; print(json.load(sys.stdin)["run"]["peak"]["dump"])')
	[ -n "$nd_peak" ] || { bad "$d: top names no peak"; return 1; }
}

if nd_record nd $nd_flags "$ndsrc/app.js"; then
	cmp -s nd-plain.out nd.out && ok || bad "node: the program's output differs recorded"
	grep -q '^dmprof record: .*before teardown (node exiting): ' nd.err &&
		ok || bad "node: no dump before teardown: $(cat nd.err)"
	t=$(grep -l '^Reason: node exiting' nd/*.heap | head -1)
	# (At the peak or within 5% of it: a dump each 8 MB may come upon
	# garbage the collector frees before the end.)
	"$bin" top --json "$nd_first" 2>/dev/null | python3 -c '
import json, sys
r = json.load(sys.stdin)["run"]
t, peak = r["before_teardown"], r["peak"]["bytes"]
sys.exit(0 if t >= 0.95 * peak else "%d bytes in use, the peak %d" % (t, peak))
' 2>nd.why && ok ||
		bad "node: the dump before teardown ($t) is not the peak ($nd_peak): $(cat nd.why)"
	grep -q '^Runtime: node v[0-9.]* /' "$t" && ok || bad "node: no Runtime line in META"
	copy=${nd_first%.0001.heap}.perf.map
	cmp -s "$copy" "/tmp/perf-$nd_pid.map" && ok ||
		bad "node: the copy $copy is not /tmp/perf-$nd_pid.map"
	rm -f "/tmp/perf-$nd_pid.map"
	dump_sums "node" "$nd_first"

	# The Buffers' bytes, exactly, by the functions that made them.
	"$bin" top --json -p "$ndsrc/buffers.policy" -c buffers "$t" \
		>nd.top 2>nd.top.err || bad "node: top: $(head -2 nd.top.err)"
	python3 -c '
import json, os, sys
want = {"fillBuffers": (10, 2000 * 4096), "growCache": (22, 32000 * 1024),
        "square": (27, 1000 * 2048)}
have = {f["name"]: f for f in json.load(open(sys.argv[1]))["functions"]}
for name, (line, size) in want.items():
    f = have.get(name)
    if not f:
        sys.exit("%s owns nothing: %s" % (name, sorted(have)[:8]))
    if os.path.basename(f.get("file", "")) != "app.js" or f.get("line") != line:
        sys.exit("%s is at %s:%s, not app.js:%d" % (name, f.get("file"), f.get("line"), line))
    if f["flat"] != size:
        sys.exit("%s owns %d bytes of Buffers, not %d" % (name, f["flat"], size))
' nd.top 2>nd.why && ok || bad "node: the Buffers' owners: $(cat nd.why)"

	# The JavaScript heap is a component of its own; no owner is
	# node's own JavaScript or V8's code.
	"$bin" top --json -n 40 "$t" >nd.linux 2>nd.linux.err ||
		bad "node: top: $(head -2 nd.linux.err)"
	python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
comps = {c["name"]: c["bytes"] for c in d["components"]}
if comps.get("mmap-v8", 0) < 4 << 20:
    sys.exit("mmap-v8 holds %s bytes" % comps.get("mmap-v8"))
for f in d["functions"]:
    if f.get("file", "").startswith("node:") or f["name"].startswith(("Builtins_", "JIT code ")):
        sys.exit("%s (%s) is an owner" % (f["name"], f.get("file")))
names = [f["name"] for f in d["functions"]]
if names[:1] != ["growCache"]:
    sys.exit("the first owner is %s" % names[:3])
' nd.linux 2>nd.why && ok || bad "node: owners at the peak: $(cat nd.why)"

	# diff FIRST: the cache's function first, a leak suspect.
	"$bin" diff --json "$nd_first" >nd.diff 2>nd.diff.err ||
		bad "node: diff FIRST: $(head -2 nd.diff.err)"
	python3 -c '
import json, os, sys
d = json.load(open(sys.argv[1]))
grew = [f for f in d["functions"] if f["change"] > 0]
first = grew[0] if grew else {}
if first.get("name") != "growCache" or os.path.basename(first.get("file", "")) != "app.js":
    sys.exit("the first grower is %s" % first)
if not first.get("leak_suspect"):
    sys.exit("growCache is not a leak suspect")
' nd.diff 2>nd.why && ok || bad "node: diff FIRST: $(cat nd.why)"
	"$bin" diff "$nd_first" 2>/dev/null | grep -q "at node's exit event" &&
		ok || bad "node: diff FIRST does not say where node's teardown is"
fi

# NODE_OPTIONS: the caller's, then the hook's.
NODE_OPTIONS="--max-old-space-size=512" "$bin" record -o "$tmp/ndopt/" -- \
	node -p 'process.env.NODE_OPTIONS' >ndopt.out 2>ndopt.err
grep -q '^--max-old-space-size=512 --require .*dmprof-node\.js"\{0,1\}$' ndopt.out &&
	ok || bad "NODE_OPTIONS: $(cat ndopt.out ndopt.err | head -3)"

# Without the flags: no map; the JIT's frames said once, unnamed.
if nd_record ndplain "$ndsrc/app.js" 2 1000; then
	grep -q '^dmprof record: .*before teardown (node exiting): ' ndplain.err &&
		ok || bad "node without flags: no dump before teardown"
	[ -e "${nd_first%.0001.heap}.perf.map" ] && bad "node without flags: a perf map copied" || ok
	"$bin" top -n 60 "$nd_peak" >ndplain.top 2>ndplain.top.err
	n=$(grep -c "frames\{0,1\} in JIT code stays\{0,1\} 'JIT code 0x...': no perf map" ndplain.top.err)
	[ "$n" = 1 ] && ok || bad "node without flags: said $n times: $(head -3 ndplain.top.err)"
	grep -q ' growCache ' ndplain.top && bad "node without flags: frames named" || ok
	"$bin" stacktrace "$nd_peak" 2>/dev/null | grep -q 'JIT code 0x' &&
		ok || bad "node without flags: no 'JIT code 0x' frame"
fi
