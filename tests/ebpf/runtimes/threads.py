# Two Python threads at work (tests/integration/ebpf_runtimes.sh): alpha
# recurses in spin_a, beta in spin_b; each sample must show its own
# thread's frames, never the other's, for the seconds given.
import sys
import threading
import time


def spin_a(n):
    return n if n < 2 else spin_a(n - 1) + spin_a(n - 2)


def spin_b(n):
    return n if n < 2 else spin_b(n - 1) + spin_b(n - 2)


def alpha(end):
    while time.monotonic() < end:
        spin_a(17)


def beta(end):
    while time.monotonic() < end:
        spin_b(17)


end = time.monotonic() + (float(sys.argv[1]) if len(sys.argv) > 1 else 5)
threads = [threading.Thread(target=alpha, args=(end,)), threading.Thread(target=beta, args=(end,))]
for t in threads:
    t.start()
for t in threads:
    t.join()
