# Sourced by tests/real/run.sh: dmprof against go tool pprof (Debian
# golang-go) on the heap profiles other tools write.
#   - every text variant of the golden tests: each sample's in-use
#     objects and bytes are pprof's -raw figures, to the byte (pprof drops
#     samples without a stack; dmprof keeps them, so they are left out of
#     the comparison);
#   - a Go program (src/growheap.go, MemProfileRate 1) writes three heap
#     profiles, as profile.proto and as debug=1 text: csv reads each as a
#     series of three rows, and top and diff give main.grow's bytes as go
#     tool pprof -top does.
: "${tmp:?tests/real/run.sh sources this file, in its scratch directory}"
if ! command -v go >/dev/null 2>&1; then
	bad "pprof: go is not installed (make check installs golang-go)"
else
	export GOCACHE="$tmp/gocache" GOPATH="$tmp/gopath" GOFLAGS=-mod=mod
	# In-use (objects, bytes) of each sample with a stack, sorted.
	pprof_inuse() {
		go tool pprof -raw "$1" 2>/dev/null | awk '
			/^Samples:/ { s = 1; next } /^Locations/ { s = 0 }
			s && /: *[0-9]/ && !/bytes:\[/ {
				sub(/:.*/, ""); n = split($0, v, " ")
				if (n >= 2 && (v[n-1] || v[n])) print v[n-1], v[n] }' | sort
	}
	dmprof_inuse() {
		"$bin" pprof "$1" 2>/dev/null | awk 'NR > 1 && /@ 0x/ {
			split($0, a, "@"); gsub(/[:\[\]]/, " ", a[1])
			split(a[1], v, " "); if (v[1] || v[2]) print v[1], v[2] }' | sort
	}
	for f in "$top"/tests/golden/text-*/*.heap; do
		pprof_inuse "$f" >pp.out
		dmprof_inuse "$f" >dm.out
		if [ -s pp.out ] && cmp -s pp.out dm.out; then ok
		else bad "pprof: $(basename "$f"): in-use figures differ from go tool pprof -raw:"
			diff pp.out dm.out | head -5; fi
	done

	mkdir -p go && cd go || exit 1
	if go build -o growheap "$src/growheap.go" >build.log 2>&1 &&
	   ./growheap g; then
		# flat bytes of main.grow, pprof's then dmprof's
		pp_flat() { go tool pprof -top -unit=B growheap "$1" 2>/dev/null |
			awk '$NF == "main.grow" { sub(/B$/, "", $1); print $1 }'; }
		for ext in heap pb.gz; do
			n=$("$bin" csv -b g.0001.$ext 2>/dev/null | wc -l)
			[ "$n" = 4 ] && ok || bad "pprof: csv of the Go series (.$ext): $n lines, not a header and 3 rows"
			want=$(pp_flat g.0003.$ext)
			# (dmprof's rows are by function and line: summed)
			got=$("$bin" top -b --owner=pprof g.0003.$ext 2>/dev/null | awk '
				/^functions/ { f = 1 } f && $6 == "main.grow" { s += $1 }
				END { print s + 0 }')
			[ -n "$want" ] && [ "$want" = "$got" ] && ok ||
				bad "pprof: top (.$ext): main.grow holds '$got', go tool pprof -top says '$want'"
			a=$(pp_flat g.0001.$ext)
			got=$("$bin" diff -b --owner=pprof g.0001.$ext 2>/dev/null | awk '
				/^functions that grew/ { f = 1; next } /^$/ { f = 0 }
				f && $(NF-1) == "main.grow" { s += $1 }
				END { printf "%+d\n", s }')
			[ -n "$a" ] && [ "$got" = "+$((want - a))" ] && ok ||
				bad "pprof: diff (.$ext): main.grow grew '$got', pprof says +$((want - a))"
		done
	else
		bad "pprof: cannot build or run growheap.go: $(tail -3 build.log)"
	fi
	cd "$tmp" || exit 1
fi
