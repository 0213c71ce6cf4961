#!/usr/bin/env python3
"""Check `dmprof top --tree --json` (TREE) against `dmprof csv --bytes`
(CSV) of the same dump, whose first row is that snapshot: every inner node
is the sum of its children, every leaf is a component with csv's bytes,
each component between the markers that holds bytes is one leaf, and the
root is their total.  Then each CLAIM:
  PATH=TERM+TERM...  the node is the sum of csv's components TERM, where
                     a TERM ending in '*' is every component it prefixes
  PATH<PARENT        the node is a child of PARENT's node
One line a check; exit status 1 if any failed.
Usage: check.py TREE CSV [CLAIM...]"""
import csv
import json
import sys

tree = json.load(open(sys.argv[1]))
rows = list(csv.reader(open(sys.argv[2])))
head, row = rows[0], rows[1]
part = head[head.index("FROM_HERE_FOR_TOTAL") + 1:
            head.index("UNTIL_HERE_FOR_TOTAL")]
value = {c: int(v) for c, v in zip(head, row) if c in part}
failed = False


def say(ok, msg):
    global failed
    print(("ok: " if ok else "FAIL: ") + msg)
    failed |= not ok


nodes, leaves, bad = {}, {}, []


def walk(n, parent):
    kids = n["children"]
    if not n.get("self"):
        nodes[n["path"]] = (n, parent)
    if kids:
        if sum(k["bytes"] for k in kids) != n["bytes"]:
            bad.append(n["path"])
        for k in kids:
            walk(k, n)
    elif n is not tree["tree"]:
        leaves[n["path"]] = leaves.get(n["path"], 0) + 1
        if value.get(n["path"]) != n["bytes"]:
            bad.append(n["path"] + " (csv: %s)" % value.get(n["path"]))


walk(tree["tree"], None)
say(not bad, "%d nodes, each the sum of its children%s"
    % (len(nodes), "; not: " + ", ".join(bad) if bad else ""))
held = [c for c in part if value[c]]
say(sorted(held) == sorted(leaves) and set(leaves.values()) <= {1},
    "%d components hold bytes, one leaf each, with csv's bytes" % len(held))
total = sum(value[c] for c in part)
say(tree["tree"]["bytes"] == total == tree["total"],
    "the root is their total, %d" % total)
for claim in sys.argv[3:]:
    if "<" in claim:
        path, up = claim.split("<")
        n = nodes.get(path)
        say(n is not None and n[1] is nodes.get(up, (None,))[0],
            "%s is under %s" % (path, up))
        continue
    path, terms = claim.split("=")
    cols = []
    for t in terms.split("+"):
        cols += [c for c in part if c.startswith(t[:-1])] \
            if t.endswith("*") else [t]
    want = sum(value[c] for c in cols)
    got = nodes[path][0]["bytes"] if path in nodes else None
    say(got == want, "%s = %s = %d (%d components)"
        % (path, terms, want, len(cols)))
sys.exit(1 if failed else 0)
