#!/usr/bin/env python3
"""Write a gzipped pprof CPU profile (cpu/nanoseconds) from folded stacks, for
the tests that need exact shares or exact function names
(tests/integration/views_diff_names.sh).

  folded2pprof.py OUT TIME_NS FOLDED

FOLDED is a file of lines "root;caller;leaf VALUE" (bytes: names may hold any
byte but ';' and newline). Each distinct name becomes one function, stored
as the profile's name and system_name (as a sampler that does not demangle
writes them), and one location.
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


def main(out, time_ns, folded):
    strings = [b"", b"cpu", b"nanoseconds"]
    index = {}
    samples = []
    for line in open(folded, "rb").read().split(b"\n"):
        if not line.strip():
            continue
        stack, value = line.rsplit(b" ", 1)
        ids = []
        for name in stack.split(b";"):
            if name not in index:
                index[name] = len(index) + 1
                strings.append(name)
            ids.append(index[name])
        samples.append((ids[::-1], int(value)))
    p = bytearray(field(1, 2, field(1, 0, 1) + field(2, 0, 2)))
    for ids, v in samples:
        p += field(2, 2, field(1, 2, b"".join(varint(i) for i in ids)) + field(2, 2, varint(v)))
    for name, i in index.items():
        s = 2 + i
        p += field(4, 2, field(1, 0, i) + field(4, 2, field(1, 0, i)))
        p += field(5, 2, field(1, 0, i) + field(2, 0, s) + field(3, 0, s))
    for s in strings:
        p += field(6, 2, s)
    p += field(9, 0, int(time_ns)) + field(10, 0, 10**9)
    p += field(11, 2, field(1, 0, 1) + field(2, 0, 2)) + field(12, 0, 10**7)
    open(out, "wb").write(gzip.compress(bytes(p)))


if __name__ == "__main__":
    main(*sys.argv[1:])
