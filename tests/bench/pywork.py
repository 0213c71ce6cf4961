"""Python workloads of make bench's python case, stdlib only, each about a
second: WORKLOAD is one of
  dictstr   dicts of string keys and lists of strings, kept and dropped
  json      json round trips of a nested document
  objects   instances of a class with attributes, kept in a list
Usage: pywork.py WORKLOAD [SCALE]
"""
import json
import sys


def dictstr(scale):
    kept = []
    for r in range(30 * scale):
        d = {"key-%d-%d" % (r, i): i for i in range(60000)}
        words = ["w%d" % i * 3 for i in range(60000)]
        if r % 2:
            kept.append((d, words))
    return sum(len(d) for d, _ in kept)


def json_trips(scale):
    doc = {"items": [{"id": i, "name": "item-%d" % i, "tags": ["a", "b", "c"],
                      "price": i * 1.5, "ok": i % 2 == 0}
                     for i in range(2000)]}
    n = 0
    for _ in range(150 * scale):
        doc = json.loads(json.dumps(doc))
        n += len(doc["items"])
    return n


class Point:
    def __init__(self, x, y):
        self.x = x
        self.y = y
        self.label = "p%d" % x


def objects(scale):
    kept = []
    for r in range(12 * scale):
        pts = [Point(i, r) for i in range(100000)]
        if r % 2:
            kept.append(pts)
    return sum(len(p) for p in kept)


if __name__ == "__main__":
    work = {"dictstr": dictstr, "json": json_trips, "objects": objects}
    scale = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    print(work[sys.argv[1]](scale))
