"""What dmprof says of census.py's process, against census.py's own
census (LABEL.out: "type NAME COUNT") and sys._debugmallocstats()
(LABEL.stats), for tests/real/pyheap.sh.  Prints a line per check: "ok",
or "bad LABEL: WHAT: WHY".

  pycheck.py heap LABEL WHAT HEAP_JSON
      dmprof heap --json: pymalloc's rows and sums, and the classes'
      counts among pymalloc's types
  pycheck.py snap LABEL WHAT TOP_JSON CSV [ROLLUP]
      dmprof top --json and csv --bytes of a snapshot or a core: the
      rows, the classes' counts in the types table (where it has one),
      every byte in a component (mustbezero 0, the components summing to
      total), and with ROLLUP (Rss + Swap of the process) total within
      0.5% of it
"""
import csv
import json
import re
import sys

mode, label, what = sys.argv[1:4]


def check(cond, why):
    print("ok" if cond else "bad %s: %s: %s" % (label, what, why))


def stats():
    rows, sums = {}, {}
    for line in open(label + ".stats"):
        m = re.match(r"\s*(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)$", line)
        if m:
            k, size, pools, used, avail = map(int, m.groups())
            rows[k] = (size, pools, used, avail)
            continue
        m = re.match(r"(.*?)\s*=\s*([\d,]+)$", line)
        if m and m.group(1) not in sums:
            sums[m.group(1)] = int(m.group(2).replace(",", ""))
    return rows, sums


def free_lists():
    """The objects on CPython's free lists, by sys._debugmallocstats()."""
    n = {}
    for line in open(label + ".stats"):
        m = re.match(r"\s*(\d+) free (?:\d+-sized )?Py(Dict|List|Float|Tuple)"
                     r"Objects? ", line)
        if m:
            t = m.group(2).lower() + " (free list)"
            n[t] = n.get(t, 0) + int(m.group(1))
    return n


def check_free(types):
    """The dicts, lists and floats on their lists as the stats count them;
    the tuples within 8 (census.py makes some after its stats)."""
    want = free_lists()
    check(len(want) == 4, "free lists in the stats: %s" % want)
    for t, n in want.items():
        have = types.get(t, 0)
        ok = abs(have - n) <= 8 if t.startswith("tuple") else have == n
        check(ok, "%s: %d, the stats %d" % (t, have, n))


def census():
    counts = {}
    for line in open(label + ".out"):
        f = line.split()
        if f and f[0] == "type":
            counts[f[1]] = int(f[2])
    return counts


def check_rows(classes, rows):
    have = {c["class"]: (c["size"], c["pools"], c["blocks"], c["avail"])
            for c in classes}
    check(rows and have == rows, "size classes differ: %s" %
          sorted(set(have.items()) ^ set(rows.items()))[:6])


def check_counts(types):
    want = census()
    for t, n in want.items():
        check(types.get(t) == n, "%s: %s instances, census %d" %
              (t, types.get(t), n))
    check(types.get("Plain values") == want["Plain"] and
          types.get("Bag keys") == want["Bag"],
          "Plain values %s, Bag keys %s" % (types.get("Plain values"),
                                            types.get("Bag keys")))


def heap():
    doc = json.load(open(sys.argv[4]))
    py = doc.get("python")
    if not py or "classes" not in py:
        check(False, "no pymalloc walked: %s" % (py and py.get("not_walked")))
        return
    rows, sums = stats()
    check_rows(py["classes"], rows)
    want = {"# arenas allocated current": py["arenas"],
            "# bytes in allocated blocks": py["allocated_bytes"],
            "# bytes in available blocks": py["available_bytes"],
            "# bytes lost to pool headers": py["pool_header_bytes"],
            "# bytes lost to quantization": py["quantization_bytes"],
            "# bytes lost to arena alignment": py["arena_alignment_bytes"],
            "Total": py["total_bytes"]}
    unused = [v for k, v in sums.items()
              if k.endswith("unused pools * 16384 bytes")]
    check(unused == [py["unused_pool_bytes"]],
          "unused pools: %s, walked %d" % (unused, py["unused_pool_bytes"]))
    for k, v in want.items():
        check(sums.get(k) == v, "%s: %s, walked %d" % (k, sums.get(k), v))
    check_counts({t["type"]: t["count"] for t in py["types"]})
    check_free({t["type"]: t["count"] for t in py["types"]})
    check(not py["problems"], "problems: %s" % py["problems"][:3])


def snap():
    doc = json.load(open(sys.argv[4]))
    py = doc.get("heap", {}).get("python")
    rows, sums = stats()
    if not py:
        check(False, "no pymalloc in top --json's heap")
    else:
        check_rows(py["classes"], rows)
        check(py["arenas"] == sums.get("# arenas allocated current"),
              "%d arenas, stats %s" % (py["arenas"],
                                       sums.get("# arenas allocated current")))
    check("types" in doc, "no types table in top --json")
    check_counts({t["name"]: t["count"] for t in doc.get("types", [])})
    check_free({t["name"]: t["count"] for t in doc.get("types", [])})
    lines = list(csv.reader(open(sys.argv[5])))
    head, row = lines[0], lines[1]
    v = {h: int(x) for h, x in zip(head[1:], row[1:])}
    a, b = head.index("FROM_HERE_FOR_TOTAL"), head.index("UNTIL_HERE_FOR_TOTAL")
    parts = sum(int(x) for x in row[a + 1:b])
    check(v["mustbezero"] == 0, "mustbezero %d" % v["mustbezero"])
    check(parts == v["total"], "the components add up to %d, total %d" %
          (parts, v["total"]))
    check(v["malloc-python-free"] > 0, "no malloc-python-free")
    if len(sys.argv) > 6:
        rollup = int(sys.argv[6])
        check(abs(v["total"] - rollup) <= rollup * 0.005,
              "total %d, Rss + Swap %d" % (v["total"], rollup))


{"heap": heap, "snap": snap}[mode]()
