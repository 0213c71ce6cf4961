#!/bin/sh
# dmprof html's page in a real browser: Debian's chromium, headless, loads
# each page from disk and prints the DOM its script built.  Pages: the
# samples under two policies, a run of tests/real/src/leak.c recorded by
# dmprof record, snapshots of a growing heap taken by dmprof snapshot
# (whose bands have a point per snapshot, the heap's rising, and whose
# answer names the size class that grew), and one of the C++ server of
# tests/real/cxxserver.sh (the page opens on the policy named first, at
# the answer, which names the program's functions before any std::
# frame).  The checks, for each policy's tab:
#   - the script ran to its end (body data-ready="1") and logged no error,
#     in the page or on the browser's console;
#   - the chart has one band and one legend entry per component of the
#     page's data (the components with bytes), named as csv names them;
#   - a view picked by the URL (#component=...&snapshot=...&diff=A,B)
#     shows that component's stacks, its flame graph and the diff's
#     tables;
#   - the page refers to nothing outside itself.
# And the tree of the components (tree.py): at the snapshot the URL picks
# (else the last), the nodes, exact bytes, marks and order of top --tree
# --json at that snapshot, inner nodes that fold, leaves in their bands'
# colours; and, by tests/golden/top-tree/check.py, every node the sum of
# its children and each leaf csv --bytes's component, malloc = malloc-*,
# malloc-cxx = string + containers, file under unhooked; the catch-alls
# marked unclassified.  Wrong expectations, and a page whose numbers were
# tampered with, must fail those checks.
# Usage: tests/browser/run.sh DMPROF_BINARY
set -u
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
top=$(cd "$(dirname "$0")/../.." && pwd)
browser=$(command -v chromium || true)
if [ -z "$browser" ]; then
	echo "browser: SKIP: chromium is not installed (make check installs it)"
	exit 0
fi
. "$top/tests/real/lib.sh"
cd "$tmp" || exit 1

# render PAGE HASH OUT: the DOM once the page's script ran; the browser's
# log in OUT.log.
render() {
	timeout 120 "$browser" --headless --no-sandbox --disable-gpu \
		--no-first-run --user-data-dir="$tmp/chromium" \
		--enable-logging=stderr --v=0 --virtual-time-budget=5000 \
		--dump-dom "file://$1#$2" >"$3" 2>"$3.log"
}

