# The Python workload of tests/integration/ebpf_runtimes.sh: fib is hot,
# called through work from the module level, for the seconds given.
import sys
import time


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def work(secs):
    end = time.monotonic() + secs
    while time.monotonic() < end:
        fib(18)


work(float(sys.argv[1]) if len(sys.argv) > 1 else 5)
