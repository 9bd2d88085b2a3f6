#!/usr/bin/env python3
"""spanprof.py OUT SPEC...: a pprof (samples/count, cpu/nanoseconds; not
gzipped) with one sample per SPEC "func:value_ns[:span_id[:trace_id]]",
each function its own location, timed a minute ago. Span ids and trace ids
are the pprof sample labels span_id and trace_id, as Pyroscope's SDKs and
OTLP links set them: the fleet's span tests build exact sums from these.
A SPEC "@FILE" reads the SPECs from FILE, one per line."""
import sys, time


def varint(v):
    o = bytearray()
    while True:
        b = v & 0x7f
        v >>= 7
        if v:
            o.append(b | 0x80)
        else:
            o.append(b)
            return bytes(o)


def fld(n, wt, p):
    k = varint(n << 3 | wt)
    return k + (varint(p) if wt == 0 else varint(len(p)) + p)


strs = ["", "samples", "count", "cpu", "nanoseconds", "span_id", "trace_id"]


def s(x):
    if x not in strs:
        strs.append(x)
    return strs.index(x)


out = bytearray()
out += fld(1, 2, fld(1, 0, s("samples")) + fld(2, 0, s("count")))
out += fld(1, 2, fld(1, 0, s("cpu")) + fld(2, 0, s("nanoseconds")))
funcs = {}
specs = []
for a in sys.argv[2:]:
    specs += open(a[1:]).read().split() if a.startswith("@") else [a]
for spec in specs:
    f = spec.split(":")
    fn, v = f[0], int(f[1])
    if fn not in funcs:
        funcs[fn] = len(funcs) + 1
    lab = b""
    if len(f) > 2:
        lab += fld(3, 2, fld(1, 0, s("span_id")) + fld(2, 0, s(f[2])))
    if len(f) > 3:
        lab += fld(3, 2, fld(1, 0, s("trace_id")) + fld(2, 0, s(f[3])))
    out += fld(2, 2, fld(1, 2, varint(funcs[fn])) + fld(2, 2, varint(1) + varint(v)) + lab)
for fn, i in funcs.items():
    out += fld(4, 2, fld(1, 0, i) + fld(4, 2, fld(1, 0, i)))
    out += fld(5, 2, fld(1, 0, i) + fld(2, 0, s(fn)))
for x in strs:
    out += fld(6, 2, x.encode())
out += fld(9, 0, time.time_ns() - 60 * 10**9)
out += fld(11, 2, fld(1, 0, s("cpu")) + fld(2, 0, s("nanoseconds"))) + fld(12, 0, 10000000)
open(sys.argv[1], "wb").write(out)