# The names of the components of policy N (0, 1...) in PAGE's data (not
# the nodes of its tree, which follows them).
components() {
	sed -n '/id="data">$/{n;p;}' "$1" | tr '{' '\n' |
		awk -v want="$2" '
			/^"label":/ { p++; tree = 0 }
			p == want + 1 && !tree && /^"name":/ {
				s = $0; sub(/^"name":"/, "", s); sub(/".*/, "", s); print s
			}
			/"tree":\[$/ { tree = 1 }'
}

# check PAGE POLICY_INDEX POLICY COMPONENT SNAPSHOT DIFF: render and check.
check() {
	page=$1 n=$2 policy=$3 comp=$4 snap=$5 diff=$6
	what="$(basename "$page") $policy"
	out=$tmp/dom.$n.$(basename "$page")
	render "$page" "policy=$policy&component=$comp&snapshot=$snap&diff=$diff" "$out" ||
		{ bad "$what: chromium failed: $(tail -3 "$out.log")"; return; }
	grep -q 'data-ready="1"' "$out" && ok ||
		bad "$what: the script did not finish: $(grep -o '<div id="errors">[^<]*' "$out")"
	grep -q '<div id="errors"></div>' "$out" && ok || bad "$what: the page logged errors"
	if grep -i 'uncaught\|CONSOLE.*error' "$out.log" >/dev/null; then
		bad "$what: the console says: $(grep -i 'uncaught\|CONSOLE.*error' "$out.log" | head -3)"
	else
		ok
	fi
	grep -q "<button class=\"on\" data-policy=\"$policy\"" "$out" && ok ||
		bad "$what: the tab of $policy is not the one shown"
	components "$page" "$n" >"$tmp/names"
	[ -s "$tmp/names" ] && ok || bad "$what: no component in the page's data"
	want=$(wc -l <"$tmp/names")
	bands=$(grep -o 'class="band" data-component="[^"]*"' "$out" | wc -l)
	[ "$bands" = "$want" ] && ok || bad "$what: $bands bands for $want components"
	while read -r name; do
		grep -q "class=\"band\" data-component=\"$name\"" "$out" &&
			grep -q "<span data-component=\"$name\"" "$out" && ok ||
			bad "$what: no band or legend entry for $name"
	done <"$tmp/names"
	rows=$(grep -o '<tr class="kept">' "$out" | wc -l)
	[ "$rows" -gt 0 ] && ok || bad "$what: no stack of $comp at snapshot $snap"
	grep -q "<h2>$comp at snapshot #$snap " "$out" && ok ||
		bad "$what: the stacks shown are not $comp's at #$snap"
	frames=$(grep -o 'class="frame"' "$out" | wc -l)
	[ "$frames" -gt "$rows" ] && ok || bad "$what: $frames flame graph frames for $rows stacks"
	grep -q 'id="diffcomponents"' "$out" && grep -q 'id="diffstacks"' "$out" && ok ||
		bad "$what: the diff of $diff shows no tables"
	grep -q 'id="datatable"' "$out" && ok || bad "$what: no data table"
}

# Nothing but itself: no URL, no src= or href= to a file.
selfcontained() {
	if grep -n 'https\?://\|src=\|href=\|@import\|url(' "$1" | grep -v 'xmlns="http://www.w3.org/2000/svg"\|SVGNS = "http://www.w3.org/2000/svg"' >"$tmp/refs"; then
		bad "$(basename "$1") refers outside itself: $(head -3 "$tmp/refs")"
	else
		ok
	fi
}

# tree PAGE HASH POLICY DUMP SNAPSHOT UNCLASSIFIED [CLAIM...]: render PAGE
# at HASH and check its tree against top --tree --json and csv --bytes of
# policy POLICY from DUMP (the run's dump of SNAPSHOT).  Leaves the DOM in
# $tmp/tree.dom, the tree in $tmp/tree.top.json and the csv row in
# $tmp/tree.csv.
tree() {
	page=$1 hash=$2 policy=$3 dump=$4 snap=$5 unclassified=$6
	shift 6
	what="$(basename "$page") $policy tree at #$snap"
	render "$page" "$hash" "$tmp/tree.dom" ||
		{ bad "$what: chromium failed: $(tail -3 "$tmp/tree.dom.log")"; return; }
	grep -q 'data-ready="1"' "$tmp/tree.dom" && ok ||
		bad "$what: the script did not finish"
	"$bin" top --tree --json -p "$policy" "$dump" >"$tmp/tree.top.json" 2>/dev/null &&
		"$bin" csv --bytes -p "$policy" "$dump" >"$tmp/tree.csv" 2>/dev/null ||
		bad "$what: top --tree --json or csv failed"
	tree_verdict "$what" python3 "$top/tests/browser/tree.py" "$tmp/tree.dom" "$snap" \
		"$tmp/tree.top.json" "$tmp/tree.json" "unclassified=$unclassified"
	tree_verdict "$what" python3 "$top/tests/golden/top-tree/check.py" \
		"$tmp/tree.json" "$tmp/tree.csv" "$@"
}

# tree_verdict WHAT CHECKER...: one ok or bad a line of CHECKER's; bad if
# it fails with none.
tree_verdict() {
	what=$1
	shift
	"$@" >"$tmp/tree.out" 2>&1 || grep -q '^FAIL' "$tmp/tree.out" ||
		echo "FAIL: $* failed: $(tail -2 "$tmp/tree.out")" >>"$tmp/tree.out"
	while read -r verdict why; do
		case $verdict in
		ok:) ok ;;
		*) bad "$what: $why" ;;
		esac
	done <"$tmp/tree.out"
}

# tree_fails WHY CHECKER...: CHECKER must fail (it checks something).
tree_fails() {
	why=$1
	shift
	if "$@" >"$tmp/tree.out" 2>&1; then
		bad "the tree's checks pass $why: $*"
	else
		grep -q "^FAIL" "$tmp/tree.out" && ok ||
			bad "the tree's checks fail $why, but not as checks: $(tail -2 "$tmp/tree.out")"
	fi
}

