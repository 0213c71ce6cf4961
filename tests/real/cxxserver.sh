# The newcomer's C++ path (sourced by run.sh: uses bin, src, tmp,
# tcmalloc, libgcc, ok and bad): a server of four worker threads, built
# g++ -g -O2, whose sessions are never evicted, with a plugin loaded by
# dlopen that keeps a line per request and a 3 MiB arena
# (src/cxxserver.cc, src/cxxplugin.cc).  It counts its own blocks by hand
# at the end of main.  Under Debian's tcmalloc and under dmprof record
# with no options:
#   - top --json on the dump of the end of main (tcmalloc) and on the
#     record run's peak dump gives each of the program's own functions its
#     exact bytes, the session's constructor first, the plugin's function
#     second, the arena third;
#   - the record run has a dump at each new peak, one when main returned
#     and one at exit, and diff FIRST names the session's constructor
#     first among growers, a leak suspect, and neither it nor the plugin
#     among shrinkers (teardown is not counted);
#   - --owner=pprof still gives google-pprof's flat bytes (tcmalloc; the
#     program's functions, read without DWARF by both) and go tool pprof's
#     on dmprof's own profile.proto of the record run;
#   - with CXXSERVER_SAVE=1 (its sessions saved into records while static
#     destructors run, freed, kept by the allocator), the components' total
#     is highest at the dump at exit, and top, diff FIRST and the page of
#     html name one peak, the dump when main returned (the most bytes in
#     use); the page says where the total peaks, and its answer lists the
#     session's constructor first.
: "${tmp:?tests/real/run.sh sources this file, in its scratch directory}"
. "$top/tests/real/cxxserver-build.sh"

mkdir -p cxx && cd cxx || exit 1
cxxserver_build || { bad "cxxserver: g++ failed"; cd "$tmp"; return 0 2>/dev/null; }

# top --json's flat bytes of NAME in DUMP (0 when absent).
cxx_flat() { # DUMP NAME
	"$bin" top -b --json -n 1000 "$1" 2>/dev/null |
		sed -n "s/.*\"name\": \"$2\",.*\"flat\": \\([0-9]*\\),.*/\\1/p" | head -1
}

