"""The server's edges, tried as a hostile client and a TLS scanner would
(behaviour §6): strict HTTP framing with exactly one answer per request on
both ports, forward-secret TLS 1.2+ only (sslscan and openssl s_client
against RSA and EC keys), the TLS flags, certificates that are not valid
yet, and log lines that never split.
"""

import datetime
import hashlib
import json
import os
import re
import shlex
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (CertDir, Server, assert_alive,  # noqa: E402
                     check_good_answer, command, dated_pair, free_port,
                     good_review, read_response, temp_dir)

HOST = "vgpu-webhook.vgpu-system.svc"
STATUS_RX = re.compile(rb"(?:^|\r\n)(HTTP/1\.[01] (\d{3}) )")


@pytest.fixture(scope="module")
def certs():
    tmp = temp_dir("vgpu-edges-")
    yield {"ec": CertDir(os.path.join(tmp, "ec")),
           "rsa": CertDir(os.path.join(tmp, "rsa"), key_type="rsa"),
           "tmp": tmp}
    shutil.rmtree(tmp, ignore_errors=True)


def exchange(sock, data, wait=5.0):
    """Sends data and reads until the server closes or wait seconds pass:
    (bytes read, whether the server closed, seconds taken)."""
    t0 = time.monotonic()
    try:
        sock.sendall(data)
    except OSError:
        pass
    sock.settimeout(0.2)
    got, closed = b"", False
    while time.monotonic() - t0 < wait:
        try:
            chunk = sock.recv(65536)
        except (socket.timeout, ssl.SSLWantReadError):
            continue
        except (OSError, ssl.SSLError):
            closed = True
            break
        if not chunk:
            closed = True
            break
        got += chunk
    return got, closed, time.monotonic() - t0


def statuses(raw):
    """The status codes of every status line in raw, as ints."""
    return [int(m.group(2)) for m in STATUS_RX.finditer(raw)]


BODY = json.dumps(good_review()).encode()


def post_head(path="/mutate?timeout=10s", host=True, ctype="application/json"):
    head = b"POST %s HTTP/1.1\r\n" % path.encode()
    if host:
        head += b"Host: " + HOST.encode() + b"\r\n"
    if ctype is not None:
        head += b"Content-Type: " + ctype.encode() + b"\r\n"
    return head


def cl(n=len(BODY)):
    return b"Content-Length: %d\r\n" % n


def chunked_body(data=BODY):
    return b"%x\r\n" % len(data) + data + b"\r\n0\r\n\r\n"