# The samples, two policies.
"$bin" html -p l1,linux -o "$tmp/samples.html" \
	"$top/samples/cachesrv.04242.0001.heap" 2>/dev/null ||
	bad "html on the samples failed"
selfcontained "$tmp/samples.html"
check "$tmp/samples.html" 0 l1 tc-catch-all 3 1,3
check "$tmp/samples.html" 1 linux malloc-cxx-string 2 1,3

# Their tree: linux at the snapshot the URL picks, l1 at the last (no
# snapshot picked), and a policy whose components are also parents
# (their own bytes in a <self> leaf).
samples=$top/samples/cachesrv.04242
tree "$tmp/samples.html" "policy=linux&snapshot=2" linux "$samples.0002.heap" 2 \
	malloc-app,mmap-app,unhooked-other \
	'malloc=malloc-*' 'malloc-cxx=malloc-cxx-string+malloc-cxx-containers' \
	'unhooked-file<unhooked' 'unhooked=unhooked-*'
# (Wrong expectations fail: a sum, a parent, the unclassified marks; so
# do a page's bytes made one digit longer.)
tree_fails "with malloc-cxx = string alone" python3 "$top/tests/golden/top-tree/check.py" \
	"$tmp/tree.json" "$tmp/tree.csv" 'malloc-cxx=malloc-cxx-string'
tree_fails "with unhooked-file under malloc" python3 "$top/tests/golden/top-tree/check.py" \
	"$tmp/tree.json" "$tmp/tree.csv" 'unhooked-file<malloc'
tree_fails "with malloc-unused unclassified" python3 "$top/tests/browser/tree.py" \
	"$tmp/tree.dom" 2 "$tmp/tree.top.json" "$tmp/tree.bad.json" \
	unclassified=malloc-app,malloc-unused,mmap-app,unhooked-other
tree_fails "at another snapshot" python3 "$top/tests/browser/tree.py" \
	"$tmp/tree.dom" 3 "$tmp/tree.top.json" "$tmp/tree.bad.json"
sed 's/\(data-path="malloc" data-bytes="\)/\11/' "$tmp/tree.dom" >"$tmp/tree.bad.dom"
tree_fails "on a page whose malloc is off" python3 "$top/tests/browser/tree.py" \
	"$tmp/tree.bad.dom" 2 "$tmp/tree.top.json" "$tmp/tree.bad.json"
tree_fails "on a page whose malloc is off" python3 "$top/tests/golden/top-tree/check.py" \
	"$tmp/tree.bad.json" "$tmp/tree.csv"
tree "$tmp/samples.html" "policy=l1" l1 "$samples.0003.heap" 3 \
	mmap-catch-all,tc-catch-all,unhooked-other \
	'tc=tc-*' 'unhooked-file<unhooked'
"$bin" html -p "$top/tests/golden/top-tree-self/self.policy" -o "$tmp/self.html" \
	"$samples.0001.heap" 2>/dev/null || bad "html -p self.policy failed"
tree "$tmp/self.html" "snapshot=1" "$top/tests/golden/top-tree-self/self.policy" \
	"$samples.0001.heap" 1 'malloc/<self>,mmap/<self>,unhooked/<self>' \
	'malloc=malloc+malloc-*' 'unhooked=unhooked+unhooked-*'
# A policy whose names make one node of two components: a page all the
# same, whose tree view says it has none, and html says why.
"$bin" html -p "$top/tests/golden/top-tree-bad/clash.policy" -o "$tmp/clash.html" \
	"$samples.0001.heap" 2>"$tmp/clash.err" || bad "html -p clash.policy failed"
grep -q "components 'unhooked-file' and 'unhooked/file' make one node" "$tmp/clash.err" &&
	grep -q "warning: .*: the page shows no tree of policy 'clash'" "$tmp/clash.err" && ok ||
	bad "html -p clash.policy does not say why the page has no tree: $(cat "$tmp/clash.err")"
