#!/usr/bin/python3
"""Integration tests of `vgpu-webhook serve`: the real binary on 127.0.0.1,
driven over TLS the way the API server drives it (pytest).

    make integration [INTEGRATION_TESTS="rotation sigterm"]
    /usr/bin/python3 -m pytest tests/integration/run.py [-k NAME]

From the repository root, after `make`.  The binary is build/vgpu-webhook,
or $VGPU_WEBHOOK (which may carry a wrapper prefix).  Each corpus case
(tests/fixtures/cases) is one test, test_corpus[NAME].  Some tests note
what they measured; the notes are printed before pytest's summary.
"""

import collections
import json
import os
import re
import select
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
import warnings

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (BODY_MAX, BODY_MEMORY, DISCARD_MAX,  # noqa: E402
                     CertDir, Server, assert_alive, check_good_answer,
                     command, corpus, expired_pair, free_port, good_review,
                     read_response, temp_dir)


class Env:
    """What every test shares: three independent CAs, each with a serving
    pair and a client pair."""

    def __init__(self):
        self.tmp = temp_dir("vgpu-integration-")
        self.certs = CertDir(os.path.join(self.tmp, "ca1"))
        self.other = CertDir(os.path.join(self.tmp, "ca2"))
        self.third = CertDir(os.path.join(self.tmp, "ca3"), key_type="rsa")

    def cleanup(self):
        shutil.rmtree(self.tmp, ignore_errors=True)


@pytest.fixture(scope="module")
def env():
    e = Env()
    yield e
    e.cleanup()


def padded(review, size):
    """review as JSON, padded with trailing spaces to exactly size bytes."""
    data = json.dumps(review).encode()
    assert len(data) <= size
    return data + b" " * (size - len(data))


def request_head(length=None, path="/mutate?timeout=10s", chunked=False,
                 extra=""):
    head = ("POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"
            % (path, "vgpu-webhook.vgpu-system.svc:443"))
    if chunked:
        head += "Transfer-Encoding: chunked\r\n"
    elif length is not None:
        head += "Content-Length: %d\r\n" % length
    return (head + extra + "\r\n").encode()


def chunked(data, piece=256 << 10):
    out = bytearray()
    for i in range(0, len(data), piece):
        part = data[i:i + piece]
        out += b"%x\r\n" % len(part) + part + b"\r\n"
    return bytes(out + b"0\r\n\r\n")


def send_then_read(sock, data):
    """Sends data (ignoring a reset: the server may answer early and close)
    and reads the answer."""
    try:
        sock.sendall(data)
    except OSError:
        pass
    return read_response(sock)


def closed_by_peer(sock, wait=0.5):
    """Whether the server has closed sock: reads (a TLS alert, an error
    answer) until end of file or an error; silence means open."""
    sock.settimeout(wait)
    try:
        while sock.recv(4096):
            pass
        return True
    except (socket.timeout, ssl.SSLWantReadError):
        return False
    except (OSError, ssl.SSLError):
        return True


def counters(m):
    return {o: m['vgpu_webhook_requests_total{outcome="%s"}' % o]
            for o in ("patched", "allowed", "denied", "error")}


# --------------------------------------------------------------------------
# The corpus over HTTPS


def run_case(srv, conn, case):
    """Sends one corpus case and, when patched, its patched pod again (as
    written and as the API server re-defaults it).  Also compares the bytes
    with `vgpu-webhook review`.  Returns the failures."""
    status, headers, body = srv.post(case.review_bytes, conn=conn)
    if status != 200:
        return ["HTTP %d: %r" % (status, body[:300])]
    if headers.get("content-type") != "application/json":
        return ["content type %r" % headers.get("content-type")]
    fails = corpus.check_answer(case, body)
    cli = subprocess.run(command() + ["review"] + case.cli_args() +
                         [case.review_path], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, timeout=60)
    if cli.returncode != 0 or cli.stdout != body + b"\n":
        fails.append("serve and review answer differently:\n  serve  %r\n"
                     "  review %r" % (body[:200], cli.stdout[:200]))
    if fails or not case.patched:
        return fails
    patched = corpus.apply_patch(case.object, corpus.decode_patch(json.loads(body)))
    pods = [patched]
    redefaulted = corpus.api_server_redefault(patched)
    if redefaulted != patched:
        pods.append(redefaulted)
    for pod in pods:
        again = corpus.resend_review(case, pod)
        status, headers, body2 = srv.post(json.dumps(again).encode(), conn=conn)
        if status != 200:
            fails.append("resend: HTTP %d" % status)
            continue
        fails += ["resend: " + f for f in corpus.check_resend(case, body2, again)]
    return fails


def _corpus_groups():
    """The corpus cases grouped by config and flags, in order."""
    groups = collections.OrderedDict()
    for case in corpus.load_cases():
        groups.setdefault((case.config_path, tuple(case.args)), []).append(case)
    return groups


# Cases that share a config and flags come together and share one server.
CORPUS = [case for cases in _corpus_groups().values() for case in cases]


class CorpusServers:
    """The server of the current group of corpus cases, and one kept-alive
    connection to it; the exit status of each server once stopped."""

    def __init__(self, env):
        self.env = env
        self.key = None
        self.srv = None
        self.conn = None
        self.exits = []

    def server(self, case):
        key = (case.config_path, tuple(case.args))
        if key != self.key:
            self.stop()
            self.srv = Server(self.env.certs, args=key[1], config=key[0],
                              metrics=False)
            self.key = key
            self.conn = self.srv.conn()
        return self.srv

    def reconnect(self):
        self.conn.close()
        self.conn = self.srv.conn()

    def stop(self):
        if self.srv is None:
            return
        self.conn.close()
        self.exits.append((self.key, self.srv.stop()))
        self.srv = self.key = self.conn = None


@pytest.fixture(scope="module")
def corpus_servers(env):
    servers = CorpusServers(env)
    yield servers
    servers.stop()


@pytest.mark.parametrize("case", CORPUS, ids=lambda c: c.name)
def test_corpus(corpus_servers, case):
    """Every recorded case, sent as the API server sends it."""
    srv = corpus_servers.server(case)
    try:
        fails = run_case(srv, corpus_servers.conn, case)
    except Exception:
        corpus_servers.reconnect()
        raise
    if fails:
        pytest.fail("\n".join(fails), pytrace=False)


def test_corpus_exit(corpus_servers):
    """Each server of the corpus exits 0 on SIGTERM."""
    corpus_servers.stop()
    bad = ["server exited %s (config %s, flags %s)" % (rc, key[0], list(key[1]))
           for key, rc in corpus_servers.exits if rc != 0]
    assert not bad, "\n".join(bad)


# --------------------------------------------------------------------------
# Error paths


TOO_LARGE_BODY = b"request body larger than %d bytes\n" % BODY_MAX


