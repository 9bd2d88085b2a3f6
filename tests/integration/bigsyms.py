#!/usr/bin/env python3
"""bigsyms.py IN OUT N: copy the x86-64 ELF IN (stripped) to OUT with a
.symtab of N global function symbols appended: "hostile_fn_<i>" at .text's
address + 16 i, 16 bytes each (distinct addresses, so no two are aliases;
the program's own code is covered by the first ones). A binary a user may
run to hand the eBPF sampler a symbol table of millions of functions
(tests/integration/hardening_symtab.sh)."""
import struct
import sys

SHDR = struct.Struct("<IIQQQQIIQQ")
SYM = struct.Struct("<IBBHQQ")


def main():
    src, dst, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    b = bytearray(open(src, "rb").read())
    assert b[:4] == b"\x7fELF" and b[4] == 2 and b[5] == 1, "not a little-endian ELF64"
    shoff, = struct.unpack_from("<Q", b, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", b, 0x3A)
    hdrs = [list(SHDR.unpack_from(b, shoff + i * shentsize)) for i in range(shnum)]
    stroff = hdrs[shstrndx][4]

    def name(h):
        s = stroff + h[0]
        return bytes(b[s:b.index(b"\0", s)])

    text = next(i for i, h in enumerate(hdrs) if name(h) == b".text")
    addr = hdrs[text][3]
    assert not any(h[1] == 2 for h in hdrs), "IN has a .symtab: strip it first"

    # The string table, then the symbols pointing into it.
    names = bytearray(b"\0")
    syms = bytearray(SYM.size * (n + 1))
    pack = SYM.pack_into
    for i in range(n):
        off = len(names)
        names += b"hostile_fn_%d\0" % i
        pack(syms, SYM.size * (i + 1), off, 0x12, 0, text, addr + 16 * i, 16)
    while len(b) % 8:
        b.append(0)
    sym_off = len(b)
    b += syms
    str_off = len(b)
    b += names
    while len(b) % 8:
        b.append(0)
    new_shoff = len(b)
    hdrs.append([0, 2, 0, 0, sym_off, len(syms), shnum + 1, 1, 8, SYM.size])
    hdrs.append([0, 3, 0, 0, str_off, len(names), 0, 0, 1, 0])
    for h in hdrs:
        b += SHDR.pack(*h)
    struct.pack_into("<Q", b, 0x28, new_shoff)
    struct.pack_into("<H", b, 0x3C, len(hdrs))
    with open(dst, "wb") as f:
        f.write(b)


if __name__ == "__main__":
    main()