render "$tmp/clash.html" "" "$tmp/clash.dom" && grep -q 'data-ready="1"' "$tmp/clash.dom" &&
	grep -q '<div id="tree"[^>]*><div class="note">No tree: ' "$tmp/clash.dom" && ok ||
	bad "clash.html: no page, or a tree view that does not say it has no tree"

# Names the page's data carries may hold HTML: a run in a directory
# named "<!--<script>" must not stop the page's script.
odd="$tmp/<!--<script>"
mkdir -p "$odd"
cp -R "$top"/samples/cachesrv.04242.* "$odd"/
"$bin" html -o "$tmp/odd.html" "$odd/cachesrv.04242.0001.heap" 2>/dev/null ||
	bad "html on a run in an odd directory failed"
render "$tmp/odd.html" "" "$tmp/odd.dom" &&
	grep -q 'data-ready="1"' "$tmp/odd.dom" && ok ||
	bad "a run in a directory named <!--<script> stops the page's script"

# A recorded run, if there is a compiler.
if command -v gcc >/dev/null 2>&1; then
	gcc -g -O0 "$top/tests/real/src/leak.c" -o leak -ldl || bad "leak.c does not build"
	"$bin" record -o "$tmp/rec" -i 0 -- ./leak >/dev/null 2>&1 ||
		bad "dmprof record ./leak failed"
	first=$(ls "$tmp"/rec.*.0001.heap 2>/dev/null | head -1)
	if [ -n "$first" ]; then
		"$bin" html -o "$tmp/rec.html" "$first" 2>/dev/null ||
			bad "html on the recorded run failed"
		last=$(ls "$tmp"/rec.*.heap | sed 's/.*\.0*\([0-9][0-9]*\)\.heap$/\1/' | sort -n | tail -1)
		selfcontained "$tmp/rec.html"
		check "$tmp/rec.html" 0 linux malloc-app "$last" "1,$last"
	else
		bad "dmprof record ./leak wrote no dump"
	fi
fi

# A run of dmprof snapshot (-i 0.2 -n 5) of a program whose heap grows
# by a block of 10000 bytes every ms: besides the checks of any page,
# the chart's bands have a point per snapshot, malloc-app's rising at
# each, the data table a row per snapshot, and the answer names the
# size class of those blocks as what grew.
if command -v gcc >/dev/null 2>&1; then
	cat >grow.c <<'C'
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
char *volatile last; /* (so that no compiler drops a block unused) */
char *kept[10000]; /* (and none is leaked: not static, not optimised away) */
int main(void)
{
	for (int n = 0; n < 60000; n++) { /* a minute at most */
		if (n < 10000 && (last = kept[n] = malloc(10000)))
			memset(last, n, 10000);
		usleep(1000);
	}
	return 0;
}
C
	gcc -O1 grow.c -o grow || bad "grow.c does not build"
	./grow &
	grower=$!
	for _ in $(seq 300); do
		[ "$(cat /proc/$grower/comm 2>/dev/null)" = grow ] && break
		sleep 0.01
	done
	"$bin" snapshot -o "$tmp/snaps/" -i 0.2 -n 5 $grower 2>"$tmp/snap.err" ||
		bad "dmprof snapshot of grow failed: $(cat "$tmp/snap.err")"
	kill $grower
	wait $grower 2>/dev/null
	first=$(ls "$tmp"/snaps/grow.*.0001.snap 2>/dev/null)
	if [ -n "$first" ]; then
		"$bin" html -o "$tmp/snap.html" "$first" 2>/dev/null ||
			bad "html on the snapshot run failed"
		selfcontained "$tmp/snap.html"
		check "$tmp/snap.html" 0 linux malloc-app 5 1,5
		out=$tmp/dom.0.snap.html
		python3 - "$out" <<'PY' >"$tmp/snap.checks" 2>&1 ||
import re, sys
dom = open(sys.argv[1]).read()
def check(cond, why):
    print("ok" if cond else "bad snap.html linux: " + why)
bands = re.findall(r'<path d="([^"]*)"[^>]* class="band" '
                   r'data-component="([^"]*)"', dom)
