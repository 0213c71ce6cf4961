# Sourced by tests/real/run.sh: a C program (src/jeprog.c) under Debian's
# jemalloc with its heap profiler on (MALLOC_CONF=prof:true), sampled
# every 64 KiB, a dump every 16 MiB allocated and one at exit.
#   - its files (PREFIX.PID.SEQ.iN.heap ... SEQ.f.heap) are one series:
#     csv gives a row per dump;
#   - each dump's total is jeprof's own "Total: N B" (jeprof --text
#     --show_bytes), to the byte: the same unsampling and truncation;
#   - top's flat bytes of the two allocating functions (one stack each)
#     are jeprof's, within the byte that cutting each stack's estimate
#     to whole bytes may move: the frames inside libjemalloc (stripped:
#     no names) own nothing.
: "${tmp:?tests/real/run.sh sources this file, in its scratch directory}"
je=$(ls /usr/lib/*/libjemalloc.so.2 2>/dev/null | head -1)
if [ -z "$je" ] || ! command -v jeprof >/dev/null 2>&1; then
	bad "jemalloc: libjemalloc2 or jeprof (libjemalloc-dev) is not installed (make check installs them)"
else
	mkdir -p je && cd je || exit 1
	gcc -g -O1 "$src/jeprog.c" -o jeprog || exit 1
	LD_PRELOAD=$je MALLOC_CONF=prof:true,prof_final:true,lg_prof_sample:16,lg_prof_interval:24,prof_prefix:"$tmp/je/p" \
		./jeprog
	set -- $(ls p.*.heap 2>/dev/null | sort -t. -k3n)
	if [ $# -lt 3 ]; then
		bad "jemalloc: $# dumps written (is Debian's jemalloc built without profiling?)"
	else
		rows=$("$bin" csv -b "$1" 2>/dev/null | wc -l)
		[ "$rows" = $(($# + 1)) ] && ok || bad "jemalloc: csv printed $rows lines for $# dumps"
		for f in "$1" "$2" "$(eval echo \${$#})"; do
			want=$(jeprof --text --show_bytes ./jeprog "$f" 2>/dev/null |
				sed -n 's/^Total: \([0-9]*\) B$/\1/p')
			got=$("$bin" csv -b "$f" 2>/dev/null | awk -F, '
				NR == 1 { for (i = 1; i <= NF; i++) if ($i == "total") t = i; next }
				{ print $t; exit }')
			[ -n "$want" ] && [ "$want" = "$got" ] && ok ||
				bad "jemalloc: $f: total '$got', jeprof says '$want'"
		done
		last=$(eval echo \${$#})
		for fn in big small; do
			want=$(jeprof --text --show_bytes ./jeprog "$last" 2>/dev/null |
				awk -v f=$fn '$NF == f { print $1 }')
			got=$("$bin" top -b --owner=pprof "$last" 2>/dev/null | awk -v f=$fn '
				/^functions/ { t = 1 } t && $6 == f { s += $1 } END { print s + 0 }')
			[ -n "$want" ] && [ "$got" -ge $((want - 1)) ] &&
				[ "$got" -le $((want + 1)) ] && ok ||
				bad "jemalloc: top: $fn's flat bytes '$got', jeprof says '$want'"
		done
	fi
	cd "$tmp" || exit 1
fi
