"""Python programs of tests/real/python.sh, one per argument: each makes
a known allocation at a known line of this file, then ends.

  fork        os.fork() without exec: the child keeps 20000 strings
  setprofile  the program sets its own profile function first
  subprocess  a child interpreter (subprocess) runs app.py
  spawn       a child of multiprocessing (spawn) keeps 30000 strings
  ext N       a C extension (pyext) whose thread, which never held the
              GIL, mallocs N blocks of 1 KiB
  reborn      20000 each of dicts, lists, tuples and floats dropped on
              one line, and as many kept on the next
  nested      chains of 300000 nested lists, tuples and dicts dropped
              (CPython frees them without a recursion as deep): "nested"
  recompiled  twelve functions compiled from one text, as files gen0.py
              to gen11.py, each run once (function I keeps 1000 (I + 1)
              strings) and freed before the next is compiled
With tracemalloc on, a scenario prints its statistics by line at the
end, as app.py does: "BYTES COUNT FILE:LINE".
"""
import gc
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
KEEP = []


def child_strings(n):
    KEEP.append(["child-%08d" % i * 3 for i in range(n)])  # child site
    return len(KEEP[-1])


def fork():
    pid = os.fork()
    if pid == 0:
        child_strings(20000)
        sys.exit(0)
    os.waitpid(pid, 0)


def setprofile():
    sys.setprofile(lambda frame, event, arg: None)
    KEEP.append(["profiled-%08d" % i * 3 for i in range(20000)])  # profiled
    sys.setprofile(None)


def subprocess_child():
    import subprocess
    subprocess.run([sys.executable, os.path.join(HERE, "app.py"), "1",
                    "5000"], check=True)


def spawn():
    import multiprocessing
    ctx = multiprocessing.get_context("spawn")
    child = ctx.Process(target=child_strings, args=(30000,))
    child.start()
    child.join()


def listed(n):
    return ["called-%08d" % i * 3 for i in range(n)]  # the listed site


def generated(n):
    for i in range(n):
        yield "generated-%08d" % i * 3  # the generated site


# callers: one function called from three lines of another (3000, 2000
# and 1000 strings kept), and a generator resumed from two (1500 and
# 2500): each line its own stack.
def callers():
    KEEP.append(listed(3000))  # caller 3000
    KEEP.append(listed(2000))  # caller 2000
    KEEP.append(listed(1000))  # caller 1000
    g = generated(4000)
    KEEP.append([next(g) for _ in range(1500)])  # caller 1500
    KEEP.append(list(g))  # caller 2500


# reborn: what the kept line makes, CPython's free lists serve from the
# memory of what the line before dropped; the objects are the kept
# line's (tracemalloc's count, which _Py_NewReference tells).
def reborn():
    for i in range(20000):
        if i == 10000:
            gc.collect()  # clears the free lists: kept empty again after
        dropped = ({"d": i}, [i, i], (i, i + 1), i * 0.5)  # dropped site
        KEEP.append(({"k": i}, [i, i], (i, i + 2), i * 1.5))  # kept site
    return dropped


# A code object freed and another made where it was: the instructions
# the recorder saw in the old one are not the new one's names.
def recompiled():
    text = "def make(n):\n    return ['c%d' % j * 2 for j in range(n)]\n"
    for i in range(12):
        ns = {}
        exec(compile(text, os.path.join(HERE, "gen%d.py" % i), "exec"), ns)
        KEEP.append(ns["make"](1000 * (i + 1)))
        del ns
        gc.collect()  # (the function and its globals: a cycle)


def nested():
    for make in (lambda x: [x], lambda x: (x,), lambda x: {"in": x}):
        chain = None
        for _ in range(300000):
            chain = make(chain)
        del chain
    print("nested")


def traced():
    import tracemalloc
    if tracemalloc.is_tracing():
        for st in tracemalloc.take_snapshot().statistics("lineno"):
            frame = st.traceback[0]
            print(st.size, st.count, "%s:%d" % (frame.filename, frame.lineno))


def ext(n):
    sys.path.insert(0, os.getcwd())
    import pyext
    print(pyext.native_thread(n))


if __name__ == "__main__":
    what = sys.argv[1]
    if what == "ext":
        ext(int(sys.argv[2]))
    else:
        {"fork": fork, "setprofile": setprofile,
         "subprocess": subprocess_child, "spawn": spawn, "callers": callers,
         "reborn": reborn, "nested": nested,
         "recompiled": recompiled}[what]()
    traced()
