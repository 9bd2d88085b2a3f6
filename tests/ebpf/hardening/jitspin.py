# Runs a loop in anonymous executable memory (as JIT code does), so that the
# sampler looks for the process's perf map in its /tmp. Usage: jitspin.py.
import ctypes
import mmap

m = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
m.write(b"\xeb\xfe")    # jmp .
addr = ctypes.addressof(ctypes.c_char.from_buffer(m))
ctypes.CFUNCTYPE(None)(addr)()
