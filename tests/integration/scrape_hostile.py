#!/usr/bin/env python3
"""Hostile 'pprof' endpoints for tests/integration/scrape.sh.

Listens on 127.0.0.1:BASE.. BASE+7, one behaviour per port:
  +0 HTML page (200, text/html)     +1 404 with a text body
  +2 redirect loop                  +3 endless body (would be 2 GB)
  +4 slow-loris: headers, then one byte per second
  +5 accepts and never answers      +6 200 with bytes that are not pprof
  +7 endless body without a length (gzip magic, then zeros until cut off)
"""
import socket
import sys
import threading
import time

BASE = int(sys.argv[1])


def reply(conn, status, ctype, body, extra=b""):
    conn.sendall(b"HTTP/1.1 " + status + b"\r\nContent-Type: " + ctype +
                 b"\r\nContent-Length: " + str(len(body)).encode() +
                 b"\r\nConnection: close\r\n" + extra + b"\r\n" + body)


def handle(mode, conn):
    try:
        conn.settimeout(120)
        req = b""
        while b"\r\n\r\n" not in req:
            d = conn.recv(4096)
            if not d:
                return
            req += d
        path = req.split(b" ", 2)[1] if b" " in req else b"/"
        if mode == 0:
            reply(conn, b"200 OK", b"text/html; charset=utf-8",
                  b"<!DOCTYPE html><html><body>Welcome to nginx!</body></html>")
        elif mode == 1:
            reply(conn, b"404 Not Found", b"text/plain; charset=utf-8",
                  b"404 page not found\n")
        elif mode == 2:
            reply(conn, b"302 Found", b"text/plain", b"",
                  b"Location: " + path + b"?again=1\r\n")
        elif mode == 3:
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n"
                         b"Content-Length: 2147483648\r\n\r\n")
            chunk = b"\x1f\x8b" + b"\0" * (1 << 20)
            for _ in range(2048):
                conn.sendall(chunk)
        elif mode == 4:
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n"
                         b"Content-Length: 100000\r\n\r\n")
            for _ in range(100000):
                conn.sendall(b"x")
                time.sleep(1)
        elif mode == 5:
            time.sleep(120)
        elif mode == 6:
            reply(conn, b"200 OK", b"application/octet-stream",
                  b"this is not a profile at all \x00\x01\x02" * 10)
        elif mode == 7:
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n"
                         b"Connection: close\r\n\r\n")
            chunk = b"\x1f\x8b" + b"\0" * (1 << 20)
            for _ in range(2048):
                conn.sendall(chunk)
    except OSError:
        pass
    finally:
        conn.close()


def serve(mode):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", BASE + mode))
    s.listen(64)
    while True:
        c, _ = s.accept()
        threading.Thread(target=handle, args=(mode, c), daemon=True).start()


for m in range(8):
    threading.Thread(target=serve, args=(m,), daemon=True).start()
print("hostile servers on", BASE, "..", BASE + 7, flush=True)
while True:
    time.sleep(3600)
