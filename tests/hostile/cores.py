#!/usr/bin/env python3
"""Hostile cores made from a real one (tests/hostile/run.sh): cut short,
heap bytes replaced, chunk headers and main_arena garbled, NT_FILE and
program headers lying.  Each goes to OUTDIR/NAME.core; one line per core
on stdout: "NAME WANT [SECONDS]", WANT the exit status dmprof must give
(0, 1, or "any": an honest partial answer or a clear error), SECONDS a
time limit tighter than the suite's (for a plain build).

Usage: cores.py CORE OUTDIR HEAP_BLOCK MMAPPED_BLOCK [SET]
  HEAP_BLOCK, MMAPPED_BLOCK: addresses (hex) the program printed: a block
  in [heap] and its mmapped one.  SET: "all" (default), "kernel" (the
  cuts and NT_FILE's: a kernel's core leaves code out, read from the
  files), "dense" (the pointer graph only).
"""
import os
import random
import struct
import sys

PT_LOAD, PT_NOTE = 1, 4
PF_W = 2
NT_PRSTATUS, NT_PRPSINFO, NT_AUXV, NT_FILE = 1, 3, 6, 0x46494c45
EHDR = struct.Struct("<16sHHIQQQIHHHHHH")
PHDR = struct.Struct("<IIQQQQQQ")
# struct malloc_state (glibc 2.36): top, bins, next, system_mem.
MS_FASTBINS, MS_TOP, MS_BINS, MS_NEXT, MS_SYSTEM_MEM = 16, 96, 112, 2160, 2184
MS_SIZE = 2200
U64 = (1 << 64) - 1


class Core:
    def __init__(self, data):
        self.data = bytearray(data)
        e = EHDR.unpack_from(self.data, 0)
        self.phoff, self.phnum = e[5], e[10]
        self.phdrs = [list(PHDR.unpack_from(self.data, self.phoff + i * 56))
                      for i in range(self.phnum)]
        self.loads = [p for p in self.phdrs if p[0] == PT_LOAD]
        note = [p for p in self.phdrs if p[0] == PT_NOTE][0]
        self.note_off, self.note_size = note[2], note[5]
        self.notes = []
        at, end = note[2], note[2] + note[5]
        while at + 12 <= end:
            nsz, dsz, typ = struct.unpack_from("<III", self.data, at)
            name = bytes(self.data[at + 12:at + 12 + nsz])
            d = at + 12 + (nsz + 3 & ~3)
            self.notes.append([name, typ, bytes(self.data[d:d + dsz]), d])
            at = d + (dsz + 3 & ~3)

    def seg(self, addr):
        for p in self.loads:
            if p[3] <= addr < p[3] + p[6]:
                return p
        raise SystemExit("cores.py: 0x%x is in no segment" % addr)

    def off(self, addr):
        p = self.seg(addr)
        return p[2] + addr - p[3]

    def word(self, addr):
        return struct.unpack_from("<Q", self.data, self.off(addr))[0]

    def files(self):
        """NT_FILE's entries: (start, end, pages, path)."""
        d = [n for n in self.notes if n[1] == NT_FILE][0][2]
        count = struct.unpack_from("<Q", d, 0)[0]
        names = d[16 + 24 * count:].split(b"\0")
        return [struct.unpack_from("<QQQ", d, 16 + 24 * i) + (names[i],)
                for i in range(count)]


def note_bytes(name, typ, desc):
    pad = lambda b: b + b"\0" * (-len(b) % 4)
    return struct.pack("<III", len(name), len(desc), typ) + pad(name) + pad(desc)


def nt_file(entries, page=4096, count=None):
    body = struct.pack("<QQ", len(entries) if count is None else count, page)
    body += b"".join(struct.pack("<QQQ", s, e, o) for s, e, o, _ in entries)
    return body + b"".join(p + b"\0" for *_, p in entries)


