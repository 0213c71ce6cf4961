#!/usr/bin/env python3
"""Seeds for the core target (tests/fuzz/run.sh): small ELF64 x86-64
cores, each under 64 KiB, written to DIR.

Synthetic ones hold what dmprof reads of a core: NT_PRSTATUS, NT_PRPSINFO,
NT_AUXV and NT_FILE notes; the executable's first page (its ELF header,
for where [heap] starts); [heap] with glibc 2.36 chunks (the tcache, in
use ones pointing at each other, one in the tcache, one in the unsorted
bin, top; one an object of a C++ class, its vtable in the executable);
libc's writable data holding main_arena and mp_; a mapped chunk; a stack
pointing at some blocks; and, in some, a thread arena in a 64 MiB-aligned
heap, code left out as a kernel leaves it, no libc (a static binary's).
With --from CORE, a real core made small: its CORE notes right after the
program headers, the first 16 KiB of [heap] (the segment holding
HEAP_BLOCK), small writable segments whole, the first 1 KiB of read-only
ones, nothing of the others.

With --python, CORE is a CPython 3.11 process's (census.py's) and
HEAP_JSON what `dmprof heap --json` said of it; the seed (about 120 KiB)
holds as --from's would, with [heap] as far as pymalloc's arena table
(early in it) and glibc's main arena's top moved to the next chunk there,
and besides: the first page of the interpreter's .bss, the table's
pointer copied to its first word (the pointer itself lies further in);
the first two pools of the arena that starts lowest in its mapping (the
other arenas' pools said unreadable); and the pages of the interpreter's
data holding the static types of those pools' objects (str, int, ...).
The pieces of a segment held apart are segments of their own.

Usage: coreseeds.py DIR
       coreseeds.py --from CORE HEAP_BLOCK OUT
       coreseeds.py --python CORE HEAP_JSON OUT
"""
import struct
import sys

PT_LOAD, PT_NOTE = 1, 4
PF_X, PF_W, PF_R = 1, 2, 4
NT_PRSTATUS, NT_PRPSINFO, NT_AUXV, NT_FILE = 1, 3, 6, 0x46494c45
PHDR = struct.Struct("<IIQQQQQQ")
# struct malloc_state and struct malloc_par (glibc 2.36).
MS_TOP, MS_BINS, MS_NEXT, MS_ATTACHED, MS_SYSTEM_MEM = 96, 112, 2160, 2176, 2184
MS_SIZE = 2200
EXE, HEAP, LIBC, MMAPPED = 0x400000, 0x402000, 0x7f0000001000, 0x7f0000100000
STACK, THREAD_HEAP = 0x7ffff0000000, 0x7f0008000000
PAGE = 4096
TCACHE_KEY = 0x1234567890abcdef
VTABLE = EXE + 0x210


def note(typ, desc, name=b"CORE\0"):
    pad = lambda b: b + b"\0" * (-len(b) % 4)
    return struct.pack("<III", len(name), len(desc), typ) + pad(name) + \
        pad(desc)


def prstatus(pid, rsp, rip=EXE + 0x80):
    d = bytearray(336)
    struct.pack_into("<h", d, 12, 11)         # pr_cursig: SIGSEGV
    struct.pack_into("<i", d, 32, pid)        # pr_pid
    regs = [0] * 27
    regs[16], regs[19], regs[21] = rip, rsp, STACK + 0xf00  # rip, rsp, fs
    struct.pack_into("<27Q", d, 112, *regs)
    return bytes(d)


def prpsinfo(pid, name, args):
    d = bytearray(136)
    struct.pack_into("<i", d, 24, pid)
    d[40:40 + len(name)] = name
    d[56:56 + len(args)] = args
    return bytes(d)


def nt_file(entries):
    body = struct.pack("<QQ", len(entries), PAGE)
    body += b"".join(struct.pack("<QQQ", s, e, o) for s, e, o, _ in entries)
    return body + b"".join(p + b"\0" for *_, p in entries)


