"""Compare dmprof's bytes by line with tracemalloc's, for
tests/real/python.sh: the lines of the program's own files (DIR) that
hold at least 1% of what tracemalloc counts in them, each within 2%, in
the same order.

Usage: compare.py DIR TOP_JSON TRACEMALLOC_OUT [MIN_SITES]
  TOP_JSON         dmprof top --json of the dump to compare
  TRACEMALLOC_OUT  "BYTES COUNT FILE:LINE" lines (app.py's, under
                   python3 -X tracemalloc)
  MIN_SITES        how many such lines there must be (4)
Prints a line per site, then "ok" or "FAIL: why"; exits 1 on a failure.
"""
import json
import os
import sys


def main():
    where, top_json, traced = sys.argv[1:4]
    least = int(sys.argv[4]) if len(sys.argv) > 4 else 4
    where = os.path.realpath(where)
    mine = {}
    with open(top_json) as f:
        top = json.load(f)
    for fn in top["functions"]:
        for ln in fn.get("lines", []):
            key = (os.path.realpath(ln.get("file", "?")), ln["line"])
            mine[key] = mine.get(key, 0) + ln["flat"]
    theirs = {}
    with open(traced) as f:
        for line in f:
            size, _count, place = line.rstrip("\n").split(" ", 2)
            path, _, no = place.rpartition(":")
            theirs[(os.path.realpath(path), int(no))] = int(size)
    own = {k: v for k, v in theirs.items()
           if k[0].startswith(where + os.sep)}
    total = sum(own.values())
    sites = sorted((k for k, v in own.items() if v * 100 >= total),
                   key=lambda k: -own[k])
    bad = []
    for k in sites:
        got = mine.get(k, 0)
        off = abs(got - own[k]) / own[k]
        print("%s:%d tracemalloc %d dmprof %d (%.2f%%)"
              % (os.path.basename(k[0]), k[1], own[k], got, 100 * off))
        if off > 0.02:
            bad.append("%s:%d is %d, tracemalloc says %d"
                       % (os.path.basename(k[0]), k[1], got, own[k]))
    order = sorted(sites, key=lambda k: -mine.get(k, 0))
    if order != sites:
        bad.append("the order differs: %s" % " ".join(
            "%s:%d" % (os.path.basename(k[0]), k[1]) for k in order))
    if len(sites) < least:
        bad.append("only %d sites of 1%% or more" % len(sites))
    print("FAIL: " + "; ".join(bad) if bad else "ok")
    return 1 if bad else 0


sys.exit(main())
