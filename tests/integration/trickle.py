#!/usr/bin/python3
"""Slow clients for the integration tests: many connections from several
source addresses, each sending one byte every few seconds, held for a
time: a connection the server closes is opened again.  One process, one
thread, epoll (selectors), so that thousands of connections cost little.

    trickle.py --port P [--metrics-port Q] --sources 127.0.0.1,127.0.0.2
               --tls N --plain M --seconds S [--interval I] [--ready FILE]

--tls N connections per source to the HTTPS port P, of three kinds, four
in six of the first, one in six of the others:
  hello    sends a ClientHello a byte at a time, never ending its handshake
           (it holds a slot as well as the others, and costs the machine
           that runs both sides nothing);
  headers  ends its handshake, then sends request headers a byte at a time;
  body     ends its handshake, sends its headers (Content-Length: 1 MB),
           then the body a byte at a time.
--plain M connections per source to the metrics port Q, sending request
headers a byte at a time.  The connections open over the first 2 s; one
that the server closes is opened again after a random delay of 1 to 3
times --reopen seconds (0.5 s), so that those closed together do not come
back together.  --ready FILE is written after the opening.  SIGTERM ends
the run before --seconds.

Prints one JSON line at the end: connections opened, TLS handshakes ended,
connections closed by the server (and how many of those before their
handshake ended), bytes sent, and the most connections open at once.
"""

import argparse
import errno
import heapq
import json
import random
import selectors
import signal
import socket
import ssl
import sys
import time

SERVER_NAME = "vgpu-webhook.vgpu-system.svc"


class Conn:
    __slots__ = ("kind", "source", "port", "sock", "tls", "state", "data",
                 "pos", "opened_at")

    def __init__(self, kind, source, port):
        self.kind = kind
        self.source = source
        self.port = port
        self.sock = None
        self.tls = None
        self.state = "closed"
        self.data = b""
        self.pos = 0
        self.opened_at = 0.0


