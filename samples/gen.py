#!/usr/bin/env python3
"""Writes the sample run in samples/ (see samples/README).

The run is hand-designed, not recorded: a small cache server, "cachesrv",
profiled three times ten seconds apart by Chromium's deep heap profiler.
This script only does the arithmetic that keeps the files consistent the way
the real producer's are: GLOBAL_STATS is computed from MMAP_LIST, page-frame
lists match committed bytes, mmap buckets' stack lines match their regions.
It is not part of the build; run it from samples/ after changing the story.
"""

import os

PAGE = 4096
PID = 4242
PREFIX = "cachesrv.%05d" % PID
T0 = 1700000000
EXE = "/usr/bin/cachesrv"
STDCXX = "/usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.30"
LIBC = "/usr/lib/x86_64-linux-gnu/libc.so.6"

# ---- symbols -------------------------------------------------------------
# (start, size, demangled name) in cachesrv, a non-PIE executable with
# tcmalloc and its heap profiler linked in statically, as Chrome had.
EXE_FUNCS = [
    (0x401100, 0x1c0, "main"),
    (0x4012c0, 0x2a0, "Server::Run()"),
    (0x401560, 0x3e0, "Server::HandleConnection(Connection*)"),
    (0x401940, 0x2e0, "RequestParser::Parse(Buffer const&)"),
    (0x401c20, 0x1a0, "RequestParser::ReadHeaders()"),
    (0x401dc0, 0x300, "Cache::Insert(std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > const&, Response const&)"),
    (0x4020c0, 0x1e0, "Cache::Lookup(std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > const&) const"),
    (0x4022a0, 0x160, "Logger::Append(char const*, ...)"),
    (0x402400, 0x100, "Logger::Flush()"),
    (0x402500, 0x180, "ImageStore::MapFile(char const*)"),
    (0x402680, 0x200, "Worker::ThreadMain(void*)"),
    (0x402880, 0x120, "std::vector<Entry, std::allocator<Entry> >::_M_realloc_insert(__gnu_cxx::__normal_iterator<Entry*, std::vector<Entry, std::allocator<Entry> > >, Entry const&)"),
    (0x410000, 0x140, "tcmalloc::MmapSysAllocator::Alloc(unsigned long, unsigned long*, unsigned long)"),
    (0x410140, 0x120, "tcmalloc::SbrkSysAllocator::Alloc(unsigned long, unsigned long*, unsigned long)"),
    (0x410260, 0x180, "TCMalloc_SystemAlloc(unsigned long, unsigned long*, unsigned long)"),
    (0x4103e0, 0x200, "tcmalloc::PageHeap::GrowHeap(unsigned long)"),
    (0x4105e0, 0x160, "tcmalloc::PageHeap::New(unsigned long)"),
    (0x410740, 0x1a0, "tcmalloc::CentralFreeList::Populate()"),
    (0x4108e0, 0x120, "tc_malloc"),
    (0x411000, 0x180, "DoAllocWithArena(unsigned long, LowLevelAlloc::Arena*)"),
    (0x411180, 0x40, "LowLevelAlloc::AllocWithArena(unsigned long, LowLevelAlloc::Arena*)"),
    (0x4111c0, 0x60, "ProfilerMalloc(unsigned long)"),
    (0x411220, 0x200, "HeapProfileTable::GetBucket(int, void const* const*)"),
    (0x411420, 0x100, "HeapProfileTable::RecordAlloc(void const*, unsigned long, int, void const* const*)"),
    (0x411520, 0x80, "MemoryRegionMap::InsertRegionLocked(MemoryRegionMap::Region const&)"),
]
# Data symbols of cachesrv: C++ type objects in .data.rel.ro.
EXE_DATA = [
    (0x651d40, 0x10, "V", "typeinfo for Response"),
    (0x651d50, 0x10, "V", "typeinfo for Entry"),
]
# libstdc++ (a shared object mapped at STDCXX_BASE; link address = offset).
STDCXX_FUNCS = [
    (0x0a9e00, 0x60, "operator new(unsigned long)"),
    (0x14b2a0, 0xc0, "std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >::_M_create(unsigned long&, unsigned long)"),
    (0x14b6e0, 0x1a0, "std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >::_M_mutate(unsigned long, unsigned long, char const*, unsigned long)"),
]