class Mem:
    """A segment's bytes, written by address."""

    def __init__(self, start, size, flags=PF_R | PF_W, held=None):
        self.start, self.flags = start, flags
        self.data = bytearray(size)
        self.held = size if held is None else held

    def q(self, addr, *vals):
        struct.pack_into("<%dQ" % len(vals), self.data, addr - self.start,
                         *vals)

    def h(self, addr, val):
        struct.pack_into("<H", self.data, addr - self.start, val)


def chunk(m, c, size, flags=1):
    m.q(c + 8, size | flags)
    return c + 16


def main_heap(heap, arena):
    """[heap]'s chunks; main_arena's top and unsorted bin to match."""
    c = HEAP
    tcache = chunk(heap, c, 0x290)
    c += 0x290
    blocks = {}
    for name, size in (("a", 0x30), ("b", 0x40), ("c", 0x20), ("d", 0x50),
                       ("e", 0x90), ("f", 0x30)):
        blocks[name] = chunk(heap, c, size)
        c += size
    top = c
    # a -> b -> a (and d -> a: d is leaked, b anchored from the stack).
    heap.q(blocks["a"], blocks["b"], blocks["f"] + 8)
    heap.q(blocks["b"], blocks["a"])
    heap.q(blocks["d"], blocks["a"], 0x6f6c6c6568)
    heap.q(blocks["f"], VTABLE)
    # c in the tcache: counts[0] 1, entries[0] c; its next mangled NULL.
    heap.h(tcache, 1)
    heap.q(tcache + 128, blocks["c"])
    heap.q(blocks["c"], blocks["c"] >> 12, TCACHE_KEY)
    # e in the unsorted bin: f's PREV_INUSE clear, its prev_size e's.
    e, head = blocks["e"] - 16, arena + MS_BINS - 16
    heap.q(e + 16, head, head)
    heap.q(blocks["f"] - 16, 0x90, 0x30)
    end = heap.start + len(heap.data)
    chunk(heap, top, end - top)
    return blocks, top, e


def arena_state(m, a, top, system_mem, nxt, unsorted=None, flags=0):
    m.data[a - m.start:a - m.start + MS_SIZE] = bytes(MS_SIZE)
    struct.pack_into("<i", m.data, a - m.start + 4, flags)
    m.q(a + MS_TOP, top)
    for i in range(127):
        head = a + MS_BINS - 16 + 16 * i
        m.q(a + MS_BINS + 16 * i, head, head)
    if unsorted:
        m.q(a + MS_BINS, unsorted, unsorted)
    m.q(a + MS_NEXT, nxt)
    m.q(a + MS_ATTACHED, 1)
    m.q(a + MS_SYSTEM_MEM, system_mem, system_mem)


def malloc_par(m, at, sbrk_base, mmaps):
    m.q(at, 128 << 10, 128 << 10, 128 << 10, 8, 0, 0, 0)
    struct.pack_into("<iiiii", m.data, at - m.start + 56, 0, mmaps, 65536,
                     mmaps, 0)
    m.q(at + 80, PAGE * mmaps, PAGE * mmaps, sbrk_base, 64, 1032, 7, 0)


def exe_page():
    m = Mem(EXE, PAGE, PF_R)
    ehdr = struct.pack("<16sHHIQQQIHHHHHH", b"\x7fELF\2\1\1" + bytes(9), 2,
                       62, 1, EXE + 0x80, 64, 0, 0, 64, 56, 1, 64, 0, 0)
    m.data[:64] = ehdr
    # (Two pages: its code, which a kernel's core leaves out, after.)
    m.data[64:120] = PHDR.pack(PT_LOAD, PF_R | PF_X, 0, EXE, EXE, 2 * PAGE,
                               2 * PAGE, PAGE)
    # A C++ class's vtable (VTABLE), after its offset to top and its
    # typeinfo, whose name is "7Session".
    m.q(VTABLE - 16, 0, EXE + 0x300)
    m.q(EXE + 0x300, EXE + 0x400, EXE + 0x320)
    m.data[0x320:0x329] = b"7Session\0"
    return m


