#!/usr/bin/env python3
# java-root-share.py CLASS: reads `go tool pprof -traces` of a Java
# program's profile on stdin and prints "percent matched total": the share
# of the samples whose stack, root first, starts at a thread root and shows
# CLASS.main, later CLASS.caller and CLASS.hot right below it (the workload
# tests/ebpf/runtimes/HsDeep.java); then the three heaviest stacks that do
# not. Used by tests/integration/ebpf_hotspot.sh and scripts/bench-ebpf.sh.
import re, sys
cls = sys.argv[1]
units = {"ns": 1e-9, "us": 1e-6, "\u00b5s": 1e-6, "ms": 1e-3, "s": 1, "mins": 60, "hrs": 3600}
roots = {"__clone3", "__clone", "clone3", "clone", "start_thread"}
blocks, cur = [], None
for line in sys.stdin:
    if line.startswith("-----------+"):
        cur = None
        continue
    m = re.match(r"\s+([0-9.]+)(ns|us|\u00b5s|ms|s|mins|hrs)\s+(.*\S)\s*$", line)
    if m:
        cur = [float(m.group(1)) * units[m.group(2)], [m.group(3)]]
        blocks.append(cur)
    elif cur is not None and line.strip() and ":" not in line.split()[0]:
        cur[1].append(line.strip())
total = good = 0.0
bad = {}
for v, frames in blocks:
    fr = frames[::-1]          # root first
    total += v
    ok = False
    if fr and fr[0] in roots:
        # pprof may shorten "C.m(args)" to "C.m"
        is_m = lambda f, m: re.match(r"%s\.%s(\(|$)" % (cls, m), f) is not None
        mains = [i for i, f in enumerate(fr) if is_m(f, "main")]
        for i, f in enumerate(fr):
            if (is_m(f, "caller") and i + 1 < len(fr) and is_m(fr[i + 1], "hot") and
                    mains and mains[0] < i):
                ok = True
    if ok:
        good += v
    else:
        k = ";".join(fr)
        bad[k] = bad.get(k, 0) + v
pct = 100.0 * good / total if total else 0.0
print("%.1f %.2fs %.2fs" % (pct, good, total))
for k, v in sorted(bad.items(), key=lambda kv: -kv[1])[:3]:
    print("  %.2fs %s" % (v, k[-400:]))