# ---- address space ---------------------------------------------------------
EXE_TEXT = (0x400000, 0x452000, "r-xp", 0, 131090, EXE)
EXE_RO = (0x651000, 0x652000, "r--p", 0x51000, 131090, EXE)
EXE_DATA_VMA = (0x652000, 0x653000, "rw-p", 0x52000, 131090, EXE)
HEAP = (0x01d4f000, 0x01d70000, "rw-p", 0, 0, "[heap]")
ARENA = (0x7f3a00000000, 0x7f3a00800000, "rw-p", 0, 0, "")
PROF = (0x7f3a10000000, 0x7f3a10040000, "rw-p", 0, 0, "")
ATLAS = (0x7f3a20000000, 0x7f3a20200000, "r--s", 0, 393222, "/srv/cachesrv/atlas.bin")
# A thread stack: one mmap record, split into two VMAs when glibc
# mprotect()ed its guard page, so its region lines carry ( and ).
TGUARD = (0x7f3a2e000000, 0x7f3a2e001000, "---p", 0, 0, "")
TSTACK = (0x7f3a2e001000, 0x7f3a2e801000, "rw-p", 0, 0, "")
LIBC_TEXT = (0x7f3a2f028000, 0x7f3a2f17d000, "r-xp", 0x28000, 2097, LIBC)
LIBC_RO = (0x7f3a2f17d000, 0x7f3a2f1d5000, "r--p", 0x17d000, 2097, LIBC)
LIBC_DATA = (0x7f3a2f1d9000, 0x7f3a2f1db000, "rw-p", 0x1d8000, 2097, LIBC)
STDCXX_BASE = 0x7f3a2f400000
STDCXX_TEXT = (0x7f3a2f49e000, 0x7f3a2f59f000, "r-xp", 0x9e000, 2110, STDCXX)
STDCXX_RO = (0x7f3a2f59f000, 0x7f3a2f610000, "r--p", 0x19f000, 2110, STDCXX)
STACK = (0x7ffd5a1de000, 0x7ffd5a1ff000, "rw-p", 0, 0, "[stack]")
VDSO = (0x7ffd5a3f8000, 0x7ffd5a3fa000, "r-xp", 0, 0, "[vdso]")
VSYSCALL = (0xffffffffff600000, 0xffffffffff601000, "--xp", 0, 0, "[vsyscall]")
VMAS = [EXE_TEXT, EXE_RO, EXE_DATA_VMA, HEAP, ARENA, PROF, ATLAS, TGUARD, TSTACK,
        LIBC_TEXT, LIBC_RO, LIBC_DATA, STDCXX_TEXT, STDCXX_RO, STACK, VDSO,
        VSYSCALL]


def exe(name, off):
    for start, size, n in EXE_FUNCS:
        if n.startswith(name + "(") or n == name:
            assert off < size
            return start + off
    raise KeyError(name)


def cxx(name, off):
    for start, size, n in STDCXX_FUNCS:
        if n.startswith(name):
            return STDCXX_BASE + start + off
    raise KeyError(name)


LIBC_START = 0x7f3a2f04fd90      # in libc: no symbols in the map -> hex
LIBC_CLONE = 0x7f3a2f0e7a00
LIBC_THREAD = 0x7f3a2f0d4ac3

MAIN_TAIL = [exe("Server::Run", 0x8e), exe("main", 0x5c), LIBC_START]
CONN = [exe("Server::HandleConnection", 0x11b)] + MAIN_TAIL
WORKER_TAIL = [exe("Worker::ThreadMain", 0x77), LIBC_THREAD, LIBC_CLONE]

