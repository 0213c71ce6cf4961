"""Python programs of tests/real/python.sh, one per argument: each makes
a known allocation at a known line of this file, then ends.

  fork        os.fork() without exec: the child keeps 20000 strings
  setprofile  the program sets its own profile function first
  subprocess  a child interpreter (subprocess) runs app.py
  spawn       a child of multiprocessing (spawn) keeps 30000 strings
  ext N       a C extension (pyext) whose thread, which never held the
              GIL, mallocs N blocks of 1 KiB
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
KEEP = []


def child_strings(n):
    KEEP.append(["child-%08d" % i * 3 for i in range(n)])
    return len(KEEP[-1])


def fork():
    pid = os.fork()
    if pid == 0:
        child_strings(20000)
        sys.exit(0)
    os.waitpid(pid, 0)


def setprofile():
    sys.setprofile(lambda frame, event, arg: None)
    KEEP.append(["profiled-%08d" % i * 3 for i in range(20000)])
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


def ext(n):
    sys.path.insert(0, os.getcwd())
    import pyext
    print(pyext.native_thread(n))


if __name__ == "__main__":
    what = sys.argv[1]
    if what == "fork":
        fork()
    elif what == "setprofile":
        setprofile()
    elif what == "subprocess":
        subprocess_child()
    elif what == "spawn":
        spawn()
    elif what == "callers":
        callers()
    elif what == "ext":
        ext(int(sys.argv[2]))
