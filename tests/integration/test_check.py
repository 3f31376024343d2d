#!/usr/bin/python3
"""`vgpu-webhook check` (SPEC section 9) against the real webhook and
against small fake servers (Python http.server over TLS), one for each way
an answer can be wrong.

Run by `make integration`, beside run.py:

    /usr/bin/python3 -m pytest tests/integration/test_check.py [-k NAME]
"""

import base64
import json
import os
import shutil
import ssl
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import CertDir, Server  # noqa: E402


@pytest.fixture(scope="module")
def certs():
    tmp = harness.temp_dir("vgpu-check-")
    yield CertDir(os.path.join(tmp, "ca1")), CertDir(os.path.join(tmp, "ca2"))
    shutil.rmtree(tmp, ignore_errors=True)


def check(*args, timeout=30):
    """Runs `vgpu-webhook check ARGS`: (exit status, stdout, stderr)."""
    p = subprocess.run(harness.command() + ["check"] + list(args), capture_output=True,
                       text=True, stdin=subprocess.DEVNULL, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def one_line(text):
    return len(text.strip().splitlines()) == 1


class Fake:
    """An HTTPS server that answers every POST with answer(review) ->
    (status, body bytes).  It records the reviews it got."""

    def __init__(self, certs, answer, tls=True):
        self.reviews = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                n = int(self.headers.get("Content-Length") or 0)
                review = json.loads(self.rfile.read(n))
                fake.reviews.append(review)
                status, body = answer(review)
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        if tls:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(certs.cert, certs.key)
            self.httpd.socket = ctx.wrap_socket(self.httpd.socket, server_side=True)
        self.port = self.httpd.server_address[1]
        self.url = f"https://127.0.0.1:{self.port}/mutate"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


def response(review, allowed=True, ops=None, uid=None, patch=None, ptype="JSONPatch"):
    r = {"uid": review["request"]["uid"] if uid is None else uid, "allowed": allowed}
    if not allowed:
        r["status"] = {"code": 403, "message": "pod \"x\": denied by the fake"}
    if ops is not None:
        patch = base64.b64encode(json.dumps(ops).encode()).decode()
    if patch is not None:
        r["patch"] = patch
        r["patchType"] = ptype
    return 200, json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                            "response": r}).encode()


GOOD_OPS = [{"op": "add", "path": "/spec/schedulerName", "value": "hami-scheduler"}]

# name: (answer, a part of the one-line reason)
FAILURES = {
    "http-500": (lambda rv: (500, b'{"error": "boom"}'), "http status 500"),
    "http-403": (lambda rv: (403, b"forbidden"), "http status 403"),
    "uid-not-echoed": (lambda rv: response(rv, ops=GOOD_OPS, uid="another-uid"),
                       "uid not echoed"),
    "uid-missing": (lambda rv: (200, json.dumps({"response": {"allowed": True}}).encode()),
                    "uid not echoed"),
    "not-allowed": (lambda rv: response(rv, allowed=False), "not allowed: pod"),
    "no-patch": (lambda rv: response(rv), "without a patch"),
    "patch-does-not-apply": (lambda rv: response(rv, ops=[
        {"op": "add", "path": "/spec/nowhere/schedulerName", "value": "x"}]),
        "does not apply"),
    "patch-sets-no-scheduler": (lambda rv: response(rv, ops=[
        {"op": "add", "path": "/spec/runtimeClassName", "value": "nvidia"}]),
        "does not set spec.schedulerName"),
    "patch-empty-scheduler": (lambda rv: response(rv, ops=[
        {"op": "add", "path": "/spec/schedulerName", "value": ""}]),
        "does not set spec.schedulerName"),
    "patch-not-base64": (lambda rv: response(rv, patch="!!not base64!!"), "not base64"),
    "patch-not-json-patch": (lambda rv: response(rv, patch=base64.b64encode(
        b'{"op": "add"}').decode()), "not a JSON Patch"),
    "patch-op-without-path": (lambda rv: response(rv, ops=[{"op": "add", "value": 1}]),
                              "not a JSON Patch"),
    "patch-type": (lambda rv: response(rv, ops=GOOD_OPS, ptype="MergePatch"),
                   "expected JSONPatch"),
    "not-json": (lambda rv: (200, b"<html>ok</html>"), "not an AdmissionReview response"),
    "too-long": (lambda rv: (200, b" " * ((3 << 20) + 10)), "over"),
    "control-bytes": (lambda rv: response(rv, ops=GOOD_OPS, uid="\x1b[31mred\n" + "u" * 500),
                      "uid not echoed"),
}


@pytest.mark.parametrize("name", sorted(FAILURES))
def test_fake_failure(certs, name):
    answer, reason = FAILURES[name]
    with Fake(certs[0], answer) as fake:
        rc, out, err = check("--url", fake.url, "--ca-file", certs[0].ca)
    assert rc == 1, (rc, out, err)
    assert reason in err and one_line(err) and not out, err
    assert "\x1b" not in err and len(err) < 800, err


