# The workload of tests/integration/rt_python.sh: a three-deep chain of named
# functions below the module level (outer_a, middle_b, leaf_c), leaf_c hot,
# until the process has used CPU_SECONDS of CPU or MAX_SECONDS went by (a
# busy host gives it less CPU). Runs on every CPython from 3.11 on.
import sys
import time


def leaf_c(n):
    x = 0
    for i in range(n):
        x += i * i
    return x


def middle_b(cpu, wall):
    cpu_end = time.process_time() + cpu
    end = time.monotonic() + wall
    while time.process_time() < cpu_end and time.monotonic() < end:
        leaf_c(20000)


def outer_a(cpu, wall):
    middle_b(cpu, wall)


outer_a(float(sys.argv[1]) if len(sys.argv) > 1 else 2,
        float(sys.argv[2]) if len(sys.argv) > 2 else 60)
