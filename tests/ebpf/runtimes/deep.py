# Deeper than the Python frames a sample carries (tests/integration/
# ebpf_runtimes.sh): 150 frames of deep, the innermost spinning for the
# seconds given. The frames past the limit are one marked frame.
import sys
import time


def deep(n, end):
    if n:
        return deep(n - 1, end)
    while time.monotonic() < end:
        pass


sys.setrecursionlimit(10000)
deep(150, time.monotonic() + (float(sys.argv[1]) if len(sys.argv) > 1 else 5))
