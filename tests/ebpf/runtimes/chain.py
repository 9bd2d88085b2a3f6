# The workload of tests/integration/rt_python.sh: a three-deep chain of named
# functions below the module level (outer_a, middle_b, leaf_c), leaf_c hot,
# for the seconds given. Runs on every CPython from 3.11 on.
import sys
import time


def leaf_c(n):
    x = 0
    for i in range(n):
        x += i * i
    return x


def middle_b(secs):
    end = time.monotonic() + secs
    while time.monotonic() < end:
        leaf_c(20000)


def outer_a(secs):
    middle_b(secs)


outer_a(float(sys.argv[1]) if len(sys.argv) > 1 else 5)
