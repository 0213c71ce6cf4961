# Sourced by tests/real/run.sh: a C program (src/dhat_prog.c) under
# Valgrind's DHAT; dmprof reads its dhat.out as two snapshots.
#   - csv's totals are the t-gmax and t-end figures valgrind prints;
#   - top's flat bytes per function, at t-end, are DHAT's own "eb" summed
#     by each program point's first frame past malloc (python3 reads the
#     JSON).
: "${tmp:?tests/real/run.sh sources this file, in its scratch directory}"
if ! command -v valgrind >/dev/null 2>&1; then
	bad "dhat: valgrind is not installed (make check installs it)"
else
	mkdir -p dhat && cd dhat || exit 1
	gcc -g -O1 "$src/dhat_prog.c" -o dhat_prog || exit 1
	valgrind --tool=dhat --dhat-out-file=dhat.out.1 ./dhat_prog 2>vg.err
	# "At t-gmax: 65,536 bytes in 16 blocks"
	want=$(sed -n 's/.*At t-\(gmax\|end\): *\([0-9,]*\) bytes.*/\2/p' vg.err |
		tr -d , | tr '\n' ' ')
	got=$("$bin" csv -b dhat.out.1 2>/dev/null | awk -F, '
		NR == 1 { for (i = 1; i <= NF; i++) if ($i == "total") t = i; next }
		{ printf "%s ", $t }')
	[ -n "$want" ] && [ "$want" = "$got" ] && ok ||
		bad "dhat: csv totals '$got', valgrind says '$want'"
	python3 - dhat.out.1 >want.top <<'PY'
import json, re, sys
d = json.load(open(sys.argv[1]))
sums = {}
for pp in d["pps"]:
    for i in pp["fs"]:
        m = re.match(r"0x[0-9A-Fa-f]+: (.*?) \(", d["ftbl"][i])
        if m and "vgpreload" not in d["ftbl"][i]:
            sums[m.group(1)] = sums.get(m.group(1), 0) + pp["eb"]
            break
for f, b in sorted(sums.items()):
    if b:
        print(f, b)
PY
	"$bin" top -b --owner=pprof dhat.out.1 2>/dev/null | awk '
		/^functions/ { f = 1; next } f && $1 ~ /^[0-9]+$/ && $1 > 0 && $6 !~ /^</ { print $6, $1 }' |
		sort >got.top
	[ -s want.top ] && cmp -s want.top got.top && ok ||
		{ bad "dhat: top's flat bytes differ from DHAT's eb:"; diff want.top got.top | head -5; }
	cd "$tmp" || exit 1
fi