# ---- buckets -----------------------------------------------------------------
# id: (kind, typeinfo or None, type name, frames)
BUCKETS = {
    # the profiler's own bookkeeping (mmap-profiler)
    0: ("mmap", 0, "no_typeinfo", [
        exe("DoAllocWithArena", 0x7b), exe("LowLevelAlloc::AllocWithArena", 0x22),
        exe("ProfilerMalloc", 0x19), exe("HeapProfileTable::GetBucket", 0x1a4),
        exe("HeapProfileTable::RecordAlloc", 0x3d), exe("tc_malloc", 0x61),
        exe("Cache::Insert", 0x5f)] + CONN),
    # tcmalloc growing its page heap (mmap-tcmalloc)
    1: ("mmap", 0, "no_typeinfo", [
        exe("tcmalloc::MmapSysAllocator::Alloc", 0x8a), exe("TCMalloc_SystemAlloc", 0x105),
        exe("tcmalloc::PageHeap::GrowHeap", 0x4c), exe("tcmalloc::PageHeap::New", 0x9e),
        exe("tcmalloc::CentralFreeList::Populate", 0x61), exe("tc_malloc", 0x9d),
        exe("RequestParser::Parse", 0x44)] + CONN),
    2: ("mmap", 0, "no_typeinfo", [
        exe("tcmalloc::SbrkSysAllocator::Alloc", 0x57), exe("TCMalloc_SystemAlloc", 0x105),
        exe("tcmalloc::PageHeap::GrowHeap", 0x4c), exe("tcmalloc::PageHeap::New", 0x9e),
        exe("main", 0x1f), LIBC_START]),
    # strings copied into the cache (grows)
    3: ("malloc", 0, "no_typeinfo", [
        cxx("std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >::_M_create", 0x36),
        cxx("std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >::_M_mutate", 0x5b),
        exe("Cache::Insert", 0xd3)] + CONN),
    # cache entries: typed objects (operator new with a type)
    4: ("malloc", 0x651d50, "5Entry", [
        exe("std::vector<Entry, std::allocator<Entry> >::_M_realloc_insert", 0x4e),
        exe("Cache::Insert", 0x1a2)] + CONN),
    # request buffers (steady)
    5: ("malloc", 0, "no_typeinfo", [
        cxx("operator new", 0x1c), exe("RequestParser::ReadHeaders", 0x63),
        exe("RequestParser::Parse", 0x71)] + CONN),
    # the log buffer that is never flushed (a slow leak)
    6: ("malloc", 0, "no_typeinfo", [
        exe("Logger::Append", 0xa4), exe("Worker::ThreadMain", 0x130),
        LIBC_THREAD, LIBC_CLONE]),
    # responses, typed
    7: ("malloc", 0x651d40, "8Response", [
        cxx("operator new", 0x1c), exe("Cache::Lookup", 0x88)] + CONN),
    # the mapped image atlas (mmap-catch-all)
    8: ("mmap", 0, "no_typeinfo", [
        exe("ImageStore::MapFile", 0x61)] + CONN),
    # a worker thread's stack, mapped by glibc (no libc symbols: hex)
    9: ("mmap", 0, "no_typeinfo", [0x7f3a2f0d3c41, 0x7f3a2f0d4f5e,
                                   exe("Server::Run", 0x1d0), exe("main", 0x5c),
                                   LIBC_START]),
    # a small allocation: withheld from .buckets until it grew past 64 B
    10: ("malloc", 0, "no_typeinfo", [
        exe("Logger::Flush", 0x3b), exe("Worker::ThreadMain", 0x14e),
        LIBC_THREAD, LIBC_CLONE]),
}

# Per dump: malloc buckets (virtual, committed, allocs, frees) and hooked
# mmap records (start, end, bucket, committed bytes).
MALLOC = [
    {3: (786432, 786432, 5210, 1730), 4: (196608, 196608, 12, 4), 5: (262144, 262144, 880, 872),
     6: (65536, 65536, 1, 0), 7: (131072, 131072, 2410, 2322), 10: (48, 48, 1, 0)},
    {3: (2097152, 2097152, 16420, 5131), 4: (393216, 393216, 14, 5), 5: (262144, 262144, 2820, 2812),
     6: (131072, 131072, 2, 1), 7: (163840, 163840, 7700, 7610), 10: (96, 96, 2, 0)},
    {3: (4194304, 4194304, 33970, 10610), 4: (786432, 786432, 16, 6), 5: (262144, 262144, 5510, 5502),
     6: (196608, 196608, 3, 2), 7: (196608, 196608, 15020, 14915), 10: (96, 96, 2, 0)},
]
MMAP = [
    [(0x01d4f000, 0x01d5f800, 2, 0x10800), (0x7f3a00000000, 0x7f3a00200000, 1, 0x200000),
     (0x7f3a10000000, 0x7f3a10040000, 0, 0x20000), (0x7f3a20000000, 0x7f3a20200000, 8, 0x80000),
     (0x7f3a2e000000, 0x7f3a2e801000, 9, 0x9000)],
    [(0x01d4f000, 0x01d5f800, 2, 0x10800), (0x7f3a00000000, 0x7f3a00400000, 1, 0x400000),
     (0x7f3a10000000, 0x7f3a10040000, 0, 0x30000), (0x7f3a20000000, 0x7f3a20200000, 8, 0x140000),
     (0x7f3a2e000000, 0x7f3a2e801000, 9, 0xb000)],
    [(0x01d4f000, 0x01d5f800, 2, 0x10800), (0x7f3a00000000, 0x7f3a00800000, 1, 0x620000),
     (0x7f3a10000000, 0x7f3a10040000, 0, 0x40000), (0x7f3a20000000, 0x7f3a20200000, 8, 0x200000),
     (0x7f3a2e000000, 0x7f3a2e801000, 9, 0xd000)],
]
# Resident bytes of the parts of VMAs no mmap record covers, per dump.
UNHOOKED = [
    {EXE_TEXT: 0x2e000, EXE_RO: 0x1000, EXE_DATA_VMA: 0x1000, HEAP: 0x800, LIBC_TEXT: 0x9c000,
     LIBC_RO: 0x1c000, LIBC_DATA: 0x2000, STDCXX_TEXT: 0x61000, STDCXX_RO: 0x22000,
     STACK: 0x6000, VDSO: 0x2000},
    {EXE_TEXT: 0x33000, EXE_RO: 0x1000, EXE_DATA_VMA: 0x1000, HEAP: 0x800, LIBC_TEXT: 0x9e000,
     LIBC_RO: 0x1c000, LIBC_DATA: 0x2000, STDCXX_TEXT: 0x63000, STDCXX_RO: 0x22000,
     STACK: 0x7000, VDSO: 0x2000},
    {EXE_TEXT: 0x33000, EXE_RO: 0x1000, EXE_DATA_VMA: 0x1000, HEAP: 0x800, LIBC_TEXT: 0x9e000,
     LIBC_RO: 0x1c000, LIBC_DATA: 0x2000, STDCXX_TEXT: 0x63000, STDCXX_RO: 0x22000,
     STACK: 0x8000, VDSO: 0x2000},
]
# Buckets first written in each dump's .buckets file (10 waits for dump 2).
BUCKET_FILES = [[0, 1, 2, 3, 4, 5, 6, 7, 8, 9], [10], []]

