# A C extension under Python frames (tests/integration/ebpf_runtimes.sh):
# squeeze calls zlib's compressor, whose native frames (libz's deflate) sit
# beneath the Python ones, for the seconds given.
import os
import sys
import time
import zlib


def squeeze(buf):
    return len(zlib.compress(buf, 9))


def work(secs):
    buf = os.urandom(1 << 16) * 64
    end = time.monotonic() + secs
    while time.monotonic() < end:
        squeeze(buf)


work(float(sys.argv[1]) if len(sys.argv) > 1 else 5)
