#!/usr/bin/env python3
"""Write a gzipped pprof heap profile shaped as Go's runtime/pprof writes it
(alloc_objects/count, alloc_space/bytes, inuse_objects/count,
inuse_space/bytes; period type space/bytes; a time and no duration: a
snapshot of totals since the process started), for the tests of the
increase of snapshots (tests/integration/increase.sh).

  heapsnap.py OUT TIME_NS STACKS

STACKS is a file of lines "root;caller;leaf ALLOC_OBJ ALLOC_SPACE INUSE_OBJ
INUSE_SPACE". Each distinct name becomes one function and one location
(address 0x1000 * id, the same in every file: one process's binary).
"""
import gzip
import sys


def varint(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field(num, wt, payload):
    key = varint((num << 3) | wt)
    if wt == 0:
        return key + varint(payload)
    return key + varint(len(payload)) + payload


def main(out, time_ns, stacks):
    strings = [b"", b"alloc_objects", b"count", b"alloc_space", b"bytes",
               b"inuse_objects", b"inuse_space", b"space"]
    index = {}
    samples = []
    for line in open(stacks, "rb").read().split(b"\n"):
        if not line.strip():
            continue
        parts = line.rsplit(b" ", 4)
        ids = []
        for name in parts[0].split(b";"):
            if name not in index:
                index[name] = len(index) + 1
                strings.append(name)
            ids.append(index[name])
        samples.append((ids[::-1], [int(x) for x in parts[1:]]))
    p = bytearray()
    for t, u in ((1, 2), (3, 4), (5, 2), (6, 4)):
        p += field(1, 2, field(1, 0, t) + field(2, 0, u))
    for ids, vals in samples:
        p += field(2, 2, field(1, 2, b"".join(varint(i) for i in ids)) +
                   field(2, 2, b"".join(varint(v) for v in vals)))
    for name, i in index.items():
        s = len(strings) - len(index) + i - 1
        p += field(4, 2, field(1, 0, i) + field(3, 0, 0x1000 * i) +
                   field(4, 2, field(1, 0, i)))
        p += field(5, 2, field(1, 0, i) + field(2, 0, s) + field(3, 0, s))
    for s in strings:
        p += field(6, 2, s)
    # time_nanos; no duration_nanos; period_type space/bytes, period 512 KiB
    p += field(9, 0, int(time_ns)) + field(11, 2, field(1, 0, 7) + field(2, 0, 4))
    p += field(12, 0, 524288)
    with open(out, "wb") as f:
        f.write(gzip.compress(bytes(p)))


if __name__ == "__main__":
    main(*sys.argv[1:])
