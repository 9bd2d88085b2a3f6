#!/usr/bin/env python3
# A gzipped pprof CPU profile whose function names are not UTF-8 and hold a
# NUL: "main" calls b"bad\xffname\xfe" (700 ns) and b"nul\x00in" (300 ns).
# Written byte by byte (protobuf's wire format), since encoders built from a
# schema declaring string_table `string` refuse such names.
# With --plain the names are "a" and "b" (UTF-8). Either way the profile has
# pprof's newer fields that Pyroscope's schema lacks: Profile.doc_url and a
# Line.column (7, on main's line).
# usage: oddnames_pprof.py [--plain] OUT TIME_NANOS
import gzip
import sys

PLAIN = sys.argv[1] == '--plain'
if PLAIN:
    del sys.argv[1]


def varint(v):
    v &= (1 << 64) - 1
    out = b''
    while v >= 0x80:
        out += bytes([v & 0x7f | 0x80])
        v >>= 7
    return out + bytes([v])


def field(num, wiretype, payload):
    key = varint(num << 3 | wiretype)
    if wiretype == 2:
        return key + varint(len(payload)) + payload
    return key + varint(payload)


STRINGS = [b'', b'cpu', b'nanoseconds', b'main', b'bad\xffname\xfe', b'nul\x00in',
           b'https://example.com/doc']
if PLAIN:
    STRINGS[4:6] = [b'a', b'b']
p = field(1, 2, field(1, 0, 1) + field(2, 0, 2))                    # sample_type cpu/nanoseconds
for i, name in ((1, 3), (2, 4), (3, 5)):
    p += field(5, 2, field(1, 0, i) + field(2, 0, name))            # function i
    line = field(1, 0, i) + (field(3, 0, 7) if i == 1 else b'')     # main's line: column 7
    p += field(4, 2, field(1, 0, i) + field(4, 2, line))            # location i, one line
p += field(2, 2, field(1, 2, varint(2) + varint(1)) + field(2, 2, varint(700)))
p += field(2, 2, field(1, 2, varint(3) + varint(1)) + field(2, 2, varint(300)))
for s in STRINGS:
    p += field(6, 2, s)
p += field(9, 0, int(sys.argv[2]))                                  # time_nanos
p += field(11, 2, field(1, 0, 1) + field(2, 0, 2))                  # period_type
p += field(12, 0, 10000000)
p += field(15, 0, 6)                                                # doc_url
with open(sys.argv[1], 'wb') as f:
    f.write(gzip.compress(p))
