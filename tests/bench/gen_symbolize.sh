#!/bin/sh
# Inputs for the symbolization benchmark: N unique call-site addresses
# spread over the functions of BIN (by its dynamic symbol table), as
#   OUT/addrs.txt            link-time addresses, for addr2line -e BIN
#   OUT/sym.0001.heap        a gperftools profile whose frames are those
#                            addresses + 1 (return addresses), in stacks
#                            of 10, with BIN mapped at BASE (default
#                            0x7f0000000000)
#   OUT/frames.txt           those return addresses, one per line
#   OUT/maps.txt             BIN's mappings, as the profile has them
# Usage: gen_symbolize.sh BIN N OUT [BASE]
set -eu
bin=$1 n=$2 out=$3
mkdir -p "$out"
base=$((${4:-0x7f0000000000}))
# mawk has no strtonum: hex by hand (exact below 2^53).
hex='function hex(s,   i, c, v) { v = 0; sub(/^0[xX]/, "", s)
	for (i = 1; i <= length(s); i++) { c = index("0123456789abcdef", tolower(substr(s, i, 1))) - 1; v = v * 16 + c }
	return v }
function tohex(v,   s, d) { s = ""; do { d = v % 16; s = substr("0123456789abcdef", d + 1, 1) s; v = (v - d) / 16 } while (v > 0); return s }'
# Functions with a size: value size.
readelf -sW --dyn-syms "$bin" | awk "$hex"'
	$4 == "FUNC" && $7 != "UND" && $3 + 0 >= 8 { printf "%.0f %d\n", hex($2), $3 }' |
	sort -n -u >"$out/funcs"
nf=$(wc -l <"$out/funcs")
awk -v n="$n" -v nf="$nf" "$hex"'
{ a[NR] = $1; s[NR] = $2 }
END {
	per = int((n + nf - 1) / nf)
	k = 0
	for (j = 0; j < per && k < n; j++)
		for (i = 1; i <= nf && k < n; i++) {
			off = 1 + int(j * s[i] / per)
			if (off >= s[i]) continue
			print tohex(a[i] + off); k++
		}
}' "$out/funcs" >"$out/addrs.txt"
# (Stack lines of 10 frames, 16 bytes each: the header counts them.)
lines=$((($(wc -l <"$out/addrs.txt") + 9) / 10))
{
	echo "heap profile:  $lines: $((lines * 16)) [ $lines: $((lines * 16))] @ heapprofile"
	awk -v base="$base" "$hex"'{ printf "%s0x%s", (NR % 10 == 1 ? "     1:       16 [     1:       16] @ " : " "), tohex(base + hex($1) + 1)
		if (NR % 10 == 0) print "" } END { if (NR % 10) print "" }' "$out/addrs.txt"
	echo
	echo "MAPPED_LIBRARIES:"
	readelf -lW "$bin" | awk -v base="$base" -v bin="$bin" "$hex"'$1 == "LOAD" {
		off = hex($2); va = hex($3); mem = hex($6)
		start = base + va - va % 4096; end = base + va + mem
		if (end % 4096) end += 4096 - end % 4096
		f = ""; for (i = 7; i < NF; i++) f = f $i
		p = "r"; p = p (f ~ /W/ ? "w" : "-"); p = p (f ~ /E/ ? "x" : "-")
		o = tohex(off - off % 4096); while (length(o) < 8) o = "0" o
		printf "%s-%s %sp %s 00:00 0           %s\n", tohex(start), tohex(end), p, o, bin }'
} >"$out/sym.0001.heap"
sed -n '/^MAPPED_LIBRARIES:$/,$p' "$out/sym.0001.heap" | sed 1d >"$out/maps.txt"
awk '/ @ 0x/ { sub(/.* @ /, ""); n = split($0, v, " "); for (i = 1; i <= n; i++) print substr(v[i], 3) }' \
	"$out/sym.0001.heap" >"$out/frames.txt"
