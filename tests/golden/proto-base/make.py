# Writes small pprof protobuf heap profiles for the proto-* golden cases,
# field by field (a wire encoder in a few lines), so each test says what
# it holds.  Usage: python3 make.py KIND OUT  (KIND: see below)
import gzip, sys

def varint(v):
    v &= (1 << 64) - 1
    out = b""
    while True:
        b = v & 0x7f
        v >>= 7
        if v:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])

def field(num, v):                       # a varint field
    return varint(num << 3) + varint(v)

def msg(num, body):                      # a length-delimited field
    return varint(num << 3 | 2) + varint(len(body)) + body

def packed(num, vals):
    return msg(num, b"".join(varint(v) for v in vals))

def profile(step, strtab_first="", bad=None):
    strs = [strtab_first, "alloc_objects", "count", "alloc_space", "bytes",
            "inuse_objects", "inuse_space", "main.grow", "/src/app/grow.go",
            "main.inlined", "main.main", "/opt/app/bin", "space"]
    s = lambda name: strs.index(name)
    p = b""
    p += msg(11, field(1, s("space")) + field(2, s("bytes")))   # period_type first, as Go
    for t, u in (("alloc_objects", "count"), ("alloc_space", "bytes"),
                 ("inuse_objects", "count"), ("inuse_space", "bytes")):
        p += msg(1, field(1, s(t)) + field(2, s(u)))
    # samples: leaf first; values alloc_objects, alloc_space, inuse_objects, inuse_space
    grow = 4096 * 10 * step
    p += msg(2, packed(1, [1, 3]) + packed(2, [10 * step, grow, 10 * step, grow]))
    # two values unpacked (Go packs only more than two), a raw address frame
    p += msg(2, field(1, 2) + field(1, 3) + packed(2, [5, 5000, 1, 1000]))
    if bad == "location":
        p += msg(2, packed(1, [99]) + packed(2, [1, 1, 1, 1]))
    p += msg(3, field(1, 1) + field(2, 0x400000) + field(3, 0x500000) +
             field(5, s("/opt/app/bin")))
    # location 1: main.inlined inlined into main.grow (line[0] innermost)
    p += msg(4, field(1, 1) + field(2, 1) + field(3, 0x401234) +
             msg(4, field(1, 1) + field(2, 12)) + msg(4, field(1, 2) + field(2, 30)))
    p += msg(4, field(1, 2) + field(2, 1) + field(3, 0x401300))  # no lines
    p += msg(4, field(1, 3) + field(2, 1) + field(3, 0x402000) +
             msg(4, field(1, 3) + field(2, 44)))
    p += msg(5, field(1, 1) + field(2, s("main.inlined")) + field(4, s("/src/app/grow.go")))
    p += msg(5, field(1, 2) + field(2, s("main.grow")) + field(4, s("/src/app/grow.go")))
    p += msg(5, field(1, 3) + field(2, s("main.main")) +
             field(4, 99 if bad == "string" else s("/src/app/grow.go")))
    p += field(9, 1700000000 * 10**9 + step * 500 * 10**6)        # time_nanos
    p += field(12, 1)                                            # period
    for x in strs:
        p += msg(6, x.encode())
    return p

kind, out = sys.argv[1], sys.argv[2]
if kind.startswith("step"):
    data = gzip.compress(profile(int(kind[4:])), mtime=0)
elif kind == "raw":
    data = profile(1)
elif kind == "truncated-gzip":
    data = gzip.compress(profile(1), mtime=0)[:-30]
elif kind == "two-members-cut":          # a second gzip member cut short
    data = (gzip.compress(profile(1), mtime=0) +
            gzip.compress(profile(2), mtime=0)[:-30])
elif kind == "wrong-isize":              # a trailer whose size is not the data's
    data = (gzip.compress(profile(1), mtime=0)[:-4] +
            (len(profile(1)) + 1).to_bytes(4, "little"))
elif kind == "huge-length":
    data = profile(1)[:40] + msg(2, b"")[:1] + varint(1 << 40)
elif kind in ("string", "location"):
    data = profile(1, bad=kind)
elif kind == "no-empty-string":
    data = profile(1, strtab_first="x")
open(out, "wb").write(data)
