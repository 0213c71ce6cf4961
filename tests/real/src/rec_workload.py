# A Python program whose memory grows for about 6 seconds: lists of
# strings, dicts, big bytearrays (which glibc maps one by one), then a
# release at the end.
import sys
import time

seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 6.0
keep = []
table = {}
start = time.time()
i = 0
while time.time() - start < seconds:
    keep.append(["item %d %s" % (i, "x" * (i % 50)) for _ in range(2000)])
    table[i] = {"key%d" % k: k * i for k in range(500)}
    if i % 4 == 0:
        keep.append(bytearray(1 << 20))
    i += 1
    time.sleep(0.05)
del keep[: len(keep) // 2]
time.sleep(0.2)
print(i)
