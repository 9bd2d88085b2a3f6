#!/usr/bin/env python3
"""Tools for tests/integration/hardening_api.sh, with real sockets and files.
Each subcommand prints one summary line the shell test reads.

  slowloris PORT FIRST NADDR PER SECONDS
        from NADDR loopback addresses 127.0.0.FIRST.., PER sockets each sending
        request headers a byte a second, each socket reopened as soon as the
        daemon closes it, for SECONDS
  kprofile OUT    a gzipped pprof with one kernel frame (address in the kernel
                  half, function do_syscall_64) under one user frame
"""
import gzip
import selectors
import socket
import sys
import time


def cmd_slowloris(port, first, naddr, per, seconds):
    port, first, naddr, per = int(port), int(first), int(naddr), int(per)
    sel = selectors.DefaultSelector()
    opened = closed = failed = 0

    def open_one(addr):
        nonlocal opened, failed
        s = socket.socket()
        try:
            s.bind((addr, 0))
            s.setblocking(False)
            s.connect_ex(("127.0.0.1", port))
            sel.register(s, selectors.EVENT_READ, addr)
            opened += 1
            return s
        except OSError:
            failed += 1
            s.close()
            return None

    socks, started = [], set()
    for a in range(first, first + naddr):
        for _ in range(per):
            socks.append(open_one(f"127.0.0.{a}"))
    print(f"slowloris: {opened} sockets from {naddr} addresses", flush=True)
    start = last = time.time()
    while time.time() - start < float(seconds):
        for key, _ in sel.select(timeout=0.2):
            s = key.fileobj
            try:
                data = s.recv(4096)
            except OSError:
                data = b""
            if not data:
                sel.unregister(s)
                started.discard(s)
                s.close()
                closed += 1
                socks[socks.index(s)] = open_one(key.data)
        if time.time() - last >= 1:
            last = time.time()
            for i, s in enumerate(socks):
                if s is None:
                    socks[i] = open_one(f"127.0.0.{first + i // per}")
                    continue
                try:
                    # Headers never end: the request line, then a byte a second.
                    if s in started:
                        s.send(b"X")
                    else:
                        s.send(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ")
                        started.add(s)
                except OSError:
                    pass
    for s in socks:
        if s is not None:
            s.close()
    print(f"slowloris: {opened} opened, {closed} closed by the daemon, {failed} failed "
          f"in {seconds} s", flush=True)


def varint(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field(num, wt, payload):
    key = varint((num << 3) | wt)
    if wt == 0:
        return key + varint(payload)
    return key + varint(len(payload)) + payload


def cmd_kprofile(out):
    strings = [b"", b"samples", b"count", b"do_syscall_64", b"main", b"[kernel.kallsyms]"]
    p = bytearray(field(1, 2, field(1, 0, 1) + field(2, 0, 2)))
    p += field(2, 2, field(1, 2, varint(1) + varint(2)) + field(2, 2, varint(7)))
    # mapping 1: the kernel; location 1 in it, location 2 a user frame
    p += field(3, 2, field(1, 0, 1) + field(2, 0, 0xffffffff81000000) +
               field(3, 0, 0xffffffff82000000) + field(5, 0, 5))
    p += field(4, 2, field(1, 0, 1) + field(2, 0, 1) + field(3, 0, 0xffffffff81234567) +
               field(4, 2, field(1, 0, 1)))
    p += field(4, 2, field(1, 0, 2) + field(3, 0, 0x401000) + field(4, 2, field(1, 0, 2)))
    p += field(5, 2, field(1, 0, 1) + field(2, 0, 3))
    p += field(5, 2, field(1, 0, 2) + field(2, 0, 4))
    for s in strings:
        p += field(6, 2, s)
    with open(out, "wb") as f:
        f.write(gzip.compress(bytes(p)))
    print(f"kprofile: {out}")


if __name__ == "__main__":
    globals()["cmd_" + sys.argv[1]](*sys.argv[2:])
