#!/usr/bin/env python3
# java-chain-share.py CLASS: reads `go tool pprof -traces -lines` of a Java
# program's profile (its main thread's samples) on stdin and prints
# "percent matched total": the share of the samples whose stack shows
# CLASS.main and, later, CLASS.alphaLevel, CLASS.betaLevel, CLASS.gammaSpin
# one right below the other (the workload tests/ebpf/runtimes/RtJavaChain.java),
# each named with its file and line ("CLASS.java:N"), and reaches the root.
# Then the three heaviest stacks that do not.
#
# Reaching the root: the stack's outermost frame is where a thread starts
# (start_thread, clone, clone3, __clone, __clone3); or, in a container image
# without libc's debug symbols, where those frames are unnamed ([libc.so.6]),
# the outermost frames are libc's unnamed ones right under the launcher's
# thread function (ThreadJavaMain, from libjli.so, which the launcher starts
# the main thread with): the walk reached the thread's start, only libc's
# names are missing. A walk that breaks off anywhere else ends in another
# frame and does not count. Used by tests/integration/rt_java.sh and
# scripts/bench-ebpf.sh (javaver).
import re, sys
cls = sys.argv[1]
units = {"ns": 1e-9, "us": 1e-6, "\u00b5s": 1e-6, "ms": 1e-3, "s": 1, "mins": 60, "hrs": 3600}
roots = {"__clone3", "__clone", "clone3", "clone", "start_thread"}
unnamed_libc = re.compile(r"^\[libc\.so[.0-9]*\]$")
chain = ["alphaLevel", "betaLevel", "gammaSpin"]
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


def func(f):
    return f.split(" ")[0]


def reaches_root(fr):
    if not fr:
        return False
    if func(fr[0]) in roots:
        return True
    i = 0
    while i < len(fr) and unnamed_libc.match(fr[i]):
        i += 1
    return i > 0 and i < len(fr) and func(fr[i]) == "ThreadJavaMain"


def is_m(f, m):
    # "CLASS.m(args) CLASS.java:N" (pprof may leave the arguments out)
    return re.match(r"%s\.%s(\([^)]*\))? %s\.java:[1-9][0-9]*$" % (cls, m, cls), f) is not None


total = good = 0.0
bad = {}
for v, frames in blocks:
    fr = frames[::-1]          # root first
    total += v
    ok = False
    if reaches_root(fr):
        mains = [i for i, f in enumerate(fr) if is_m(f, "main")]
        for i in range(len(fr) - 2):
            if all(is_m(fr[i + k], chain[k]) for k in range(3)) and mains and mains[0] < i:
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