# (name, bytes, status): each gets exactly one answer, and the connection
# closes at once (the end of such a request is unknown).
H = post_head()
FRAMING = [
    ("content-length abc", H + b"Content-Length: abc\r\n\r\n" + BODY, 400),
    ("content-length +N", H + b"Content-Length: +%d\r\n\r\n" % len(BODY) + BODY, 400),
    ("content-length -1", H + b"Content-Length: -1\r\n\r\n" + BODY, 400),
    ("content-length list", H + b"Content-Length: 5, 5\r\n\r\n" + BODY, 400),
    ("content-length 0x10", H + b"Content-Length: 0x10\r\n\r\n" + BODY, 400),
    # Past 2^64: too large for any limit (413, as every length over it).
    ("content-length 2^64+1", H + b"Content-Length: 18446744073709551617\r\n\r\n"
     + BODY, 413),
    ("content-lengths differ", H + cl() + cl(len(BODY) + 1) + b"\r\n" + BODY, 400),
    ("content-lengths 0 and N", H + cl(0) + cl() + b"\r\n" + BODY, 400),
    ("transfer-encoding identity", H + b"Transfer-Encoding: identity\r\n" + cl()
     + b"\r\n" + BODY, 501),
    ("transfer-encoding gzip", H + b"Transfer-Encoding: gzip\r\n\r\n" + BODY, 501),
    ("transfer-encoding gzip, chunked", H + b"Transfer-Encoding: gzip, chunked\r\n\r\n"
     + chunked_body(), 501),
    # libmicrohttpd decodes only exactly "chunked": a trailing space or tab
    # would leave the body's end unknown.
    ("transfer-encoding chunked and a space", H + b"Transfer-Encoding: chunked \r\n\r\n"
     + chunked_body(), 501),
    ("transfer-encoding chunked and a tab", H + b"Transfer-Encoding: chunked\t\r\n\r\n"
     + chunked_body(), 501),
    ("transfer-encoding CHUNKED and a space", H + b"Transfer-Encoding: CHUNKED \r\n\r\n"
     + chunked_body(), 501),
    ("transfer-encoding twice", H + b"Transfer-Encoding: chunked\r\n"
     b"Transfer-Encoding: chunked\r\n\r\n" + chunked_body(), 501),
    ("transfer-encoding and content-length", H + b"Transfer-Encoding: chunked\r\n"
     + cl() + b"\r\n" + chunked_body(), 400),
    ("space before the colon", H + b"Transfer-Encoding : chunked\r\n" + cl()
     + b"\r\n" + BODY, 400),
    ("tab before the colon", H + b"Content-Length\t: %d\r\n\r\n" % len(BODY) + BODY, 400),
    ("obs-fold", H + b"Transfer-Encoding:\r\n chunked\r\n" + cl() + b"\r\n" + BODY, 400),
    ("obs-fold with a tab", H + b"X-A: a\r\n\tb\r\n" + cl() + b"\r\n" + BODY, 400),
    ("NUL in a value", H + b"X-A: a\x00b\r\n" + cl() + b"\r\n" + BODY, 400),
    ("NUL in a name", H + b"X-\x00A: b\r\n" + cl() + b"\r\n" + BODY, 400),
    ("CR in a value", H + b"X-A: a\rb\r\n" + cl() + b"\r\n" + BODY, 400),
    ("control character in a value", H + b"X-A: a\x01b\r\n" + cl() + b"\r\n" + BODY, 400),
    ("DEL in a value", H + b"X-A: a\x7fb\r\n" + cl() + b"\r\n" + BODY, 400),
    ("space in a name", H + b"X A: b\r\n" + cl() + b"\r\n" + BODY, 400),
    ("empty name", H + b": b\r\n" + cl() + b"\r\n" + BODY, 400),
    ("HTTP/1.1 without Host", post_head(host=False) + cl() + b"\r\n" + BODY, 400),
    ("two Host fields", H + b"Host: other\r\n" + cl() + b"\r\n" + BODY, 400),
    ("NUL in the request line", b"POST /mu\x00tate HTTP/1.1\r\nHost: x\r\n\r\n", 400),
]

# A request line that does not parse: no answer, closed at once.
UNANSWERED = [
    ("space in the path", b"POST /mutate x HTTP/1.1\r\nHost: x\r\n"
     b"Content-Type: application/json\r\n" + cl() + b"\r\n" + BODY),
]

# Refused with 415, on each admission path.
MEDIA = [
    ("no Content-Type", None),
    ("text/plain", "text/plain"),
    ("application/json-patch+json", "application/json-patch+json"),
    ("application/jsonx", "application/jsonx"),
    ("json with a space inside", "application/ json"),
]


def test_framing_one_answer(certs):
    """Each malformed framing case gets exactly one answer (one status line
    on the wire, after TLS), with its status, at once, and the connection
    closes; a good review still passes after each."""
    with Server(certs["ec"], verbosity=1) as srv:
        fails = []
        for name, data, want in FRAMING:
            s = srv.raw_tls()
            raw, closed, took = exchange(s, data)
            s.close()
            got = statuses(raw)
            if got != [want] or not closed or took > 3.0:
                fails.append("%s: status lines %s (want [%d]), closed %s, %.1f s: %r"
                             % (name, got, want, closed, took, raw[:120]))
        for name, data in UNANSWERED:
            s = srv.raw_tls()
            raw, closed, took = exchange(s, data)
            s.close()
            if raw or not closed or took > 3.0:
                fails.append("%s: %r, closed %s, %.1f s" % (name, raw[:120],
                                                           closed, took))
        assert not fails, "\n".join(fails)
        review = good_review()
        check_good_answer(*srv.post(review), review)
        assert srv.wait_log(r"request refused .*status=501 reason=\"a "
                            r"Transfer-Encoding other than chunked\"", 5), srv.log()
        assert srv.stop() == 0