def test_fake_good_and_review_sent(certs):
    with Fake(certs[0], lambda rv: response(rv, ops=GOOD_OPS)) as fake:
        rc, out, err = check("--url", fake.url, "--ca-file", certs[0].ca,
                             "--resource", "example.com/vgpu")
    assert rc == 0 and one_line(out) and "schedulerName hami-scheduler" in out, (out, err)
    rv = fake.reviews[0]
    req = rv["request"]
    assert rv["apiVersion"] == "admission.k8s.io/v1" and rv["kind"] == "AdmissionReview"
    assert req["operation"] == "CREATE" and req["kind"]["kind"] == "Pod"
    pod = req["object"]
    assert "schedulerName" not in pod["spec"], pod
    (c,) = pod["spec"]["containers"]
    assert c["resources"]["limits"] == {"example.com/vgpu": "1"}, c


def test_tls_plain_http_server(certs):
    with Fake(certs[0], lambda rv: response(rv, ops=GOOD_OPS), tls=False) as fake:
        rc, out, err = check("--url", fake.url, "--ca-file", certs[0].ca, "--timeout", "5")
    assert rc == 1 and err.startswith("vgpu-webhook check: ") and "tls" in err, err


def test_connection_refused(certs):
    port = harness.free_port()
    rc, out, err = check("--url", f"https://127.0.0.1:{port}/mutate", "--ca-file", certs[0].ca)
    assert rc == 1 and one_line(err) and "request:" in err, err


@pytest.mark.parametrize("args", [
    [], ["--url", "https://127.0.0.1:1/mutate"], ["--ca-file", "/x"],
    ["--url", "http://127.0.0.1:1/mutate", "--ca-file", "/x"],
    ["--url", "https://127.0.0.1:1/m", "--ca-file", "/x", "--cert-file", "/c"],
    ["--url", "https://127.0.0.1:1/m", "--ca-file", "/x", "--timeout", "0"],
    ["--url", "https://127.0.0.1:1/m", "--ca-file", "/x", "--timeout", "301"],
    ["--url", "https://127.0.0.1:1/m", "--ca-file", "/x", "--config", "c.json"],
    ["--url", "https://127.0.0.1:1/m", "--ca-file", "/x", "extra"],
    ["--url", "https://127.0.0.1:1/m", "--ca-file", "/x", "--scheduler-name", "s"],
], ids=lambda a: " ".join(a) or "none")
def test_usage(args):
    rc, out, err = check(*args)
    assert rc == 2 and err.startswith("vgpu-webhook: ") and not out, (rc, err)


def test_real_webhook(certs):
    good, other = certs
    with Server(good) as srv:
        url = f"https://127.0.0.1:{srv.port}/mutate"
        rc, out, err = check("--url", url, "--ca-file", good.ca)
        assert rc == 0 and one_line(out) and out.startswith("ok: ") and \
            "schedulerName hami-scheduler" in out, (rc, out, err)
        rc, out, err = check("--url", url, "--ca-file", good.ca,
                             "--server-name", harness.SERVER_NAME)
        assert rc == 0, (out, err)
        rc, out, err = check("--url", f"https://127.0.0.1:{srv.port}/webhook",
                             "--ca-file", good.ca, "--resource", "nvidia.com/gpu")
        assert rc == 0, (out, err)

        rc, out, err = check("--url", url, "--ca-file", other.ca)
        assert rc == 1 and one_line(err) and "tls:" in err, ("wrong CA", err)
        rc, out, err = check("--url", url, "--ca-file", good.ca,
                             "--server-name", "elsewhere.example.com")
        assert rc == 1 and one_line(err) and "tls:" in err, ("server name", err)
        # A resource that no family counts: allowed, nothing to patch.
        rc, out, err = check("--url", url, "--ca-file", good.ca, "--resource", "example.com/fpga")
        assert rc == 1 and "without a patch" in err, err
        rc, out, err = check("--url", f"https://127.0.0.1:{srv.port}/nowhere",
                             "--ca-file", good.ca)
        assert rc == 1 and "http status 404" in err, err


def test_real_webhook_client_certificates(certs):
    good, other = certs
    with Server(good, client_ca=good.ca) as srv:
        url = f"https://127.0.0.1:{srv.port}/mutate"
        rc, out, err = check("--url", url, "--ca-file", good.ca,
                             "--cert-file", good.client_cert, "--key-file", good.client_key)
        assert rc == 0, (out, err)
        rc, out, err = check("--url", url, "--ca-file", good.ca)
        assert rc == 1 and one_line(err) and "http status 403" in err, err
        rc, out, err = check("--url", url, "--ca-file", good.ca,
                             "--cert-file", other.client_cert, "--key-file", other.client_key)
        assert rc == 1 and ("http status 403" in err or "tls:" in err), err
