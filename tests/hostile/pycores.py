#!/usr/bin/env python3
"""Hostile cores of a CPython 3.11 process (tests/hostile/run.sh), made
from gcore's core of census.py and what `dmprof heap --json` said of it
(where pymalloc's table and types are): objects' ob_type garbled, pool
headers of no size class, arenas placed outside the core, types whose
types are each other.  Each goes to OUTDIR/NAME.core; one line per core
on stdout, "NAME WANT", as cores.py's (WANT: the exit status dmprof must
give, or "any").

Usage: pycores.py CORE HEAP_JSON OUTDIR
"""
import json
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cores import Core  # noqa: E402

POOL, ARENA_OBJECT, OVERHEAD = 16384, 48, 48


def arenas(core, py):
    """(index, address, pool_address) of each arena of the table."""
    out = []
    for i in range(py["arena_table_entries"]):
        at = int(py["arena_table"], 16) + i * ARENA_OBJECT
        address, pools = core.word(at), core.word(at + 8)
        if address:
            out.append((i, at, address, pools))
    return out


def pools(core, py):
    """The carved pools' addresses, and the size class of each."""
    for _, _, address, pool_address in arenas(core, py):
        base = (address + POOL - 1) & ~(POOL - 1)
        for p in range(base, pool_address, POOL):
            count = struct.unpack_from("<I", core.data, core.off(p))[0]
            if count:
                yield p, struct.unpack_from("<I", core.data,
                                            core.off(p + 36))[0]


def put(core, addr, fmt, value):
    struct.pack_into(fmt, core.data, core.off(addr), value)


def write(outdir, name, core, want="any"):
    with open(os.path.join(outdir, name + ".core"), "wb") as f:
        f.write(core.data)
    print(name, want)


def main():
    path, heap, outdir = sys.argv[1:4]
    data = open(path, "rb").read()
    py = json.load(open(heap))["python"]
    # Every object's ob_type (its block's second, fourth and sixth
    # words: each layout's place) garbled in every pool.
    c = Core(data)
    for p, k in pools(c, py):
        size = (k + 1) * 16
        for b in range(p + OVERHEAD, p + POOL - size + 1, size):
            for w in (8, 24, 40):
                if w < size:
                    put(c, b + w, "<Q", 0x4141414141414141 + b)
    write(outdir, "py-obtype-garbled", c, 0)
    # Pool headers of no size class, and of another arena.
    c = Core(data)
    for n, (p, _) in enumerate(pools(c, py)):
        if n % 2:
            put(c, p + 36, "<I", 99)
        else:
            put(c, p + 32, "<I", 0xffffffff)
    write(outdir, "py-pool-headers", c, 0)
    # Free lists that loop and leave their pools.
    c = Core(data)
    for n, (p, _) in enumerate(pools(c, py)):
        put(c, p + 8, "<Q", p + OVERHEAD if n % 2 else 0x10)
    write(outdir, "py-free-lists", c, 0)
    # Every other arena outside the core.
    c = Core(data)
    for n, (i, at, address, _) in enumerate(arenas(c, py)):
        if n % 2:
            put(c, at, "<Q", 0x7ff000000000 + n * (1 << 20))
            put(c, at + 8, "<Q", 0x7ff000000000 + n * (1 << 20) + 4 * POOL)
    write(outdir, "py-arenas-outside", c, 0)
    # The table's pointer to an arena table of garbage (the whole block).
    c = Core(data)
    t = int(py["arena_table"], 16)
    for i in range(py["arena_table_entries"] * ARENA_OBJECT // 8):
        put(c, t + 8 * i, "<Q", 0x4242424242424242)
    write(outdir, "py-table-garbage", c, 0)
    # Types whose types are each other (a cycle no type ends), and a
    # type named by a string of no end.
    c = Core(data)
    types = [int(t["address"], 16) for t in py["types"] if "address" in t]
    for a, b in zip(types[0::2], types[1::2]):
        put(c, a + 8, "<Q", b)
        put(c, b + 8, "<Q", a)
    write(outdir, "py-type-cycles", c, 0)
    c = Core(data)
    for a in types:
        try:
            name = c.word(a + 24)
            for j in range(0, 4096, 8):
                put(c, name + j, "<Q", 0x5858585858585858)
        except (SystemExit, struct.error):
            pass
    write(outdir, "py-type-names", c, 0)


main()