class Maker:
    def __init__(self, core, outdir, heap_block, big_block, rng):
        self.c, self.out, self.rng = core, outdir, rng
        self.heap = core.seg(heap_block)
        self.big = core.seg(big_block)
        self.heap_block = heap_block

    def emit(self, name, data, want="any", secs=None):
        with open(os.path.join(self.out, name + ".core"), "wb") as f:
            f.write(data)
        print(name, want, *([secs] if secs else []))

    def copy(self):
        return bytearray(self.c.data)

    def put(self, d, addr, fmt, *v):
        struct.pack_into(fmt, d, self.c.off(addr), *v)

    # --- The chunks of [heap] ------------------------------------------
    def chunks(self):
        """[heap]'s chunks by size, from its start to top."""
        out, c = [], self.heap[3]
        end = self.heap[3] + self.heap[5]
        while c + 16 <= end:
            size = self.c.word(c + 8) & ~7
            out.append(c)
            if size < 32 or c + size >= end:
                break
            c += size
        return out

    def blocks(self):
        """The chunks of the program's nodes (48 to 144 bytes): in use,
        unlike the 32-byte ones (the tcache, fastbins) and the first (the
        tcache itself)."""
        return [c for c in self.chunks()[1:-1]
                if 48 <= self.c.word(c + 8) & ~7 <= 144]

    def with_phdrs(self, d, phdrs):
        """D with its program headers replaced by PHDRS, at its end."""
        d = bytearray(d) + b"\0" * (-len(d) % 8)
        at = len(d)
        for p in phdrs:
            d += PHDR.pack(*p)
        struct.pack_into("<Q", d, 32, at)
        struct.pack_into("<H", d, 56, min(len(phdrs), 0xffff))
        return d

    def with_notes(self, d, notes):
        """D with its notes replaced by NOTES (bytes), at its end."""
        d = bytearray(d) + b"\0" * (-len(d) % 8)
        at = len(d)
        d += notes
        phoff, phnum = struct.unpack_from("<Q", d, 32)[0], d[56] | d[57] << 8
        for i in range(phnum):
            p = phoff + i * 56
            if struct.unpack_from("<I", d, p)[0] == PT_NOTE:
                struct.pack_into("<QQQ", d, p + 8, at, 0, 0)
                struct.pack_into("<QQ", d, p + 32, len(notes), len(notes))
        return d

    def notes_but(self, typ, desc_list):
        """The core's notes with those of type TYP replaced by DESC_LIST."""
        out = b""
        for name, t, desc, _ in self.c.notes:
            if t == typ and name == b"CORE\0":
                out += b"".join(note_bytes(name, t, x) for x in desc_list)
                desc_list = []
            else:
                out += note_bytes(name, t, desc)
        return out

    # --- Sets of cores ----------------------------------------------------
    def cuts(self):
        size = len(self.c.data)
        points = {"0": 0, "1": 1, "magic": 4, "ident": 16, "ehdr-1": 63,
                  "ehdr": 64, "half": size // 2, "last-byte": size - 1}
        ph_end = self.c.phoff + 56 * self.c.phnum
        points["phdrs-mid"] = self.c.phoff + 56 * (self.c.phnum // 2) + 3
        points["phdrs-end"] = ph_end
        for k, frac in (("notes-10", None), ("notes-quarter", 4),
                        ("notes-half", 2)):
            points[k] = self.c.note_off + (10 if frac is None
                                           else self.c.note_size // frac)
        points["notes-end-1"] = self.c.note_off + self.c.note_size - 1
        for i, (_, t, desc, at) in enumerate(self.c.notes):
            if t == NT_FILE:
                points["nt-file-mid"] = at + len(desc) // 2
        for k, p in (("heap", self.heap), ("mmapped", self.big)):
            points[k + "-start"] = p[2]
            points[k + "-mid"] = p[2] + p[5] // 2 + 5
            points[k + "-end-1"] = p[2] + p[5] - 1
        for i in range(1, 12):
            points["at-%02d" % i] = size * i // 12 + 7
        for name, at in sorted(points.items(), key=lambda x: x[1]):
            want = 1 if at < 64 else "any"
            self.emit("cut-" + name, self.c.data[:at], want)

    def heap_bytes(self):
        rng = self.rng
        for name, segs in (("heap", [self.heap]), ("mmapped", [self.big]),
                           ("all", [self.heap, self.big])):
            d = self.copy()
            for p in segs:
                d[p[2]:p[2] + p[5]] = rng.randbytes(p[5])
            self.emit("random-" + name, d)
        # Every word of [heap] an address in it (headers included).
        d = self.copy()
        lo, n = self.heap[3], self.heap[5] // 8
        d[self.heap[2]:self.heap[2] + n * 8] = struct.pack(
            "<%dQ" % n, *(lo + 8 * rng.randrange(n) for _ in range(n)))
        self.emit("pointers-everywhere", d)
        self.dense("pointers-in-blocks")

    def dense(self, name):
        """Headers kept, every word of every block in use (and of the
        mmapped block) a pointer into some block: a dense graph."""
        rng, d = self.rng, self.copy()
        cs = self.blocks()
        users = [c + 16 for c in cs]
        for c in cs:
            size = self.c.word(c + 8) & ~7
            n = (size - 16) // 8
            vals = [users[rng.randrange(len(users))] + 8 * rng.randrange(2)
                    for _ in range(n)]
            at = self.c.off(c + 16)
            d[at:at + 8 * n] = struct.pack("<%dQ" % n, *vals)
        n = self.big[5] // 8 - 2
        at = self.big[2] + 16
        d[at:at + 8 * n] = struct.pack(
            "<%dQ" % n, *(users[rng.randrange(len(users))] for _ in range(n)))
        self.emit(name, d, 0)

    def sizes(self):
        cs = self.chunks()
        picks = {"first": cs[0], "middle": cs[len(cs) // 2],
                 "last": cs[-2], "top": cs[-1]}
        end = self.heap[3] + self.heap[6]
        for where, c in picks.items():
            old = self.c.word(c + 8)
            for kind, size in (("huge", 0xfffffffffffffff0 | 1),
                               ("zero", 0), ("misaligned", old + 8),
                               ("past-end", (end - c + 4096) | 1),
                               ("into-next", old + 16),
                               ("mmapped-bit", old | 2),
                               ("non-main-bit", old | 4),
                               ("no-prev-inuse", old & ~1)):
                d = self.copy()
                self.put(d, c + 8, "<Q", size)
                self.emit("size-%s-%s" % (where, kind), d)
        d = self.copy()
        for c in cs:
            self.put(d, c + 8, "<Q", 0x21)
        self.emit("size-all-minimum", d)
        # The mmapped chunk: its offset in its mapping, its size.
        for kind, prev, size in (("prev-huge", 1 << 62, None),
                                 ("prev-odd", 8, None),
                                 ("size-huge", None, (1 << 62) | 2),
                                 ("size-zero", None, 2)):
            d = self.copy()
            c = self.big[3]
            if prev is not None:
                self.put(d, c, "<Q", prev)
            if size is not None:
                self.put(d, c + 8, "<Q", size)
            self.emit("mmapped-" + kind, d)
        # The tcache: counts at their limit, entries pointing anywhere.
        t = cs[0] + 16
        for kind in ("counts-max", "entries-wild", "entries-self",
                     "entries-blocks"):
            d = self.copy()
            for i in range(64):
                e = t + 128 + 8 * i
                if kind == "counts-max":
                    self.put(d, t + 2 * i, "<H", 0xffff)
                elif kind == "entries-wild":
                    self.put(d, e, "<Q", self.rng.getrandbits(64))
                elif kind == "entries-self":
                    # An entry whose next is itself (safe-linking's
                    # mangling undone).
                    self.put(d, e, "<Q", cs[1] + 16)
                    self.put(d, cs[1] + 16, "<Q", ((cs[1] + 16) >> 12) ^
                             (cs[1] + 16))
                    self.put(d, t + 2 * i, "<H", 7)
                else:
                    self.put(d, e, "<Q", cs[1 + i % (len(cs) - 2)] + 16)
                    self.put(d, t + 2 * i, "<H", 100)
            self.emit("tcache-" + kind, d)

    def main_arena(self):
        """main_arena, by its shape: in libc's writable segments, a
        malloc_state whose next is itself and whose top is in [heap]."""
        libc = [(s, e) for s, e, _, p in self.c.files()
                if os.path.basename(p).startswith(b"libc.so")]
        hs, he = self.heap[3], self.heap[3] + self.heap[6]
        for p in self.c.loads:
            if not p[1] & PF_W or not p[5]:
                continue
            if not any(s <= p[3] < e or p[3] == e for s, e in libc):
                continue
            seg = self.c.data[p[2]:p[2] + p[5]]
            for i in range(0, len(seg) - MS_SIZE, 8):
                a = p[3] + i
                nxt, top = struct.unpack_from("<Q", seg, i + MS_NEXT)[0], \
                    struct.unpack_from("<Q", seg, i + MS_TOP)[0]
                if nxt == a and hs <= top < he:
                    return a
        return None

    def arena(self):
        a = self.main_arena()
        if a is None:
            print("# cores.py: no main_arena found: no arena cases",
                  file=sys.stderr)
            return
        rng, cs = self.rng, self.chunks()
        fake = cs[len(cs) // 2] + 16

        def variant(name, fn):
            d = self.copy()
            fn(d)
            self.emit("arena-" + name, d)

        variant("random", lambda d: self.put(
            d, a, "%ds" % MS_SIZE, rng.randbytes(MS_SIZE)))
        variant("all-ones", lambda d: self.put(
            d, a, "%ds" % MS_SIZE, b"\xff" * MS_SIZE))
        variant("top-zero", lambda d: self.put(d, a + MS_TOP, "<Q", 0))
        variant("top-wild", lambda d: self.put(d, a + MS_TOP, "<Q",
                                               0xdeadbeef000))
        variant("top-unaligned", lambda d: self.put(
            d, a + MS_TOP, "<Q", self.c.word(a + MS_TOP) + 8))
        variant("top-heap-start", lambda d: self.put(
            d, a + MS_TOP, "<Q", self.heap[3]))
        variant("next-wild", lambda d: self.put(d, a + MS_NEXT, "<Q",
                                                0x1234567000))
        variant("next-misaligned", lambda d: self.put(d, a + MS_NEXT, "<Q",
                                                      a + 8))

        def next_loop(d):
            # main_arena -> a fake arena in a block, whose next is itself.
            self.put(d, a + MS_NEXT, "<Q", fake)
            self.put(d, fake, "%ds" % MS_SIZE, self.c.data[
                self.c.off(a):self.c.off(a) + MS_SIZE])
            self.put(d, fake + MS_NEXT, "<Q", fake)
        variant("next-loop", next_loop)

        def bins(d, vals):
            for i in range(254):
                self.put(d, a + MS_BINS + 8 * i, "<Q", vals(i))
        variant("bins-blocks", lambda d: bins(
            d, lambda i: cs[1 + i % (len(cs) - 2)]))
        # Each bin's links at the next bin's head: a ring of heads.
        variant("bins-ring", lambda d: bins(d, lambda i: a + MS_BINS - 16 +
                                            8 * ((i & ~1) + 2) % 2032))
        variant("bins-wild", lambda d: bins(d, lambda i: rng.getrandbits(64)))

        def fast(d, vals):
            for i in range(10):
                self.put(d, a + MS_FASTBINS + 8 * i, "<Q", vals(i))
        variant("fastbins-blocks", lambda d: fast(d, lambda i: cs[2 + i]))
        variant("fastbins-wild", lambda d: fast(
            d, lambda i: rng.getrandbits(64)))
        variant("system-mem-huge", lambda d: self.put(
            d, a + MS_SYSTEM_MEM, "<QQ", 1 << 63, U64))
        self.arena_ring(4094)

    def arena_ring(self, n):
        """One more writable mapping of libc's holding N arenas in a ring
        (each one's next the one after it), whose tops are in no heap:
        every one of them is a main_arena candidate whose chain comes
        back to it, and is then refused."""
        base, stride = 0x7e0000000000, MS_SIZE + 8
        mem = bytearray()
        for i in range(n):
            at = base + i * stride
            ms = bytearray(MS_SIZE + 8)
            struct.pack_into("<Q", ms, MS_TOP, 0x1000)
            # (Each bin's head is the arena's own.)
            for b in range(127):
                h = at + MS_BINS - 16 + 16 * b
                struct.pack_into("<QQ", ms, MS_BINS + 16 * b, h, h)
            struct.pack_into("<Q", ms, MS_NEXT, base + (i + 1) % n * stride)
            mem += ms
        mem += b"\0" * (-len(mem) % 4096)
        libc = [f for f in self.c.files()
                if os.path.basename(f[3]).startswith(b"libc.so")][0]
        d = self.copy() + b"\0" * (-len(self.c.data) % 4096)
        off = len(d)
        d += mem
        ph = [list(p) for p in self.c.phdrs]
        ph.append([PT_LOAD, 6, off, base, 0, len(mem), len(mem), 4096])
        d = self.with_phdrs(d, ph)
        files = self.c.files() + [(base, base + len(mem), 0, libc[3])]
        self.emit("arena-ring-%d" % n, self.with_notes(
            d, self.notes_but(NT_FILE, [nt_file(files)])), "any", 5)

    def file_notes(self):
        """NT_FILE lying.  Every block's first word points into some file
        mapping (a vtable, to the typing), and the read-only ones are not
        in the core, so that they are read from the files."""
        files = self.c.files()
        rng, base = self.rng, self.copy()
        # Read-only file mappings not dumped, as a kernel leaves them
        # (gcore leaves them out altogether).
        for i, p in enumerate(self.c.phdrs):
            if p[0] == PT_LOAD and not p[1] & PF_W and any(
                    s <= p[3] < e for s, e, _, _ in files):
                struct.pack_into("<Q", base, self.c.phoff + 56 * i + 32, 0)
        for c in self.blocks():
            s, e, _, _ = files[rng.randrange(len(files))]
            self.put(base, c + 16, "<Q", s + 16 + 8 * rng.randrange(
                (e - s - 16) // 8))
        self.emit("nt-file-vtables", base, 0)
        # Things named libc.so.6 that are not libc: a FIFO (opening it
        # waits for a writer), a directory, /bin/sh, libc's first 300
        # bytes.
        odd = os.path.join(self.out, "odd")
        for kind in ("fifo", "directory", "wrong", "cut"):
            os.makedirs(os.path.join(odd, kind), exist_ok=True)
        libc = [p for *_, p in files
                if os.path.basename(p).startswith(b"libc.so")][0]
        f = os.path.join(odd, "fifo", "libc.so.6")
        if not os.path.exists(f):
            os.mkfifo(f)
        os.makedirs(os.path.join(odd, "directory", "libc.so.6"),
                    exist_ok=True)
        with open("/bin/sh", "rb") as src, \
                open(os.path.join(odd, "wrong", "libc.so.6"), "wb") as dst:
            dst.write(src.read())
        with open(libc, "rb") as src, \
                open(os.path.join(odd, "cut", "libc.so.6"), "wb") as dst:
            dst.write(src.read(300))

        def with_paths(name, path_of):
            e = [(s, e, o, path_of(p)) for s, e, o, p in files]
            self.emit("nt-file-" + name, self.with_notes(
                base, self.notes_but(NT_FILE, [nt_file(e)])))

        def others(path):
            return lambda p: p if p == libc else path

        for kind in ("fifo", "directory", "wrong", "cut"):
            path = os.path.join(odd, kind, "libc.so.6").encode()
            with_paths("libc-" + kind, lambda p: path if p == libc else p)
            with_paths("all-" + kind, others(path))
        with_paths("missing", lambda p: b"/nonexistent" + p)
        with_paths("dev-zero", others(b"/dev/zero"))
        with_paths("dev-stdin", others(b"/dev/stdin"))
        with_paths("proc-self-mem", others(b"/proc/self/mem"))
        with_paths("empty-path", others(b""))
        with_paths("long-path", others(b"/" + b"x" * 100000))
        absurd = [(0, U64, 0, b"/bin/sh"), (U64 - 4096, U64, 0, b"/bin/sh"),
                  (0x1000, 0x0fff, 0, b"/bin/sh"), (0, 0, 0, b"/bin/sh"),
                  (0x400000, 0x401000, 1 << 60, b"/bin/sh")]
        for name, body in (
                ("ranges", nt_file(absurd + files)),
                ("offsets-huge", nt_file([(s, e, U64, p)
                                          for s, e, _, p in files])),
                ("page-zero", nt_file(files, page=0)),
                ("page-huge", nt_file(files, page=1 << 63)),
                ("count-huge", nt_file(files, count=1 << 60)),
                ("count-over", nt_file(files, count=len(files) + 1)),
                ("count-zero", nt_file(files, count=0)),
                ("no-nul", nt_file(files)[:-1]),
                ("short", b"\1\0\0"),
                ("overlapping", nt_file([(s - 0x1000 * (i % 3), e + 0x10000,
                                          o, p) for i, (s, e, o, p)
                                         in enumerate(files)])),
                ("many", nt_file(files + [
                    (0x10000 + 0x1000 * i, 0x11000 + 0x1000 * i, 0,
                     b"/nonexistent/%d" % i) for i in range(100000)]))):
            self.emit("nt-file-" + name, self.with_notes(
                base, self.notes_but(NT_FILE, [body])))

    def other_notes(self):
        pr = [n[2] for n in self.c.notes if n[1] == NT_PRSTATUS][0]
        regs = 112

        def prstatus(rsp=None, rip=None, pid=None, fill=None):
            d = bytearray(pr)
            if fill is not None:
                d[regs:regs + 27 * 8] = fill
            if rsp is not None:
                struct.pack_into("<Q", d, regs + 19 * 8, rsp)
            if rip is not None:
                struct.pack_into("<Q", d, regs + 16 * 8, rip)
            if pid is not None:
                struct.pack_into("<i", d, 32, pid)
            return bytes(d)

        def threads(name, descs):
            self.emit("notes-" + name, self.with_notes(
                self.c.data, self.notes_but(NT_PRSTATUS, descs)))

        self.emit("notes-threads-100000", self.with_notes(
            self.c.data, self.notes_but(NT_PRSTATUS, [
                prstatus(pid=i + 1) for i in range(100000)])), "any", 20)
        threads("rsp-zero", [prstatus(rsp=0)])
        threads("rsp-top", [prstatus(rsp=U64 - 7)])
        threads("rsp-heap", [prstatus(rsp=self.heap[3])])
        threads("regs-heap", [prstatus(fill=struct.pack(
            "<27Q", *(self.heap_block for _ in range(27))))])
        threads("regs-ones", [prstatus(fill=b"\xff" * 216)])
        threads("prstatus-short", [pr[:100]])
        threads("none", [])
        auxv = [n[2] for n in self.c.notes if n[1] == NT_AUXV][0]

        def aux(name, vals):
            d = bytearray(auxv)
            for i in range(0, len(d) - 15, 16):
                key = struct.unpack_from("<Q", d, i)[0]
                if key in vals:
                    struct.pack_into("<Q", d, i + 8, vals[key])
            self.emit("auxv-" + name, self.with_notes(
                self.c.data, self.notes_but(NT_AUXV, [bytes(d)])))

        aux("entry-heap", {9: self.heap_block})
        aux("entry-mmapped", {9: self.big[3]})
        aux("entry-wild", {9: 0xdead0000})
        aux("entry-top", {9: U64})
        aux("vdso-heap", {33: self.heap[3]})
        self.emit("auxv-odd", self.with_notes(
            self.c.data, self.notes_but(NT_AUXV, [auxv[:-3]])))
        # Notes whose sizes lie.
        for name, hdr in (("namesz-huge", struct.pack("<III", 0xffffffff, 4,
                                                      1)),
                          ("descsz-huge", struct.pack("<III", 5, 0xfffffff0,
                                                      1)),
                          ("descsz-past", struct.pack("<III", 5, 4096, 1))):
            self.emit("notes-" + name, self.with_notes(
                self.c.data, hdr + b"CORE\0\0\0\0" +
                b"".join(note_bytes(n, t, x) for n, t, x, _ in self.c.notes)))
        self.emit("notes-random", self.with_notes(
            self.c.data, self.rng.randbytes(self.c.note_size)))
        self.emit("notes-cut-note", self.with_notes(
            self.c.data, b"".join(note_bytes(n, t, x)
                                  for n, t, x, _ in self.c.notes)[:-5]))

    def segments(self):
        c, size = self.c, len(self.c.data)
        heap_i = c.phdrs.index(self.heap)

        def each(name, fn, which=None):
            ph = [list(p) for p in c.phdrs]
            for i, p in enumerate(ph):
                if p[0] == PT_LOAD and (which is None or i == which):
                    fn(p)
            self.emit("seg-" + name, self.with_phdrs(c.data, ph))

        def set_(k, v):
            def f(p):
                p[k] = v(p) if callable(v) else v
            return f

        each("offset-past-end", set_(2, size + 4096))
        each("offset-huge", set_(2, 1 << 63))
        each("offset-wraps", set_(2, U64 - 4095))
        each("filesz-huge", set_(5, U64))
        each("filesz-over-memsz", set_(5, lambda p: p[6] + 4096))
        each("heap-filesz-past-end", set_(5, lambda p: size), heap_i)
        each("heap-offset-near-end", set_(2, size - 100), heap_i)
        each("heap-1tb", set_(6, 1 << 40), heap_i)
        each("heap-1tb-held", lambda p: (p.__setitem__(6, 1 << 40),
                                         p.__setitem__(5, 1 << 40)), heap_i)
        each("memsz-zero", set_(6, 0))
        each("vaddr-wraps", set_(3, U64 - 4095), heap_i)
        each("vaddr-zero", set_(3, 0), heap_i)
        each("vaddr-odd", set_(3, lambda p: p[3] + 3), heap_i)
        loads = [list(p) for p in c.phdrs if p[0] == PT_LOAD]
        extra = {
            "overlap-shifted": [p[:3] + [p[3] + 4096] + p[4:] for p in loads],
            "overlap-same": [list(p) for p in loads],
            "covers-all": [[PT_LOAD, 6, 0, 0, 0, size, 1 << 47, 4096]],
            "heap-twice": [list(self.heap)],
            "1tb-empty": [[PT_LOAD, 6, 0, 1 << 44, 0, 0, 1 << 40, 4096]],
            "1tb-held": [[PT_LOAD, 6, 0, 1 << 44, 0, 1 << 40, 1 << 40,
                          4096]],
            "1tb-holding-the-core": [[PT_LOAD, 6, 0, 1 << 44, 0, size,
                                      1 << 40, 4096]],
        }
        for name, more in extra.items():
            ph = [list(p) for p in c.phdrs]
            if name == "covers-all":
                ph = more + ph
            else:
                ph += more
            self.emit("seg-" + name, self.with_phdrs(c.data, ph))
        # 100,000 small segments (e_phnum PN_XNUM: the count in section 0).
        d = bytearray(c.data) + b"\0" * (-len(c.data) % 8)
        sh = len(d)
        d += struct.pack("<IIQQQQIIQQ", 0, 0, 0, 0, 0, 0, 0, 100100, 0, 0)
        ph = [list(p) for p in c.phdrs] + [
            [PT_LOAD, 6, self.heap[2], 0x100000000 + 8192 * i, 0, 4096, 4096,
             4096] for i in range(100100 - len(c.phdrs))]
        d = self.with_phdrs(d, ph)
        struct.pack_into("<Q", d, 40, sh)
        struct.pack_into("<H", d, 56, 0xffff)
        self.emit("seg-100100", d)
        for name, fn in (
                ("phnum-xnum-no-section", lambda d: (
                    struct.pack_into("<H", d, 56, 0xffff),
                    struct.pack_into("<Q", d, 40, U64 - 10))),
                ("phnum-xnum-huge", lambda d: (
                    struct.pack_into("<H", d, 56, 0xffff),
                    struct.pack_into("<Q", d, 40, 64),
                    struct.pack_into("<I", d, 64 + 44, 0xffffffff))),
                ("phoff-past-end", lambda d: struct.pack_into("<Q", d, 32,
                                                              size)),
                ("phoff-wraps", lambda d: struct.pack_into("<Q", d, 32,
                                                           U64 - 55)),
                ("phnum-max", lambda d: struct.pack_into("<H", d, 56, 0xfffe)),
                ("phnum-zero", lambda d: struct.pack_into("<H", d, 56, 0)),
                ("phentsize", lambda d: struct.pack_into("<H", d, 54, 32))):
            d = self.copy()
            fn(d)
            self.emit("hdr-" + name, d)

    def headers(self):
        for name, at, val in (("elf32", 4, 1), ("big-endian", 5, 2),
                              ("class-none", 4, 0)):
            d = self.copy()
            d[at] = val
            self.emit("hdr-" + name, d, 1)
        for name, off, fmt, val in (("type-exec", 16, "<H", 2),
                                    ("type-dyn", 16, "<H", 3),
                                    ("machine-i386", 18, "<H", 3),
                                    ("machine-aarch64", 18, "<H", 183)):
            d = self.copy()
            struct.pack_into(fmt, d, off, val)
            self.emit("hdr-" + name, d, 1)
        self.emit("garbage-random", self.rng.randbytes(1 << 20), 1)
        self.emit("garbage-elf-magic", b"\x7fELF" + self.rng.randbytes(4096),
                  1)
        self.emit("garbage-empty", b"", 1)


def main():
    if len(sys.argv) < 5:
        sys.exit(__doc__)
    with open(sys.argv[1], "rb") as f:
        core = Core(f.read())
    m = Maker(core, sys.argv[2], int(sys.argv[3], 16), int(sys.argv[4], 16),
              random.Random(1))
    which = sys.argv[5] if len(sys.argv) > 5 else "all"
    if which == "kernel":
        m.cuts()
        m.file_notes()
    elif which == "dense":
        m.dense("dense")
    else:
        m.cuts()
        m.heap_bytes()
        m.sizes()
        m.arena()
        m.file_notes()
        m.other_notes()
        m.segments()
        m.headers()


if __name__ == "__main__":
    main()
