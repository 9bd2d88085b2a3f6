#!/usr/bin/env python3
"""Tools for tests/integration/hardening_memory.sh: hand-encoded pprof
profiles (python3 has no protobuf module here) and a keep-alive HTTP pusher.
Every subcommand prints one summary line the shell test checks.

  tiny OUT                    a gzipped profile of one sample, one frame
  inline OUT NLINES NROOTS    a gzipped profile: one location of NLINES inlined
                              lines (functions), NROOTS samples, each of which
                              calls it from a root frame of its own
  services URL FILE FIRST N   push FILE as services svc-FIRST .. svc-(FIRST+N-1)
                              (profefe API, one connection): counts by status,
                              the first refusal's index, status and reason
"""
import gzip
import http.client
import sys
import urllib.parse


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


class Profile:
    """pprof's Profile message with CPU sample types, built by hand."""

    def __init__(self):
        self.strings = [b""]
        self.index = {b"": 0}
        self.body = bytearray()
        st = field(1, 0, self.s("samples")) + field(2, 0, self.s("count"))
        self.body += field(1, 2, st)
        st = field(1, 0, self.s("cpu")) + field(2, 0, self.s("nanoseconds"))
        self.body += field(1, 2, st)
        self.nfunc = 0
        self.nloc = 0

    def s(self, text):
        b = text.encode()
        if b not in self.index:
            self.index[b] = len(self.strings)
            self.strings.append(b)
        return self.index[b]

    def function(self, name):
        self.nfunc += 1
        self.body += field(5, 2, field(1, 0, self.nfunc) + field(2, 0, self.s(name)) +
                           field(4, 0, self.s("gen.go")))
        return self.nfunc

    def location(self, funcs):
        """funcs: function ids, leaf first (pprof: the last line is the caller)."""
        self.nloc += 1
        lines = b"".join(field(4, 2, field(1, 0, f) + field(2, 0, i + 1))
                         for i, f in enumerate(funcs))
        self.body += field(4, 2, field(1, 0, self.nloc) + field(3, 0, 0x1000 + self.nloc) + lines)
        return self.nloc

    def sample(self, locs, count, ns):
        self.body += field(2, 2, field(1, 2, b"".join(varint(l) for l in locs)) +
                           field(2, 2, varint(count) + varint(ns)))

    def encode(self):
        out = bytearray(self.body)
        for text in self.strings:
            out += field(6, 2, text)
        out += field(11, 2, field(1, 0, self.s("cpu")) + field(2, 0, self.s("nanoseconds")))
        out += field(12, 0, 10000000)
        return gzip.compress(bytes(out), 9)


def cmd_tiny(out):
    p = Profile()
    p.sample([p.location([p.function("main.work")])], 1, 10000000)
    data = p.encode()
    open(out, "wb").write(data)
    print("tiny: %d bytes" % len(data))


def cmd_inline(out, nlines, nroots):
    p = Profile()
    chain = [p.function("pkg.inlined%04d" % i) for i in range(nlines)]
    big = p.location(chain)
    for r in range(nroots):
        root = p.location([p.function("main.root%04d" % r)])
        p.sample([big, root], 1, 10000000)
    data = p.encode()
    open(out, "wb").write(data)
    print("inline: %d lines, %d roots, %d bytes gzipped" % (nlines, nroots, len(data)))


def cmd_services(url, path, first, n):
    u = urllib.parse.urlsplit(url)
    body = open(path, "rb").read()
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
    counts = {}
    refused = None
    for i in range(first, first + n):
        q = urllib.parse.urlencode({"service": "svc-%05d" % i, "type": "cpu"})
        for attempt in range(2):
            try:
                conn.request("POST", "/api/0/profiles?" + q, body,
                             {"Content-Type": "application/octet-stream"})
                r = conn.getresponse()
                text = r.read()
                break
            except (http.client.HTTPException, OSError):
                conn.close()
                conn = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
        else:
            counts["error"] = counts.get("error", 0) + 1
            continue
        counts[r.status] = counts.get(r.status, 0) + 1
        if r.status != 200 and refused is None:
            refused = (i, r.status, text.decode(errors="replace").replace("\n", " ")[:300])
    conn.close()
    print("services: %s; first refused: %s" % (
        " ".join("%s=%d" % (k, v) for k, v in sorted(counts.items(), key=str)),
        "none" if refused is None else "#%d status %d: %s" % refused))


def main():
    a = sys.argv[1:]
    if a[:1] == ["tiny"] and len(a) == 2:
        cmd_tiny(a[1])
    elif a[:1] == ["inline"] and len(a) == 4:
        cmd_inline(a[1], int(a[2]), int(a[3]))
    elif a[:1] == ["services"] and len(a) == 5:
        cmd_services(a[1], a[2], int(a[3]), int(a[4]))
    else:
        sys.stderr.write(__doc__)
        sys.exit(2)


if __name__ == "__main__":
    main()