def core(segs, notes):
    """An ELF core of SEGS (Mems, or (start, size, flags) not held at
    all) and NOTES (bytes)."""
    n = 1 + len(segs)
    off = 64 + 56 * n
    ph = [PHDR.pack(PT_NOTE, 0, off, 0, 0, len(notes), 0, 4)]
    body = bytearray(notes)
    pos = off + len(notes)
    for s in segs:
        if isinstance(s, tuple):
            ph.append(PHDR.pack(PT_LOAD, s[2], pos, s[0], 0, 0, s[1], PAGE))
            continue
        held = bytes(s.data[:s.held])
        ph.append(PHDR.pack(PT_LOAD, s.flags, pos, s.start, 0, len(held),
                            len(s.data), PAGE))
        body += held
        pos += len(held)
    ehdr = struct.pack("<16sHHIQQQIHHHHHH", b"\x7fELF\2\1\1" + bytes(9), 4,
                       62, 1, 0, 64, 0, 0, 64, 56, n, 64, 0, 0)
    return ehdr + b"".join(ph) + bytes(body)


def synthetic(kind):
    pid = 4242
    exe = exe_page()
    heap = Mem(HEAP, 0x3000)
    libc = Mem(LIBC, 0x2000)
    arena = LIBC + 0x100
    blocks, top, unsorted = main_heap(heap, arena)
    mmapped = Mem(MMAPPED, PAGE)
    chunk(mmapped, MMAPPED, PAGE, 2)
    mmapped.q(MMAPPED + 16, blocks["b"])
    stack = Mem(STACK, PAGE)
    rsp = STACK + 0x800
    stack.q(rsp + 8, blocks["b"], MMAPPED + 16, 0x400080)
    stack.q(STACK + 0xe00, HEAP + 16)  # (the thread's tcache pointer)
    files = [(EXE, EXE + PAGE, 0, b"/fuzz/prog"),
             (LIBC, LIBC + 0x2000, 1, b"/fuzz/libc.so.6")]
    segs = [exe, heap, libc, mmapped, stack]
    threads = [prstatus(pid, rsp)]
    nxt = arena
    if kind == "thread-arena":
        # A thread arena: heap_info, its malloc_state, a block, top.
        th = Mem(THREAD_HEAP, 0x2000)
        ta = THREAD_HEAP + 48
        first = ta + MS_SIZE + 8
        th.q(THREAD_HEAP, ta, 0, 0x2000, 0x2000, PAGE)
        b = chunk(th, first, 0x30, 5)
        chunk(th, first + 0x30, THREAD_HEAP + 0x2000 - first - 0x30, 5)
        th.q(b, blocks["a"])
        arena_state(th, ta, first + 0x30, 0x2000, arena, flags=2)
        segs.append(th)
        nxt = ta
        threads.append(prstatus(pid + 1, rsp - 0x100))
        stack.q(rsp - 0x100, b)
    arena_state(libc, arena, top, 0x3000, nxt, unsorted)
    malloc_par(libc, LIBC + 0x1000, HEAP, 1)
    libc.q(LIBC + 0x1800, TCACHE_KEY)  # (libc's tcache_key)
    if kind == "kernel":
        # Code as a kernel's core has it: not dumped, read from files.
        segs.append((EXE + PAGE, PAGE, PF_R | PF_X))
        segs.append((LIBC - 0x10000, 0x10000, PF_R | PF_X))
        files.append((EXE + PAGE, EXE + 2 * PAGE, 1, b"/fuzz/prog"))
        files.append((LIBC - 0x10000, LIBC, 0, b"/fuzz/libc.so.6"))
    if kind == "static":
        files = files[:1]
        segs.remove(libc)
    segs.sort(key=lambda s: s[0] if isinstance(s, tuple) else s.start)
    files.sort()
    auxv = struct.pack("<6Q", 9, EXE + 0x80, 6, PAGE, 0, 0)
    notes = b"".join(note(NT_PRSTATUS, t) for t in threads)
    notes += note(NT_PRPSINFO, prpsinfo(pid, b"prog", b"prog --fuzz"))
    notes += note(NT_AUXV, auxv) + note(NT_FILE, nt_file(files))
    return core(segs, notes)


