#!/usr/bin/env python3
"""A blind HTTP client, for tests/integration/hardening_peer.sh: it sends
whole requests and does not wait for the answers.

  peer_close.py [options] HOST PORT METHOD PATH

--mode close   send the request, close the socket at once (the socket becomes
               an orphan, then a TIME_WAIT mini-socket the kernel reports as
               uid 0 without owner)
--mode shut    send, shut down the sending side, close
--mode rst     send, close with a reset (SO_LINGER 0: the socket is gone)
--mode pipe    send a request for /healthz and the request after it on the
               same connection, close at once: the second is read after the
               client's socket is closed, whatever the timing
--mode wait    send and read the answer (a control: an established client)

-n N requests (each on its own connection), -j J at once; --body FILE,
--type and --encoding set the body and its Content-Type/-Encoding. Prints
one line: the mode, the count sent, and for --mode wait the status codes.
"""
import argparse
import collections
import socket
import struct
import sys
import threading


def one(args, body, codes, lock):
    fam = socket.AF_INET6 if ":" in args.host else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.settimeout(30)
    try:
        s.connect((args.host, args.port))
        host = f"[{args.host}]" if fam == socket.AF_INET6 else args.host
        head = f"{args.method} {args.path} HTTP/1.1\r\nHost: {host}:{args.port}\r\n"
        if args.type:
            head += f"Content-Type: {args.type}\r\n"
        if args.encoding:
            head += f"Content-Encoding: {args.encoding}\r\n"
        if body is not None:
            head += f"Content-Length: {len(body)}\r\n"
        req = head.encode() + b"\r\n" + (body or b"")
        if args.mode == "pipe":
            req = f"GET /healthz HTTP/1.1\r\nHost: {host}:{args.port}\r\n\r\n".encode() + req
        if args.mode != "wait":
            # Corked: the request leaves with the FIN of close() in one
            # segment, so the server reads it from a closed socket.
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, 1)
        s.sendall(req)
        if args.mode == "shut":
            s.shutdown(socket.SHUT_WR)
        elif args.mode == "rst":
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        elif args.mode == "wait":
            data = b""
            while b"\r\n" not in data:
                chunk = s.recv(4096)
                if not chunk:
                    break
                data += chunk
            code = data.split(b" ", 2)[1].decode() if data.startswith(b"HTTP/") else "none"
            with lock:
                codes[code] += 1
    except OSError as e:
        with lock:
            codes["error:" + type(e).__name__] += 1
    finally:
        s.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("host")
    ap.add_argument("port", type=int)
    ap.add_argument("method")
    ap.add_argument("path")
    ap.add_argument("--mode", default="close", choices=["close", "shut", "rst", "pipe", "wait"])
    ap.add_argument("-n", type=int, default=1)
    ap.add_argument("-j", type=int, default=1)
    ap.add_argument("--body")
    ap.add_argument("--type")
    ap.add_argument("--encoding")
    args = ap.parse_args()
    body = open(args.body, "rb").read() if args.body else None
    codes = collections.Counter()
    lock = threading.Lock()
    left = list(range(args.n))

    def worker():
        while True:
            with lock:
                if not left:
                    return
                left.pop()
            one(args, body, codes, lock)

    ts = [threading.Thread(target=worker) for _ in range(max(1, args.j))]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    print(f"{args.mode} sent={args.n} " + " ".join(f"{k}={v}" for k, v in sorted(codes.items())))


if __name__ == "__main__":
    sys.exit(main())
