"""A Python program whose memory is known line by line, for
tests/real/python.sh: words made by a comprehension (kept), their
transformed copies made through map() calling back into Python (kept),
a cache that grows (store.py), records kept (store.py), and temporaries
made and freed each round (the sort keys).  Deterministic, stdlib only.

Usage: app.py [ROUNDS [WORDS]] (5 and 20000); with tracemalloc on
(python3 -X tracemalloc), it prints its own statistics by line at the
end, before the interpreter finalizes: "BYTES COUNT FILE:LINE".
"""
import sys
import tracemalloc

import store


def make_words(rnd, n):
    return ["word-%d-%08d" % (rnd, i) for i in range(n)]


def rank(words):
    return sorted(words, key=lambda w: w[::-1] + w[:4])


def transform(words):
    return list(map(lambda w: w.upper() + "!", words))


def main(rounds, n):
    s = store.Store()
    kept = []
    for rnd in range(rounds):
        words = make_words(rnd, n)
        ranked = rank(words)
        kept.append(transform(words))
        for i, w in enumerate(ranked):
            s.remember(w, i)
            if i % 4 == 0:
                s.keep(w, i)
        del ranked, words
    return s, kept


ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 5
WORDS = int(sys.argv[2]) if len(sys.argv) > 2 else 20000
STORE, KEPT = main(ROUNDS, WORDS)
if tracemalloc.is_tracing():
    snap = tracemalloc.take_snapshot()
    for st in snap.statistics("lineno"):
        frame = st.traceback[0]
        print(st.size, st.count, "%s:%d" % (frame.filename, frame.lineno))
