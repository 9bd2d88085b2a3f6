#!/usr/bin/env python3
"""kaddr_scan.py DIR...: read every file under each DIR (symbolic links to
directories followed once, ingest/ left out) as the user it runs as, and
count the kernel text addresses each holds: in pprof files (gzipped or not)
the locations whose address and the mappings whose bounds lie in the
kernel's half of the address space, in every other file (and in the strings
of pprof files) the hex words of that half and "[kernel]+0x..." offsets
other than 0. Prints one line "files=N pprof=N kernel=N errors=N" and, for
the first files that hold any, their names and counts.
(tests/integration/hardening_kaddr.sh)"""
import gzip
import os
import re
import sys

KERNEL_HALF = 0xffff800000000000
HEXWORD = re.compile(rb"(?:0x)?ffff[89a-f][0-9a-f]{11}", re.I)
KOFF = re.compile(rb"\[kernel[^\]]*\]\+0x0*[1-9a-f]", re.I)


def varint(b, i):
    v = s = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7f) << s
        s += 7
        if c < 0x80:
            return v, i


def fields(b):
    """(field, wire type, value) of a protobuf message: ints or bytes."""
    i = 0
    while i < len(b):
        k, i = varint(b, i)
        f, w = k >> 3, k & 7
        if w == 0:
            v, i = varint(b, i)
        elif w == 1:
            v, i = int.from_bytes(b[i:i + 8], "little"), i + 8
        elif w == 5:
            v, i = int.from_bytes(b[i:i + 4], "little"), i + 4
        elif w == 2:
            n, i = varint(b, i)
            v, i = b[i:i + n], i + n
        else:
            raise ValueError("wire type %d" % w)
        yield f, w, v


def pprof_kernel(b):
    """Kernel addresses in a pprof Profile (mapping = 3, location = 4, strings = 6)."""
    n = 0
    for f, w, v in fields(b):
        if f == 3 and w == 2:      # Mapping: memory_start 2, memory_limit 3, file_offset 4
            for g, x, u in fields(v):
                if g in (2, 3) and x == 0 and u >= KERNEL_HALF:
                    n += 1
        elif f == 4 and w == 2:    # Location: address 3
            for g, x, u in fields(v):
                if g == 3 and x == 0 and u >= KERNEL_HALF:
                    n += 1
        elif f == 6 and w == 2:
            n += len(HEXWORD.findall(v)) + len(KOFF.findall(v))
    return n


def scan(path, seen):
    """Yield (file, count or None for an unreadable one, is pprof)."""
    try:
        names = sorted(os.listdir(path))
    except OSError:
        yield path, None, False
        return
    for name in names:
        p = os.path.join(path, name)
        if name == "ingest" and os.path.dirname(p.rstrip("/")) in seen.get("roots", ()):
            continue
        if os.path.isdir(p):
            real = os.path.realpath(p)
            if real in seen:
                continue
            seen[real] = True
            yield from scan(p, seen)
            continue
        try:
            with open(p, "rb") as fh:
                data = fh.read()
        except OSError:
            yield p, None, False
            continue
        raw = data
        if data[:2] == b"\x1f\x8b":
            try:
                raw = gzip.decompress(data)
            except (OSError, EOFError):
                raw = data
        if name.endswith(".pb.gz") or name.endswith(".pb"):
            try:
                yield p, pprof_kernel(raw), True
            except (ValueError, IndexError):
                yield p, None, True
            continue
        yield p, len(HEXWORD.findall(raw)) + len(KOFF.findall(raw)), False


def main():
    files = pprof = kernel = errors = 0
    shown = 0
    seen = {"roots": tuple(os.path.abspath(d) for d in sys.argv[1:])}
    for d in sys.argv[1:]:
        seen[os.path.realpath(d)] = True
        for p, n, pb in scan(d, seen):
            files += 1
            pprof += pb
            if n is None:
                errors += 1
                continue
            kernel += n
            if n and shown < 5:
                shown += 1
                print("#   %s: %d" % (p, n))
    print("files=%d pprof=%d kernel=%d errors=%d" % (files, pprof, kernel, errors))


if __name__ == "__main__":
    main()