B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"


def pfn_token(pfn, count, start_inside=False, end_inside=False):
    s = "".join(B64[(pfn >> sh) & 63] for sh in (18, 12, 6, 0))
    s += "#" + B64[min(count, 63)]
    return ("<" if start_inside else "") + s + (">" if end_inside else "")


class Pfns:
    """Hands out page frame numbers; shared libraries are mapped by others."""

    def __init__(self):
        self.next = 0x12345

    def take(self, n):
        first = self.next
        self.next += n
        return range(first, first + n)


def pf_lines(tokens):
    out, line = [], "  PF:"
    for t in tokens:
        if len(line) > 94:
            out.append(line)
            line = "  PF:"
        line += " " + t
    if tokens:
        out.append(line)
    return out


def region_pfs(start, end, committed, pfns, shared):
    """Tokens for the resident part of [start,end): its first pages."""
    first_page = start // PAGE * PAGE
    toks, got, page = [], 0, first_page
    pages = list(pfns.take((committed + 2 * PAGE) // PAGE))
    i = 0
    while got < committed:
        lo, hi = max(page, start), min(page + PAGE, end)
        toks.append(pfn_token(pages[i], 3 if shared else 1,
                              start_inside=lo > page, end_inside=hi < page + PAGE))
        got += hi - lo
        page += PAGE
        i += 1
    assert got == committed, (hex(start), got, committed)
    return toks


def vma_class(v):
    name, perms = v[5], v[2]
    if name.startswith("/"):
        return "file-exec" if perms[2] == "x" else "file-nonexec"
    if name == "":
        return "anonymous"
    if name == "[stack]":
        return "stack"
    return "other"


def write_dump(n):
    pfns = Pfns()
    malloc, mmaps, unhooked = MALLOC[n], MMAP[n], UNHOOKED[n]
    classes = ["file-exec", "file-nonexec", "anonymous", "stack", "other"]
    stats = {k: [0, 0] for k in ["total", "absent", "nonprofiled-total"] + classes +
             ["nonprofiled-" + c for c in ["absent"] + classes] +
             ["profiled-mmap", "profiled-malloc"]}
    lines = []
    for v in VMAS:
        start, end, perms, off, inode, name = v
        lines.append("%08x-%08x %s %08x 00:00 %-11d %s" % (start, end, perms, off, inode, name))
        if name == "[vsyscall]":
            continue
        cls = vma_class(v)
        stats[cls][0] += end - start
        shared = name.startswith("/usr/lib")
        cur = start
        recs = sorted(r for r in mmaps if r[0] < end and r[1] > start)
        for rec in recs + [None]:
            rs, re_, b, com = rec if rec else (None, None, None, None)
            gap_end = end if rs is None else max(rs, start)
            if cur < gap_end:
                c = unhooked.get(v, 0)
                lines += pf_lines(region_pfs(cur, gap_end, c, pfns, shared))
                lines.append("  %x - %x  unhooked %d / %d" % (cur, gap_end, c, gap_end - cur))
                stats[cls][1] += c
                stats["nonprofiled-" + cls][0] += gap_end - cur
                stats["nonprofiled-" + cls][1] += c
            if rs is None:
                break
            lo, hi = max(rs, start), min(re_, end)
            # The resident pages of a record lie in its accessible part.
            part = 0 if perms == "---p" else com
            lines += pf_lines(region_pfs(lo, hi, part, pfns, False))
            lines.append("%s%x%s-%s%x%s hooked %d / %d @ %d" % (
                " (" if rs < start else "  ", rs, ")" if rs < start else " ",
                "(" if re_ > end else " ", re_, ")" if re_ > end else " ",
                part, hi - lo, b))
            stats[cls][1] += part
            cur = hi
    for rs, re_, b, com in mmaps:
        stats["profiled-mmap"][0] += re_ - rs
        stats["profiled-mmap"][1] += com
    for b, (vi, co, a, f) in malloc.items():
        stats["profiled-malloc"][0] += vi
        stats["profiled-malloc"][1] += co
    for i in (0, 1):
        stats["nonprofiled-total"][i] = sum(stats["nonprofiled-" + c][i] for c in classes)
        stats["absent"][i] = (stats["profiled-mmap"][i] + stats["nonprofiled-total"][i] -
                              sum(stats[c][i] for c in classes))
        stats["total"][i] = stats["absent"][i] + sum(stats[c][i] for c in classes)
    assert stats["absent"] == [0, 0], stats["absent"]

    out = ["heap profile: DUMP_DEEP_6", "META:",
           "Time: %d" % (T0 + 10 * n),
           "Reason: Dumping heap profile (%d MB in use) every 10 sec" %
           (stats["profiled-malloc"][0] >> 20),
           "CommandLine: /usr/bin/cachesrv --port 8080 --cache-size 64M",
           "RunID: devbox-linux-%d-%d" % (PID, T0),
           "PageSize: %d" % PAGE,
           "PageFrame: 24,Base64,PageCount",
           "MMAP_LIST:"] + lines
    total_c = stats["total"][1]
    mm_c = stats["profiled-mmap"][1]
    np_c = stats["nonprofiled-total"][1]
    out += ["GLOBAL_STATS:",
            "# total (%d) %s profiled-mmap (%d) + nonprofiled-* (%d)" %
            (total_c, "==" if total_c == mm_c + np_c else "!=", mm_c, np_c),
            "%25s %12s %12s" % ("", "virtual", "committed")]
    for k in ["total", "absent", "file-exec", "file-nonexec", "anonymous", "stack", "other",
              "nonprofiled-total", "nonprofiled-absent", "nonprofiled-anonymous",
              "nonprofiled-file-exec", "nonprofiled-file-nonexec", "nonprofiled-stack",
              "nonprofiled-other", "profiled-mmap", "profiled-malloc"]:
        out.append("%25s %12d %12d" % (k, stats[k][0], stats[k][1]))
    out += ["STACKTRACES:", "%10s %10s" % ("virtual", "committed")]
    for rs, re_, b, com in mmaps:
        out.append("%10d %10d %6d %6d @ %d" % (re_ - rs, com, 1, 0, b))
    for b, (vi, co, a, f) in sorted(malloc.items(), key=lambda x: -x[1][1]):
        out.append("%10d %10d %6d %6d @ %d" % (vi, co, a, f, b))
    with open("%s.%04d.heap" % (PREFIX, n + 1), "w") as f:
        f.write("\n".join(out) + "\n")
    with open("%s.%04d.buckets" % (PREFIX, n + 1), "w") as f:
        for b in BUCKET_FILES[n]:
            kind, ti, tn, frames = BUCKETS[b]
            f.write("%d %s t0x%x n%s %s\n" % (b, kind, ti, tn,
                                               " ".join("0x%08x" % a for a in frames)))


def maps_text():
    return "".join("%08x-%08x %s %08x 08:01 %-11d %s\n" % (s, e, p, o, i, n)
                   if n.startswith("/") else
                   "%08x-%08x %s %08x 00:00 %-11d %s\n" % (s, e, p, o, i, n)
                   for s, e, p, o, i, n in VMAS)


def nm_text(funcs, data):
    rows = [(s, "T", n) for s, size, n in funcs] + [(s, t, n) for s, size, t, n in data]
    return "".join("%016x %s %s\n" % r for r in sorted(rows))


READELF = """ELF Header:
  Magic:   7f 45 4c 46 02 01 01 00 00 00 00 00 00 00 00 00
  Class:                             ELF64
  Data:                              2's complement, little endian
  Version:                           1 (current)
  OS/ABI:                            UNIX - System V
  ABI Version:                       0
  Type:                              %s
  Machine:                           Advanced Micro Devices X86-64
  Version:                           0x1
  Entry point address:               0x%x
  Start of program headers:          64 (bytes into file)
  Start of section headers:          %d (bytes into file)
  Flags:                             0x0
  Size of this header:               64 (bytes)
  Size of program headers:           56 (bytes)
  Number of program headers:         4
  Size of section headers:           64 (bytes)
  Number of section headers:         %d
  Section header string table index: %d

Section Headers:
  [Nr] Name              Type            Address          Off    Size   ES Flg Lk Inf Al
%s
Key to Flags:
  W (write), A (alloc), X (execute), M (merge), S (strings), I (info),
  L (link order), O (extra OS processing required), G (group), T (TLS),
  C (compressed), x (unknown), o (OS specific), E (exclude),
  D (mbind), l (large), p (processor specific)

Program Headers:
  Type           Offset   VirtAddr           PhysAddr           FileSiz  MemSiz   Flg Align
"""


def readelf_text(kind, entry, sections):
    rows = ["  [ 0]                   NULL            0000000000000000 000000 000000 00      0   0  0"]
    for i, (name, typ, addr, off, size, flg) in enumerate(sections, 1):
        rows.append("  [%2d] %-17s %-15s %016x %06x %06x 00 %3s  0   0 16" %
                    (i, name, typ, addr, off, size, flg))
    n = len(sections) + 1
    return READELF % (kind, entry, 0x60000, n, n - 1, "\n".join(rows))


def main():
    os.chdir(os.path.dirname(os.path.abspath(__file__)))
    for n in range(3):
        write_dump(n)
        os.utime("%s.%04d.heap" % (PREFIX, n + 1), (T0 + 10 * n, T0 + 10 * n))
    with open(PREFIX + ".maps", "w") as f:
        f.write(maps_text())
    sm = PREFIX + ".symmap"
    os.makedirs(sm, exist_ok=True)
    with open(sm + "/maps", "w") as f:
        f.write(maps_text())
    with open(sm + "/cachesrv.nm", "w") as f:
        f.write(nm_text(EXE_FUNCS, EXE_DATA))
    with open(sm + "/cachesrv.readelf-e", "w") as f:
        f.write(readelf_text("EXEC (Executable file)", 0x401100, [
            (".text", "PROGBITS", 0x401000, 0x1000, 0x50000, "AX"),
            (".rodata", "PROGBITS", 0x451000, 0x51000, 0x800, "A"),
            (".data.rel.ro", "PROGBITS", 0x651d00, 0x51d00, 0x200, "WA"),
            (".data", "PROGBITS", 0x652000, 0x52000, 0x400, "WA"),
            (".bss", "NOBITS", 0x652400, 0x52400, 0x800, "WA"),
            (".shstrtab", "STRTAB", 0, 0x52400, 0x50, "")]))
    with open(sm + "/libstdc++.nm", "w") as f:
        f.write(nm_text(STDCXX_FUNCS, []))
    with open(sm + "/libstdc++.readelf-e", "w") as f:
        f.write(readelf_text("DYN (Shared object file)", 0, [
            (".text", "PROGBITS", 0x9e000, 0x9e000, 0x101000, "AX"),
            (".rodata", "PROGBITS", 0x19f000, 0x19f000, 0x71000, "A"),
            (".shstrtab", "STRTAB", 0, 0x210000, 0x50, "")]))
    with open(sm + "/files.json", "w") as f:
        f.write("""{
  "%s": {
    "nm": {"file": "cachesrv.nm", "format": "bsd", "mangled": false},
    "readelf-e": {"file": "cachesrv.readelf-e"}
  },
  "%s": {
    "nm": {"file": "libstdc++.nm", "format": "bsd", "mangled": false},
    "readelf-e": {"file": "libstdc++.readelf-e"}
  }
}
""" % (EXE, STDCXX))


if __name__ == "__main__":
    main()
