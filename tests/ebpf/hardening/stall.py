# A Python program whose caller's frame points its code object into a page
# of a file no one will serve: the page is mapped and never touched, and the
# server is stopped before the frame points there. Usage: stall.py FILE.
# Prints "ready" once mapped; reads a line; then spins for good in a callee,
# its caller's f_code in the mapping (CPython 3.11 layout: PyFrameObject's
# f_frame at 24, _PyInterpreterFrame's f_code at 32).
import ctypes
import os
import sys

libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                      ctypes.c_int, ctypes.c_long]
fd = os.open(sys.argv[1], os.O_RDONLY)
addr = libc.mmap(None, 4096, 1, 2, fd, 0)   # PROT_READ, MAP_PRIVATE
if addr in (None, ctypes.c_void_p(-1).value):
    sys.exit("mmap failed")
print("ready", flush=True)
sys.stdin.readline()


def poison_and_spin():
    caller = sys._getframe(1)
    iframe = ctypes.c_void_p.from_address(id(caller) + 24).value
    ctypes.c_void_p.from_address(iframe + 32).value = addr
    while True:
        pass


def victim_caller():
    poison_and_spin()


victim_caller()