def test_content_type(certs):
    """/mutate, /webhook and /validate need Content-Type application/json
    (415 otherwise, counted as an error); parameters and any case of the
    media type are taken, as are the framings that are allowed."""
    with Server(certs["ec"]) as srv:
        before = srv.metrics()['vgpu_webhook_requests_total{outcome="error"}']
        n = 0
        for path in ("/mutate?timeout=10s", "/webhook", "/validate"):
            for name, ctype in MEDIA:
                s = srv.raw_tls()
                raw, _, took = exchange(s, post_head(path, ctype=ctype) + cl()
                                        + b"\r\n" + BODY, wait=2.0)
                s.close()
                assert statuses(raw) == [415], (path, name, raw[:200])
                assert b"application/json" in raw, raw
                n += 1
        after = srv.metrics()['vgpu_webhook_requests_total{outcome="error"}']
        assert after - before == n, (before, after, n)
        # Taken: parameters, case, identical Content-Lengths, "Chunked".
        for extra, ctype, body in (
                (cl(), "application/json; charset=utf-8", BODY),
                (cl(), "Application/JSON", BODY),
                (cl(), "application/json ;charset=UTF-8", BODY),
                (cl() + cl(), "application/json", BODY),
                (b"Transfer-Encoding: Chunked\r\n", "application/json",
                 chunked_body())):
            review = json.loads(BODY)
            s = srv.raw_tls()
            s.sendall(post_head(ctype=ctype) + extra + b"\r\n" + body)
            check_good_answer(*read_response(s), review)
            s.close()
        assert srv.stop() == 0


