#!/usr/bin/env python3
"""Check the tree view of a page's DOM (chromium --dump-dom) at snapshot
SNAPSHOT against `dmprof top --tree --json` of that snapshot (TOP): the
same nodes, names, exact bytes (data-bytes), marks and order (largest
first); each inner node a <details> whose <summary> folds it, each leaf
a component whose swatch has its band's colour in the chart.  Writes the
DOM's tree in TOP's shape to OUT, for tests/golden/top-tree/check.py to
check against csv.  Then each CLAIM:
  unclassified=PATH,PATH...  exactly these nodes are marked unclassified
One line a check; exit status 1 if any failed.
Usage: tree.py DOM SNAPSHOT TOP OUT [CLAIM...]"""
import json
import sys
from html.parser import HTMLParser

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link",
        "meta", "source", "track", "wbr"}


class Tree(HTMLParser):
    """The nodes under <div id="tree">, the bands' colours, the swatches'."""

    def __init__(self):
        super().__init__()
        self.open = []      # (tag, node or None) of each open element
        self.box = None     # the attributes of #tree
        self.root = None
        self.bands = {}     # component: fill
        self.swatch = {}    # leaf path: its <i>'s style
        self.bad_shape = []

    def node(self):
        for tag, n in reversed(self.open):
            if n is not None:
                return n
        return None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        n = None
        if tag == "path" and a.get("class") == "band":
            self.bands[a.get("data-component")] = a.get("fill")
        if tag == "div" and a.get("id") == "tree":
            self.box = a
            n = self.root = {"name": "", "path": "",
                             "bytes": int(a.get("data-bytes", -1)),
                             "children": [], "tag": tag}
        elif "data-path" in a and self.root and self.node() is not None:
            cls = a.get("class", "").split()
            n = {"name": a["data-name"], "path": a["data-path"],
                 "bytes": int(a["data-bytes"]), "children": [], "tag": tag}
            if "unclassified" in cls:
                n["unclassified"] = True
            if "self" in cls:
                n["self"] = True
            n["leaf"] = "leaf" in cls
            n["open"] = "open" in a
            self.node()["children"].append(n)
        elif tag == "summary" and self.node() is not None:
            up = self.node()
            if up["tag"] != "details" or up["children"]:
                self.bad_shape.append(up["path"] + ": a summary out of place")
            up["summary"] = True
        elif tag == "i" and self.node() is not None and "style" in a:
            self.swatch[self.node()["path"]] = a["style"]
        if tag not in VOID:
            self.open.append((tag, n))

    def handle_endtag(self, tag):
        while self.open:
            t, _ = self.open.pop()
            if t == tag:
                break


dom, snapshot, top_file, out = sys.argv[1:5]
p = Tree()
p.feed(open(dom).read())
top = json.load(open(top_file))
failed = False


def say(ok, msg):
    global failed
    print(("ok: " if ok else "FAIL: ") + msg)
    failed |= not ok


say(p.root is not None and p.box.get("data-snapshot") == snapshot,
    "the tree shows snapshot %s (%s)"
    % (snapshot, p.box and p.box.get("data-snapshot")))
if p.root is None:
    sys.exit(1)

nodes, shape, colours = {}, list(p.bad_shape), []


def walk(n):
    """N in TOP's shape; its shape and colour checked."""
    kids = [walk(k) for k in n["children"]]
    if n is not p.root:
        nodes[n["path"] + ("/<self>" if n.get("self") else "")] = n
        if kids and (n["tag"] != "details" or not n.get("summary") or
                     n["leaf"] or not n["open"]):
            shape.append(n["path"] + ": not an open <details> with a "
                         "<summary>")
        if not kids and (n["tag"] == "details" or not n["leaf"]):
            shape.append(n["path"] + ": a leaf that is not one")
        if not kids:
            band = p.bands.get(n["path"])
            if not band or p.swatch.get(n["path"]) != "background:" + band:
                colours.append("%s (%s, band %s)" % (
                    n["path"], p.swatch.get(n["path"]), band))
    t = {"name": n["name"], "path": n["path"], "bytes": n["bytes"]}
    for k in ("unclassified", "self"):
        if n.get(k):
            t[k] = True
    t["children"] = kids
    return t


mine = {"total": p.root["bytes"], "tree": walk(p.root)}
json.dump(mine, open(out, "w"), indent=1)
say(mine["tree"] == top["tree"] and mine["total"] == top["total"],
    "%d nodes with top --tree's names, bytes, marks and order"
    % len(nodes))
say(not shape, "inner nodes fold (<details open><summary>), leaves do not%s"
    % ("; not: " + ", ".join(shape) if shape else ""))
say(not colours, "each leaf has its band's colour%s"
    % ("; not: " + ", ".join(colours) if colours else ""))
for claim in sys.argv[5:]:
    what, paths = claim.split("=")
    if what != "unclassified":
        sys.exit("tree.py: no such claim: " + claim)
    marked = sorted(k for k, n in nodes.items() if n.get("unclassified"))
    say(marked == sorted(paths.split(",")),
        "unclassified: %s (the page marks %s)" % (paths, ",".join(marked)))
sys.exit(1 if failed else 0)