def read_core(path):
    """The core at PATH: its bytes, its CORE notes, its PT_LOAD headers
    (as lists)."""
    data = open(path, "rb").read()
    phoff, phnum = struct.unpack_from("<Q", data, 32)[0], \
        struct.unpack_from("<H", data, 56)[0]
    ph = [list(PHDR.unpack_from(data, phoff + 56 * i)) for i in range(phnum)]
    notes = b""
    for p in ph:
        at, end = p[2], p[2] + p[5]
        while p[0] == PT_NOTE and at + 12 <= end:
            nsz, dsz, _ = struct.unpack_from("<III", data, at)
            size = 12 + (nsz + 3 & ~3) + (dsz + 3 & ~3)
            if data[at + 12:at + 12 + nsz] == b"CORE\0":
                notes += data[at:at + size]
            at += size
    return data, notes, [p for p in ph if p[0] == PT_LOAD]


def from_core(path, heap_block, out, holds=None, patches=()):
    """A real core made small (see the usage).  HOLDS: for the segments
    at those addresses, the [lo, hi) ranges of them to keep, each a
    segment of its own (the rest in segments that hold no bytes), but
    one range at a segment's start is its first bytes; PATCHES: (address, bytes) written over what is kept."""
    data, notes, loads = read_core(path)
    holds = holds or {}
    pieces = []   # (flags, vaddr, memsz, align, bytes)
    for p in loads:
        if p[3] in holds and [lo for lo, _ in holds[p[3]]] == [p[3]]:
            # (A prefix: the segment whole, as --from keeps [heap].)
            n = min(holds[p[3]][0][1] - p[3], p[5])
            pieces.append((p[1], p[3], p[6], p[7], data[p[2]:p[2] + n]))
            continue
        if p[3] in holds:
            at = p[3]
            for lo, hi in sorted(holds[p[3]]) + [(p[3] + p[6],) * 2]:
                if lo > at:
                    pieces.append((p[1], at, lo - at, p[7], b""))
                if hi > lo:
                    n = max(0, min(hi, p[3] + p[5]) - lo)
                    pieces.append((p[1], lo, hi - lo, p[7],
                                   data[p[2] + lo - p[3]:][:n]))
                at = hi
            continue
        # What dmprof reads most: [heap]'s start, small writable data
        # (libc's: main_arena, mp_), the ELF headers at files' starts.
        if p[3] <= heap_block < p[3] + p[6]:
            keep = 16384
        elif p[1] & PF_W:
            keep = p[6] if p[6] <= 8192 else 0
        elif p[1] & PF_X:
            keep = 0
        else:
            keep = 1024
        keep = min(keep, p[5])
        pieces.append((p[1], p[3], p[6], p[7], data[p[2]:p[2] + keep]))
    pos = 64 + 56 * (1 + len(pieces))
    new = [[PT_NOTE, 0, pos, 0, 0, len(notes), 0, 4]]
    body = bytearray(notes)
    pos += len(notes)
    for flags, vaddr, memsz, align, b in pieces:
        new.append([PT_LOAD, flags, pos, vaddr, 0, len(b), memsz, align])
        body += b
        for at, patch in patches:
            if vaddr <= at and at + len(patch) <= vaddr + len(b):
                o = len(body) - len(b) + at - vaddr
                body[o:o + len(patch)] = patch
        pos += len(b)
    head = bytearray(data[:64])
    struct.pack_into("<QQ", head, 32, 64, 0)
    struct.pack_into("<HHHH", head, 56, len(new), 64, 0, 0)
    with open(out, "wb") as f:
        f.write(bytes(head) + b"".join(PHDR.pack(*p) for p in new) + body)