class Trickle:
    def __init__(self, args):
        self.args = args
        self.sel = selectors.DefaultSelector()
        self.timers = []   # (when, seq, conn)
        self.seq = 0
        self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        self.ctx.check_hostname = False
        self.ctx.verify_mode = ssl.CERT_NONE
        inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
        obj = self.ctx.wrap_bio(inc, out, server_hostname=SERVER_NAME)
        try:
            obj.do_handshake()
        except ssl.SSLWantReadError:
            pass
        self.hello = out.read()
        self.stats = {"opened": 0, "handshakes": 0, "closed_by_server": 0,
                      "closed_in_handshake": 0, "bytes": 0, "max_open": 0}
        self.open = 0
        self.conns = []
        kinds = ("hello", "headers", "hello", "body", "hello", "hello")
        for source in args.sources.split(","):
            for i in range(args.tls):
                self.conns.append(Conn(kinds[i % 6], source, args.port))
            for i in range(args.plain):
                self.conns.append(Conn("plain", source, args.metrics_port))

    def later(self, when, conn):
        self.seq += 1
        heapq.heappush(self.timers, (when, self.seq, conn))

    def headers(self, conn):
        host = "Host: %s\r\n" % SERVER_NAME
        if conn.kind == "body":
            return ("POST /mutate?timeout=10s HTTP/1.1\r\n" + host +
                    "Content-Type: application/json\r\n"
                    "Content-Length: 1000000\r\n\r\n").encode()
        path = "/healthz" if conn.kind == "plain" else "/mutate?timeout=10s"
        return ("GET %s HTTP/1.1\r\n%sX-Slow: " % (path, host)).encode() + \
            b"a" * 4000

    def connect(self, conn, now):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        try:
            s.bind((conn.source, 0))
            rc = s.connect_ex((self.args.host, conn.port))
        except OSError:
            s.close()
            self.later(now + self.args.reopen * random.uniform(1, 3), conn)
            return
        if rc not in (0, errno.EINPROGRESS):
            s.close()
            self.later(now + self.args.reopen * random.uniform(1, 3), conn)
            return
        conn.sock = s
        conn.tls = None
        conn.state = "connecting"
        conn.pos = 0
        conn.opened_at = now
        self.stats["opened"] += 1
        self.open += 1
        self.stats["max_open"] = max(self.stats["max_open"], self.open)
        self.sel.register(s, selectors.EVENT_WRITE, conn)

    def close(self, conn, now, by_server):
        if conn.sock is None:
            return
        if by_server:
            self.stats["closed_by_server"] += 1
            if conn.state in ("connecting", "handshake") or \
                    conn.kind == "hello":
                self.stats["closed_in_handshake"] += 1
        try:
            self.sel.unregister(conn.sock)
        except (KeyError, ValueError):
            pass
        (conn.tls or conn.sock).close()
        conn.sock = conn.tls = None
        conn.state = "closed"
        self.open -= 1
        self.later(now + self.args.reopen * random.uniform(1, 3), conn)

    def start_trickle(self, conn, now):
        conn.state = "trickle"
        if conn.kind == "hello":
            conn.data = self.hello
        elif conn.kind == "body":
            conn.data = b"{" + b" " * 999999
            self.send(conn, self.headers(conn), now)
        else:
            conn.data = self.headers(conn)
        if conn.sock is not None:
            self.sel.modify(conn.sock, selectors.EVENT_READ, conn)
            self.later(now, conn)

    def send(self, conn, data, now):
        try:
            n = (conn.tls or conn.sock).send(data)
            self.stats["bytes"] += n
            return n
        except (ssl.SSLWantWriteError, ssl.SSLWantReadError,
                BlockingIOError):
            return 0
        except (OSError, ssl.SSLError):
            self.close(conn, now, True)
            return 0

    def handshake(self, conn, now):
        try:
            conn.tls.do_handshake()
        except ssl.SSLWantReadError:
            self.sel.modify(conn.sock, selectors.EVENT_READ, conn)
            return
        except ssl.SSLWantWriteError:
            self.sel.modify(conn.sock, selectors.EVENT_WRITE, conn)
            return
        except (OSError, ssl.SSLError):
            self.close(conn, now, True)
            return
        self.stats["handshakes"] += 1
        self.start_trickle(conn, now)

    def event(self, conn, mask, now):
        if conn.state == "connecting":
            err = conn.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if err:
                self.close(conn, now, True)
                return
            if conn.kind in ("headers", "body"):
                self.sel.unregister(conn.sock)
                conn.tls = self.ctx.wrap_socket(
                    conn.sock, server_hostname=SERVER_NAME,
                    do_handshake_on_connect=False)
                conn.sock = conn.tls
                self.sel.register(conn.sock, selectors.EVENT_WRITE, conn)
                conn.state = "handshake"
                self.handshake(conn, now)
            else:
                self.start_trickle(conn, now)
            return
        if conn.state == "handshake":
            self.handshake(conn, now)
            return
        # Trickling: anything readable is the server's answer or its close.
        try:
            got = (conn.tls or conn.sock).recv(4096)
        except (ssl.SSLWantReadError, BlockingIOError):
            return
        except (OSError, ssl.SSLError):
            got = b""
        if not got:
            self.close(conn, now, True)

    def tick(self, conn, now):
        if conn.sock is None:
            if now < self.end:
                self.connect(conn, now)
            return
        if conn.state != "trickle":
            return
        if conn.pos < len(conn.data):
            if self.send(conn, conn.data[conn.pos:conn.pos + 1], now):
                conn.pos += 1
        if conn.sock is not None:
            self.later(now + self.args.interval, conn)

    def run(self):
        start = time.monotonic()
        self.end = start + self.args.seconds
        # SIGTERM ends the run early, with its figures.
        signal.signal(signal.SIGTERM,
                      lambda *_: setattr(self, "end", time.monotonic()))
        ramp = len(self.conns)
        for i, conn in enumerate(self.conns):
            self.later(start + 2.0 * i / max(ramp, 1), conn)
        ready = False
        while True:
            now = time.monotonic()
            if now >= self.end:
                break
            while self.timers and self.timers[0][0] <= now:
                _, _, conn = heapq.heappop(self.timers)
                self.tick(conn, now)
            if not ready and self.args.ready and now >= start + 2.0:
                with open(self.args.ready, "w") as f:
                    f.write("%d\n" % self.open)
                ready = True
            wait = 0.05
            if self.timers:
                wait = max(0.0, min(wait, self.timers[0][0] - now))
            for key, mask in self.sel.select(wait):
                self.event(key.data, mask, time.monotonic())
        self.stats["open_at_end"] = self.open
        for conn in self.conns:
            if conn.sock is not None:
                (conn.tls or conn.sock).close()
        print(json.dumps(self.stats))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--metrics-port", type=int, default=0)
    p.add_argument("--sources", default="127.0.0.1")
    p.add_argument("--tls", type=int, default=0)
    p.add_argument("--plain", type=int, default=0)
    p.add_argument("--seconds", type=float, default=30.0)
    p.add_argument("--interval", type=float, default=2.0)
    p.add_argument("--reopen", type=float, default=0.5)
    p.add_argument("--ready", default="")
    args = p.parse_args()
    if args.plain and not args.metrics_port:
        p.error("--plain needs --metrics-port")
    Trickle(args).run()


if __name__ == "__main__":
    sys.exit(main())
