# Shared by the gperf-* golden cases (sourced from their cmd): a
# hand-written gperftools series, prof.0001.heap to prof.0003.heap, as
# HEAPPROFILE=prof leaves it, with HEAP_PROFILE_MMAP=1 (an mmap line whose
# top frames lie in libtcmalloc).  The binaries its MAPPED_LIBRARIES:
# trailer names are absent, so frames stay unsymbolized.  The files carry
# no times: their modification times are the snapshot times.
cp "$TOP"/tests/golden/gperf-base/prof.*.heap .
touch -d '2024-01-01 00:00:00' prof.0001.heap
touch -d '2024-01-01 00:00:30' prof.0002.heap
touch -d '2024-01-01 00:01:30' prof.0003.heap