# The hand count's three owners, exact, and in that order at the top.
cxx_owners() { # WHAT DUMP
	for fn in Session::Session plugin_log_request Arena::Arena; do
		want=$(awk -v f=$fn '$1 == f { print $2 }' "$cxx_dir/handcount")
		got=$(cxx_flat "$2" "$fn")
		[ -n "$want" ] && [ "$got" = "$want" ] && ok ||
			bad "cxxserver $1: top: $fn holds '$got', the program counted '$want'"
	done
	order=$("$bin" top --json -n 3 "$2" 2>/dev/null | python3 -c '
import json, sys
print("".join(f["name"] + " " for f in json.load(sys.stdin)["functions"]), end="")')
	[ "$order" = "Session::Session plugin_log_request Arena::Arena " ] && ok ||
		bad "cxxserver $1: top's first three functions are '$order'"
}

# Under tcmalloc: the dump at the end of main.
if cxxserver_tcmalloc "$tmp/cxx/tc" && [ -n "$cxx_final" ]; then
	cxx_owners tcmalloc "$cxx_final"
	tc_final=$cxx_final
else
	bad "cxxserver under tcmalloc wrote no dump after the end of main"
fi

# Under dmprof record, no options.
if cxxserver_record "$tmp/cxx/rec"; then
	n=$(ls rec/*.heap | wc -l)
	[ "$n" -ge 3 ] && ok || bad "cxxserver record: $n dumps, not 3 or more"
	grep -l '^Reason: peak$' rec/*.heap >/dev/null && ok ||
		bad "cxxserver record: no dump at a peak"
	before=$(grep -l '^Reason: main returned$' rec/*.heap)
	[ "$(basename "$before")" = "$(basename "$cxx_final")" ] && ok ||
		bad "cxxserver record: the dump when main returned is not the one after the hand count ($cxx_final)"
	first=$(ls rec/*.heap | sort | head -1)
	"$bin" top --json "$cxx_exit" 2>/dev/null >run.top
	peak=$(sed -n 's/.*"run": .*"peak": { "dump": "\([^"]*\)".*/\1/p' run.top)
	peak_bytes=$(sed -n 's/.*"run": .*"peak": {[^}]*"bytes": \([0-9]*\).*/\1/p' run.top)
	at_end=$(sed -n 's/.*"run": .*"before_teardown": \([0-9]*\).*/\1/p' run.top)
	# The most bytes in use are when main returns, or in a dump at a
	# peak of the last requests, whose scratch space (the workers' 16 KiB
	# each, 64 KiB) outweighed the few sessions still to come.
	if [ -n "$peak" ] && [ "$(basename "$peak")" = "$(basename "$cxx_final")" ]; then
		ok
	elif [ -n "$peak" ] && grep -q '^Reason: peak$' "$peak" &&
		[ -n "$peak_bytes" ] && [ -n "$at_end" ] &&
		[ "$peak_bytes" -ge "$at_end" ] &&
		[ $((peak_bytes - at_end)) -le $((4 * 16384)) ]; then
		ok
	else
		bad "cxxserver record: the run's peak is '$peak' ($peak_bytes bytes), not the end of main ($at_end)"
	fi
	cxx_owners record "$cxx_final"
	"$bin" diff --json "$first" 2>/dev/null >diff.json
	sed -n '/"functions": \[/,/^  \]/p' diff.json | sed -n 2p |
		grep -q '"name": "Session::Session", .*"change": [1-9].*"leak_suspect": true' && ok ||
		bad "cxxserver record: diff: the first grower is not Session::Session, a suspect: $(sed -n '/"functions"/{n;p;}' diff.json)"
	grep -q '"name": "\(Session::Session\|plugin_log_request\)", .*"change": -' diff.json &&
		bad "cxxserver record: diff: the sessions or the plugin shrank" || ok
	grep -q "\"b\": { \"dump\": \"rec/$(basename "$cxx_final")\"" diff.json && ok ||
		bad "cxxserver record: diff FIRST's B is not the dump before teardown"
	"$bin" diff "$first" 2>/dev/null | grep -q '^B is the last dump before teardown; then .* took the bytes with stacks from' &&
		ok || bad "cxxserver record: diff does not say what teardown freed"
	# The pprof view, against go tool pprof on dmprof's own profile.proto.
	if command -v go >/dev/null 2>&1; then
		"$bin" pprof --proto "$cxx_final" linux >rec.pb.gz 2>/dev/null
		go tool pprof -top -unit=B -nodefraction=0 -nodecount=100000 rec.pb.gz 2>/dev/null |
			awk '$1 ~ /^[1-9][0-9]*B$/ { sub(/B$/, "", $1); n = $6
				for (i = 7; i <= NF; i++) n = n " " $i
				sub(/ \(inline\)$/, "", n); print n "|" $1 }' | sort >go.flat
		"$bin" top -b --json --owner=pprof -n 1000 "$cxx_final" 2>/dev/null |
			sed -n 's/.*"name": "\([^"]*\)".*"flat": \([1-9][0-9]*\),.*/\1|\2/p' |
			sort >rtop.flat
		# Every function of the pprof view has go's flat bytes.
		differ=$(comm -23 rtop.flat go.flat | head -3)
		[ -s rtop.flat ] && [ -z "$differ" ] && ok ||
			bad "cxxserver record: top --owner=pprof vs go tool pprof: $differ"
	fi
else
	bad "dmprof record ./cxxserver failed: $(tail -3 rec/stderr 2>/dev/null)"
fi

# Sessions saved at exit: the components' total peaks after teardown.
if CXXSERVER_SAVE=1 cxxserver_record "$tmp/cxx/save"; then
	first=$(ls save/*.heap | sort | head -1)
	"$bin" csv -b "$first" 2>/dev/null >save.csv
	"$bin" top --json "$cxx_exit" 2>/dev/null >save.top
	"$bin" top --json "$cxx_final" 2>/dev/null >save.final
	"$bin" diff --json "$first" 2>/dev/null >save.diff
	"$bin" html -o save.html "$first" 2>/dev/null
	sed -n '/id="data">$/{n;p;}' save.html >save.data
	python3 - "$cxx_final" "$cxx_exit" save.csv save.top save.diff save.data save.final <<'PY' >save.checks 2>&1 ||
import csv, json, os, sys
final, last, csvf, topf, difff, dataf, finalf = sys.argv[1:]
def check(cond, why):
    print("ok" if cond else "bad cxxserver save: " + why)
rows = list(csv.DictReader(open(csvf)))
totals = [int(r["total"]) for r in rows]
check(totals.index(max(totals)) == len(totals) - 1,
      "the components' total is not highest at the last dump: %s" % totals)
name = os.path.basename
peak = json.load(open(topf))["run"]["peak"]
top = peak["dump"]
final_bytes = json.load(open(finalf))["stack_bytes"]
diff = json.load(open(difff))["run"]["peak"]["dump"]
data = json.load(open(dataf))
a = data["answer"]
page = data["snapshots"][a["peak"]]["dump"]
# (The peak in use is when main returned, its requests' scratch space
# freed, but where a new peak's dump caught a round's requests in
# flight holding more: that one, never the teardown's.)
check(name(top) != name(last) and
      (name(top) == name(final) or peak["bytes"] > final_bytes),
      "top's peak is %s (%d bytes), not the dump when main returned (%s, "
      "%d bytes)" % (top, peak["bytes"], final, final_bytes))
check(name(diff) == name(top), "diff's peak is %s, top's %s" % (diff, top))
check(name(page) == name(top), "the page's peak is %s, top's %s" % (page, top))
check(data["snapshots"][a.get("total_peak", -1)]["dump"] == data["snapshots"][-1]["dump"],
      "the page does not say the total peaks at the last dump: %s" % a.get("total_peak"))
check(a["owners"] and a["owners"][0]["name"] == "Session::Session",
      "the page's first owner is not Session::Session: %s" %
      [o["name"] for o in a["owners"]])
PY
		echo "bad cxxserver save: the checker failed" >>save.checks
	while read -r verdict why; do
		if [ "$verdict" = ok ]; then ok; else bad "$why"; fi
	done <save.checks
	# The page's run line is top's first line.
	grep -qF "\"run\":\"$("$bin" top "$cxx_exit" 2>/dev/null | head -1)\"" save.data && ok ||
		bad "cxxserver save: the page's run line is not top's: $(head -1 save.data | grep -o '"run":"[^"]*"')"
else
	bad "dmprof record ./cxxserver with CXXSERVER_SAVE=1 failed: $(tail -3 save/stderr 2>/dev/null)"
fi

# google-pprof's flat bytes, function by function, from the same dump:
# where both name a frame alike.  (pprof looks up a heap profile's first
# frame at its return address, not at the call, so at -O2 its names of
# inlined frames differ from dmprof's: both read the program and its
# plugin stripped of DWARF here, and compare those two binaries'
# functions.)
if [ -n "${tc_final:-}" ] && strip --strip-debug cxxserver libcxxplugin.so; then
	nm -C --defined-only cxxserver libcxxplugin.so 2>/dev/null |
		awk '$2 ~ /^[TtWw]$/ { $1 = $2 = ""; sub(/^ */, ""); sub(/\(.*/, ""); print }' |
		sort -u >own.names
	google-pprof --text --show_bytes ./cxxserver "$tc_final" 2>/dev/null |
		awk 'NR > 1 && $1 > 0 { n = $1; $1 = $2 = $3 = $4 = $5 = ""; sub(/^ */, ""); print $0 "|" n }' |
		sort >pprof.flat
	"$bin" top -b --json --owner=pprof --no-symbol-cache -n 1000 "$tc_final" 2>/dev/null |
		sed -n 's/.*"name": "\([^"]*\)".*"flat": \([1-9][0-9]*\),.*/\1|\2/p' |
		sort >top.flat
	# (Functions of the two binaries only: libc's are named by aliases.)
	mine() { awk -F'|' 'NR == FNR { own[$0] = 1; next } own[$1]' own.names "$1"; }
	mine pprof.flat >pprof.own
	mine top.flat >top.own
	if [ "$(wc -l <pprof.own)" -ge 3 ] && cmp -s pprof.own top.own; then ok; else
		bad "cxxserver tcmalloc: top --owner=pprof differs from google-pprof --text:"
		diff pprof.own top.own | head -10
	fi
fi
cd "$tmp" || exit 1
