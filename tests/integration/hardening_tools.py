#!/usr/bin/env python3
"""Attack tools for tests/integration/hardening.sh, each reproducing a
finding of the security and reliability review (issue 15) with real files and
sockets. Every subcommand prints one summary line the shell test checks.

  deep OUT DEPTH NSAMPLES [STEP]  gzipped pprof: recursion DEPTH frames deep, NSAMPLES
                                  samples whose stacks differ in depth by STEP
  oddname OUT NAME_HEX            a small valid profile whose function is named NAME_HEX
  emptymsgs OUT N                 protobuf of N empty sample messages
  readers PATH N                  N open/fstat/read/close rounds (up to 5 ms between
                                  open and fstat): gzip valid and size == fstat's, counted
  pwrite PATH OFFSET              write one byte at OFFSET, print the outcome
  holdopen DIR NFILES MB          write NFILES files of MB MiB each, held open
  chunked A B PATH                two writers of one name, interleaved 4 KiB chunks
  slowloris HOST PORT N SECONDS   N sockets sending request headers a byte a second
"""
import errno
import gzip
import os
import random
import socket
import sys
import time


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


def profile(samples, names):
    """samples: list of (location ids leaf first, value); names: function names
    (function i+1, location i+1)."""
    strings = [b"", b"samples", b"count"] + names
    p = bytearray(field(1, 2, field(1, 0, 1) + field(2, 0, 2)))
    for ids, v in samples:
        p += field(2, 2, field(1, 2, b"".join(varint(i) for i in ids)) + field(2, 2, varint(v)))
    for i in range(len(names)):
        p += field(4, 2, field(1, 0, i + 1) + field(4, 2, field(1, 0, i + 1)))
        p += field(5, 2, field(1, 0, i + 1) + field(2, 0, 3 + i))
    for s in strings:
        p += field(6, 2, s)
    return bytes(p)


def cmd_deep(out, depth, nsamples, step=1):
    depth, nsamples, step = int(depth), int(nsamples), int(step)
    samples = [([2] + [1] * (depth - i * step), 1) for i in range(nsamples)]
    data = gzip.compress(profile(samples, [b"main.recurse", b"main.leaf"]), 9)
    open(out, "wb").write(data)
    print(f"deep profile: {len(data)} bytes gzipped, depth {depth}, {nsamples} samples")


def cmd_oddname(out, name_hex):
    name = bytes.fromhex(name_hex)
    data = gzip.compress(profile([([2, 1], 5), ([1], 3)], [b"main.main", name]))
    open(out, "wb").write(data)
    print(f"profile with function {name!r}: {len(data)} bytes")


def cmd_emptymsgs(out, n):
    data = field(1, 2, field(1, 0, 1) + field(2, 0, 2)) + b"\x12\x00" * int(n) + \
        field(6, 2, b"") + field(6, 2, b"samples") + field(6, 2, b"count")
    open(out, "wb").write(data)
    print(f"{len(data)} bytes of empty sample messages")


def cmd_readers(path, n):
    bad = {}
    for _ in range(int(n)):
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError as e:
            bad["open " + errno.errorcode.get(e.errno, str(e.errno))] = bad.get("open", 0) + 1
            continue
        # A reader slow to ask for the size must still get its own version's.
        time.sleep(random.random() * 0.005)
        size = os.fstat(fd).st_size
        chunks = []
        while True:
            b = os.read(fd, 65536)
            if not b:
                break
            chunks.append(b)
        os.close(fd)
        data = b"".join(chunks)
        try:
            gzip.decompress(data)
            why = None if len(data) == size else "size differs from fstat"
        except Exception as e:  # CRC, magic, truncation
            why = "gzip: " + type(e).__name__
        if why:
            bad[why] = bad.get(why, 0) + 1
    print(f"reads {n} bad {sum(bad.values())} {bad if bad else ''}")


def cmd_pwrite(path, off):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        os.pwrite(fd, b"x", int(off))
        print("pwrite ok")
    except OSError as e:
        print("pwrite " + errno.errorcode.get(e.errno, str(e.errno)))
    try:
        os.close(fd)
        print("close ok")
    except OSError as e:
        print("close " + errno.errorcode.get(e.errno, str(e.errno)))


def cmd_holdopen(d, nfiles, mb):
    fds, written, refused = [], 0, ""
    chunk = os.urandom(1 << 20)
    for i in range(int(nfiles)):
        fd = os.open(os.path.join(d, f"held{i}.pb"), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        fds.append(fd)
        try:
            for _ in range(int(mb)):
                os.write(fd, chunk)
                written += 1
        except OSError as e:
            refused = errno.errorcode.get(e.errno, str(e.errno))
            break
    time.sleep(0.5)
    print(f"held {len(fds)} files, {written} MiB written, refused {refused or 'none'}", flush=True)
    # Hold them until told (stdin closes), as the review did.
    sys.stdin.read()
    outcomes = {}
    for fd in fds:
        try:
            os.close(fd)
            k = "ok"
        except OSError as e:
            k = errno.errorcode.get(e.errno, str(e.errno))
        outcomes[k] = outcomes.get(k, 0) + 1
    print(f"closed: {outcomes}")


def cmd_chunked(a, b, path):
    da, db = open(a, "rb").read(), open(b, "rb").read()
    fa = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    fb = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    oa = ob = 0
    while oa < len(da) or ob < len(db):
        if oa < len(da):
            oa += os.write(fa, da[oa:oa + 4096])
        if ob < len(db):
            ob += os.write(fb, db[ob:ob + 4096])
    res = []
    for fd in (fa, fb):
        try:
            os.close(fd)
            res.append("ok")
        except OSError as e:
            res.append(errno.errorcode.get(e.errno, str(e.errno)))
    print("chunked writers: " + " ".join(res))


def cmd_slowloris(host, port, n, seconds):
    socks, refused = [], 0
    for _ in range(int(n)):
        s = socket.socket()
        s.settimeout(2)
        try:
            s.connect((host, int(port)))
            s.send(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
            socks.append(s)
        except OSError:
            refused += 1
            s.close()
    print(f"slowloris: {len(socks)} sockets open, {refused} refused at connect", flush=True)
    start = time.time()
    open_at = {}
    while socks and time.time() - start < float(seconds):
        time.sleep(1)
        alive = []
        for s in socks:
            try:
                s.send(b"X")  # one more header byte: idle timeouts never fire
                s.settimeout(0.001)
                try:
                    if s.recv(1) == b"":
                        raise OSError("closed")
                except socket.timeout:
                    pass
                alive.append(s)
            except OSError:
                s.close()
        socks = alive
        open_at[int(time.time() - start)] = len(socks)
    for s in socks:
        s.close()
    print(f"slowloris: still open after {seconds} s: {len(socks)}; open per second: "
          + " ".join(f"{k}:{v}" for k, v in sorted(open_at.items())))


if __name__ == "__main__":
    globals()["cmd_" + sys.argv[1]](*sys.argv[2:])