def test_plain_port_framing(certs):
    """The metrics port frames requests as strictly: one 400 or 501 and the
    connection closes; a good GET /metrics after each."""
    with Server(certs["ec"]) as srv:
        cases = [
            (b"GET /metrics HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", 501),
            (b"GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n", 400),
            (b"GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n"
             b"Content-Length: 2\r\n\r\nab", 400),
            (b"GET /metrics HTTP/1.1\r\nHost: x\r\nX A: b\r\n\r\n", 400),
            (b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-A: a\x00b\r\n\r\n", 400),
            (b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-A:\r\n b\r\n\r\n", 400),
            (b"GET /metrics HTTP/1.1\r\n\r\n", 400),
        ]
        for data, want in cases:
            s = socket.create_connection(("127.0.0.1", srv.metrics_port), 5)
            raw, closed, took = exchange(s, data)
            s.close()
            assert statuses(raw) == [want] and closed and took < 3.0, \
                (data, raw[:200], closed, took)
            assert srv.plain_get("/metrics")[0] == 200
        assert srv.stop() == 0


# --------------------------------------------------------------------------
# TLS


SCAN_FLAGS = ["--xml=-", "--no-colour", "--no-fallback", "--no-renegotiation",
              "--no-compression", "--no-heartbleed", "--no-groups",
              "--no-check-certificate", "--no-cipher-details"]


def sslscan(port):
    """{protocol: enabled} and [(version, cipher name, id)] accepted, as
    sslscan reports them for 127.0.0.1:port."""
    if not shutil.which("sslscan"):
        pytest.fail("SKIP: no sslscan (scripts/install-deps.sh installs it)")
    p = subprocess.run(["sslscan"] + SCAN_FLAGS + ["127.0.0.1:%d" % port],
                       capture_output=True, text=True, timeout=120)
    root = ET.fromstring(p.stdout[p.stdout.index("<?xml"):])
    test = root.find("ssltest")
    protocols = {"%s%s" % (e.get("type"), e.get("version")): e.get("enabled") == "1"
                 for e in test.findall("protocol")}
    ciphers = [(e.get("sslversion"), e.get("cipher"), int(e.get("id"), 16))
               for e in test.findall("cipher")]
    return protocols, ciphers


def judge(protocols, ciphers):
    """What a scan shows that must not be: protocols below TLS 1.2 enabled,
    suites without forward secrecy accepted."""
    bad = ["%s enabled" % p for p, on in protocols.items()
           if on and p not in ("tls1.2", "tls1.3")]
    for version, name, cid in ciphers:
        tls13 = version == "TLSv1.3" and cid >> 8 == 0x13
        if not (tls13 or name.startswith("ECDHE-")):
            bad.append("%s %s accepted (no forward secrecy)" % (version, name))
    return bad


def s_client(port, *args):
    """Whether `openssl s_client` with args completes a handshake."""
    p = subprocess.run(["openssl", "s_client", "-connect", "127.0.0.1:%d" % port,
                        "-servername", HOST] + list(args),
                       input="", capture_output=True, text=True, timeout=30)
    m = re.search(r"Cipher is (\S+)", p.stdout)
    return bool(m) and m.group(1) != "(NONE)"


NON_FS = ["AES128-GCM-SHA256", "AES256-GCM-SHA384", "AES128-SHA", "AES256-SHA",
          "AES128-SHA256", "AES256-CCM", "DES-CBC3-SHA"]


def test_scan_control(certs):
    """The scan and the probes can fail: against `openssl s_server` offering
    TLS 1.0 and static-RSA suites, both report them."""
    c = certs["rsa"]
    port = free_port()
    srv = subprocess.Popen(
        ["openssl", "s_server", "-quiet", "-www", "-accept", "127.0.0.1:%d" % port,
         "-cert", c.cert, "-key", c.key, "-min_protocol", "TLSv1",
         "-cipher", "AES128-SHA:AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:@SECLEVEL=0"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), 1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "openssl s_server did not start"
                time.sleep(0.1)
        protocols, ciphers = sslscan(port)
        bad = judge(protocols, ciphers)
        assert "tls1.0 enabled" in bad, bad
        assert "TLSv1.2 AES128-GCM-SHA256 accepted (no forward secrecy)" in bad, bad
        assert s_client(port, "-tls1_2", "-cipher", "AES128-GCM-SHA256")
    finally:
        srv.terminate()
        srv.wait(10)


@pytest.mark.parametrize("key_type", ["rsa", "ec"])
def test_scan_forward_secret_only(certs, key_type):
    """sslscan against serve with an RSA and with an EC key: TLS 1.2 and 1.3
    only, and only forward-secret suites (ECDHE with AES-GCM or
    ChaCha20-Poly1305, and TLS 1.3's); openssl s_client cannot get a
    static-RSA suite, TLS 1.0 or TLS 1.1."""
    c = certs[key_type]
    with Server(c, metrics=False) as srv:
        protocols, ciphers = sslscan(srv.port)
        assert not judge(protocols, ciphers), judge(protocols, ciphers)
        assert protocols["tls1.2"] and protocols["tls1.3"], protocols
        kx = "ECDHE-ECDSA-" if key_type == "ec" else "ECDHE-RSA-"
        tls12 = sorted(n for v, n, _ in ciphers if v == "TLSv1.2")
        assert tls12 == sorted(kx + s for s in ("AES128-GCM-SHA256",
                                                "AES256-GCM-SHA384",
                                                "CHACHA20-POLY1305")), tls12
        assert sorted(n for v, n, _ in ciphers if v == "TLSv1.3") == [
            "TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384",
            "TLS_CHACHA20_POLY1305_SHA256"], ciphers
        for cipher in NON_FS + [kx + "AES128-SHA", kx + "AES256-SHA"]:
            assert not s_client(srv.port, "-tls1_2", "-cipher",
                                cipher + ":@SECLEVEL=0"), cipher
        for version in ("-tls1", "-tls1_1"):
            assert not s_client(srv.port, version, "-cipher", "ALL:@SECLEVEL=0"), version
        assert s_client(srv.port, "-tls1_2", "-cipher", kx + "AES128-GCM-SHA256")
        line = srv.wait_log(r"info serving .*tls_priorities=", 5)
        assert line and "+VERS-TLS1.2" in line and "-KX-ALL:+ECDHE-ECDSA:+ECDHE-RSA" \
            in line, line
        assert srv.stop() == 0


def test_tls_flags(certs):
    """--tls-min-version VersionTLS13 refuses TLS 1.2; --tls-cipher-suites
    serves exactly the suites named (TLS 1.3 following their ciphers)."""
    c = certs["ec"]
    with Server(c, metrics=False, args=["--tls-min-version", "VersionTLS13"]) as srv:
        protocols, ciphers = sslscan(srv.port)
        assert [p for p, on in protocols.items() if on] == ["tls1.3"], protocols
        assert len(ciphers) == 3, ciphers
        assert srv.stop() == 0
    suites = "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"
    with Server(c, metrics=False, args=["--tls-cipher-suites", suites]) as srv:
        protocols, ciphers = sslscan(srv.port)
        assert sorted((v, n) for v, n, _ in ciphers) == [
            ("TLSv1.2", "ECDHE-ECDSA-AES256-GCM-SHA384"),
            ("TLSv1.3", "TLS_AES_256_GCM_SHA384")], ciphers
        review = good_review()
        check_good_answer(*srv.post(review), review)
        assert srv.stop() == 0


def test_tls_flags_refused(certs):
    """Exit 2 at start, naming the flag and the value, for an unknown or
    insecure suite or version."""
    c = certs["ec"]
    base = command() + ["serve", "--listen", "127.0.0.1:%d" % free_port(),
                        "--metrics-listen", "", "--tls-cert-file", c.cert,
                        "--tls-private-key-file", c.key]
    for args, want in (
            (["--tls-min-version", "VersionTLS11"],
             '--tls-min-version: "VersionTLS11": refused'),
            (["--tls-min-version", "1.2"], '--tls-min-version: "1.2": unknown'),
            (["--tls-cipher-suites", "TLS_RSA_WITH_AES_128_GCM_SHA256"],
             '--tls-cipher-suites: "TLS_RSA_WITH_AES_128_GCM_SHA256": refused, insecure'),
            (["--tls-cipher-suites", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,AES256-SHA"],
             '--tls-cipher-suites: "AES256-SHA": unknown cipher suite'),
            (["--tls-cipher-suites", "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256"],
             'insecure (CBC with SHA-256')):
        p = subprocess.run(base + args, capture_output=True, text=True, timeout=30,
                           stdin=subprocess.DEVNULL)
        assert p.returncode == 2 and want in p.stderr, (args, p.returncode, p.stderr)


# --------------------------------------------------------------------------
# Certificates not valid yet


def utc(seconds_from_now):
    t = datetime.datetime.now(datetime.timezone.utc) + \
        datetime.timedelta(seconds=seconds_from_now)
    return t.strftime("%Y%m%d%H%M%SZ")


def test_not_yet_valid_at_start(certs):
    """A serving certificate whose notBefore is to come: exit 2 at start,
    naming the file."""
    c = certs["ec"]
    cert, key = dated_pair(c, os.path.join(certs["tmp"], "future-start"),
                           "20990101000000Z", "20991231000000Z")
    p = subprocess.run(command() + ["serve", "--listen", "127.0.0.1:%d" % free_port(),
                                    "--metrics-listen", "", "--tls-cert-file", cert,
                                    "--tls-private-key-file", key],
                       capture_output=True, text=True, timeout=30,
                       stdin=subprocess.DEVNULL)
    assert p.returncode == 2, (p.returncode, p.stderr)
    assert "%s: the certificate is not valid yet (notBefore 2099-01-01T00:00:00Z)" \
        % cert in p.stderr, p.stderr


def fingerprint(srv):
    conn = srv.conn()
    try:
        review = good_review()
        check_good_answer(*srv.post(review, conn=conn), review)
        return conn.peer_fingerprint()
    finally:
        conn.close()


def der_sha256(path):
    with open(path) as f:
        return hashlib.sha256(ssl.PEM_cert_to_DER_cert(f.read())).hexdigest()


def test_not_yet_valid_reload(certs):
    """A rotation to a certificate whose notBefore is to come is refused
    with a log line and the reload-refused metric, the current pair keeps
    serving; once notBefore has passed, the new pair is loaded."""
    c = certs["ec"]
    d = os.path.join(certs["tmp"], "rotate")
    os.makedirs(d)
    cert, key = os.path.join(d, "tls.crt"), os.path.join(d, "tls.key")
    shutil.copy(c.cert, cert)
    shutil.copy(c.key, key)
    with Server(c, cert=cert, key=key) as srv:
        assert fingerprint(srv) == c.fingerprint()
        soon = 8
        fcert, fkey = dated_pair(c, os.path.join(certs["tmp"], "future-reload"),
                                 utc(soon), utc(86400))
        t_swap = time.monotonic()
        mark = len(srv.log_lines())
        shutil.copy(fkey, key + ".new")
        shutil.copy(fcert, cert + ".new")
        os.rename(key + ".new", key)
        os.rename(cert + ".new", cert)
        line = srv.wait_log(r"certificate reload refused", soon - 2, start=mark)
        assert line and "not valid yet (notBefore" in line, srv.log_lines()[mark:]
        m = srv.metrics()
        assert m['vgpu_webhook_certificate_reloads_total{result="refused"}'] == 1, m
        assert fingerprint(srv) == c.fingerprint()
        line = srv.wait_log(r"certificate reloaded", soon + 5, start=mark)
        assert line, srv.log_lines()[mark:]
        assert time.monotonic() - t_swap >= soon - 2, "loaded before its notBefore"
        assert fingerprint(srv) == der_sha256(fcert)
        m = srv.metrics()
        assert m['vgpu_webhook_certificate_reloads_total{result="refused"}'] == 1, m
        assert m['vgpu_webhook_certificate_reloads_total{result="done"}'] == 1, m
        assert srv.stop() == 0


# --------------------------------------------------------------------------
# Answers on the wire


class RecordClient:
    """A TLS client over a plain socket through memory BIOs, so that the
    test sees the TLS records the server sends (5-byte headers: type,
    version, length)."""

    def __init__(self, srv, version, hold=False, split=None):
        """hold: the client's last handshake flight (TLS 1.3's Finished)
        waits to leave with the first request, in one send.  split: the
        ClientHello's message is cut in two records after that many bytes,
        both sent at once."""
        ctx = srv.context(version=version)
        self.sock = socket.create_connection(("127.0.0.1", srv.port), 10)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.inc, self.out = ssl.MemoryBIO(), ssl.MemoryBIO()
        self.tls = ctx.wrap_bio(self.inc, self.out, server_hostname=HOST)
        self.raw = b""  # received, not yet given to the TLS object
        while True:
            try:
                self.tls.do_handshake()
                break
            except ssl.SSLWantReadError:
                if split:
                    hello, split = self.out.read(), None
                    body = hello[5:]
                    assert len(hello) == 5 + int.from_bytes(hello[3:5], "big")
                    self.sock.sendall(b"".join(
                        hello[:3] + len(part).to_bytes(2, "big") + part
                        for part in (body[:40], body[40:])))
                self._flush()
                self.inc.write(self._recv())
        if not hold:
            self._flush()

    def _flush(self):
        data = self.out.read()
        if data:
            self.sock.sendall(data)

    def _recv(self):
        chunk = self.sock.recv(65536)
        assert chunk, "the server closed the connection"
        return chunk

    def review(self, body):
        """Sends one review and reads its whole answer: (answer bytes, the
        number of application-data records that carried it)."""
        self.tls.write(request_bytes(body))
        self._flush()
        return self.answers(1)

    def send_pieces(self, pieces):
        """Each piece in a TLS record of its own, all in one send."""
        for piece in pieces:
            self.tls.write(piece)
        self._flush()

    def answers(self, count):
        """Reads count whole answers: (their bytes, the number of
        application-data records that carried them)."""
        answer, records = b"", 0
        while answers_complete(answer) < count:
            while len(self.raw) < 5 or len(self.raw) < 5 + int.from_bytes(
                    self.raw[3:5], "big"):
                self.raw += self._recv()
            size = 5 + int.from_bytes(self.raw[3:5], "big")
            record, self.raw = self.raw[:size], self.raw[size:]
            self.inc.write(record)
            try:
                plain = self.tls.read(1 << 20)
            except ssl.SSLWantReadError:
                plain = b""  # a record without application data (tickets)
            if plain:
                records += 1
                answer += plain
        return answer, records

    def close(self):
        self.sock.close()


def request_bytes(body):
    return (b"POST /mutate?timeout=10s HTTP/1.1\r\nHost: %s\r\n"
            b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n"
            % (HOST.encode(), len(body))) + body


def answers_complete(data):
    """How many whole answers data holds."""
    n = 0
    while True:
        head, sep, rest = data.partition(b"\r\n\r\n")
        if not sep:
            return n
        m = re.search(rb"(?im)^content-length: *(\d+)", head)
        if m is None or len(rest) < int(m.group(1)):
            return n
        n, data = n + 1, rest[int(m.group(1)):]


@pytest.mark.parametrize("version", [ssl.TLSVersion.TLSv1_2,
                                     ssl.TLSVersion.TLSv1_3])
def test_answer_one_record(certs, version):
    """An answer (status line, header block and body) leaves in one TLS
    record, the first on a connection and the ones after it on the same
    connection alike: one record to encrypt, one send, one wake-up of the
    client (libmicrohttpd 0.9.75 unpatched sends the header block and the
    body as two records)."""
    review = good_review()
    body = json.dumps(review).encode()
    with Server(certs["ec"]) as srv:
        c = RecordClient(srv, version)
        try:
            for i in range(3):
                answer, records = c.review(body)
                assert answer.startswith(b"HTTP/1.1 200 "), answer[:200]
                assert b'"patch"' in answer, answer
                assert records == 1, "answer %d in %d records" % (i, records)
        finally:
            c.close()
        assert srv.stop() == 0


@pytest.mark.parametrize("version", [ssl.TLSVersion.TLSv1_2,
                                     ssl.TLSVersion.TLSv1_3])
def test_records_sent_together(certs, version):
    """Bytes the server receives ahead of the record it reads (it takes as
    much as a record can hold in one receive) are read on without waiting
    for more: the client's last handshake flight and its first request in
    one send, a request cut in many records sent at once, and two requests
    pipelined in one send, each answered."""
    review = good_review()
    req = request_bytes(json.dumps(review).encode())
    with Server(certs["ec"]) as srv:
        c = RecordClient(srv, version, hold=True)
        try:
            c.send_pieces([req])  # TLS 1.3: with the client's Finished
            answer, _ = c.answers(1)
            assert answer.startswith(b"HTTP/1.1 200 "), answer[:200]
            cut = [req[i:i + 97] for i in range(0, len(req), 97)]
            c.send_pieces(cut)
            answer, _ = c.answers(1)
            assert answer.startswith(b"HTTP/1.1 200 "), answer[:200]
            assert b'"patch"' in answer, answer
            c.send_pieces([req, req])
            answer, _ = c.answers(2)
            assert answer.count(b"HTTP/1.1 200 ") == 2, answer
            assert answer.count(b'"patch"') == 2, answer
        finally:
            c.close()
        assert_alive(srv)
        assert srv.stop() == 0


@pytest.mark.parametrize("version", [ssl.TLSVersion.TLSv1_2,
                                     ssl.TLSVersion.TLSv1_3])
def test_handshake_message_in_two_records(certs, version):
    """A handshake message cut in two TLS records sent at once (a
    ClientHello larger than a record, or cut by a client on purpose) is
    read whole: GnuTLS stops after the first record without the socket
    being empty, and the second is read on without waiting for an event
    that will not come."""
    body = json.dumps(good_review()).encode()
    with Server(certs["ec"]) as srv:
        c = RecordClient(srv, version, split=40)
        try:
            answer, _ = c.review(body)
            assert answer.startswith(b"HTTP/1.1 200 "), answer[:200]
        finally:
            c.close()
        assert srv.stop() == 0


def test_one_receive_per_request(certs):
    """A request that fits in one TLS record costs the server one receive
    (GnuTLS alone reads a record's 5-byte header, then the rest; and a
    receive that only finds the socket empty while the client waits for
    the answer is not made). Counted with strace on a keep-alive
    connection, one request after the other."""
    if shutil.which("strace") is None:
        pytest.fail("strace is not installed (tests/e2e/install-deps.sh)")
    trace = os.path.join(certs["tmp"], "recv.trace")
    body = json.dumps(good_review()).encode()
    # Under strace, and LeakSanitizer cannot run under ptrace (an ASan
    # build would end with status 1).
    saved = {k: os.environ.get(k) for k in ("VGPU_WEBHOOK", "ASAN_OPTIONS")}
    os.environ["VGPU_WEBHOOK"] = " ".join(
        ["strace", "-f", "-qq", "-e", "trace=recvfrom", "-o", trace]
        + [shlex.quote(a) for a in command()])
    os.environ["ASAN_OPTIONS"] = ":".join(
        filter(None, [saved["ASAN_OPTIONS"], "detect_leaks=0"]))
    try:
        srv = Server(certs["ec"], metrics=False)
    finally:
        for k, v in saved.items():
            if v is None:
                del os.environ[k]
            else:
                os.environ[k] = v
    count = 20

    def receives():
        time.sleep(0.3)
        with open(trace) as f:
            return sum(1 for line in f if "recvfrom(" in line)

    with srv:
        c = RecordClient(srv, ssl.TLSVersion.TLSv1_3)
        try:
            assert c.review(body)[0].startswith(b"HTTP/1.1 200 ")
            before = receives()
            for _ in range(count):
                assert c.review(body)[0].startswith(b"HTTP/1.1 200 ")
            made = receives() - before
        finally:
            c.close()
        # SIGTERM to the server, strace's child: strace ends with its status.
        with open("/proc/%d/task/%d/children" % (srv.proc.pid, srv.proc.pid)) as f:
            os.kill(int(f.read().split()[0]), signal.SIGTERM)
        assert srv.stop() == 0
    assert made == count, "%d receives for %d requests" % (made, count)


def test_handshake_wait_costs_nothing(certs):
    """A client that stops in the middle of its handshake (after a whole
    ClientHello, or in the middle of one) costs the server no CPU while it
    waits: the connection waits for the next event (libmicrohttpd 0.9.75
    called it again at once, four such clients kept two cores busy)."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE

    def hello():
        out = ssl.MemoryBIO()
        t = ctx.wrap_bio(ssl.MemoryBIO(), out)
        try:
            t.do_handshake()
        except ssl.SSLWantReadError:
            pass
        return out.read()

    def cpu_seconds(pid):
        fields = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    with Server(certs["ec"]) as srv:
        socks = []
        try:
            start = cpu_seconds(srv.proc.pid)
            for whole in (True, True, False, False):
                s = socket.create_connection(("127.0.0.1", srv.port), 5)
                data = hello()
                s.sendall(data if whole else data[:60])
                socks.append(s)
            time.sleep(2)
            used = cpu_seconds(srv.proc.pid) - start
            assert_alive(srv)
        finally:
            for s in socks:
                s.close()
        assert srv.stop() == 0
    assert used < 0.4, "%.2f s of CPU in 2 s for 4 waiting handshakes" % used


# --------------------------------------------------------------------------
# Log lines


def test_log_line_separators(certs):
    """U+2028 and U+2029 in request values are escaped in JSON log lines
    (readers that split there see one line per event)."""
    review = good_review(uid="u\u2028v\u2029w")
    review["request"]["object"]["metadata"]["generateName"] = "g\u2028-"
    with Server(certs["ec"], log_format="json") as srv:
        assert srv.post(review)[0] == 200
        assert srv.stop() == 0
        lines = srv.log_lines()
    decision = [l for l in lines if '"msg":"decision"' in l]
    assert len(decision) == 1, lines
    assert "\u2028" not in decision[0] and "\u2029" not in decision[0], decision
    assert '"uid":"u\\u2028v\\u2029w"' in decision[0], decision
    assert json.loads(decision[0])["uid"] == "u\u2028v\u2029w"


def test_log_refusal_method(certs):
    """The method of a refused request is masked (controls dropped) and cut
    in its log line, as the path is: a client cannot write a long value or
    terminal escapes into the log."""
    method = b"P\x1b[31mOST" + b"X" * 300
    with Server(certs["ec"], verbosity=1) as srv:
        s = srv.raw_tls()
        s.sendall(method + b" /nowhere\x1b[0m HTTP/1.1\r\nHost: x\r\n"
                  b"Content-Length: 0\r\n\r\n")
        assert s.recv(100).startswith(b"HTTP/1.1 404"), "no 404"
        s.close()
        line = srv.wait_log(r"request refused .*status=404", 5)
        assert srv.stop() == 0
    assert line, srv.log()
    got = re.search(r" method=(\S+) ", line).group(1)
    assert got == "P[31mOSTXXXXX...", line  # 16 characters
    assert "path=/nowhere[0m" in line, line
    assert "\\x1b" not in line and "\x1b" not in line, line
