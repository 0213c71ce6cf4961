# Shared by the leak-* golden cases (sourced from their cmd): a real
# tcmalloc profile of tests/real/src/leak.c, five dumps one per round, with
# its symbol map (make.sh wrote them).  Round by round: a flat 256 KiB
# cache (cache_fill), a leak of 3000-byte blocks from handle_get (4 a
# round) and handle_put (2), 1 MiB of churn freed every round (churn), and
# a pool of 8 KiB blocks that loses 4 a round from the second (pool_init).
# The dumps carry no times: their modification times are one second apart.
cp -R "$TOP"/tests/golden/leak-base/prof.* .
for n in 1 2 3 4 5; do
	touch -d "2024-01-01 00:00:0$n" prof.000$n.heap
done