def from_python(path, heap_json, out):
    """A CPython process's core made small (see the usage)."""
    import json
    doc = json.load(open(heap_json))
    py = doc["python"]
    data, _, loads = read_core(path)

    def seg(addr):
        return next((p for p in loads if p[3] <= addr < p[3] + p[6]), None)

    def word(addr):
        p = seg(addr)
        if not p or addr + 8 > p[3] + p[5]:
            return 0
        return struct.unpack_from("<Q", data, p[2] + addr - p[3])[0]

    def page(a):
        return a & ~(PAGE - 1)

    table = int(py["arena_table"], 16)
    pool = py["pool_size"]
    holds, patches = {}, []
    # [heap] as far as the table's block, then a chunk made glibc's top
    # (its size to the heap's end).
    heap = seg(table)
    at = heap[3]
    while at <= table:
        size = word(at + 8) & ~7
        if not size:
            sys.exit("coreseeds.py: %s: no chunk at 0x%x" % (path, at))
        at += size
    end = heap[3] + heap[6]
    holds[heap[3]] = [(heap[3], page(at + 16 + PAGE - 1))]
    patches.append((at + 8, struct.pack("<Q", (end - at) | 1)))
    patches.append((int(doc["main_arena"], 16) + MS_TOP,
                    struct.pack("<Q", at)))
    # The .bss: its first page, the table's pointer copied there.
    bss = seg(int(py["arena_table_pointer"], 16))
    holds[bss[3]] = [(bss[3], bss[3] + PAGE)]
    patches.append((bss[3], struct.pack("<Q", table)))
    # The first two pools of the arena that starts lowest in its mapping.
    best = None
    for i in range(py["arena_table_entries"]):
        a = word(table + 48 * i)
        if a and seg(a):
            lo = (a + pool - 1) & ~(pool - 1)
            if best is None or lo - seg(a)[3] < best[1] - seg(best[0])[3]:
                best = (a, lo)
    pools = []
    if best:
        holds[seg(best[0])[3]] = [(best[1], best[1] + 2 * pool)]
        pools = [best[1], best[1] + pool]
    # The static types of their blocks' objects (a word at +8, +24 or
    # +40 that points into the interpreter's file-backed data).
    module = next((p for p in loads if p[1] & PF_W and p[3] + p[6] == bss[3]),
                  None)
    types = set()
    for p in pools:
        size = ((word(p + 32) >> 32) + 1) * 16   # szidx, after arenaindex
        for b in range(p + 48, p + pool - size + 1, size):
            for w in (8, 24, 40):
                t = word(b + w)
                if module and module[3] <= t < module[3] + module[6]:
                    types.add(page(t))
    if module:
        holds[module[3]] = [(t, min(t + 2 * PAGE, module[3] + module[6]))
                            for t in sorted(types)]
        merged = []
        for lo, hi in holds[module[3]]:
            if merged and lo <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(hi, merged[-1][1]))
            else:
                merged.append((lo, hi))
        holds[module[3]] = merged
    from_core(path, table, out, holds, patches)


def main():
    if len(sys.argv) == 5 and sys.argv[1] == "--from":
        from_core(sys.argv[2], int(sys.argv[3], 16), sys.argv[4])
        return
    if len(sys.argv) == 5 and sys.argv[1] == "--python":
        from_python(sys.argv[2], sys.argv[3], sys.argv[4])
        return
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    for kind in ("main", "thread-arena", "kernel", "static"):
        with open("%s/synthetic-%s.core" % (sys.argv[1], kind), "wb") as f:
            f.write(synthetic(kind))


if __name__ == "__main__":
    main()