points = {name: re.findall(r"[ML]([0-9.]+),([0-9.]+)", d) for d, name in bands}
check(bands and all(len(p) == 10 for p in points.values()),
      "the bands do not have 5 points each, top and bottom: %s" %
      {n: len(p) for n, p in points.items()})
top = [float(y) for x, y in points.get("malloc-app", [])[:5]]
check(len(top) == 5 and all(a > b for a, b in zip(top, top[1:])),
      "malloc-app's band does not rise at each snapshot: y %s" % top)
table = dom.split('id="datatable"', 1)[-1].split("</table>", 1)[0]
rows = re.findall(r'<tr><td class="l">([^<]*)</td>', table)
check([r[-9:] for r in rows] == ["%04d.snap" % k for k in range(1, 6)],
      "the data table's rows: %s" % rows)
grew = re.search(r'<ol id="growers">(.*?)</ol>', dom)
check(grew and re.search(r'class="owner">size-8193\.\.10240</a>: \* \+[0-9.]* '
                         r'MiB in malloc-app', grew.group(1)),
      "the answer does not name size-8193..10240 as what grew: %s" %
      (grew and grew.group(1)[:300]))
PY
			echo "bad snap.html: the checker failed" >>"$tmp/snap.checks"
		while read -r verdict why; do
			if [ "$verdict" = ok ]; then ok; else bad "$why"; fi
		done <"$tmp/snap.checks"
	else
		bad "dmprof snapshot of grow wrote nothing: $(cat "$tmp/snap.err")"
	fi
fi

# peak_checks NAME DOM LAST FIRST [TOTAL_PEAK]: the answer of the page of
# the run of FIRST (whose last dump is LAST) at top's peak, as above; with
# TOTAL_PEAK, the line that says the components' total peaks there.
peak_checks() {
	"$bin" top --json "$3" >"$tmp/peak.top" 2>/dev/null ||
		bad "$1: top --json failed"
	"$bin" csv -b "$4" 2>/dev/null | awk -F, 'NR > 1 { print $1 }' >"$tmp/peak.times"
	python3 - "$1" "$2" "$tmp/peak.top" "$tmp/peak.times" "${5:-}" <<'PY' >"$tmp/peak.checks" 2>&1 ||
import html, json, re, sys
what, dom, topf, timesf, total_peak = sys.argv[1:]
dom = open(dom).read()
def check(cond, why):
    print("ok" if cond else "bad %s: %s" % (what, why))
def counter(path):
    return str(int(re.search(r"\.([0-9]+)\.heap$", path).group(1)))
peak = counter(json.load(open(topf))["run"]["peak"]["dump"])
ol = re.search(r'<ol id="peakowners" data-snapshot="([0-9]+)">(.*?)</ol>', dom)
check(ol and ol.group(1) == peak,
      "the first list is at #%s, top's peak is #%s" % (ol and ol.group(1), peak))
names = [html.unescape(n) for n in re.findall(r'class="owner">([^<]*)</a>', ol.group(2))] if ol else []
check(names[:1] == ["Session::Session"], "the first list: %s" % names)
check(not [n for n in names if n.startswith("??") or n == "main"],
      "the first list holds a ?? or main entry: %s" % names)
times = [float(t) for t in open(timesf).read().split()]
ticks = re.findall(r'class="tick time">([^<]*)<', dom)
check(times and times[-1] < 1, "the run lasts %s s, not under a second" % times[-1:])
check(len(ticks) >= 3 and len(set(ticks)) == len(ticks) and
      all(t.endswith(" ms") for t in ticks), "the time axis's ticks: %s" % ticks)
tp = re.search(r'<div id="totalpeak" data-snapshot="([0-9]+)">([^<]*)', dom)
if total_peak:
    check(tp and tp.group(1) == counter(total_peak) and "after teardown" in tp.group(2),
          "no line says the components' total peaks at #%s, after teardown: %s" %
          (counter(total_peak), tp and tp.group(0)))
else:
    check(not tp or tp.group(1) != peak, "the total's line names the peak itself")
PY
		echo "bad $1: the checker failed: $(tail -2 "$tmp/peak.checks")" >>"$tmp/peak.checks"
	while read -r verdict why; do
		if [ "$verdict" = ok ]; then ok; else bad "$why"; fi
	done <"$tmp/peak.checks"
}

