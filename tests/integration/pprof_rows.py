#!/usr/bin/env python3
"""pprof_rows.py: go tool pprof -raw's output (stdin) as one line per sample,
"values | labels | frames", the frames by name (location ids differ between
two encodings of one profile), sorted: two profiles with the same samples and
labels print the same lines, whatever their order and numbering."""
import re, sys

samples, locs, sec, cur = [], {}, None, None
for line in sys.stdin:
    line = line.rstrip("\n")
    if line.startswith("Samples:"):
        sec = "s"; next(sys.stdin, None); continue
    if line.startswith("Locations"):
        sec = "l"; continue
    if line.startswith("Mappings"):
        sec = None; continue
    if sec == "s":
        m = re.match(r"^\s*(-?\d+(?:\s+-?\d+)*):\s*(.*)$", line)
        if m:
            cur = [m.group(1).split(), m.group(2).split(), ""]
            samples.append(cur)
        elif cur and line.strip():
            cur[2] = " ".join(sorted(line.split()))
    elif sec == "l":
        m = re.match(r"^\s*(\d+):\s*\S+\s+(?:M=\d+\s+)?(.*)$", line)
        if m:
            locs[m.group(1)] = " ".join(w for w in m.group(2).split() if not w.startswith("s=") and w != ":0")
rows = sorted("%s | %s | %s" % (" ".join(v), lab, "; ".join(locs.get(i, i) for i in st))
              for v, st, lab in samples)
print("\n".join(rows))
