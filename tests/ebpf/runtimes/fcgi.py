#!/usr/bin/env python3
"""A FastCGI client for the tests (cgi-fcgi is not installed): requests
SCRIPT from the php-fpm listening on the unix socket SOCK, from THREADS
threads, for SECS seconds; prints "requests ok failed"."""
import os
import socket
import struct
import sys
import threading
import time


def record(kind, content):
    return struct.pack(">BBHHBx", 1, kind, 1, len(content), 0) + content


def pair(k, v):
    def length(n):
        return bytes([n]) if n < 128 else struct.pack(">I", n | 0x80000000)
    k, v = k.encode(), v.encode()
    return length(len(k)) + length(len(v)) + k + v


def recv_exact(s, n):
    b = b""
    while len(b) < n:
        c = s.recv(n - len(b))
        if not c:
            return None
        b += c
    return b


def request(sock, script):
    params = {"SCRIPT_FILENAME": script, "SCRIPT_NAME": "/" + os.path.basename(script),
              "REQUEST_URI": "/" + os.path.basename(script), "DOCUMENT_ROOT": os.path.dirname(script),
              "REQUEST_METHOD": "GET", "QUERY_STRING": "", "SERVER_PROTOCOL": "HTTP/1.1",
              "GATEWAY_INTERFACE": "CGI/1.1", "REMOTE_ADDR": "127.0.0.1",
              "SERVER_NAME": "localhost", "SERVER_PORT": "80"}
    body = b"".join(pair(k, v) for k, v in params.items())
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(30)
    s.connect(sock)
    s.sendall(record(1, struct.pack(">HB5x", 1, 0)) + record(4, body) + record(4, b"") +
              record(5, b""))
    out = b""
    while True:
        h = recv_exact(s, 8)
        if h is None:
            break
        _, kind, _, clen, plen = struct.unpack(">BBHHBx", h)
        c = recv_exact(s, clen + plen)
        if c is None:
            break
        if kind == 6:
            out += c[:clen]
        elif kind == 3:
            break
    s.close()
    return out


def main():
    sock, script, secs, threads = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
    end = time.monotonic() + secs
    counts = [0, 0]
    lock = threading.Lock()

    def run():
        while time.monotonic() < end:
            try:
                r = request(sock, script)
                good = b"\r\n\r\n" in r and b"Status:" not in r and r.split(b"\r\n\r\n", 1)[1].strip().isdigit()
            except OSError:
                good = False
                time.sleep(0.1)
            with lock:
                counts[0 if good else 1] += 1

    ts = [threading.Thread(target=run) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    print(counts[0] + counts[1], counts[0], counts[1])


if __name__ == "__main__":
    main()