# The C++ server of the owners test, recorded with no options and shown
# under two policies: the page opens on the one named first (linux,
# though l1 sorts first), at the answer, which names the session's
# constructor and the plugin's function before any std:: frame, and
# links them to their stacks.  Its first list is taken at the dump top
# names as the peak in use, names Session::Session first and no '??' or
# main; the run lasts under a second, and the time axis's ticks are
# distinct, in ms.  Recorded again with CXXSERVER_SAVE=1 (the
# components' total then peaks after teardown), the page's peak is still
# top's, and a line of its own says where the total peaks.
if command -v g++ >/dev/null 2>&1; then
	src=$top/tests/real/src
	. "$top/tests/real/cxxserver-build.sh"
	mkdir -p "$tmp/cxx" && cd "$tmp/cxx" || exit 1
	if cxxserver_build && cxxserver_record "$tmp/cxx/rec"; then
		first=$(ls "$tmp"/cxx/rec/*.0001.heap | head -1)
		"$bin" html -p linux,l1 -o "$tmp/cxx.html" "$first" 2>/dev/null ||
			bad "html on the C++ run failed"
		render "$tmp/cxx.html" "" "$tmp/cxx.dom" ||
			bad "cxx.html: chromium failed"
		grep -q 'data-ready="1"' "$tmp/cxx.dom" && ok ||
			bad "cxx.html: the script did not finish"
		grep -q '<button class="on" data-policy="linux"' "$tmp/cxx.dom" && ok ||
			bad "cxx.html: the tab shown is not linux's, named first"
		# What the page shows, from the answer on (the data before it
		# names every frame).
		sed -n '/<div id="answer">/,$p' "$tmp/cxx.dom" | tr '<' '\n' >"$tmp/cxx.shown"
		at() { grep -n -m1 -F "$1" "$tmp/cxx.shown" | cut -d: -f1; }
		ctor=$(at 'Session::Session') plug=$(at 'plugin_log_request')
		std=$(at 'std::')
		[ -n "$ctor" ] && [ -n "$plug" ] && [ "$ctor" -lt "${std:-999999}" ] &&
			[ "$plug" -lt "${std:-999999}" ] && ok ||
			bad "cxx.html: the answer does not name Session::Session ($ctor) and plugin_log_request ($plug) before std:: ($std)"
		grep -q 'id="peakowners"' "$tmp/cxx.dom" &&
			grep -q 'id="growers"' "$tmp/cxx.dom" &&
			grep -q 'id="teardown"' "$tmp/cxx.dom" && ok ||
			bad "cxx.html: the answer lacks the peak's owners, the growers or teardown"
		grep -q 'class="owner" href="#policy=linux&amp;component=malloc-cxx-[a-z]*&amp;snapshot=[0-9]*">Session::Session<' "$tmp/cxx.dom" ||
			grep -q 'href="#policy=linux&amp;component=[a-z-]*&amp;snapshot=[0-9]*" class="owner">Session::Session<' "$tmp/cxx.dom" && ok ||
			bad "cxx.html: Session::Session links to no component's stacks"
		selfcontained "$tmp/cxx.html"
		peak_checks cxx.html "$tmp/cxx.dom" "$cxx_exit" "$first"
		if CXXSERVER_SAVE=1 cxxserver_record "$tmp/cxx/save"; then
			first=$(ls "$tmp"/cxx/save/*.0001.heap | head -1)
			"$bin" html -o "$tmp/save.html" "$first" 2>/dev/null ||
				bad "html on the C++ run with CXXSERVER_SAVE=1 failed"
			render "$tmp/save.html" "" "$tmp/save.dom" ||
				bad "save.html: chromium failed"
			peak_checks save.html "$tmp/save.dom" "$cxx_exit" "$first" \
				"$(ls "$tmp"/cxx/save/*.heap | sort | tail -1)"
		else
			bad "the C++ server does not record with CXXSERVER_SAVE=1"
		fi
	else
		bad "the C++ server does not build or record"
	fi
	cd "$tmp" || exit 1
fi

echo "browser: $pass passed, $fail failed"
[ "$fail" = 0 ]
