"""Helpers of the integration tests: certificates, the server process, TLS
clients and Prometheus text.

The server is the real binary (build/vgpu-webhook, or $VGPU_WEBHOOK, which
may carry a wrapper such as valgrind), started on 127.0.0.1 with free ports
and a test CA made by certs/gen-certs.sh.  Clients use only the standard
library: ssl, socket, http.client.
"""

import copy
import hashlib
import http.client
import json
import os
import re
import shlex
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import uuid

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "fixtures"))
import corpus  # noqa: E402

SERVER_NAME = "vgpu-webhook.vgpu-system.svc"
GEN_CERTS = os.path.join(ROOT, "certs", "gen-certs.sh")
BODY_MAX = 40 << 20      # REVIEW_BODY_MAX
DISCARD_MAX = 64 << 20   # read and dropped past it, to be answered
BODY_MEMORY = 64 << 20   # bodies held at once
START_TIMEOUT = 20.0


def command():
    return shlex.split(os.environ.get("VGPU_WEBHOOK",
                                      os.path.join(ROOT, "build", "vgpu-webhook")))


# --------------------------------------------------------------------------
# Certificates


class CertDir:
    """A CA, a serving pair and a client pair made by gen-certs.sh."""

    def __init__(self, path, client="kube-apiserver", key_type="ec"):
        self.path = path
        p = subprocess.run(
            ["sh", GEN_CERTS, "--service", "vgpu-webhook", "--namespace",
             "vgpu-system", "--out", path, "--client", client, "--key-type",
             key_type, "--force"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
        if p.returncode != 0:
            raise RuntimeError("gen-certs.sh failed: %s" % p.stderr.decode())
        self.ca_bundle_b64 = p.stdout.decode().strip()

    def __getattr__(self, name):
        files = {"ca": "ca.crt", "cert": "tls.crt", "key": "tls.key",
                 "client_cert": "client.crt", "client_key": "client.key"}
        if name in files:
            return os.path.join(self.path, files[name])
        raise AttributeError(name)

    def fingerprint(self):
        """SHA-256 of the serving certificate's DER."""
        with open(self.cert) as f:
            der = ssl.PEM_cert_to_DER_cert(f.read())
        return hashlib.sha256(der).hexdigest()

    def not_after(self):
        """notAfter of the serving certificate, as Unix seconds."""
        out = subprocess.run(["openssl", "x509", "-noout", "-enddate", "-in",
                              self.cert], stdout=subprocess.PIPE,
                             check=True).stdout.decode()
        return ssl.cert_time_to_seconds(out.strip().split("=", 1)[1])


def expired_pair(certs, out_dir):
    """(cert, key) files of a serving certificate signed by the CA of certs
    that expired in 2020, made with `openssl ca`."""
    return dated_pair(certs, out_dir, "20200101000000Z", "20200102000000Z")


def dated_pair(certs, out_dir, start, end):
    """(cert, key) files of a serving certificate signed by the CA of certs,
    valid from start to end (YYYYMMDDHHMMSSZ), made with `openssl ca`."""
    os.makedirs(out_dir)
    key = os.path.join(out_dir, "tls.key")
    csr = os.path.join(out_dir, "tls.csr")
    cert = os.path.join(out_dir, "tls.crt")
    cnf = os.path.join(out_dir, "ca.cnf")
    with open(os.path.join(out_dir, "index.txt"), "w"):
        pass
    with open(os.path.join(out_dir, "serial"), "w") as f:
        f.write("01\n")
    with open(cnf, "w") as f:
        f.write("[ca]\ndefault_ca = c\n[c]\ndatabase = %s/index.txt\n"
                "new_certs_dir = %s\nserial = %s/serial\npolicy = p\n"
                "default_md = sha256\nx509_extensions = ext\n"
                "[p]\ncommonName = supplied\n[ext]\nsubjectAltName = "
                "DNS:%s, IP:127.0.0.1\n" % (out_dir, out_dir, out_dir,
                                             SERVER_NAME))
    run = dict(stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=True,
               timeout=30)
    subprocess.run(["openssl", "genpkey", "-algorithm", "EC", "-pkeyopt",
                    "ec_paramgen_curve:P-256", "-out", key], **run)
    subprocess.run(["openssl", "req", "-new", "-key", key, "-subj",
                    "/CN=" + SERVER_NAME, "-out", csr], **run)
    subprocess.run(["openssl", "ca", "-batch", "-config", cnf, "-cert",
                    certs.ca, "-keyfile", os.path.join(certs.path, "ca.key"),
                    "-in", csr, "-out", cert, "-notext", "-startdate",
                    start, "-enddate", end], **run)
    return cert, key


def client_context(cafiles, cert=None, key=None, version=None):
    """A TLS client context that verifies the server against cafiles."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    for f in cafiles if isinstance(cafiles, (list, tuple)) else [cafiles]:
        ctx.load_verify_locations(f)
    ctx.check_hostname = True
    ctx.verify_mode = ssl.CERT_REQUIRED
    if cert:
        ctx.load_cert_chain(cert, key)
    if version is not None:
        ctx.minimum_version = version
        ctx.maximum_version = version
    return ctx


class TLSConnection(http.client.HTTPSConnection):
    """An HTTPS connection to host:port that verifies SERVER_NAME, as the
    API server does when it calls the Service."""

    def __init__(self, host, port, context, timeout=10.0,
                 server_name=SERVER_NAME, source=None):
        super().__init__(host, port, timeout=timeout, context=context)
        self.server_name = server_name
        self.source = source

    def connect(self):
        sock = socket.create_connection(
            (self.host, self.port), self.timeout,
            source_address=(self.source, 0) if self.source else None)
        # As Go's net package does: no Nagle delay between headers and body.
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock = self._context.wrap_socket(sock,
                                              server_hostname=self.server_name)

    def peer_fingerprint(self):
        return hashlib.sha256(self.sock.getpeercert(binary_form=True)).hexdigest()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --------------------------------------------------------------------------
# The server process


class Server:
    """The binary in `serve` mode on 127.0.0.1, stderr collected line by
    line.  Use as a context manager; stop() returns the exit status."""

    def __init__(self, certs, args=(), client_ca=None, metrics=True,
                 cert=None, key=None, log_format=None, verbosity=None,
                 config=None):
        self.certs = certs
        self.port = free_port()
        self.metrics_port = free_port() if metrics else None
        self.lines = []
        self.lock = threading.Lock()
        self.cafiles = [certs.ca]
        argv = command() + [
            "serve", "--listen", "127.0.0.1:%d" % self.port,
            "--tls-cert-file", cert or certs.cert,
            "--tls-private-key-file", key or certs.key,
            "--metrics-listen",
            "127.0.0.1:%d" % self.metrics_port if metrics else ""]
        if client_ca:
            argv += ["--tls-client-ca-file", client_ca]
        if log_format:
            argv += ["--log-format", log_format]
        if verbosity is not None:
            argv += ["-v", str(verbosity)]
        if config:
            argv += ["--config", config]
        argv += list(args)
        self.argv = argv
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self._wait_ready()

    def _read(self):
        for raw in self.proc.stderr:
            with self.lock:
                self.lines.append(raw.decode("utf-8", "replace").rstrip("\n"))

    def _wait_ready(self):
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("server exited with %s:\n%s"
                                   % (self.proc.returncode, self.log()))
            try:
                with socket.create_connection(("127.0.0.1", self.port), 0.5):
                    pass
                if self.metrics_port is None or \
                        self.plain_get("/healthz")[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.05)
        raise RuntimeError("server did not start:\n%s" % self.log())

    def log(self):
        with self.lock:
            return "\n".join(self.lines)

    def log_lines(self):
        with self.lock:
            return list(self.lines)

    def wait_log(self, pattern, timeout=10.0, start=0):
        """The first line from index start matching the regex, or None."""
        rx = re.compile(pattern)
        deadline = time.monotonic() + timeout
        while True:
            for line in self.log_lines()[start:]:
                if rx.search(line):
                    return line
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.05)

    def stop(self, sig=signal.SIGTERM, timeout=30.0):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
        self.reader.join(5)
        return rc

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()

    # clients

    def context(self, cert=None, key=None, version=None, cafiles=None):
        return client_context(cafiles or self.cafiles, cert, key, version)

    def conn(self, ctx=None, timeout=10.0, source=None):
        """An HTTPS connection, from the address source when given."""
        return TLSConnection("127.0.0.1", self.port, ctx or self.context(),
                             timeout=timeout, source=source)

    def post(self, body, path="/mutate?timeout=10s", conn=None, ctx=None,
             headers=None):
        """(status, headers dict, body bytes) of one POST."""
        own = conn is None
        c = conn or self.conn(ctx)
        try:
            h = {"Content-Type": "application/json",
                 "Accept": "application/json, */*"}
            h.update(headers or {})
            if isinstance(body, (dict, list)):
                body = json.dumps(body).encode()
            c.request("POST", path, body=body, headers=h)
            r = c.getresponse()
            data = r.read()
            return r.status, {k.lower(): v for k, v in r.getheaders()}, data
        finally:
            if own:
                c.close()

    def request(self, method, path, body=None, ctx=None, headers=None):
        c = self.conn(ctx)
        try:
            c.request(method, path, body=body, headers=headers or {})
            r = c.getresponse()
            return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
        finally:
            c.close()

    def plain_get(self, path, method="GET", timeout=5.0, source=None):
        c = http.client.HTTPConnection(
            "127.0.0.1", self.metrics_port, timeout=timeout,
            source_address=(source, 0) if source else None)
        try:
            c.request(method, path)
            r = c.getresponse()
            return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
        finally:
            c.close()

    def metrics(self, source=None):
        status, headers, body = self.plain_get("/metrics", source=source)
        if status != 200:
            raise AssertionError("/metrics answered %d" % status)
        return parse_metrics(body.decode())

    def raw_tls(self, ctx=None, timeout=10.0, source=None):
        """A TLS socket to the HTTPS port, for hand-written requests, from
        the address source when given (any of 127.0.0.0/8)."""
        sock = socket.create_connection(
            ("127.0.0.1", self.port), timeout,
            source_address=(source, 0) if source else None)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return (ctx or self.context()).wrap_socket(sock,
                                                   server_hostname=SERVER_NAME)


def parse_metrics(text):
    """{'name{labels}': float} of a Prometheus text page; the set of HELP
    and TYPE lines under the key '#'."""
    out = {"#": set()}
    for line in text.splitlines():
        if not line:
            continue
        if line.startswith("#"):
            out["#"].add(" ".join(line.split()[:3]))
            continue
        name, value = line.rsplit(" ", 1)
        out[name] = float(value)
    return out


def read_response(sock):
    """Parses one HTTP response from a socket: (status, headers, body)."""
    r = http.client.HTTPResponse(sock)
    r.begin()
    body = r.read()
    return r.status, {k.lower(): v for k, v in r.getheaders()}, body


# --------------------------------------------------------------------------
# Reviews


_SAMPLE = []


def sample_case():
    """The corpus case used as the "good review": a GPU pod, patched."""
    if not _SAMPLE:
        _SAMPLE.append(corpus.load_cases(["001-"])[0])
    return _SAMPLE[0]


def cut(text, limit=3000):
    return text if len(text) <= limit else text[:limit] + "... (cut)"


def good_review(uid=None):
    review = json.loads(json.dumps(sample_case().review))
    review["request"]["uid"] = uid or str(uuid.uuid4())
    return review


def check_good_answer(status, headers, body, review, annotations=None):
    """Raises unless body is the patched answer to review, a copy of the
    sample case (with annotations added to its pod, when given)."""
    if status != 200:
        raise AssertionError("status %d: %r" % (status, body[:200]))
    if not headers.get("content-type", "").startswith("application/json"):
        raise AssertionError("content type %r" % headers.get("content-type"))
    case = sample_case()
    if annotations:
        case = copy.copy(case)
        pod = copy.deepcopy(case.expect["pod"])
        pod["metadata"].setdefault("annotations", {}).update(annotations)
        case.expect = dict(case.expect, pod=pod)
    fails = corpus.check_answer(case, body, review)
    if fails:
        raise AssertionError(cut("; ".join(fails)))


def assert_alive(server, ctx=None):
    """The server still answers a good review on a new connection."""
    review = good_review()
    check_good_answer(*server.post(review, ctx=ctx), review)


def temp_dir(prefix):
    return tempfile.mkdtemp(prefix=prefix)