def go_json(review):
    """review as the API server writes it (Go's encoding/json): kind and
    apiVersion first, and <, > and & escaped as \\u003c, \\u003e, \\u0026."""
    ordered = {"kind": review["kind"], "apiVersion": review["apiVersion"]}
    ordered.update(review)
    text = json.dumps(ordered, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e") \
        .replace("&", "\\u0026").encode()


def check_denial(status, body, review, code, size=None):
    """Raises unless body is the AdmissionReview denial of review with
    status code (and the body's size in its message)."""
    assert status == 200, (status, body[:300])
    answer = json.loads(body)
    assert answer["apiVersion"] == review["apiVersion"], answer
    assert answer["kind"] == "AdmissionReview", answer
    resp = answer["response"]
    assert resp["uid"] == review["request"]["uid"], resp
    assert resp["allowed"] is False, resp
    assert resp["status"]["code"] == code, resp
    if size is not None:
        assert " %d bytes" % size in resp["status"]["message"], resp


def test_body_limit(env):
    """Up to 40 MiB a body is decided.  Past it an AdmissionReview is read
    to its end and denied (HTTP 200, code 413, its size), with a
    Content-Length or chunked, v1 or v1beta1, and the connection goes on; a
    body that is no AdmissionReview gets 413 with its exact line; a
    Content-Length more than 64 MiB past the limit gets that 413 before any
    byte of the body, and a chunked body that goes that far has its
    connection closed."""
    with Server(env.certs) as srv:
        m0 = counters(srv.metrics())
        # Too large to read: answered before any byte of the body.
        s = srv.raw_tls()
        s.sendall(request_head(BODY_MAX + DISCARD_MAX + 1))
        status, headers, body = read_response(s)
        s.close()
        assert status == 413, status
        assert body == TOO_LARGE_BODY, body
        assert headers["content-type"] == "text/plain; charset=utf-8"
        assert_alive(srv)

        # An AdmissionReview past the limit: a denial, and keep-alive.
        for use_chunks, api in ((False, "admission.k8s.io/v1"),
                                (True, "admission.k8s.io/v1beta1")):
            review = good_review()
            review["apiVersion"] = api
            data = go_json(review)
            data += b" " * (BODY_MAX + 1 - len(data))
            s = srv.raw_tls(timeout=60)
            status, headers, body = send_then_read(
                s, request_head(chunked=True) + chunked(data) if use_chunks
                else request_head(len(data)) + data)
            check_denial(status, body, review, 413, BODY_MAX + 1)
            assert headers["content-type"] == "application/json", headers
            # The audit fields of the denial in its decision line.
            assert srv.wait_log(r"decision uid=%s .*outcome=denied .*code=413 "
                                r"message=.*%d bytes" % (re.escape(review["request"]["uid"]),
                                                         BODY_MAX + 1), 5)
            again = good_review()
            more = json.dumps(again).encode()
            s.sendall(request_head(len(more)) + more)
            check_good_answer(*read_response(s), again)
            s.close()

        # Not an AdmissionReview: 413 once the body is in.
        for use_chunks in (False, True):
            data = b"[" + b" " * BODY_MAX + b"]"
            s = srv.raw_tls(timeout=60)
            status, _, body = send_then_read(
                s, request_head(chunked=True) + chunked(data) if use_chunks
                else request_head(len(data)) + data)
            s.close()
            assert status == 413 and body == TOO_LARGE_BODY, (status, body)

        # Chunked beyond what is read: closed, never answered.
        s = srv.raw_tls(timeout=60)
        piece = b" " * (1 << 20)
        head = go_json(good_review())
        try:
            s.sendall(request_head(chunked=True) + b"%x\r\n" % len(head) +
                      head + b"\r\n")
            for _ in range((BODY_MAX + DISCARD_MAX) // len(piece) + 2):
                s.sendall(b"%x\r\n" % len(piece) + piece + b"\r\n")
        except OSError:
            pass
        assert closed_by_peer(s, 5.0), "still open past the discard limit"
        s.close()
        assert_alive(srv)

        # Exactly 40 MiB, with a length and chunked: decided.
        for use_chunks in (False, True):
            review = good_review()
            data = padded(review, BODY_MAX)
            s = srv.raw_tls(timeout=60)
            status, headers, body = send_then_read(
                s, request_head(chunked=True) + chunked(data, 1 << 20)
                if use_chunks else request_head(len(data)) + data)
            s.close()
            check_good_answer(status, headers, body, review)
        m1 = counters(srv.metrics())
        assert m1["error"] - m0["error"] == 3, (m0, m1)
        assert m1["denied"] - m0["denied"] == 2, (m0, m1)
        assert m1["patched"] - m0["patched"] == 6, (m0, m1)
        assert srv.stop() == 0


def escaped_pod_review(operation, value, extra_env=()):
    """A Pod review whose container has env BIG=value; an UPDATE carries
    the same pod as oldObject."""
    review = good_review()
    req = review["request"]
    req["operation"] = operation
    c = req["object"]["spec"]["containers"][0]
    c["env"] = [{"name": "BIG", "value": value}] + list(extra_env)
    if operation == "UPDATE":
        req["oldObject"] = json.loads(json.dumps(req["object"]))
    return review


def test_escaped_reviews(env):
    """What the API server sends for a pod it takes (a request body of at
    most 3 MiB) is decided, however its characters are escaped: a CREATE
    with 3 MiB of "<" in an env value (18 MiB once each is \\u003c) and
    NVIDIA_VISIBLE_DEVICES=all is denied by the env guard, and an UPDATE
    that carries such a pod as object and as oldObject (36 MiB) is allowed
    as any other UPDATE."""
    value = "<" * (3 << 20)
    with Server(env.certs) as srv:
        review = escaped_pod_review("CREATE", value, [
            {"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}])
        data = go_json(review)
        assert len(data) > 18 << 20, len(data)
        status, _, body = srv.post(data)
        check_denial(status, body, review, 403)
        assert b"NVIDIA_VISIBLE_DEVICES" in body, body[:500]
        review = escaped_pod_review("UPDATE", value)
        data = go_json(review)
        assert 36 << 20 < len(data) <= BODY_MAX, len(data)
        status, _, body = srv.post(data)
        assert status == 200, (status, body[:300])
        resp = json.loads(body)["response"]
        assert resp["uid"] == review["request"]["uid"] and resp["allowed"], resp
        assert srv.stop() == 0


def send_in_pieces(sock, data, piece=64 << 10):
    """Sends data piece by piece, as a client on a slow link."""
    for i in range(0, len(data), piece):
        sock.sendall(data[i:i + piece])


def memory_closed(srv):
    return srv.metrics()['vgpu_webhook_connections_closed_total{'
                         'listener="https",reason="memory"}']


def test_body_memory_hoarders(env):
    """A Content-Length takes no body memory before its bytes come: two
    connections that announce 40 MiB and 24 MiB (the whole 64 MiB), send
    one byte and stall hold nothing that matters, and a large review sent
    in pieces meanwhile is decided, not refused for want of memory."""
    with Server(env.certs) as srv:
        hoarders = []
        for source, length in (("127.0.0.2", 41943040),
                               ("127.0.0.3", 25165824)):
            h = srv.raw_tls(timeout=60, source=source)
            h.sendall(request_head(length) + b"{")
            hoarders.append(h)
        time.sleep(0.3)
        for size in (64 << 10, 8 << 20):
            review = good_review()
            s = srv.raw_tls(timeout=60)
            send_in_pieces(s, request_head(size) + padded(review, size))
            check_good_answer(*read_response(s), review)
            s.close()
        for h in hoarders:
            assert not closed_by_peer(h, 0.1), "a hoarder was closed"
            h.close()
        assert memory_closed(srv) == 0
        assert srv.stop() == 0


def test_body_memory(env):
    """Bodies held at once share 64 MiB, an address at most 48 MiB of it.
    A body that finds no room is read to its end and denied (code 503),
    an AdmissionReview, or answered 503 when it is none; when a connection
    whose body is slow (below 256 KiB/s over the last 2 to 4 s) holds the
    memory, it is closed for the new body (reason memory), which is then
    decided, and a connection whose body comes faster is never closed for
    another."""
    big = 40 << 20
    with Server(env.certs) as srv:
        # The share of an address: a holder whose body goes on at 640 KiB/s
        # holds 32 MiB (30 MiB in); 20 MiB more from its address do not
        # fit its share, from another address they do.
        holder = srv.raw_tls(timeout=60, source="127.0.0.2")
        holder.sendall(request_head(big) + b" " * (30 << 20))
        stop = threading.Event()

        def trickle():
            while not stop.wait(0.1):
                holder.sendall(b" " * (64 << 10))
        t = threading.Thread(target=trickle)
        t.start()
        try:
            size = 20 << 20
            review = good_review()
            s = srv.raw_tls(timeout=60, source="127.0.0.2")
            status, _, body = send_then_read(
                s, request_head(size) + padded(review, size))
            check_denial(status, body, review, 503, size)
            status, _, body = send_then_read(
                s, request_head(size) + b"[" + b" " * (size - 2) + b"]")
            assert status == 503 and body == b"server busy\n", (status, body)
            s.close()
            review = good_review()
            s = srv.raw_tls(timeout=60, source="127.0.0.4")
            check_good_answer(*send_then_read(
                s, request_head(size) + padded(review, size)), review)
            s.close()
        finally:
            stop.set()
            t.join()
        assert not closed_by_peer(holder, 0.1), "a fresh holder was closed"
        holder.close()
        assert memory_closed(srv) == 0

        # Two bodies stalled at 30 MiB hold the whole 64 MiB; 4 s on, they
        # are slow, and the one whose last byte is older is closed for a
        # new body.
        held = []
        for source in ("127.0.0.2", "127.0.0.3"):
            review = good_review()
            data = padded(review, big)
            h = srv.raw_tls(timeout=60, source=source)
            h.sendall(request_head(big) + data[:30 << 20])
            held.append((h, review, data))
            time.sleep(0.2)
        time.sleep(4.5)
        review = good_review()
        s = srv.raw_tls(timeout=60)
        send_in_pieces(s, request_head(4 << 20) + padded(review, 4 << 20))
        check_good_answer(*read_response(s), review)
        s.close()
        assert closed_by_peer(held[0][0], 2.0), "the stalled body kept its memory"
        assert memory_closed(srv) == 1
        # The other one was not needed: it is whole when it goes on.
        h, review, data = held[1]
        h.sendall(data[30 << 20:])
        check_good_answer(*read_response(h), review)
        for h, _, _ in held:
            h.close()
        assert memory_closed(srv) == 1
        assert srv.stop() == 0


def test_body_memory_tricklers(env):
    """Two addresses cannot keep the body memory by trickling: from
    127.0.0.2 and 127.0.0.3, bodies that came fast to 32 MiB and 16 MiB
    (holding 40 MiB and 24 MiB: all of it) then go on with a byte every
    0.5 s;
    4.5 s later a review of 64 KiB sent in two writes from 127.0.0.1 is
    decided (a patch), not denied for want of memory: the larger slow
    holder is closed for it, and only that one."""
    with Server(env.certs) as srv:
        holders = []
        for source, length, sent in (("127.0.0.2", 40 << 20, (32 << 20) + 1),
                                     ("127.0.0.3", 24 << 20, (16 << 20) + 1)):
            h = srv.raw_tls(timeout=60, source=source)
            h.sendall(request_head(length) + b" " * sent)
            holders.append(h)
        stop = threading.Event()

        def trickle():
            while not stop.wait(0.5):
                for h in holders:
                    try:
                        h.sendall(b" ")
                    except OSError:
                        pass
        t = threading.Thread(target=trickle)
        t.start()
        try:
            time.sleep(4.5)
            review = good_review()
            data = request_head(64 << 10) + padded(review, 64 << 10)
            s = srv.raw_tls(timeout=60)
            s.sendall(data[:len(data) // 2])
            time.sleep(0.05)
            s.sendall(data[len(data) // 2:])
            status, headers, body = read_response(s)
            s.close()
        finally:
            stop.set()
            t.join()
        check_good_answer(status, headers, body, review)
        assert memory_closed(srv) == 1
        assert closed_by_peer(holders[0], 2.0), "the larger trickler kept"
        assert not closed_by_peer(holders[1], 0.1), "both tricklers closed"
        for h in holders:
            h.close()
        assert srv.stop() == 0


def test_content_length_lies(env):
    """A Content-Length shorter than the body: only that many bytes are the
    body, which is then not JSON (400), never a truncated review answered
    as one; the rest of the bytes are no request either.  A length longer
    than what comes: the request waits for its body and is never answered
    from part of it."""
    with Server(env.certs) as srv:
        review = good_review()
        data = json.dumps(review).encode()
        s = srv.raw_tls()
        s.sendall(request_head(len(data) - 10) + data)
        status, headers, body = read_response(s)
        assert status == 400, (status, body)
        assert body.startswith(b"request body is not JSON"), body
        s.close()
        assert_alive(srv)

        s = srv.raw_tls(timeout=2.0)
        s.sendall(request_head(len(data) + 10) + data)
        try:
            got = s.recv(100)
        except socket.timeout:
            got = None
        assert got is None, "answered a body shorter than its length: %r" % got
        s.close()
        assert_alive(srv)
        m = counters(srv.metrics())
        assert m["error"] == 1 and m["patched"] == 2, m
        assert srv.stop() == 0


def test_bad_requests(env):
    """400 (not JSON, not an AdmissionReview) with a one-line reason, 405
    with Allow, 404; the server answers a good review after each."""
    with Server(env.certs) as srv:
        bodies = [b"", b"not json", b"[1,2]", b'{"kind":"AdmissionReview"}',
                  b'{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview",'
                  b'"request":{"uid":""}}',
                  b'{"apiVersion":"admission.k8s.io/v1","apiVersion":"x"}',
                  b"\xff\xfe\x00garbage"]
        for b in bodies:
            status, headers, body = srv.post(b)
            assert status == 400, (b, status, body)
            assert headers["content-type"].startswith("text/plain"), headers
            assert body and b"\n" not in body.rstrip(b"\n"), body
            assert_alive(srv)
        for method, path, allow in (("GET", "/mutate", "POST"),
                                    ("PUT", "/webhook?timeout=10s", "POST"),
                                    ("DELETE", "/mutate", "POST"),
                                    ("POST", "/healthz", "GET, HEAD"),
                                    ("POST", "/readyz", "GET, HEAD")):
            status, headers, _ = srv.request(method, path, body=b"{}")
            assert status == 405, (method, path, status)
            assert headers.get("allow") == allow, (method, path, headers)
            assert_alive(srv)
        for path in ("/", "/mutate/", "/mutatex", "/metrics", "/webhook/x",
                     "/%2e%2e/mutate"):
            status, _, _ = srv.request("POST", path, body=b"{}")
            assert status == 404, (path, status)
            assert_alive(srv)
        # Both paths, any query string.
        for path in ("/webhook", "/webhook?timeout=10s", "/mutate?a=b&c"):
            review = good_review()
            check_good_answer(*srv.post(review, path=path), review)
        assert srv.stop() == 0


def test_tls_versions(env):
    """TLS 1.2 and 1.3 are served; TLS 1.1 and plain HTTP are not."""
    with Server(env.certs, metrics=False) as srv:
        for version, name in ((ssl.TLSVersion.TLSv1_2, "TLSv1.2"),
                              (ssl.TLSVersion.TLSv1_3, "TLSv1.3")):
            conn = srv.conn(srv.context(version=version))
            review = good_review()
            check_good_answer(*srv.post(review, conn=conn), review)
            assert conn.sock.version() == name, conn.sock.version()
            conn.close()
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        ctx.set_ciphers("DEFAULT:@SECLEVEL=0")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            ctx.minimum_version = ssl.TLSVersion.TLSv1_1
            ctx.maximum_version = ssl.TLSVersion.TLSv1_1
        # A refusal by the server, not a client that cannot offer TLS 1.1.
        no_tls11 = None
        try:
            with socket.create_connection(("127.0.0.1", srv.port), 5) as raw:
                with ctx.wrap_socket(raw, server_hostname="x") as s:
                    raise AssertionError("TLS 1.1 accepted: %s" % s.version())
        except ssl.SSLError as e:
            if e.reason == "NO_PROTOCOLS_AVAILABLE":
                no_tls11 = str(e)
        with socket.create_connection(("127.0.0.1", srv.port), 5) as raw:
            raw.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            try:
                got = raw.recv(100)
            except ConnectionResetError:
                got = b""
            assert not got.startswith(b"HTTP/1.1 200"), got
        assert_alive(srv)
        assert srv.stop() == 0
    if no_tls11:
        pytest.skip("the refusal of TLS 1.1 is not checked: this Python's "
                    "OpenSSL cannot offer TLS 1.1 (%s)" % no_tls11)


def test_probes(env):
    """/healthz and /readyz on both ports; /metrics only on the metrics
    port, in Prometheus text format."""
    with Server(env.certs) as srv:
        for method in ("GET", "HEAD"):
            for path in ("/healthz", "/readyz", "/healthz?verbose"):
                assert srv.request(method, path)[0] == 200, (method, path)
                assert srv.plain_get(path, method)[0] == 200, (method, path)
        status, headers, body = srv.plain_get("/metrics")
        assert status == 200
        assert headers["content-type"].startswith("text/plain; version=0.0.4")
        assert srv.request("GET", "/metrics")[0] == 404
        assert srv.plain_get("/mutate")[0] == 404
        assert srv.plain_get("/metrics", "POST")[0] == 405
        assert srv.stop() == 0


def test_client_certificates(env):
    """With --tls-client-ca-file: 403 without a client certificate or with
    one from another CA, and the body is not processed; a certificate of
    the CA is served; probes need no certificate."""
    with Server(env.certs, client_ca=env.certs.ca) as srv:
        good = srv.context(env.certs.client_cert, env.certs.client_key)
        none = srv.context()
        foreign = srv.context(env.other.client_cert, env.other.client_key)
        foreign12 = srv.context(env.other.client_cert, env.other.client_key,
                                version=ssl.TLSVersion.TLSv1_2)
        good12 = srv.context(env.certs.client_cert, env.certs.client_key,
                             version=ssl.TLSVersion.TLSv1_2)
        serving_as_client = srv.context(env.certs.cert, env.certs.key)
        mark = len(srv.log_lines())
        refused_uids = []
        for name, ctx in (("none", none), ("other CA", foreign),
                          ("other CA, TLS 1.2", foreign12),
                          ("serverAuth-only certificate", serving_as_client)):
            review = good_review()
            refused_uids.append(review["request"]["uid"])
            try:
                status, _, body = srv.post(review, ctx=ctx)
            except (ssl.SSLError, ConnectionError) as e:
                raise AssertionError("%s: the handshake failed (%s); want 403"
                                     % (name, e))
            assert status == 403, (name, status, body)
            assert_alive(srv, good)
        for ctx in (good, good12):
            review = good_review()
            check_good_answer(*srv.post(review, ctx=ctx), review)
        for path in ("/healthz", "/readyz"):
            assert srv.request("GET", path, ctx=none)[0] == 200, path
        assert srv.request("GET", "/nope", ctx=none)[0] == 403
        assert srv.request("GET", "/nope", ctx=good)[0] == 404
        # Keep-alive: one verified connection serves many requests.
        conn = srv.conn(good)
        for _ in range(5):
            review = good_review()
            check_good_answer(*srv.post(review, conn=conn), review)
        conn.close()
        m = counters(srv.metrics())
        assert m["error"] == 4, m
        assert srv.stop() == 0
        log = "\n".join(srv.log_lines()[mark:])
        for uid in refused_uids:
            assert uid not in log, "a refused request was processed: " + uid


# --------------------------------------------------------------------------
# Slow clients, timeouts


def test_slow_clients(env, note):
    """While 200 connections sit in the middle of a request, 100 never
    start their handshake and 50 stop inside it, good reviews are answered
    promptly; after 10 s, those still without their request's headers are
    closed, while those in their body wait for the 30 s deadline of a
    request."""
    with Server(env.certs) as srv:
        ctx = srv.context()
        stalled, in_body = [], []
        review = good_review()
        data = json.dumps(review).encode()
        for i in range(200):
            s = srv.raw_tls(ctx)
            head = request_head(len(data))
            s.sendall(head[:len(head) // 2] if i % 2 else head + data[:100])
            (stalled if i % 2 else in_body).append(s)
        for _ in range(100):
            stalled.append(socket.create_connection(("127.0.0.1", srv.port), 5))
        hello = bytes.fromhex("160301010001")  # a ClientHello, cut short
        for _ in range(50):
            s = socket.create_connection(("127.0.0.1", srv.port), 5)
            s.sendall(hello)
            stalled.append(s)
        t_last = time.monotonic()
        deadline = t_last + 5
        while srv.metrics()["vgpu_webhook_requests_in_flight"] != 100:
            assert time.monotonic() < deadline, \
                srv.metrics()["vgpu_webhook_requests_in_flight"]
            time.sleep(0.05)
        worst = 0.0
        for _ in range(30):
            t0 = time.monotonic()
            review = good_review()
            check_good_answer(*srv.post(review), review)
            worst = max(worst, time.monotonic() - t0)
        conn = srv.conn()
        lat = []
        for _ in range(200):
            t0 = time.monotonic()
            review = good_review()
            check_good_answer(*srv.post(review, conn=conn), review)
            lat.append(time.monotonic() - t0)
        conn.close()
        lat.sort()
        p99 = lat[int(len(lat) * 0.99) - 1]
        assert worst < 1.0, "a new connection took %.3f s" % worst
        assert p99 < 0.25, "keep-alive p99 %.3f s" % p99
        time.sleep(max(0.0, t_last + 11.5 - time.monotonic()))
        still_open = sum(not closed_by_peer(s, 0.01) for s in stalled)
        assert still_open == 0, "%d stalled connections still open" % still_open
        closed = sum(closed_by_peer(s, 0.01) for s in in_body)
        assert closed == 0, "%d connections closed in their body" % closed
        m = srv.metrics()
        assert m["vgpu_webhook_requests_in_flight"] == 100, m
        assert m['vgpu_webhook_connections_closed_total{listener="https",'
                 'reason="opening"}'] == 250, m
        for s in stalled + in_body:
            s.close()
        assert_alive(srv)
        assert srv.stop() == 0
        note("worst new connection %.1f ms, keep-alive p99 %.1f ms" % (
            worst * 1000, p99 * 1000))


def gone(sock):
    """Whether the server closed sock: readable, and then the end of the
    stream or an error (the server never writes unasked)."""
    readable, _, _ = select.select([sock], [], [], 0)
    if not readable:
        return False
    timeout = sock.gettimeout()
    try:
        sock.setblocking(False)
        return not sock.recv(4096)
    except (ssl.SSLWantReadError, BlockingIOError):
        return False
    except OSError:
        return True
    finally:
        sock.settimeout(timeout)


def test_deadlines(env, note):
    """Deadlines that no byte moves, each counted by reason: 10 s from the
    accept to the first request's headers (the TLS handshake included), 10
    s from an answer to the next request's headers (an idle keep-alive
    connection), 30 s from the start of a request (its accept, or the end
    of the previous answer) to its answer; 10 s to the headers on the
    metrics port too.  The trickling connections send a byte a second."""
    with Server(env.certs) as srv:
        t = {}
        socks = {}

        def opened(name, sock):
            socks[name] = sock
            t[name] = time.monotonic()

        opened("silent", socket.create_connection(("127.0.0.1", srv.port), 5))
        opened("handshake", srv.raw_tls())
        opened("plain", socket.create_connection(
            ("127.0.0.1", srv.metrics_port), 5))
        for name in ("idle", "next"):
            s = srv.raw_tls()
            review = good_review()
            check_good_answer(*send_then_read(
                s, request_head(len(json.dumps(review))) +
                json.dumps(review).encode()), review)
            opened(name, s)
        opened("body", srv.raw_tls())
        socks["body"].sendall(request_head(1000) + b"{")
        trickle = {"handshake": b"POST /mutate HTTP/1.1\r\nX-Slow: " + b"a" * 60,
                   "plain": b"GET /healthz HTTP/1.1\r\nX-Slow: " + b"a" * 60,
                   "next": b"POST /mutate HTTP/1.1\r\nX-Slow: " + b"a" * 60,
                   "body": b" " * 60}
        closed = {}
        start = next_byte = time.monotonic()
        while len(closed) < len(socks) and time.monotonic() < start + 35:
            send = time.monotonic() >= next_byte
            if send:
                next_byte += 1.0
            for name, s in socks.items():
                if name in closed:
                    continue
                if gone(s):
                    closed[name] = time.monotonic() - t[name]
                    continue
                if send and name in trickle:
                    try:
                        s.sendall(trickle[name][:1])
                        trickle[name] = trickle[name][1:]
                    except OSError:
                        closed[name] = time.monotonic() - t[name]
            time.sleep(0.1)
        want = {"silent": 10, "handshake": 10, "plain": 10, "idle": 10,
                "next": 10, "body": 30}
        for name, secs in want.items():
            assert name in closed, "%s: still open after 35 s" % name
            assert secs - 0.5 <= closed[name] <= secs + 1.5, \
                "%s: closed after %.2f s, want %d s" % (name, closed[name], secs)
        m = srv.metrics()
        key = 'vgpu_webhook_connections_closed_total{listener="%s",reason="%s"}'
        assert m[key % ("https", "opening")] == 2, m
        assert m[key % ("https", "idle")] == 2, m
        assert m[key % ("https", "request")] == 1, m
        assert m[key % ("metrics", "opening")] == 1, m
        for s in socks.values():
            s.close()
        assert srv.stop() == 0
        note("closed after " + ", ".join(
            "%s %.1f s" % (k, v) for k, v in sorted(closed.items())))


# The slow clients of test_slowloris: four addresses (all of 127.0.0.0/8
# is the loopback on Linux), each with 1200 trickling TLS connections and
# 100 plain ones on the metrics port, for 30 s.
SLOW_SOURCES = ["127.0.0.%d" % i for i in range(1, 5)]
TRICKLE = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                       "trickle.py")


def test_slowloris(env, note):
    """4 addresses x 1200 TLS connections, each sending a byte every 2 s
    and opened again when closed, and 4 x 100 such connections on the
    metrics port: once they hold every slot, and for 30 s, every admission
    request is answered within 2 s, on a new connection each (from another
    address, as the API server's) and on a kept-alive one, and /healthz on
    the metrics port within 1 s."""
    with Server(env.certs) as srv:
        gen = subprocess.Popen(
            [sys.executable, TRICKLE, "--port", str(srv.port),
             "--metrics-port", str(srv.metrics_port),
             "--sources", ",".join(SLOW_SOURCES), "--tls", "1200",
             "--plain", "100", "--seconds", "90", "--interval", "2"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        lat = {"new": [], "kept": [], "healthz": []}
        fails = []
        stop = threading.Event()

        def timed(kind, fn):
            t0 = time.monotonic()
            try:
                fn()
                lat[kind].append(time.monotonic() - t0)
            except Exception as e:  # noqa: BLE001
                fails.append("%s after %.1f s: %r" % (kind,
                                                       time.monotonic() - t0, e))

        def new_connections():
            while not stop.wait(0.2):
                def one():
                    review = good_review()
                    conn = srv.conn(timeout=10, source="127.0.0.10")
                    try:
                        check_good_answer(*srv.post(review, conn=conn), review)
                    finally:
                        conn.close()
                timed("new", one)

        def kept_alive():
            conn = [None]

            def one():
                # As Go's client: a connection the server closed while idle
                # is seen closed, and a new one is made.
                if conn[0] is not None and gone(conn[0].sock):
                    conn[0].close()
                    conn[0] = None
                if conn[0] is None:
                    conn[0] = srv.conn(timeout=10, source="127.0.0.11")
                review = good_review()
                try:
                    check_good_answer(*srv.post(review, conn=conn[0]), review)
                except Exception:
                    conn[0].close()
                    conn[0] = None
                    raise
            while not stop.wait(0.2):
                timed("kept", one)
            if conn[0] is not None:
                conn[0].close()

        def healthz():
            def one():
                status = srv.plain_get("/healthz", timeout=10,
                                       source="127.0.0.12")[0]
                assert status == 200, status
            while not stop.wait(0.5):
                timed("healthz", one)

        key = 'vgpu_webhook_connections_%s{listener="%s"%s}'
        deadline = time.monotonic() + 20
        held = {}
        while time.monotonic() < deadline:  # the slow ones take the slots
            time.sleep(0.5)
            try:
                held = srv.metrics(source="127.0.0.13")
            except OSError:
                continue
            if held.get(key % ("open", "https", ""), 0) >= 2000 and \
                    held.get(key % ("open", "metrics", ""), 0) >= 60:
                break
        threads = [threading.Thread(target=f) for f in
                   (new_connections, kept_alive, healthz)]
        for th in threads:
            th.start()
        time.sleep(30)
        stop.set()
        for th in threads:
            th.join()
        gen.terminate()
        out, err = gen.communicate(timeout=30)
        try:
            m = srv.metrics(source="127.0.0.13")
        except OSError as e:
            m = {"error": repr(e)}
        with open("/proc/%d/status" % srv.proc.pid) as f:
            hwm = [line.split()[1] for line in f if line.startswith("VmHWM")]
        assert srv.stop() == 0
    assert not fails, "%d failed:\n%s" % (len(fails), "\n".join(fails[:20]))
    worst = {k: max(v) for k, v in lat.items()}
    assert worst["new"] < 2.0 and worst["kept"] < 2.0, worst
    assert worst["healthz"] < 1.0, worst
    assert len(lat["new"]) >= 50 and len(lat["kept"]) >= 50 and \
        len(lat["healthz"]) >= 25, {k: len(v) for k, v in lat.items()}
    # The attack was on: every slot held, connections closed by reason.
    assert gen.returncode == 0, err.decode()
    stats = json.loads(out)
    assert stats["opened"] >= 4 * 1300, stats
    assert held.get(key % ("open", "https", ""), 0) >= 2000, held
    assert held.get(key % ("open", "metrics", ""), 0) >= 60, held
    for listener in ("https", "metrics"):
        closed = {r: m.get(key % ("closed_total", listener, ',reason="%s"' % r), 0)
                  for r in ("evicted", "address", "opening")}
        # Refused past the share of each address; slots taken back from
        # the slow, by eviction or at their deadline.
        assert closed["address"] > 0, (listener, closed)
        assert closed["evicted"] + closed["opening"] > 0, (listener, closed)
    note("worst of %d new connections %.0f ms, of %d kept-alive %.0f ms, of "
         "%d /healthz %.0f ms; %d slow connections opened; peak RSS %s kB"
         % (len(lat["new"]), worst["new"] * 1000, len(lat["kept"]),
            worst["kept"] * 1000, len(lat["healthz"]),
            worst["healthz"] * 1000, stats["opened"], hwm[0] if hwm else "?"))


# --------------------------------------------------------------------------
# Certificate rotation


class Load:
    """Threads that send good reviews until stopped: `fresh` of them open a
    connection per request (so each sees the current certificate), the
    others keep one connection alive.  Records the certificate each answer
    came with, and every failure."""

    def __init__(self, srv, fresh=2, kept=1):
        self.srv = srv
        self.stop_flag = threading.Event()
        self.lock = threading.Lock()
        self.seen = []       # (monotonic time, fingerprint, fresh)
        self.failures = []
        self.threads = [threading.Thread(target=self._run, args=(True,))
                        for _ in range(fresh)]
        self.threads += [threading.Thread(target=self._run, args=(False,))
                         for _ in range(kept)]

    def _run(self, fresh):
        conn = None
        while not self.stop_flag.is_set():
            try:
                if conn is None:
                    conn = self.srv.conn()
                review = good_review()
                status, headers, body = self.srv.post(review, conn=conn)
                check_good_answer(status, headers, body, review)
                with self.lock:
                    self.seen.append((time.monotonic(), conn.peer_fingerprint(),
                                      fresh))
            except Exception as e:  # noqa: BLE001
                with self.lock:
                    self.failures.append("%s: %s" % (type(e).__name__, e))
            if fresh and conn is not None:
                conn.close()
                conn = None
            time.sleep(0.005)
        if conn is not None:
            conn.close()

    def start(self):
        for t in self.threads:
            t.start()

    def stop(self):
        self.stop_flag.set()
        for t in self.threads:
            t.join(30)

    def count(self):
        with self.lock:
            return len(self.seen)

    def since(self, t):
        with self.lock:
            return [s for s in self.seen if s[0] >= t]

    def wait_count(self, n, timeout=20.0):
        deadline = time.monotonic() + timeout
        while self.count() < n and time.monotonic() < deadline:
            time.sleep(0.02)
        assert self.count() >= n, "load stalled at %d answers" % self.count()

    def wait_fingerprint(self, fp, after, timeout):
        deadline = after + timeout
        while time.monotonic() < deadline:
            for t, f, fresh in self.since(after):
                if f == fp and fresh:
                    return t - after
            time.sleep(0.05)
        return None


def secret_layout(d, version, cert, key):
    """Writes d/VERSION/tls.{crt,key} and swaps d/..data to it atomically,
    as the kubelet updates a Secret volume."""
    v = os.path.join(d, version)
    os.makedirs(v)
    shutil.copy(cert, os.path.join(v, "tls.crt"))
    shutil.copy(key, os.path.join(v, "tls.key"))
    tmp = os.path.join(d, "..data_tmp")
    os.symlink(version, tmp)
    os.rename(tmp, os.path.join(d, "..data"))
    for f in ("tls.crt", "tls.key"):
        link = os.path.join(d, f)
        if not os.path.islink(link):
            os.symlink(os.path.join("..data", f), link)


def test_rotation_secret_volume(env, note):
    """A Secret volume update under load: new handshakes get the new
    certificate within 15 s and no request fails; then a bad pair (key of
    another certificate) is refused with a log line and the current pair
    keeps serving."""
    d = os.path.join(env.tmp, "secret")
    os.makedirs(d)
    secret_layout(d, "..2026_01_01_a", env.certs.cert, env.certs.key)
    with Server(env.certs, cert=os.path.join(d, "tls.crt"),
                key=os.path.join(d, "tls.key")) as srv:
        srv.cafiles = [env.certs.ca, env.other.ca, env.third.ca]
        load = Load(srv)
        load.start()
        try:
            load.wait_count(30)
            assert load.since(0)[0][1] == env.certs.fingerprint()
            t_swap = time.monotonic()
            secret_layout(d, "..2026_01_02_b", env.other.cert, env.other.key)
            delay = load.wait_fingerprint(env.other.fingerprint(), t_swap, 15.0)
            assert delay is not None, "the new certificate was not served in 15 s"
            line = srv.wait_log(r"certificate reloaded", 5.0)
            assert line and "sha256=" in line, line
            m = srv.metrics()
            assert m["vgpu_webhook_certificate_expiry_timestamp_seconds"] == \
                env.other.not_after()
            assert m['vgpu_webhook_certificate_reloads_total{result="done"}'] == 1

            mark = len(srv.log_lines())
            t_bad = time.monotonic()
            secret_layout(d, "..2026_01_03_c", env.third.cert, env.certs.key)
            line = srv.wait_log(r"certificate reload refused", 15.0, start=mark)
            assert line and "does not match" in line, srv.log()
            n = load.count()
            load.wait_count(n + 30)
            fresh_after = [f for t, f, fresh in load.since(t_bad) if fresh]
            assert fresh_after and set(fresh_after) == {env.other.fingerprint()}, \
                "after the refusal: %s" % set(fresh_after)
            # An expired pair, then one that is not PEM: refused too.
            ecert, ekey = expired_pair(env.certs, os.path.join(env.tmp, "expired1"))
            garbage = os.path.join(env.tmp, "garbage.crt")
            with open(garbage, "w") as f:
                f.write("not a certificate\n")
            for version, cert, key, why in (
                    ("..2026_01_04_d", ecert, ekey, "expired"),
                    ("..2026_01_05_e", garbage, env.other.key,
                     "no PEM certificate")):
                mark = len(srv.log_lines())
                t_bad = time.monotonic()
                secret_layout(d, version, cert, key)
                line = srv.wait_log(r"certificate reload refused", 15.0,
                                    start=mark)
                assert line and why in line, (why, srv.log_lines()[mark:])
                load.wait_count(load.count() + 20)
                fresh_after = {f for t, f, fresh in load.since(t_bad) if fresh}
                assert fresh_after == {env.other.fingerprint()}, fresh_after
            m = srv.metrics()
            assert m["vgpu_webhook_certificate_expiry_timestamp_seconds"] == \
                env.other.not_after()
            assert m['vgpu_webhook_certificate_reloads_total{result="refused"}'] == 3
        finally:
            load.stop()
        assert not load.failures, "%d requests failed: %s" % (
            len(load.failures), load.failures[:5])
        kept = {f for t, f, fresh in load.since(0) if not fresh}
        assert kept == {env.certs.fingerprint()}, kept
        assert srv.stop() == 0
        note("new certificate served %.1f s after the swap, %d requests" % (
            delay, load.count()))


def test_expired_at_start(env):
    """An expired certificate at start: served with a warning (clients
    refuse it), and replaced by the next rotation without a restart."""
    d = os.path.join(env.tmp, "secret-expired")
    os.makedirs(d)
    cert, key = expired_pair(env.certs, os.path.join(env.tmp, "expired2"))
    secret_layout(d, "..2026_01_01_a", cert, key)
    with Server(env.certs, cert=os.path.join(d, "tls.crt"),
                key=os.path.join(d, "tls.key")) as srv:
        assert srv.wait_log(r"warning the serving certificate has expired", 5)
        try:
            srv.post(good_review())
            raise AssertionError("a client accepted an expired certificate")
        except ssl.SSLCertVerificationError:
            pass
        secret_layout(d, "..2026_01_02_b", env.certs.cert, env.certs.key)
        deadline = time.monotonic() + 15
        while True:
            try:
                review = good_review()
                check_good_answer(*srv.post(review), review)
                break
            except ssl.SSLCertVerificationError:
                assert time.monotonic() < deadline, "not replaced in 15 s"
                time.sleep(0.1)
        assert srv.metrics()["vgpu_webhook_certificate_expiry_timestamp_seconds"] \
            == env.certs.not_after()
        assert srv.stop() == 0


def test_rotation_files_replaced(env):
    """Files replaced one after the other (cert-manager, cp + mv): the new
    pair serves once both are there, with no refusal in between; a file
    touched without new content reloads nothing."""
    d = os.path.join(env.tmp, "plain")
    os.makedirs(d)
    cert, key = os.path.join(d, "tls.crt"), os.path.join(d, "tls.key")
    shutil.copy(env.certs.cert, cert)
    shutil.copy(env.certs.key, key)
    with Server(env.certs, cert=cert, key=key) as srv:
        srv.cafiles = [env.certs.ca, env.other.ca]
        shutil.copy(env.other.key, key + ".new")
        os.rename(key + ".new", key)
        time.sleep(0.2)
        shutil.copy(env.other.cert, cert + ".new")
        os.rename(cert + ".new", cert)
        deadline = time.monotonic() + 15
        fp = None
        while time.monotonic() < deadline:
            conn = srv.conn()
            review = good_review()
            check_good_answer(*srv.post(review, conn=conn), review)
            fp = conn.peer_fingerprint()
            conn.close()
            if fp == env.other.fingerprint():
                break
            time.sleep(0.1)
        assert fp == env.other.fingerprint(), "not reloaded in 15 s"
        mark = len(srv.log_lines())
        os.utime(cert)
        time.sleep(3)
        assert "refused" not in srv.log(), srv.log()
        assert not any("certificate" in l for l in srv.log_lines()[mark:]), \
            srv.log_lines()[mark:]
        assert srv.stop() == 0


# --------------------------------------------------------------------------
# SIGTERM


def test_sigterm_drains(env):
    """SIGTERM with requests in the middle of their bodies: /readyz turns
    503, new connections are refused, the requests in flight complete with
    200, and the exit status is 0."""
    srv = Server(env.certs)
    try:
        socks = []
        reviews = []
        big = {"big": "x" * (2 << 20)}
        for i in range(3):
            review = good_review()
            if i == 2:  # a big one: 2 MiB
                review["request"]["object"]["metadata"]["annotations"] = big
            data = json.dumps(review).encode()
            s = srv.raw_tls()
            s.sendall(request_head(len(data)) + data[:len(data) // 3])
            socks.append((s, data))
            reviews.append(review)
        deadline = time.monotonic() + 10
        while srv.metrics()["vgpu_webhook_requests_in_flight"] < 3:
            assert time.monotonic() < deadline, "requests not in flight"
            time.sleep(0.02)
        srv.proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 5
        while srv.plain_get("/readyz")[0] != 503:
            assert time.monotonic() < deadline, "/readyz did not turn 503"
            time.sleep(0.02)
        assert srv.plain_get("/healthz")[0] == 200
        m = srv.metrics()
        assert m["vgpu_webhook_requests_in_flight"] == 3, m
        try:
            socket.create_connection(("127.0.0.1", srv.port), 2).close()
            raise AssertionError("a new connection was accepted while draining")
        except ConnectionRefusedError:
            pass
        time.sleep(0.5)
        assert srv.proc.poll() is None, "exited with requests in flight"
        for i, ((s, data), review) in enumerate(zip(socks, reviews)):
            rest = data[len(data) // 3:]
            for k in range(0, len(rest), 256 << 10):
                s.sendall(rest[k:k + (256 << 10)])
                time.sleep(0.01)
            status, headers, body = read_response(s)
            check_good_answer(status, headers, body, review,
                              big if i == 2 else None)
            assert headers.get("connection") == "close", headers
            s.close()
        rc = srv.proc.wait(10)
        assert rc == 0, rc
        assert srv.wait_log(r"shutting down: 3 admission requests in flight", 2)
        assert srv.wait_log(r"stopped", 2)
    finally:
        srv.stop()


def test_drain_closes_idle_and_stalled(env):
    """At SIGTERM an idle keep-alive connection is closed at once, and so
    is one on which the next request's headers came only in part (the
    server is not told of them: it is idle); a request whose body stopped
    coming is closed 5 s after its last byte, not at its 30 s deadline:
    the process then exits 0."""
    srv = Server(env.certs)
    try:
        idle = srv.conn()
        review = good_review()
        check_good_answer(*srv.post(review, conn=idle), review)
        partial = srv.raw_tls(timeout=20)
        data = json.dumps(review).encode()
        partial.sendall(request_head(len(data)) + data)
        check_good_answer(*read_response(partial), review)
        partial.sendall(request_head(len(data))[:40])
        data = json.dumps(good_review()).encode()
        stalled = srv.raw_tls(timeout=20)
        stalled.sendall(request_head(len(data)) + data[:100])
        deadline = time.monotonic() + 10
        while srv.metrics()["vgpu_webhook_requests_in_flight"] < 1:
            assert time.monotonic() < deadline, "request not in flight"
            time.sleep(0.02)
        t0 = time.monotonic()
        srv.proc.send_signal(signal.SIGTERM)
        assert closed_by_peer(idle.sock, 1.0), "idle connection kept"
        assert closed_by_peer(partial, 1.0), "half-headers connection kept"
        assert time.monotonic() - t0 < 1.5
        idle.close()
        partial.close()
        assert closed_by_peer(stalled, 10.0), "stalled request kept"
        took = time.monotonic() - t0
        assert 4 <= took < 7, took
        stalled.close()
        assert srv.proc.wait(10) == 0
        assert srv.wait_log(r"stopped", 2)
    finally:
        srv.stop()


def test_shutdown_delay(env):
    """--shutdown-delay 2: after SIGTERM /readyz (HTTPS, on a kept-alive
    connection) answers 503 at once while that connection goes on without
    "Connection: close" and new connections are still accepted and
    answered, for 2 s; then the
    server drains as without it and exits 0.  A second signal ends the
    delay early."""
    srv = Server(env.certs, args=["--shutdown-delay", "2"])
    try:
        review = good_review()
        kept = srv.conn()  # keep-alive, as the API server's client
        check_good_answer(*srv.post(review, conn=kept), review)
        t0 = time.monotonic()
        srv.proc.send_signal(signal.SIGTERM)
        deadline = t0 + 1
        while True:
            # /readyz on the HTTPS port, on the kept-alive connection.
            kept.request("GET", "/readyz")
            r = kept.getresponse()
            r.read()
            assert r.getheader("connection") != "close", r.getheaders()
            if r.status == 503:
                break
            assert r.status == 200, r.status
            assert time.monotonic() < deadline, "/readyz did not turn 503"
            time.sleep(0.02)
        assert srv.wait_log(r"shutting down in 2 s", 2)
        # The kept connection goes on, its answers without "close".
        status, headers, body = srv.post(review, conn=kept)
        check_good_answer(status, headers, body, review)
        assert headers.get("connection") != "close", headers
        kept.close()
        # A new connection, as a client whose endpoints are not updated yet.
        check_good_answer(*srv.post(review), review)
        assert srv.proc.poll() is None, "exited before its delay"
        rc = srv.proc.wait(10)
        took = time.monotonic() - t0
        assert rc == 0, rc
        assert 1.8 <= took < 5, took
        assert srv.wait_log(r"stopped", 2)
    finally:
        srv.stop()
    srv = Server(env.certs, args=["--shutdown-delay", "60"])
    try:
        t0 = time.monotonic()
        srv.proc.send_signal(signal.SIGTERM)
        assert srv.wait_log(r"shutting down in 60 s", 2)
        time.sleep(1.2)
        srv.proc.send_signal(signal.SIGTERM)
        assert srv.proc.wait(10) == 0
        assert time.monotonic() - t0 < 5, "the second signal did not end the delay"
    finally:
        srv.stop()


def test_sigint_idle(env):
    """SIGINT with keep-alive connections open but idle: exit 0 at once."""
    srv = Server(env.certs)
    conn = srv.conn()
    review = good_review()
    check_good_answer(*srv.post(review, conn=conn), review)
    t0 = time.monotonic()
    rc = srv.stop(signal.SIGINT)
    conn.close()
    assert rc == 0, rc
    assert time.monotonic() - t0 < 3, "slow shutdown"


# --------------------------------------------------------------------------
# Metrics and logs


def first_case(pred):
    for case in corpus.load_cases():
        if not case.config_path and not case.args and pred(case):
            return case
    raise AssertionError("no such corpus case")


def test_metrics(env):
    """Counters move by outcome, the histogram counts every answer, the
    gauges hold the in-flight count and the certificate's notAfter."""
    allowed = first_case(lambda c: c.allowed and not c.patched)
    denied = first_case(lambda c: not c.allowed)
    with Server(env.certs) as srv:
        m0 = srv.metrics()
        want_meta = {
            "# TYPE vgpu_webhook_requests_total",
            "# TYPE vgpu_webhook_latency_seconds",
            "# TYPE vgpu_webhook_requests_in_flight",
            "# TYPE vgpu_webhook_certificate_expiry_timestamp_seconds",
            "# HELP vgpu_webhook_requests_total",
            "# HELP vgpu_webhook_latency_seconds",
        }
        assert want_meta <= m0["#"], m0["#"]
        assert counters(m0) == {"patched": 0, "allowed": 0, "denied": 0,
                                "error": 0}, counters(m0)
        conn = srv.conn()
        for _ in range(3):
            assert srv.post(good_review(), conn=conn)[0] == 200
        for _ in range(2):
            assert srv.post(allowed.review_bytes, conn=conn)[0] == 200
            assert srv.post(denied.review_bytes, conn=conn)[0] == 200
        assert srv.post(b"{", conn=conn)[0] == 400
        conn.close()
        s = srv.raw_tls()
        s.sendall(request_head(BODY_MAX + DISCARD_MAX + 1))
        assert read_response(s)[0] == 413
        s.close()
        assert srv.request("GET", "/nope")[0] == 404
        assert srv.request("GET", "/mutate")[0] == 405
        m1 = srv.metrics()
        assert counters(m1) == {"patched": 3, "allowed": 2, "denied": 2,
                                "error": 2}, counters(m1)
        buckets = sorted(
            ((float(k.split('le="')[1].split('"')[0]), v) for k, v in m1.items()
             if k.startswith("vgpu_webhook_latency_seconds_bucket")))
        assert len(buckets) >= 10 and buckets[-1][0] == float("inf")
        assert buckets[0][0] <= 1e-5 and 1.0 in [b for b, _ in buckets]
        values = [v for _, v in buckets]
        assert values == sorted(values), "buckets not cumulative"
        assert values[-1] == m1["vgpu_webhook_latency_seconds_count"] == 9
        assert 0 < m1["vgpu_webhook_latency_seconds_sum"] < 9.0
        assert m1["vgpu_webhook_requests_in_flight"] == 0
        assert m1["vgpu_webhook_certificate_expiry_timestamp_seconds"] == \
            env.certs.not_after()
        assert srv.stop() == 0


def test_validate_and_guard_hits(env):
    """POST /validate gives the decision of /mutate without a patch; the
    guard hits are counted once per key or env entry, per action."""
    env_denied = corpus.load_cases(["126-"])[0]
    ann_denied = corpus.load_cases(["121-"])[0]
    mount_denied = corpus.load_cases(["152-"])[0]
    with Server(env.certs) as srv:
        m0 = srv.metrics()
        assert "# TYPE vgpu_webhook_guard_hits_total" in m0["#"]
        for guard in ("annotations", "env", "volumeMounts"):
            for action in ("denied", "stripped", "warned"):
                key = ('vgpu_webhook_guard_hits_total{guard="%s",action="%s"}'
                       % (guard, action))
                assert m0[key] == 0, key
        status, _, body = srv.post(good_review(), path="/validate")
        assert status == 200
        resp = json.loads(body)["response"]
        assert resp["allowed"] is True
        assert "patch" not in resp and "patchType" not in resp
        for path in ("/mutate", "/validate?timeout=10s"):
            status, _, body = srv.post(env_denied.review_bytes, path=path)
            assert status == 200
            assert corpus.check_answer(env_denied, body) == [], path
        status, _, body = srv.post(ann_denied.review_bytes, path="/validate")
        assert corpus.check_answer(ann_denied, body) == []
        status, _, body = srv.post(mount_denied.review_bytes)
        assert corpus.check_answer(mount_denied, body) == []
        m1 = srv.metrics()
        assert m1['vgpu_webhook_guard_hits_total{guard="env",action="denied"}'] == 6
        assert m1['vgpu_webhook_guard_hits_total{guard="annotations",'
                  'action="denied"}'] == 2
        assert m1['vgpu_webhook_guard_hits_total{guard="volumeMounts",'
                  'action="denied"}'] == 2
        assert counters(m1) == {"patched": 0, "allowed": 1, "denied": 4,
                                "error": 0}, counters(m1)
        assert srv.request("GET", "/validate")[0] == 405
        assert srv.plain_get("/validate", "POST")[0] == 404
        assert srv.stop() == 0


def test_validate_ephemeral_strip(env):
    """An ephemeral container with guarded env under strip: /mutate removes
    the entries with a patch, /validate (which cannot patch) denies."""
    case = corpus.load_cases(["169-"])[0]
    with Server(env.certs, config=case.config_path) as srv:
        status, _, body = srv.post(case.review_bytes, path="/mutate")
        assert status == 200
        assert corpus.check_answer(case, body) == []
        status, _, body = srv.post(case.review_bytes, path="/validate")
        assert status == 200
        resp = json.loads(body)["response"]
        assert resp["allowed"] is False and "patch" not in resp, resp
        assert resp["status"]["code"] == 403, resp
        assert 'env CUDA_DISABLE_CONTROL="true" cannot be set' in \
            resp["status"]["message"], resp
        m = srv.metrics()
        assert m['vgpu_webhook_guard_hits_total{guard="env",'
                  'action="stripped"}'] == 2
        assert m['vgpu_webhook_guard_hits_total{guard="env",'
                  'action="denied"}'] == 2
        assert srv.stop() == 0


def masked(s):
    """What the log holds of a request value: control characters removed."""
    return "".join(ch for ch in s if not (ord(ch) < 0x20 or 0x7f <= ord(ch) < 0xa0))


def hostile_review():
    review = good_review(uid='uid "quoted" \\ back\nslash\x01=x')
    req = review["request"]
    req["namespace"] = "ns with space\u00e9\x7f"
    req["object"]["metadata"]["generateName"] = "gen-\u2028-\t-"
    return review


def test_decision_log_json(env):
    """--log-format json: every line is a JSON object; one line per
    decision with the keys uid, namespace, name, operation, outcome, ops
    and latency_us; request values escaped, never splitting a line."""
    denied = first_case(lambda c: not c.allowed)
    with Server(env.certs, log_format="json") as srv:
        reviews = [good_review(), hostile_review(),
                   json.loads(denied.review_bytes)]
        conn = srv.conn()
        for r in reviews:
            assert srv.post(r, conn=conn)[0] == 200
        assert srv.post(b"nope", conn=conn)[0] == 400
        conn.close()
        assert srv.stop() == 0
        lines = srv.log_lines()
    docs = []
    for line in lines:
        doc = json.loads(line)
        assert isinstance(doc, dict) and {"time", "level", "msg"} <= set(doc), line
        docs.append(doc)
    decisions = [d for d in docs if d["msg"] == "decision"]
    assert len(decisions) == len(reviews), decisions
    keys = {"uid", "namespace", "name", "operation", "outcome", "ops",
            "latency_us"}
    for d, r in zip(decisions, reviews):
        assert keys <= set(d), d
        req = r["request"]
        meta = req["object"]["metadata"]
        assert d["uid"] == masked(req["uid"]), (d["uid"], req["uid"])
        assert d["namespace"] == masked(req["namespace"]), d
        assert d["name"] == masked(meta.get("name") or meta.get("generateName")), d
        assert d["operation"] == "CREATE"
        assert isinstance(d["ops"], int) and isinstance(d["latency_us"], int)
    assert [d["outcome"] for d in decisions] == ["patched", "patched", "denied"]
    assert decisions[0]["ops"] > 0 and decisions[2]["ops"] == 0


def audit_review(user, envs, dry=True):
    """A denied CREATE by user whose container carries envs (each a guarded
    name, value "all"), with dryRun."""
    review = good_review()
    req = review["request"]
    req["userInfo"] = {"username": user, "groups": ["system:authenticated"]}
    req["dryRun"] = dry
    req["object"]["spec"]["containers"][0]["env"] = [
        {"name": n, "value": "all"} for n in envs]
    return review


def test_audit_trail(env):
    """A denial's decision line names the code, the message, the requester,
    the kind, dryRun and each guard hit with its key, masked and bounded; an
    answer with a guard hit names them too; a plain answer carries none of
    it.  The serving line and /metrics name the build."""
    names = ["CUDA_DEVICE_SM_LIMIT_%d" % i for i in range(20)]
    warned = corpus.load_cases(["154-"])[0]
    binding = corpus.load_cases(["159-"])[0]
    with Server(env.certs, log_format="json") as srv:
        m = srv.metrics()
        build = [k for k in m if k.startswith("vgpu_webhook_build_info{")]
        assert len(build) == 1 and m[build[0]] == 1, build
        version = srv.wait_log(r'"msg":"serving"', 5)
        assert version, srv.log_lines()
        serving = json.loads(version)
        assert serving["version"] and serving["revision"], serving
        assert build[0] == ('vgpu_webhook_build_info{version="%s",revision="%s"}'
                            % (serving["version"], serving["revision"]))
        reviews = [audit_review("mallory\u2028\x07@example.com", names),
                   good_review(), json.loads(binding.review_bytes)]
        for r in reviews:
            assert srv.post(r)[0] == 200
        assert srv.stop() == 0
        lines = [json.loads(l) for l in srv.log_lines()]
    decisions = [d for d in lines if d["msg"] == "decision"]
    assert len(decisions) == 3, decisions
    denied, plain, bound = decisions
    assert denied["outcome"] == "denied" and denied["code"] == 403, denied
    assert denied["user"] == "mallory\u2028@example.com", denied
    assert denied["kind"] == "Pod" and denied["subresource"] == ""
    assert denied["dry_run"] == "true"
    assert denied["namespace"] == reviews[0]["request"]["namespace"]
    assert denied["message"].startswith(
        'container "cuda": env CUDA_DEVICE_SM_LIMIT_0="all" cannot be set; ')
    assert len(denied["message"]) <= 400 and denied["message"].endswith("...")
    hits = denied["guard_hits"].split("; ")
    assert hits == ["denied env CUDA_DEVICE_SM_LIMIT_%d" % i
                    for i in range(8)] + ["... and 12 more"], hits
    for key in ("code", "message", "user", "kind", "dry_run", "guard_hits"):
        assert key not in plain, plain
    assert bound["kind"] == "Binding" and bound["subresource"] == "binding"
    assert bound["user"] == "alice@example.com" and bound["dry_run"] == "false"
    assert bound["guard_hits"] == (
        "denied annotations hami.io/vgpu-devices-allocated; "
        "denied annotations hami.io/vgpu-node"), bound
    assert bound["name"] == "train-7d9f8b6c54-x2x4z"

    # A warned hit is in the trail of an allowed answer, without a code.
    with Server(env.certs, config=warned.config_path) as srv:
        assert srv.post(warned.review_bytes)[0] == 200
        line = srv.wait_log(r" info decision .*guard_hits=", 5)
        assert srv.stop() == 0
    assert line and "outcome=patched" in line, line
    assert "guard_hits=\"warned volumeMounts /var/run/nvidia-container-devices/GPU-1\"" \
        in line, line
    assert "user=system:serviceaccount:kube-system:replicaset-controller" in line
    assert " code=" not in line and " message=" not in line, line


def test_decision_log_text(env):
    """Text format: one line per decision, key=value, values with spaces or
    quotes quoted and escaped; -v 0 does not log refused requests, -v 1
    does."""
    with Server(env.certs) as srv:
        reviews = [good_review(), hostile_review()]
        for r in reviews:
            assert srv.post(r)[0] == 200
        assert srv.request("GET", "/nope")[0] == 404
        assert srv.stop() == 0
        lines = srv.log_lines()
    decisions = [l for l in lines if " info decision " in l]
    assert len(decisions) == 2, lines
    assert "uid=%s " % reviews[0]["request"]["uid"] in decisions[0], decisions
    for key in ("uid=", "namespace=", "name=", "operation=CREATE",
                "outcome=patched", "ops=", "latency_us="):
        assert key in decisions[0] and key in decisions[1], (key, decisions)
    assert 'uid="uid \\"quoted\\" \\\\ back' in decisions[1], decisions[1]
    assert not any("request refused" in l for l in lines), lines
    with Server(env.certs, verbosity=1) as srv:
        assert srv.request("GET", "/nope")[0] == 404
        assert srv.wait_log(r"request refused .*status=404", 5)
        assert srv.stop() == 0


# --------------------------------------------------------------------------
# Refusals at start


def test_start_refusals(env):
    """Exit 2 for usage and configuration errors, with a message naming the
    flag; exit 1 when the address is taken."""
    base = ["serve", "--listen", "127.0.0.1:%d" % free_port(),
            "--metrics-listen", "", "--tls-cert-file", env.certs.cert,
            "--tls-private-key-file", env.certs.key]
    cases = [
        (["serve"], 2, "--tls-cert-file"),
        (["serve", "--tls-cert-file", env.certs.cert], 2, "--tls-private-key-file"),
        (base + ["--listen", "127.0.0.1"], 2, "--listen"),
        (base + ["--listen", "127.0.0.1:0"], 2, "--listen"),
        (base + ["--listen", "127.0.0.1:65536"], 2, "--listen"),
        (base + ["--listen", "::1:8443"], 2, "--listen"),
        (base + ["--metrics-listen", "x"], 2, "--metrics-listen"),
        (base + ["--listen", "no-such-host.invalid:8443"], 2, "--listen"),
        (base + ["--log-format", "xml"], 2, "--log-format"),
        (base + ["-v", "x"], 2, "-v"),
        (base + ["-v", "-1"], 2, "-v"),
        (base + ["--bogus", "1"], 2, "--bogus"),
        (base + ["--tls-cert-file", "/nonexistent/tls.crt"], 2, "--tls-cert-file"),
        (base + ["--tls-private-key-file", env.other.key], 2, "does not match"),
        (base + ["--tls-cert-file", env.certs.key], 2, "no PEM certificate"),
        (base + ["--tls-client-ca-file", "/nonexistent/ca.crt"], 2,
         "--tls-client-ca-file"),
        (base + ["--tls-client-ca-file", env.certs.key], 2,
         "--tls-client-ca-file"),
        (base + ["--config", "/nonexistent.json"], 2, "nonexistent"),
    ]
    for argv, want_rc, want_text in cases:
        p = subprocess.run(command() + argv, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=30)
        err = p.stderr.decode()
        assert p.returncode == want_rc, (argv, p.returncode, err)
        assert want_text in err, (argv, err)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        argv = base + ["--listen", "127.0.0.1:%d" % taken.getsockname()[1]]
        p = subprocess.run(command() + argv, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=30)
        assert p.returncode == 1, (p.returncode, p.stderr)
        assert b"--listen" in p.stderr, p.stderr


if __name__ == "__main__":
    sys.exit(pytest.main([__file__] + sys.argv[1:]))
