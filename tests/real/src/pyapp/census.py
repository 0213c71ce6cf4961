"""A Python program whose objects are known, for tests of dmprof snapshot
and cores of a Python process: known numbers of instances of a plain
class, a str subclass, a dict subclass and a class with __slots__, a
large bytearray and a dict of a million entries.  It prints its own
census, then waits (for a snapshot, gcore, or a signal that cores it):

  ready PID
  type NAME COUNT     gc.get_objects() by type name, for its classes
  id WHAT ADDRESS     where some objects are: the big dict, its first
                      key (a str), a Plain
  (then sys._debugmallocstats() on stderr)
  waiting

Usage: census.py [SCALE]   (SCALE 1: a million entries; 0.1 for tests)
With CENSUS_CORE=1 set, it lifts its core size limit first (so that the
kernel writes a core of it when a test kills it with SIGSEGV).
"""
import gc
import os
import sys
import time

SCALE = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0
if os.environ.get("CENSUS_CORE") == "1":
    import resource
    resource.setrlimit(resource.RLIMIT_CORE,
                       (resource.RLIM_INFINITY, resource.RLIM_INFINITY))


class Plain:
    def __init__(self, i):
        self.i = i
        self.name = "plain-%d" % i


class Word(str):
    pass


class Bag(dict):
    pass


class Slotted:
    __slots__ = ("a", "b")

    def __init__(self, a, b):
        self.a = a
        self.b = b


N = int(10000 * SCALE)
PLAINS = [Plain(i) for i in range(N)]
WORDS = [Word("word-%d" % i) for i in range(2 * N)]
BAGS = [Bag(k=i) for i in range(N // 2)]
SLOTS = [Slotted(i, -i) for i in range(3 * N)]
BLOB = bytearray(16 * 1024 * 1024)
BIG = {"key-%d" % i: i for i in range(int(1000000 * SCALE))}

counts = {}
for o in gc.get_objects():
    t = type(o).__name__
    counts[t] = counts.get(t, 0) + 1
# (str subclasses are not tracked by the collector: counted from the
# list that keeps them.)
counts["Word"] = sum(1 for w in WORDS if type(w) is Word)
print("ready", os.getpid())
for t in ("Plain", "Word", "Bag", "Slotted"):
    print("type", t, counts.get(t, 0))
print("id big", hex(id(BIG)))
print("id key", hex(id(next(iter(BIG)))))
print("id plain", hex(id(PLAINS[7])))
sys.stdout.flush()
sys._debugmallocstats()
sys.stderr.flush()
print("waiting")
sys.stdout.flush()
while True:
    time.sleep(3600)
