#!/usr/bin/python3
"""End-to-end tests: the webhook behind a real kube-apiserver, driven with
kubectl.

    /usr/bin/python3 -m pytest tests/e2e/run.py [-k NAME]

From the repository root; `make e2e` runs it after it has installed what is
missing and built or found the API server (see tests/e2e/e2e.mk).  The
tests run in this order on one cluster, started once for all of them:
corpus, dry_run, reinvocation, v1beta1, quota, ert, failure_policy,
rotation, chart, guards, profiles, escapes_ephemeral, escapes_depth,
escapes_server, certs_job, certs_upgrade; -k also knows each by the name it
prints (dry-run, extended-resource-toleration, failure-policy,
escapes-ephemeral, escapes-depth, escapes-server, certs-job, certs-upgrade).

What runs, all on 127.0.0.1 on free ports, logs in build/e2e/:
  - etcd from Debian's etcd-server, with its own data folder (the packaged
    service is never used);
  - kube-apiserver 1.20.2 built from Debian's kubernetes source package
    ($KUBE_APISERVER), with static tokens and RBAC: an administrator, a
    tenant, the service accounts of HAMi's scheduler and device plugin,
    and every requester that the corpus names; the feature gate
    EphemeralContainers is on (alpha in 1.20);
  - the webhook, build/vgpu-webhook serve ($VGPU_WEBHOOK), reached through
    the chart's own Mutating- and ValidatingWebhookConfiguration, rendered
    by helm in existingSecret mode with a test CA and applied as rendered, and a
    Service of type ExternalName pointing to localhost.

Environment: KUBE_APISERVER (required), VGPU_WEBHOOK, KUBECTL, HELM, ETCD,
E2E_CASES (the folder of corpus cases; default tests/fixtures/cases),
E2E_OUT (default build/e2e).

Each test counts its checks (Checks) and fails with the list of the failed
ones.  Before pytest's summary line come the cluster's addresses, one line
per test with its number of assertions, SKIP lines for what a test could
not check on 1.20 and why (the test still passes: these are expected), and
the number of assertions of the run (see tests/e2e/conftest.py).  A tool
the suite needs that is missing skips every test with the reason, which
fails `make e2e` unless ALLOW_SKIP=1.
"""

import base64
import ctypes
import fcntl
import hashlib
import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
import traceback
import urllib.error
import urllib.request
from fractions import Fraction
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Corpus cases and test pods nest 2100 levels deep (managedFields, as a
# tenant can send them): Python's json takes a frame or two a level.
sys.setrecursionlimit(max(sys.getrecursionlimit(), 20000))


def _path(var, *default):
    return os.path.abspath(os.environ.get(var) or os.path.join(ROOT, *default))


OUT = _path("E2E_OUT", "build", "e2e")
BIN = _path("VGPU_WEBHOOK", "build", "vgpu-webhook")
KUBECTL = _path("KUBECTL", "build", "tools", "kubectl")
HELM = _path("HELM", "build", "tools", "helm")
ETCD = os.environ.get("ETCD") or shutil.which("etcd") or "/usr/bin/etcd"
APISERVER = os.environ.get("KUBE_APISERVER", "")
CASES = _path("E2E_CASES", "tests", "fixtures", "cases")
CHART = os.path.join(ROOT, "charts", "vgpu-webhook")
GEN_CERTS = os.path.join(ROOT, "certs", "gen-certs.sh")
TRICKLE = os.path.join(ROOT, "tests", "integration", "trickle.py")

RELEASE = "vgpu-webhook"
# The longest a decision line waits to be written, with a margin.
DECISION_LOG_DELAY = 0.15
RELEASE_NS = "vgpu-system"
WEBHOOK_NAME = "pods.vgpu-webhook.hami.io"
SERVICE_HOST = f"{RELEASE}.{RELEASE_NS}.svc"
SCHEDULER_SA = "system:serviceaccount:kube-system:hami-scheduler"
DEVICE_PLUGIN_SA = "system:serviceaccount:kube-system:hami-device-plugin"
VALIDATING_NAME = "pod-updates.vgpu-webhook.hami.io"
TENANT = "tenant@example.com"
TENANT_NAMESPACES = ("team-a", "team-quota", "team-quota-count")
TEST_NAMESPACES = ("e2e-reinvoke", "e2e-v1beta1", "e2e-ert", "e2e-failure",
                   "e2e-rotation", "e2e-scheduler", "e2e-optout", "e2e-guards")
# certificates.mode job (test certs-job): a release of its own, whose
# webhook configurations select no namespace.
CERTS_RELEASE = "certs-e2e"
CERTS_FULLNAME = f"{CERTS_RELEASE}-vgpu-webhook"
# The chart names its cluster-scoped objects FULLNAME-NAMESPACE.
WEBHOOK_CONFIG = f"{RELEASE}-{RELEASE_NS}"
CERTS_CONFIG = f"{CERTS_FULLNAME}-{RELEASE_NS}"
CERTS_SA = f"system:serviceaccount:{RELEASE_NS}:{CERTS_FULLNAME}-certs"
CERTS_SETUP_SA = f"system:serviceaccount:{RELEASE_NS}:{CERTS_FULLNAME}-certs-setup"
CERTS_PATCH_SA = f"system:serviceaccount:{RELEASE_NS}:{CERTS_FULLNAME}-certs-patch"
CERTS_CLEANUP_SA = f"system:serviceaccount:{RELEASE_NS}:{CERTS_FULLNAME}-certs-cleanup"
# certs-upgrade: a release installed in selfSigned mode, upgraded to job.
CERTS_UP_RELEASE = "certs-up"
CERTS_UP_FULLNAME = f"{CERTS_UP_RELEASE}-vgpu-webhook"
CERTS_UP_NS = "e2e-certs-up"  # the only namespace its webhook configurations select


def certs_accounts(fullname):
    """The identities of the job mode's ServiceAccounts of a release: the
    lasting one and the setup, patch and cleanup hooks' ones."""
    return tuple(f"system:serviceaccount:{RELEASE_NS}:{fullname}-certs{x}"
                 for x in ("", "-setup", "-patch", "-cleanup"))


GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}

START_TIMEOUT = 180  # seconds for the API server to become ready (a busy machine)
KUBECTL_TIMEOUT = 60


# --------------------------------------------------------------------------
# Small helpers


def log_path(name):
    return os.path.join(OUT, name)


def write(path, data, mode=0o644):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w" if isinstance(data, str) else "wb") as f:
        f.write(data)
    os.chmod(path, mode)


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(argv, stdin=None, timeout=120, env=None):
    """(exit code, stdout, stderr) as text."""
    try:
        p = subprocess.run(argv, input=stdin, capture_output=True, text=True,
                           timeout=timeout, env=env,
                           stdin=None if stdin is not None else subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return -1, "", f"timed out after {timeout} s: {' '.join(argv[:3])}"
    except OSError as e:
        return -1, "", str(e)
    return p.returncode, p.stdout, p.stderr


def tail(path, n=15):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-n:])
    except OSError:
        return ""


# Quantities: the API server stores them canonically (5000 as 5k, 16384Mi as
# 16Gi), so they are compared by value.
_QTY = re.compile(r"([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
                  r"(?:([eE][+-]?[0-9]+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?)")
_SUFFIX = {None: 1, "n": Fraction(1, 10**9), "u": Fraction(1, 10**6), "m": Fraction(1, 1000),
           "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18,
           "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}


def quantity(v):
    """The value of a quantity (string or JSON number) as a Fraction, or None."""
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return Fraction(v)
    if isinstance(v, float):
        return Fraction(repr(v))
    if not isinstance(v, str):
        return None
    m = _QTY.fullmatch(v.strip())
    if not m:
        return None
    n = Fraction(m.group(1))
    if m.group(2):
        e = int(m.group(2)[1:])
        return n * (Fraction(10) ** e)
    return n * _SUFFIX[m.group(3)]


def same_quantities(a, b):
    a, b = a or {}, b or {}
    if set(a) != set(b):
        return False
    return all(quantity(a[k]) == quantity(b[k]) and quantity(a[k]) is not None
               or a[k] == b[k] for k in a)


def quantity_text(q):
    return str(q.numerator) if q.denominator == 1 else f"{q.numerator}/{q.denominator}"


_TEXT_QTY = re.compile(r"(?<=[=( ])([0-9][0-9.]*(?:[eE][+-]?[0-9]+|Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?)"
                       r'(?=[ );,"]|$)')


def normalize_quantities(w):
    """A warning or message with each quantity written as its value: the
    API server hands the webhook canonical quantities, so a manifest's 3000
    is 3k in the text."""
    def canon(m):
        q = quantity(m.group(1))
        return quantity_text(q) if q is not None else m.group(1)
    return _TEXT_QTY.sub(canon, w)


# --------------------------------------------------------------------------
# Results


class Skip(Exception):
    """A test that cannot run here, with the reason: a skip of the test."""


class Checks:
    """The checks of one test: each is counted, and the failures wait for
    the end of the test (see checks below).  skip() names what the test
    could not check and why, a SKIP line that does not skip the test."""

    def __init__(self, number, name):
        self.number = number
        self.name = name
        self.asserts = 0
        self.failures = []
        self.skips = []
        self.summary = ""

    def check(self, ok, what, detail=""):
        self.asserts += 1
        if not ok:
            detail = str(detail)
            if len(detail) > 900:
                detail = detail[:900] + "..."
            self.failures.append(what + (f": {detail}" if detail else ""))
        return ok

    def equal(self, got, want, what):
        return self.check(got == want, what, f"got {got!r}, want {want!r}")

    def contains(self, text, piece, what):
        return self.check(piece in text, what, f"{piece!r} not in {text.strip()!r}")

    def skip(self, what, why):
        self.skips.append((what, why))

    def skip_lines(self):
        """One line per reason, naming what it covers."""
        by_reason = {}
        for what, why in self.skips:
            by_reason.setdefault(why, []).append(what)
        return [f"{', '.join(sorted(whats))}: {why}" for why, whats in by_reason.items()]


def checks(number, name, method):
    """Makes a test of the Suite one pytest test on the module's cluster,
    as tests/chart does with its sections: every check runs and is
    counted, and the test fails with the list of the failed ones (the first
    40), or when it made none.  Its line, `ok` or `FAIL` with its summary
    and number of assertions, and its SKIP lines are printed before
    pytest's summary line.  name, the one printed, is also a -k keyword."""
    def test(suite, report):
        cl = suite.cl
        t = Checks(number, name)
        t0 = time.time()
        try:
            for proc in (cl.etcd, cl.apiserver):
                if proc is None or not proc.alive():
                    raise RuntimeError(f"{proc.name if proc else 'a process'} is not "
                                       f"running (see {os.path.relpath(OUT, ROOT)}/)")
            if cl.webhook is None or not cl.webhook.alive():
                suite.start_chart_webhook()
            method(suite, t)
        except Skip as e:
            pytest.skip(str(e))
        except pytest.exit.Exception:  # SIGTERM or SIGHUP (on_signal)
            raise
        except Exception as e:  # a broken test fails, the others still run
            t.check(False, "the test ran to its end",
                    f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=3)}")
        suite.asserts += t.asserts
        ok = not t.failures and t.asserts > 0
        word = "ok  " if ok else "FAIL"
        report(f"{word} {number} {name}: {t.summary or 'ran'} "
               f"[{t.asserts} assertions, {time.time() - t0:.0f} s]")
        for s in t.skip_lines():
            report(f"SKIP {number} {name}: {s}")
        if not ok:
            fails = t.failures[:40]
            if len(t.failures) > 40:
                fails.append(f"... and {len(t.failures) - 40} more")
            pytest.fail("\n".join(fails) or "no check ran", pytrace=False)
    test.e2e_name = name
    return test


# --------------------------------------------------------------------------
# Processes: everything started here is stopped on exit, Ctrl-C included.

PROCS = []
_libc = None


def _die_with_parent():
    # The children end with this process even if it is killed outright.
    try:
        _libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except Exception:
        pass


class Proc:
    def __init__(self, name, argv, logname):
        global _libc
        if _libc is None:
            _libc = ctypes.CDLL(None, use_errno=True)
        self.name = name
        self.log = log_path(logname)
        with open(self.log, "a") as f:
            f.write(f"=== {time.strftime('%H:%M:%S')} start: {' '.join(argv)}\n")
            f.flush()
            self.offset = f.tell()
            self.p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=f,
                                      stderr=subprocess.STDOUT, cwd=ROOT,
                                      preexec_fn=_die_with_parent)
        PROCS.append(self)

    def alive(self):
        return self.p.poll() is None

    def stop(self, timeout=15):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
            try:
                self.p.wait(timeout)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        if self in PROCS:
            PROCS.remove(self)
        return self.p.returncode

    def lines(self):
        """The log lines written since this process started."""
        with open(self.log, errors="replace") as f:
            f.seek(self.offset)
            return f.read().splitlines()


def stop_all():
    for p in reversed(list(PROCS)):
        try:
            p.stop(10)
        except Exception:
            pass


def on_signal(signum, _frame):
    # Ends the session: the module's cluster fixture stops everything.
    pytest.exit(f"e2e: {signal.Signals(signum).name}; stopping everything it started")


# --------------------------------------------------------------------------
# The cluster


class Cluster:
    def __init__(self):
        self.etcd = None
        self.apiserver = None
        self.webhook = None
        self.etcd_port = free_port()
        self.peer_port = free_port()
        self.api_port = free_port()
        self.webhook_port = free_port()
        self.metrics_port = free_port()
        self.tokens = {}           # identity -> token
        self.plugins = ()
        self.ca_pem = ""
        self.api_ssl = None
        self.kubeconfig = log_path("kubeconfig")
        self.cache_dir = log_path("kubectl-cache")
        self.webhook_dir = log_path("webhook-tls")
        self.webhook_config = None
        self.webhook_args = ()

    # --- certificates and identities -------------------------------------

    def make_certs(self, identities):
        d = log_path("certs")
        rc, out, err = run([GEN_CERTS, "--service", RELEASE, "--namespace", RELEASE_NS,
                            "--out", os.path.join(d, "webhook"), "--force"])
        if rc != 0:
            raise RuntimeError(f"gen-certs.sh (webhook) failed: {err.strip()}")
        self.ca_bundle = out.strip()
        rc, _, err = run([GEN_CERTS, "--service", "kubernetes", "--namespace", "default",
                          "--out", os.path.join(d, "apiserver"), "--force"])
        if rc != 0:
            raise RuntimeError(f"gen-certs.sh (API server) failed: {err.strip()}")
        rc, _, err = run(["openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt",
                          "rsa_keygen_bits:2048", "-out", os.path.join(d, "sa.key")])
        if rc != 0:
            raise RuntimeError(f"openssl genpkey failed: {err.strip()}")
        # The webhook's pair sits as a Secret volume holds it: tls.crt ->
        # ..data/tls.crt, ..data -> a dated folder, swapped in one rename.
        self.rotations = 0
        self.install_webhook_pair(os.path.join(d, "webhook", "tls.crt"),
                                  os.path.join(d, "webhook", "tls.key"))
        for name in ("tls.crt", "tls.key"):
            os.symlink(os.path.join("..data", name), os.path.join(self.webhook_dir, name))
        self.api_ssl = ssl.create_default_context(cafile=os.path.join(d, "apiserver", "ca.crt"))

        lines = []
        for i, (ident, (user, uid, groups)) in enumerate(identities.items()):
            token = f"e2e-token-{i:03d}-{os.urandom(6).hex()}"
            self.tokens[ident] = token
            lines.append('%s,%s,%s,"%s"' % (token, user, uid, ",".join(groups)))
        write(log_path("tokens.csv"), "\n".join(lines) + "\n", 0o600)
        kc = {
            "apiVersion": "v1", "kind": "Config", "current-context": "e2e",
            "clusters": [{"name": "e2e", "cluster": {
                "server": f"https://127.0.0.1:{self.api_port}",
                "certificate-authority": os.path.join(d, "apiserver", "ca.crt")}}],
            "users": [{"name": "admin", "user": {"token": self.tokens["admin"]}}],
            "contexts": [{"name": "e2e", "context": {"cluster": "e2e", "user": "admin"}}],
        }
        write(self.kubeconfig, json.dumps(kc, indent=1), 0o600)

    def install_webhook_pair(self, crt, key):
        """Puts a serving pair in place the way kubelet updates a Secret
        volume: a new dated folder, then one atomic rename of ..data."""
        os.makedirs(self.webhook_dir, exist_ok=True)
        stamp = f"..{time.strftime('%Y_%m_%d_%H_%M_%S')}.{self.rotations}"
        folder = os.path.join(self.webhook_dir, stamp)
        os.makedirs(folder)
        shutil.copy(crt, os.path.join(folder, "tls.crt"))
        shutil.copy(key, os.path.join(folder, "tls.key"))
        tmp = os.path.join(self.webhook_dir, "..data_tmp")
        os.symlink(stamp, tmp)
        os.replace(tmp, os.path.join(self.webhook_dir, "..data"))
        self.rotations += 1

    # --- etcd --------------------------------------------------------------

    def start_etcd(self):
        data = log_path("etcd-data")
        shutil.rmtree(data, ignore_errors=True)
        peer = f"http://127.0.0.1:{self.peer_port}"
        client = f"http://127.0.0.1:{self.etcd_port}"
        self.etcd = Proc("etcd", [
            ETCD, "--name", "e2e", "--data-dir", data,
            "--listen-client-urls", client, "--advertise-client-urls", client,
            "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
            "--initial-cluster", f"e2e={peer}", "--initial-cluster-state", "new",
            "--log-level", "warn", "--logger", "zap"], "etcd.log")
        deadline = time.time() + 60
        while time.time() < deadline:
            if not self.etcd.alive():
                raise RuntimeError("etcd exited:\n" + tail(self.etcd.log))
            try:
                with urllib.request.urlopen(client + "/health", timeout=2) as r:
                    if json.load(r).get("health") == "true":
                        return
            except (OSError, ValueError):
                pass
            time.sleep(0.2)
        raise RuntimeError("etcd did not become healthy in 60 s:\n" + tail(self.etcd.log))

    # --- kube-apiserver ----------------------------------------------------

    def start_apiserver(self, plugins=()):
        d = log_path("certs")
        self.plugins = tuple(plugins)
        argv = [
            APISERVER,
            f"--etcd-servers=http://127.0.0.1:{self.etcd_port}",
            "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
            f"--secure-port={self.api_port}", "--insecure-port=0",
            f"--tls-cert-file={d}/apiserver/tls.crt",
            f"--tls-private-key-file={d}/apiserver/tls.key",
            f"--cert-dir={log_path('apiserver-certs')}",
            f"--token-auth-file={log_path('tokens.csv')}",
            "--authorization-mode=RBAC",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--service-account-key-file={d}/sa.key",
            f"--service-account-signing-key-file={d}/sa.key",
            "--service-cluster-ip-range=10.96.0.0/16",
            "--endpoint-reconciler-type=none",
            # No controller-manager runs to make service-account tokens.
            "--disable-admission-plugins=ServiceAccount",
            "--allow-privileged=true",
            "--profiling=false",
            # pods/ephemeralcontainers, alpha in 1.20 (escapes-ephemeral).
            "--feature-gates=EphemeralContainers=true",
        ]
        if self.plugins:
            argv.append("--enable-admission-plugins=" + ",".join(self.plugins))
        self.apiserver = Proc("kube-apiserver", argv, "apiserver.log")
        deadline = time.time() + START_TIMEOUT
        last = ""
        while time.time() < deadline:
            if not self.apiserver.alive():
                raise RuntimeError("kube-apiserver exited:\n" + tail(self.apiserver.log))
            try:
                code, body = self.api("GET", "/readyz")
                if code == 200:
                    return
                last = f"readyz {code}"
            except OSError as e:
                last = str(e)
            time.sleep(0.5)
        raise RuntimeError(f"kube-apiserver not ready in {START_TIMEOUT} s ({last}):\n"
                           + tail(self.apiserver.log))

    def restart_apiserver(self, plugins=()):
        self.apiserver.stop()
        self.start_apiserver(plugins)

    def api(self, method, path, body=None, user="admin",
            content_type="application/json"):
        """A direct request to the API server: (status, parsed body or text)."""
        req = urllib.request.Request(
            f"https://127.0.0.1:{self.api_port}{path}", method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Authorization": "Bearer " + self.tokens[user],
                     "Content-Type": content_type})
        try:
            with urllib.request.urlopen(req, context=self.api_ssl, timeout=20) as r:
                code, data = r.status, r.read()
        except urllib.error.HTTPError as e:
            code, data = e.code, e.read()
        try:
            return code, json.loads(data)
        except ValueError:
            return code, data.decode("utf-8", "replace")

    # --- kubectl -----------------------------------------------------------

    def kubectl(self, args, user="admin", stdin=None, timeout=KUBECTL_TIMEOUT):
        argv = [KUBECTL, "--kubeconfig", self.kubeconfig, "--cache-dir", self.cache_dir,
                "--token", self.tokens[user]] + list(args)
        env = dict(os.environ, HOME=log_path("home"))
        return run(argv, stdin=stdin, timeout=timeout, env=env)

    def apply(self, docs, user="admin", extra=()):
        text = docs if isinstance(docs, str) else \
            "".join("---\n" + yaml.safe_dump(d, sort_keys=False) for d in docs)
        rc, out, err = self.kubectl(["apply", "-f", "-"] + list(extra), user=user, stdin=text)
        if rc != 0:
            raise RuntimeError(f"kubectl apply failed: {err.strip()}")
        return out

    # --- the webhook -------------------------------------------------------

    def start_webhook(self, config=None, args=()):
        """Starts build/vgpu-webhook serve with this config file and flags
        (restarting it when it runs), and waits until /readyz answers."""
        if self.webhook is not None:
            self.stop_webhook()
        self.webhook_config, self.webhook_args = config, tuple(args)
        argv = [BIN, "serve", "--listen", f"127.0.0.1:{self.webhook_port}",
                "--tls-cert-file", os.path.join(self.webhook_dir, "tls.crt"),
                "--tls-private-key-file", os.path.join(self.webhook_dir, "tls.key"),
                "--metrics-listen", f"127.0.0.1:{self.metrics_port}",
                "--log-format", "json"]
        if config:
            argv += ["--config", config]
        argv += list(args)
        self.webhook = Proc("vgpu-webhook", argv, "webhook.log")
        deadline = time.time() + 20
        while time.time() < deadline:
            if not self.webhook.alive():
                raise RuntimeError("the webhook exited:\n" + tail(self.webhook.log))
            try:
                with urllib.request.urlopen(
                        f"http://127.0.0.1:{self.metrics_port}/readyz", timeout=2) as r:
                    if r.status == 200:
                        return self.webhook
            except OSError:
                pass
            time.sleep(0.05)
        raise RuntimeError("the webhook did not become ready:\n" + tail(self.webhook.log))

    def stop_webhook(self):
        if self.webhook is not None:
            self.webhook.stop()
            self.webhook = None

    def decisions(self, since=None):
        """The webhook's decision log lines (JSON) of its current run.  While
        it serves, the webhook writes them every 100 ms (README, Logs): wait
        that long first, so that every answer received has its line."""
        time.sleep(DECISION_LOG_DELAY)
        out = []
        for line in (since or self.webhook).lines():
            try:
                d = json.loads(line)
            except ValueError:
                continue
            if isinstance(d, dict) and d.get("msg") == "decision":
                out.append(d)
        return out

    def metric(self, name):
        with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics",
                                    timeout=5) as r:
            text = r.read().decode()
        for line in text.splitlines():
            if line.startswith(name + " "):
                return float(line.split()[-1])
        return None


# --------------------------------------------------------------------------
# The chart


def helm_template(ca_bundle, port, *sets, mode="existingSecret", kube="1.23.0", files=(),
                  release=RELEASE):
    env = dict(os.environ)
    home = os.path.join(ROOT, "build", "tools", "helm-home")
    env.setdefault("HELM_CONFIG_HOME", os.path.join(home, "config"))
    env.setdefault("HELM_CACHE_HOME", os.path.join(home, "cache"))
    env.setdefault("HELM_DATA_HOME", os.path.join(home, "data"))
    argv = [HELM, "template", release, CHART, "--namespace", RELEASE_NS,
            "--kube-version", kube, "--set", f"service.port={port}",
            "--set", f"certificates.mode={mode}",
            # the chart refuses an image with no registry; no pod runs it here
            "--set", "image.registry=registry.example.com"]
    if mode == "existingSecret":
        argv += ["--set", f"certificates.existingSecret.name={RELEASE}-tls",
                 "--set", f"certificates.existingSecret.caBundle={ca_bundle}"]
    for f in files:
        argv += ["-f", f]
    for s in sets:
        argv += ["--set", s]
    rc, out, err = run(argv, env=env)
    if rc != 0:
        raise RuntimeError(f"helm template failed: {err.strip()}")
    return out


def split_docs(text):
    """(kind, the document's text, the parsed object) of each rendered document."""
    out = []
    for chunk in re.split(r"(?m)^---\s*$", text):
        obj = yaml.safe_load(chunk)
        if isinstance(obj, dict):
            out.append((obj.get("kind"), chunk, obj))
    return out


def external_name_service(rendered_service):
    """The chart's Service as the test bed needs it: type ExternalName
    pointing to localhost, so that the API server dials localhost:<port>."""
    svc = json.loads(json.dumps(rendered_service))
    spec = svc["spec"]
    spec.pop("selector", None)
    spec["type"] = "ExternalName"
    spec["externalName"] = "localhost"
    return svc


# --------------------------------------------------------------------------
# The corpus (SPEC section 7): each case a folder with review.json,
# expect.json, and optionally config.json and args.  A small reader of its
# own, so that this suite depends only on the case format.


class Case:
    def __init__(self, path):
        self.dir = path
        self.name = os.path.basename(path)
        with open(os.path.join(path, "review.json"), "rb") as f:
            self.review = json.loads(f.read())
        with open(os.path.join(path, "expect.json"), "rb") as f:
            self.expect = json.loads(f.read())
        cfg = os.path.join(path, "config.json")
        self.config = cfg if os.path.exists(cfg) else None
        self.args = []
        a = os.path.join(path, "args")
        if os.path.exists(a):
            with open(a, encoding="utf-8") as f:
                self.args = [line.rstrip("\n") for line in f if line.strip()]

    @property
    def request(self):
        r = self.review.get("request")
        return r if isinstance(r, dict) else {}

    @property
    def pod(self):
        return self.request.get("object")

    @property
    def is_pod_create(self):
        r = self.request
        kind = r.get("kind")
        return (isinstance(kind, dict) and kind.get("group") == "" and kind.get("kind") == "Pod"
                and r.get("operation") == "CREATE" and not r.get("subResource")
                and isinstance(r.get("object"), dict))

    @property
    def group(self):
        """Cases that need the same webhook command line."""
        cfg = b""
        if self.config:
            with open(self.config, "rb") as f:
                cfg = f.read()
        return (cfg, tuple(self.args))

    def requester(self):
        u = self.request.get("userInfo") or {}
        return (u.get("username") or "system:anonymous", u.get("uid") or "",
                tuple(g for g in (u.get("groups") or [])))


def load_cases(root):
    out = []
    for entry in sorted(os.listdir(root)):
        path = os.path.join(root, entry)
        if os.path.isdir(path) and os.path.exists(os.path.join(path, "review.json")):
            out.append(Case(path))
    return out


def containers_of(pod):
    spec = pod.get("spec") if isinstance(pod, dict) else None
    if not isinstance(spec, dict):
        return []
    out = []
    for field in ("initContainers", "containers"):
        v = spec.get(field)
        if isinstance(v, list):
            out += [(field, c) for c in v if isinstance(c, dict)]
    return out


_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")


def api_server_view(case):
    """What the API server does with this case's pod before or after the
    webhook, where that is not what the case assumes: (kind, reason), kind
    being
      "decode"   it refuses the pod when it decodes it, before any webhook
                 (sent anyway: the refusal is checked);
      "skip"     it changes the pod before the webhook, so the case cannot
                 be reproduced (not sent);
      "invalid"  its validation refuses the pod after the webhook, for a
                 field the webhook does not own (sent: the webhook's
                 warnings and the refusal are checked, not a stored pod);
    or None when the case goes through as written."""
    exp = case.expect
    pod = case.pod
    if not exp.get("allowed") and exp.get("code") == 400:
        return ("decode", "a field of the wrong JSON type: the API server refuses the pod "
                "when it decodes it, before any webhook")
    spec = pod.get("spec") if isinstance(pod.get("spec"), dict) else {}
    for field, c in containers_of(pod):
        if field == "initContainers" and "restartPolicy" in c:
            return ("skip", "a native sidecar (an init container with restartPolicy, "
                    "Kubernetes 1.28): 1.20 drops the field before any webhook")
        for part in ("limits", "requests"):
            m = (c.get("resources") or {}).get(part)
            if not isinstance(m, dict):
                continue
            if any(v is None for v in m.values()):
                return ("skip", "a null quantity: the API server decodes it as 0 before "
                        "any webhook")
            if any(isinstance(v, str) and quantity(v) is None for v in m.values()):
                return ("decode", "a quantity that does not parse: the API server refuses "
                        "the pod when it decodes it, before any webhook")
    if not spec.get("schedulerName") and case.config:
        with open(case.config, "rb") as f:
            if re.search(rb'"forceOverwriteDefaultScheduler"\s*:\s*false', f.read()):
                return ("skip", "an empty spec.schedulerName: the API server sets "
                        "default-scheduler before any webhook, which this config skips")
    for _, c in containers_of(pod):
        if not (isinstance(c.get("name"), str) and _DNS_LABEL.fullmatch(c["name"])):
            return ("invalid", "a container name that is no DNS label: the API server's "
                    "validation refuses the pod after the webhook; the warnings and the "
                    "refusal are checked, not a stored pod")
    return None


TAINTS = ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")


def tolerates(t, key, effect):
    if t.get("effect") not in (None, "", effect):
        return False
    if not t.get("key"):
        return t.get("operator") == "Exists"
    return t.get("key") == key


def clean_toleration(t):
    return {k: v for k, v in t.items() if v not in ("", None)}


def canon_tolerations(ts):
    return sorted(json.dumps(clean_toleration(t), sort_keys=True) for t in ts or [])


def clean_env(env):
    out = []
    for e in env or []:
        e = {k: v for k, v in e.items() if not (k == "value" and v == "")}
        out.append(e)
    return out


def expected_as_stored(case, pod):
    """The case's expected pod as the API server keeps it: limits copied
    into missing requests, spec.schedulerName defaulted, and the
    DefaultTolerationSeconds tolerations added when the pod had none that
    covers them."""
    pod = json.loads(json.dumps(pod))
    spec = pod.setdefault("spec", {})
    if not spec.get("schedulerName"):
        spec["schedulerName"] = "default-scheduler"
    for _, c in containers_of(pod):
        res = c.get("resources") or {}
        lim = res.get("limits")
        if isinstance(lim, dict) and lim:
            req = res.setdefault("requests", {})
            for k, v in lim.items():
                if v is not None and k not in req:
                    req[k] = v
        c["resources"] = res
    given = (case.pod.get("spec") or {}).get("tolerations") or []
    tol = list(spec.get("tolerations") or [])
    for key in TAINTS:
        if not any(tolerates(t, key, "NoExecute") for t in given):
            tol.append({"key": key, "operator": "Exists", "effect": "NoExecute",
                        "tolerationSeconds": 300})
    spec["tolerations"] = tol
    return pod


def compare_pods(t, tag, want, got):
    """What the webhook owns, compared between the expected pod (as the API
    server would keep it) and the stored one."""
    ws, gs = want.get("spec") or {}, got.get("spec") or {}
    t.equal(gs.get("schedulerName"), ws.get("schedulerName"), f"{tag}: schedulerName")
    t.equal(gs.get("runtimeClassName"), ws.get("runtimeClassName"), f"{tag}: runtimeClassName")
    t.equal((got.get("metadata") or {}).get("annotations") or {},
            (want.get("metadata") or {}).get("annotations") or {}, f"{tag}: annotations")
    t.equal(canon_tolerations(gs.get("tolerations")), canon_tolerations(ws.get("tolerations")),
            f"{tag}: tolerations")
    wc, gc = containers_of(want), containers_of(got)
    if not t.equal([c.get("name") for _, c in gc], [c.get("name") for _, c in wc],
                   f"{tag}: containers"):
        return
    for (_, w), (_, g) in zip(wc, gc):
        wr, gr = w.get("resources") or {}, g.get("resources") or {}
        for part in ("limits", "requests"):
            t.check(same_quantities(wr.get(part), gr.get(part)),
                    f"{tag}: container {w.get('name')!r} {part}",
                    f"got {gr.get(part)!r}, want {wr.get(part)!r}")
        t.equal(clean_env(g.get("env")), clean_env(w.get("env")),
                f"{tag}: container {w.get('name')!r} env")


def kubectl_warnings(stderr):
    return [line[len("Warning: "):] for line in stderr.splitlines()
            if line.startswith("Warning: ")]


def check_warnings(t, tag, stderr, want):
    got = kubectl_warnings(stderr)
    t.equal([normalize_quantities(w) for w in got], [normalize_quantities(w) for w in want],
            f"{tag}: warnings printed by kubectl")


# --------------------------------------------------------------------------
# Pods for the other tests


def gpu_pod(name, namespace, limits=None, env=None, labels=None, annotations=None,
            privileged=False, requests=None):
    c = {"name": "cuda", "image": "nvcr.io/nvidia/cuda:12.2.0-base-ubuntu22.04",
         "resources": {"limits": dict(limits if limits is not None else {"nvidia.com/gpu": "1"})}}
    if requests is not None:
        c["resources"]["requests"] = dict(requests)
    if env:
        c["env"] = env
    if privileged:
        c["securityContext"] = {"privileged": True}
    meta = {"name": name, "namespace": namespace}
    if labels:
        meta["labels"] = labels
    if annotations:
        meta["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": {"containers": [c]}}


def create(cl, pod, user="admin", extra=()):
    """kubectl create of one pod: (rc, stored pod or None, stderr)."""
    ns = pod["metadata"].get("namespace", "default")
    rc, out, err = cl.kubectl(["create", "-n", ns, "-o", "json", "-f", "-"] + list(extra),
                              user=user, stdin=json.dumps(pod))
    obj = None
    if rc == 0:
        try:
            obj = json.loads(out)
        except ValueError:
            rc, err = 1, err + "\nstdout is not JSON: " + out[:300]
    return rc, obj, err


def limits_of(pod, i=0):
    return pod["spec"]["containers"][i].get("resources", {}).get("limits", {})


def is_defaulted(pod):
    """The default policy's marks on a one-container pod that asked for one GPU."""
    lim = limits_of(pod)
    return (pod["spec"].get("schedulerName") == "hami-scheduler"
            and quantity(lim.get("nvidia.com/gpumem")) == 5000
            and canon_tolerations(pod["spec"].get("tolerations")).count(
                json.dumps(GPU_TOLERATION, sort_keys=True)) == 1)


# How kubectl shows a denial's status code.
DENIAL_SHOWN = {403: "Error from server (Forbidden)", 422: "The request is invalid",
                400: "Error from server (BadRequest)"}

DEFAULT_WARNING = 'container "cuda": set nvidia.com/gpumem=5000 (defaultMemory)'


# --------------------------------------------------------------------------
# The tests


class Suite:
    def __init__(self, cl, cases):
        self.cl = cl
        self.cases = cases
        self.rendered = None
        self.docs = None
        self.chart_config = log_path("chart-config.json")
        self.asserts = 0  # of every test that ran

    # --- setup -------------------------------------------------------------

    def render(self, *sets, **kw):
        return helm_template(self.cl.ca_bundle, self.cl.webhook_port, *sets, **kw)

    def rendered_mwc(self, *sets):
        for kind, text, obj in split_docs(self.render(*sets)):
            if kind == "MutatingWebhookConfiguration":
                return text, obj
        raise RuntimeError("the chart rendered no MutatingWebhookConfiguration")

    def settle(self):
        # The API server reads webhook configurations through an informer;
        # a change takes effect a moment after it is stored.
        time.sleep(1.5)

    def bootstrap(self, runtime_classes, corpus_users):
        cl = self.cl
        namespaces = (("ml", RELEASE_NS) + TENANT_NAMESPACES + TEST_NAMESPACES
                      + ("kube-system", "default"))
        docs = []
        # 1.20 does not set kubernetes.io/metadata.name (1.21 does), and the
        # chart's namespace exclusions read it: the suite labels its
        # namespaces itself.
        for ns in namespaces:
            docs.append({"apiVersion": "v1", "kind": "Namespace",
                         "metadata": {"name": ns, "labels": {"kubernetes.io/metadata.name": ns}}})
        docs.append({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                     "metadata": {"name": "e2e-pod-writer"},
                     "rules": [{"apiGroups": [""], "resources": ["pods"],
                                "verbs": ["create", "get", "list", "delete"]},
                               {"apiGroups": [""], "resources": ["resourcequotas"],
                                "verbs": ["get", "list"]}]})
        # What HAMi's scheduler does with pods: read them, write its
        # annotations, bind them.
        docs.append({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                     "metadata": {"name": "e2e-hami-scheduler"},
                     "rules": [{"apiGroups": [""], "resources": ["pods"],
                                "verbs": ["get", "list", "watch", "update", "patch"]},
                               {"apiGroups": [""], "resources": ["pods/binding"],
                                "verbs": ["create"]}]})
        docs.append({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                     "metadata": {"name": "e2e-hami-scheduler"},
                     "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                 "name": "e2e-hami-scheduler"},
                     "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User",
                                   "name": SCHEDULER_SA}]})

        # The device plugin patches pods too (hami.io/bind-phase); in
        # e2e-guards the tenant may annotate and label its pods, and the
        # scheduler's identity may create pods, so that the guards, not
        # RBAC, are what refuses them there.
        docs.append({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                     "metadata": {"name": "e2e-hami-device-plugin"},
                     "rules": [{"apiGroups": [""], "resources": ["pods"],
                                "verbs": ["get", "list", "watch", "update", "patch"]}]})
        docs.append({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                     "metadata": {"name": "e2e-hami-device-plugin"},
                     "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                 "name": "e2e-hami-device-plugin"},
                     "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User",
                                   "name": DEVICE_PLUGIN_SA}]})
        docs.append({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                     "metadata": {"name": "e2e-pod-editor"},
                     "rules": [{"apiGroups": [""], "resources": ["pods"],
                                "verbs": ["create", "get", "list", "delete", "update",
                                          "patch"]}]})
        docs.append({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                     "metadata": {"name": "e2e-pod-editors", "namespace": "e2e-guards"},
                     "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                 "name": "e2e-pod-editor"},
                     "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User",
                                   "name": u} for u in (SCHEDULER_SA, TENANT)]})

        def binding(ns, users):
            return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                    "metadata": {"name": "e2e-pod-writers", "namespace": ns},
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                "name": "e2e-pod-writer"},
                    "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User",
                                  "name": u} for u in sorted(users)]}
        docs.append(binding("ml", corpus_users))
        for ns in TENANT_NAMESPACES:
            docs.append(binding(ns, [TENANT]))
        for rc in sorted(runtime_classes):
            docs.append({"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
                         "metadata": {"name": rc}, "handler": "e2e"})
        self.rendered = self.render()
        self.docs = split_docs(self.rendered)
        by_kind = {kind: (text, obj) for kind, text, obj in self.docs}
        docs.append(external_name_service(by_kind["Service"][1]))
        cl.apply(docs)
        # The webhook configurations exactly as the chart renders them: the
        # validating one (pod UPDATEs, the guards) is there by default.
        if "ValidatingWebhookConfiguration" not in by_kind:
            raise RuntimeError("the chart rendered no ValidatingWebhookConfiguration")
        cl.apply(by_kind["MutatingWebhookConfiguration"][0])
        cl.apply(by_kind["ValidatingWebhookConfiguration"][0])
        write(self.chart_config, by_kind["ConfigMap"][1]["data"]["config.json"])
        self.settle()

    def start_chart_webhook(self):
        return self.cl.start_webhook(self.chart_config)

    # --- 1 -----------------------------------------------------------------

    def test_corpus(self, t):
        cl = self.cl
        pods = [c for c in self.cases if c.is_pod_create]
        others = len(self.cases) - len(pods)
        if not pods:
            raise Skip(f"no Pod CREATE case in {CASES}")
        groups = {}
        for c in pods:
            groups.setdefault(c.group, []).append(c)
        counts = dict.fromkeys(("allowed", "denied", "warned", "skipped", "decode",
                                "invalid"), 0)
        for (_, args), members in groups.items():
            runnable = []
            for c in members:
                view = api_server_view(c)
                if view and view[0] == "skip":
                    t.skip(c.name, view[1])
                    counts["skipped"] += 1
                else:
                    runnable.append((c, view))
            if not runnable:
                continue
            cl.start_webhook(runnable[0][0].config, args)
            for c, view in runnable:
                self.corpus_case(t, c, view, counts)
        cl.start_webhook(self.chart_config)
        where = os.path.relpath(CASES, ROOT) if CASES.startswith(ROOT + os.sep) else CASES
        t.summary = (f"{len(pods)} Pod CREATE cases from {where} "
                     f"through kubectl create, {len(groups)} webhook configurations: "
                     f"{counts['allowed']} admitted, {counts['denied']} denied, "
                     f"{counts['warned']} with warnings; {counts['decode']} refused by the "
                     f"API server before the webhook, {counts['invalid']} by its validation "
                     f"after it; {counts['skipped']} skipped"
                     + (f"; {others} cases are not a Pod CREATE" if others else ""))

    def corpus_case(self, t, c, view, counts):
        cl = self.cl
        pod = json.loads(json.dumps(c.pod))
        meta = pod.setdefault("metadata", {})
        if meta.get("name"):
            # Names must be unique in the namespace; generateName is kept.
            meta["name"] = f"{meta['name'][:200]}-{c.name[:3]}"
        ns = c.request.get("namespace") or meta.get("namespace") or "default"
        meta["namespace"] = ns
        extra = ["--dry-run=server"] if c.request.get("dryRun") is True else []
        if view and view[0] == "decode":
            before = len(cl.decisions())
            # Straight to the API: against a 1.20 server, kubectl 1.33 checks
            # the schema itself (the server does not validate fields), and it
            # cannot send a pod whose metadata it cannot read.
            counts["decode"] += 1
            code, body = cl.api("POST", f"/api/v1/namespaces/{ns}/pods", pod,
                                user=c.requester())
            msg = body.get("message", "") if isinstance(body, dict) else str(body)
            t.check(code == 400 and "cannot be handled as a Pod" in msg,
                    f"{c.name}: the API server refuses the pod when it decodes it",
                    f"HTTP {code}: {msg}")
            t.equal(len(cl.decisions()) - before, 0, f"{c.name}: the webhook is not called")
            t.skip(c.name, view[1] + " (checked)")
            return
        rc, got, err = create(cl, pod, user=c.requester(), extra=extra)
        want_warnings = c.expect.get("warnings") or []
        if view and view[0] == "invalid":
            counts["invalid"] += 1
            t.check(rc != 0 and "is invalid" in err and ".name: Invalid value" in err,
                    f"{c.name}: the API server's validation refuses the container name",
                    err.strip())
            check_warnings(t, c.name, err, want_warnings)
            t.skip(c.name, view[1])
            return
        if c.expect.get("allowed"):
            counts["allowed"] += 1
            if not t.check(rc == 0, f"{c.name}: kubectl create admits the pod", err.strip()):
                return
            want = expected_as_stored(c, c.expect["pod"] if c.expect.get("patched", True)
                                      is not False else c.pod)
            compare_pods(t, c.name, want, got)
        else:
            counts["denied"] += 1
            t.check(rc != 0, f"{c.name}: kubectl create is refused")
            t.contains(err, f'admission webhook "{WEBHOOK_NAME}" denied the request',
                       f"{c.name}: refused by the webhook")
            # The webhook's status code reaches the client.
            shown = DENIAL_SHOWN.get(c.expect.get("code"))
            if shown:
                t.contains(err, shown, f"{c.name}: kubectl shows code {c.expect.get('code')}")
            for piece in c.expect.get("message_contains") or []:
                # The API server hands the webhook canonical quantities: a
                # manifest's 1.5 is 1500m in the message.
                t.contains(normalize_quantities(err), normalize_quantities(piece),
                           f"{c.name}: kubectl shows the message")
        if want_warnings:
            counts["warned"] += 1
        check_warnings(t, c.name, err, want_warnings)

    # --- 2 -----------------------------------------------------------------

    def test_dry_run(self, t):
        cl = self.cl
        pod = gpu_pod("dry-run-gpu", "team-a")
        before = len(cl.decisions())
        rc, out, err = cl.kubectl(["create", "--dry-run=server", "-o", "yaml", "-f", "-"],
                                  user=TENANT, stdin=json.dumps(pod))
        if not t.check(rc == 0, "kubectl create --dry-run=server succeeds", err.strip()):
            return
        shown = yaml.safe_load(out)
        t.check(is_defaulted(shown),
                "the YAML shows the defaults (gpumem 5k, scheduler, toleration)", shown.get("spec"))
        t.equal(limits_of(shown).get("nvidia.com/gpumem"), "5k",
                "the API server shows 5000 as 5k")
        t.equal(kubectl_warnings(err), [DEFAULT_WARNING], "kubectl prints the warning")
        rc, _, err2 = cl.kubectl(["get", "pod", "-n", "team-a", "dry-run-gpu"], user=TENANT)
        t.check(rc != 0 and "NotFound" in err2, "nothing is stored", err2.strip())
        new = cl.decisions()[before:]
        t.check(len(new) == 1 and new[0].get("name") == "dry-run-gpu"
                and new[0].get("outcome") == "patched",
                "the webhook decided the dry run once", new)
        t.summary = "defaults and warning shown, nothing stored"

    # --- 3 -----------------------------------------------------------------

    def test_reinvocation(self, t):
        cl = self.cl
        second = SecondWebhook(os.path.join(log_path("certs"), "webhook"))
        second.start()
        try:
            cfg = {"apiVersion": "admissionregistration.k8s.io/v1",
                   "kind": "MutatingWebhookConfiguration",
                   # Configurations are called in name order: after ours.
                   "metadata": {"name": "zz-e2e-second"},
                   "webhooks": [{
                       "name": "second.e2e.example.com",
                       "admissionReviewVersions": ["v1"], "sideEffects": "None",
                       "failurePolicy": "Fail", "timeoutSeconds": 10,
                       "reinvocationPolicy": "Never",
                       "clientConfig": {"url": f"https://127.0.0.1:{second.port}/mutate",
                                        "caBundle": cl.ca_bundle},
                       "rules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                  "operations": ["CREATE"], "resources": ["pods"]}],
                       "namespaceSelector": {"matchLabels": {
                           "kubernetes.io/metadata.name": "e2e-reinvoke"}}}]}
            cl.apply([cfg])
            self.settle()
            before = len(cl.decisions())
            pod = gpu_pod("reinvoke-gpu", "e2e-reinvoke",
                          limits={"nvidia.com/gpu": "1", "nvidia.com/priority": "1"})
            rc, got, err = create(cl, pod)
            if not t.check(rc == 0, "the pod is created", err.strip()):
                return
            t.equal(second.calls, 1, "the second webhook was called once")
            env = got["spec"]["containers"][0].get("env") or []
            names = [e.get("name") for e in env]
            t.equal(sorted(names), ["CUDA_TASK_PRIORITY", "E2E_SECOND"],
                    "the second webhook's env entry is kept, each env entry once")
            tol = canon_tolerations(got["spec"].get("tolerations"))
            t.equal(len(tol), len(set(tol)), "each toleration once")
            t.check(is_defaulted(got), "the pod is defaulted", got["spec"])
            mine = [d for d in cl.decisions()[before:] if d.get("name") == "reinvoke-gpu"]
            t.equal(len(mine), 2, "our webhook was called twice (reinvocation)")
            if len(mine) == 2:
                t.check(mine[0].get("ops", 0) > 0, "the first call patched",
                        mine[0])
                t.equal((mine[1].get("ops"), mine[1].get("outcome")), (0, "allowed"),
                        "the second call made 0 operations")
        finally:
            cl.kubectl(["delete", "mutatingwebhookconfiguration", "zz-e2e-second",
                        "--ignore-not-found"])
            second.stop()
        self.settle()
        t.summary = "second webhook after ours; ours called again with 0 operations"

    # --- 4 -----------------------------------------------------------------

    def v1beta1_pods(self, ns, tag):
        return [
            (gpu_pod(f"{tag}-default", ns), "admitted"),
            (gpu_pod(f"{tag}-priority", ns,
                     limits={"nvidia.com/gpu": "1", "nvidia.com/priority": "1"},
                     env=[{"name": "CUDA_TASK_PRIORITY", "value": "0"}]), "admitted"),
            (gpu_pod(f"{tag}-privileged", ns, privileged=True), "denied"),
            (gpu_pod(f"{tag}-not-whole", ns, limits={"nvidia.com/gpu": "1500m"}), "denied"),
        ]

    def outcome(self, pod):
        rc, got, err = create(self.cl, pod)
        view = {"rc": rc, "warnings": kubectl_warnings(err)}
        if rc == 0:
            spec = got["spec"]
            c = spec["containers"][0]
            view["limits"] = {k: quantity_text(quantity(v)) for k, v in
                              (c.get("resources", {}).get("limits") or {}).items()}
            view["env"] = clean_env(c.get("env"))
            view["schedulerName"] = spec.get("schedulerName")
            view["tolerations"] = canon_tolerations(spec.get("tolerations"))
        else:
            m = re.search(r"denied the request: (.*)", err)
            view["message"] = m.group(1).strip() if m else err.strip()
        return view

    def test_v1beta1(self, t):
        cl = self.cl
        v1 = [self.outcome(p) for p, _ in self.v1beta1_pods("e2e-v1beta1", "v1")]
        text, mwc = self.rendered_mwc()
        beta = json.loads(json.dumps(mwc))
        t.equal(beta["webhooks"][0]["admissionReviewVersions"], ["v1", "v1beta1"],
                "the chart registers v1 and v1beta1")
        beta["webhooks"][0]["admissionReviewVersions"] = ["v1beta1"]
        cl.apply([beta])
        self.settle()
        try:
            for (pod, what), want in zip(self.v1beta1_pods("e2e-v1beta1", "beta"), v1):
                got = self.outcome(pod)
                tag = pod["metadata"]["name"]
                t.equal(got, want, f"{tag}: same result with only v1beta1")
                t.equal(got["rc"] == 0, what == "admitted", f"{tag}: {what}")
        finally:
            cl.apply(text)
            self.settle()
        t.summary = "admissionReviewVersions [v1beta1]: 4 pods, same results as v1"

    # --- 5 -----------------------------------------------------------------

    def quota(self, ns, hard):
        cl = self.cl
        q = {"apiVersion": "v1", "kind": "ResourceQuota",
             "metadata": {"name": "gpu-memory", "namespace": ns},
             "spec": {"hard": {"requests.nvidia.com/gpumem": hard}}}
        cl.apply([q])
        # No controller-manager runs here: the suite writes the status that
        # the quota controller would write for an empty namespace, and the
        # quota admission plugin counts from there.
        rc, _, err = cl.kubectl(["patch", "resourcequota", "gpu-memory", "-n", ns,
                                 "--subresource=status", "--type=merge", "-p",
                                 json.dumps({"status": {
                                     "hard": {"requests.nvidia.com/gpumem": hard},
                                     "used": {"requests.nvidia.com/gpumem": "0"}}})])
        if rc != 0:
            raise RuntimeError(f"cannot write the quota status: {err.strip()}")

    def used(self, ns):
        rc, out, err = self.cl.kubectl(["get", "resourcequota", "gpu-memory", "-n", ns,
                                        "-o", "json"], user=TENANT)
        if rc != 0:
            return None
        return (json.loads(out).get("status", {}).get("used") or {}).get(
            "requests.nvidia.com/gpumem")

    def test_quota(self, t):
        self.quota("team-quota", "10000")
        results = []
        for i in (1, 2, 3):
            rc, got, err = create(self.cl, gpu_pod(f"quota-{i}", "team-quota"), user=TENANT)
            results.append((rc, got, err))
        for i, (rc, got, err) in enumerate(results[:2], 1):
            if t.check(rc == 0, f"pod {i} of 5000 MiB is admitted", err.strip()):
                t.equal(quantity(got["spec"]["containers"][0]["resources"]["requests"]
                                 .get("nvidia.com/gpumem")), 5000,
                        f"pod {i}: the default is in requests")
        rc, _, err = results[2]
        t.check(rc != 0, "pod 3 is refused")
        t.contains(err, "exceeded quota: gpu-memory", "refused by the API server's quota")
        t.contains(err, "requested: requests.nvidia.com/gpumem=5k, "
                   "used: requests.nvidia.com/gpumem=10k, "
                   "limited: requests.nvidia.com/gpumem=10k", "the quota's message")
        t.check(quantity(self.used("team-quota")) == 10000, "the quota shows 10k used",
                self.used("team-quota"))
        # The limit: memory is per GPU, and the quota counts it once per
        # container, whatever nvidia.com/gpu says.
        self.quota("team-quota-count", "10000")
        rc, got, err = create(self.cl, gpu_pod("two-gpus", "team-quota-count",
                                                limits={"nvidia.com/gpu": "2"}), user=TENANT)
        if t.check(rc == 0, "a pod of 2 GPUs is admitted", err.strip()):
            t.equal(quantity(limits_of(got).get("nvidia.com/gpumem")), 5000,
                    "it asks for 5000 MiB per GPU")
            t.equal(quantity(self.used("team-quota-count")), 5000,
                    "the quota counts 5000, not 2 x 5000")
        t.summary = "quota of 10000 MiB: 2 pods admitted, the third refused by the quota"

    # --- 6 -----------------------------------------------------------------

    def test_ert(self, t):
        cl = self.cl
        cl.restart_apiserver(("ExtendedResourceToleration",))
        self.settle()
        pods = [gpu_pod("ert-gpu", "e2e-ert"),
                gpu_pod("ert-gpu-mem", "e2e-ert",
                        limits={"nvidia.com/gpu": "1", "nvidia.com/gpumem": "2000"}),
                gpu_pod("ert-requests", "e2e-ert", limits={"nvidia.com/gpu": "1"},
                        requests={"nvidia.com/gpu": "1"})]
        for pod in pods:
            tag = pod["metadata"]["name"]
            rc, got, err = create(cl, pod)
            if not t.check(rc == 0, f"{tag}: created", err.strip()):
                continue
            tol = canon_tolerations(got["spec"].get("tolerations"))
            t.equal(len(tol), len(set(tol)), f"{tag}: no toleration is duplicated")
            t.equal(tol.count(json.dumps(GPU_TOLERATION, sort_keys=True)), 1,
                    f"{tag}: the nvidia.com/gpu toleration once")
            t.equal(got["spec"].get("schedulerName"), "hami-scheduler", f"{tag}: mutated")
        t.summary = "with ExtendedResourceToleration on, 3 pods, no duplicated toleration"

    # --- 7 -----------------------------------------------------------------

    def test_failure_policy(self, t):
        cl = self.cl
        cl.stop_webhook()
        try:
            rc, _, err = create(cl, gpu_pod("fail-down", "e2e-failure"))
            t.check(rc != 0, "Fail (the chart's default): refused with the webhook down")
            t.contains(err, f'failed calling webhook "{WEBHOOK_NAME}"',
                       "Fail: the API server's message")
            t.contains(err, f"{SERVICE_HOST}:{cl.webhook_port}/mutate",
                       "Fail: the message names the Service's host and port")
            text, _ = self.rendered_mwc("webhook.failurePolicy=Ignore")
            cl.apply(text)
            self.settle()
            rc, got, err = create(cl, gpu_pod("ignore-down", "e2e-failure"))
            if t.check(rc == 0, "Ignore: admitted with the webhook down", err.strip()):
                t.equal(got["spec"].get("schedulerName"), "default-scheduler",
                        "Ignore: the pod is unchanged (scheduler)")
                t.equal(sorted(limits_of(got)), ["nvidia.com/gpu"],
                        "Ignore: the pod is unchanged (no gpumem)")
        finally:
            self.start_chart_webhook()
        cl.apply(self.rendered_mwc()[0])
        self.settle()
        rc, got, err = create(cl, gpu_pod("fail-up", "e2e-failure"))
        if t.check(rc == 0, "after a restart the pod is created", err.strip()):
            t.check(is_defaulted(got), "after a restart pods are mutated again", got["spec"])
        t.summary = "webhook stopped: Fail refuses, Ignore admits unchanged; restarted: mutated"

    # --- 8 -----------------------------------------------------------------

    def new_serving_pair(self, n):
        d = os.path.join(log_path("certs"), f"rotated-{n}")
        ca = os.path.join(log_path("certs"), "webhook")
        os.makedirs(d, exist_ok=True)
        key, csr, crt = (os.path.join(d, f) for f in ("tls.key", "tls.csr", "tls.crt"))
        ext = os.path.join(d, "ext.cnf")
        write(ext, "subjectAltName=DNS:%s,DNS:localhost,IP:127.0.0.1\n"
              "extendedKeyUsage=serverAuth\nkeyUsage=critical,digitalSignature\n" % SERVICE_HOST)
        for argv in (["openssl", "ecparam", "-name", "prime256v1", "-genkey", "-noout",
                      "-out", key],
                     ["openssl", "req", "-new", "-key", key, "-subj",
                      f"/CN={SERVICE_HOST}", "-out", csr],
                     ["openssl", "x509", "-req", "-in", csr, "-CA", os.path.join(ca, "ca.crt"),
                      "-CAkey", os.path.join(ca, "ca.key"), "-CAcreateserial", "-days", "2",
                      "-extfile", ext, "-out", crt]):
            rc, _, err = run(argv)
            if rc != 0:
                raise RuntimeError(f"{' '.join(argv[:3])}: {err.strip()}")
        return crt, key

    def served_certificate(self):
        ctx = ssl.create_default_context(
            cafile=os.path.join(log_path("certs"), "webhook", "ca.crt"))
        with socket.create_connection(("127.0.0.1", self.cl.webhook_port), timeout=5) as s:
            with ctx.wrap_socket(s, server_hostname=SERVICE_HOST) as tls:
                return tls.getpeercert(binary_form=True)

    def test_rotation(self, t):
        cl = self.cl
        pairs = [self.new_serving_pair(n) for n in (1, 2)]
        ders = []
        for crt, _ in pairs:
            with open(crt) as f:
                ders.append(ssl.PEM_cert_to_DER_cert(f.read()))
        done = threading.Event()
        results = []

        def creator():
            i = 0
            while not done.is_set() or i < 6:
                i += 1
                results.append(create(cl, gpu_pod(f"rotation-{i}", "e2e-rotation")))
                if i >= 200:
                    break

        worker = threading.Thread(target=creator)
        worker.start()
        picked = []
        try:
            for n, (crt, key) in enumerate(pairs):
                time.sleep(1.0)
                cl.install_webhook_pair(crt, key)
                deadline = time.time() + 15
                seen = False
                while time.time() < deadline:
                    try:
                        if self.served_certificate() == ders[n]:
                            seen = True
                            break
                    except OSError:
                        pass
                    time.sleep(0.2)
                picked.append(seen)
                time.sleep(1.0)
        finally:
            done.set()
            worker.join()
        t.equal(picked, [True, True], "each rotated certificate is served without a restart")
        failed = [err.strip() for rc, _, err in results if rc != 0]
        t.check(not failed, f"no creation fails ({len(results)} pods during 2 rotations)",
                failed[:3])
        unmutated = [got["metadata"]["name"] for rc, got, _ in results
                     if rc == 0 and not is_defaulted(got)]
        t.check(not unmutated, "every pod went through the webhook (under failurePolicy "
                "Ignore a failed call would show here)", unmutated[:5])
        reloads = cl.metric('vgpu_webhook_certificate_reloads_total{result="done"}')
        t.equal(reloads, 2.0, "the webhook counts 2 certificate reloads")
        t.summary = f"2 rotations while {len(results)} pods were created"

    # --- 9 -----------------------------------------------------------------

    def test_chart(self, t):
        cl = self.cl
        checked = []
        for kind, text, obj in self.docs:
            name = f"{kind} {obj['metadata']['name']}"
            if obj.get("apiVersion") == "policy/v1" and kind == "PodDisruptionBudget":
                rc, _, err = cl.kubectl(["apply", "--dry-run=server", "-f", "-"], stdin=text)
                t.check(rc != 0 and "policy/v1" in err,
                        "policy/v1 PodDisruptionBudget is not served by 1.20", err.strip())
                beta = text.replace("apiVersion: policy/v1\n", "apiVersion: policy/v1beta1\n")
                rc, _, err = cl.kubectl(["apply", "--dry-run=server", "-f", "-"], stdin=beta)
                t.check(rc == 0, "the same PodDisruptionBudget as policy/v1beta1 passes",
                        err.strip())
                t.skip(name, "policy/v1 PodDisruptionBudget is served from Kubernetes 1.21; "
                       "checked as policy/v1beta1 instead")
                continue
            rc, _, err = cl.kubectl(["apply", "--dry-run=server", "-f", "-"], stdin=text)
            t.check(rc == 0, f"{name}: kubectl apply --dry-run=server", err.strip())
            checked.append(kind)
        for kind, text, obj in split_docs(self.render(mode="selfSigned")):
            if kind == "Secret":
                rc, _, err = cl.kubectl(["apply", "--dry-run=server", "-f", "-"], stdin=text)
                t.check(rc == 0, "selfSigned mode: the Secret passes", err.strip())
                checked.append("Secret")
        # matchConditions came in 1.28.  kubectl checks the schema itself
        # against a 1.20 server (which has no field validation of its own)
        # and finds the field unknown; the server alone would drop it.
        for kind, text, obj in split_docs(self.render("webhook.matchConditions.enabled=true",
                                                      kube="1.28.0")):
            if kind == "MutatingWebhookConfiguration":
                rc, _, err = cl.kubectl(["apply", "--dry-run=server", "-f", "-"], stdin=text)
                t.check(rc != 0 and 'unknown field "matchConditions"' in err,
                        "1.20 does not know matchConditions", err.strip())
        t.skip("webhook.matchConditions", "matchConditions came in Kubernetes 1.28; 1.20 "
               "does not know the field, so it cannot check the chart's CEL expression")

        # The chart's selectors, on the namespaces the suite labelled.
        rc, got, err = create(cl, gpu_pod("excluded", RELEASE_NS))
        if t.check(rc == 0, "a GPU pod in the release namespace is created", err.strip()):
            t.equal(got["spec"].get("schedulerName"), "default-scheduler",
                    "the release namespace is not sent to the webhook")
        # The pod-level opt-out label is off by default (webhook.podOptOut):
        # tenants write their own pods' labels.
        rc, got, err = create(cl, gpu_pod("opt-out", "e2e-optout",
                                          labels={"hami.io/webhook": "ignore"}))
        if t.check(rc == 0, "a pod labelled hami.io/webhook=ignore is created", err.strip()):
            t.equal(got["spec"].get("schedulerName"), "hami-scheduler",
                    "a pod labelled hami.io/webhook=ignore is still sent "
                    "(webhook.podOptOut off)")

        # The identities: RBAC is on, and the guards hold for everyone.
        rc, _, err = cl.kubectl(["auth", "can-i", "create", "mutatingwebhookconfigurations"],
                                user=TENANT)
        t.check(rc != 0, "the tenant cannot register webhooks", err.strip())
        rc, _, err = create(cl, gpu_pod("elsewhere", "ml"), user=TENANT)
        t.check(rc != 0 and "forbidden" in err, "the tenant cannot create pods in ml",
                err.strip())
        rc, got, err = create(cl, gpu_pod("sched-target", "e2e-scheduler"))
        if t.check(rc == 0, "a pod for the scheduler is created", err.strip()):
            rc, out, err = cl.kubectl(
                ["annotate", "pod", "sched-target", "-n", "e2e-scheduler",
                 "hami.io/vgpu-node=gpu-node-1", "-o", "json"], user=SCHEDULER_SA)
            t.check(rc == 0 and json.loads(out or "{}").get("metadata", {}).get(
                "annotations", {}).get("hami.io/vgpu-node") == "gpu-node-1",
                "the HAMi scheduler's service account writes its annotation "
                "(a writer of the annotation guard)", err.strip())
        rc, _, err = cl.kubectl(["create", "-n", "e2e-scheduler", "-f", "-"], user=SCHEDULER_SA,
                                stdin=json.dumps(gpu_pod("sched-create", "e2e-scheduler",
                                                         annotations={"hami.io/vgpu-node": "n"})))
        t.check(rc != 0 and "forbidden" in err.lower(),
                "RBAC: the scheduler's identity creates no pods", err.strip())
        t.summary = (f"{len(checked)} objects pass --dry-run=server "
                     f"({', '.join(sorted(set(checked)))}); selectors and identities")

    # --- 10 ----------------------------------------------------------------

    def annotations(self, ns, name):
        rc, out, err = self.cl.kubectl(["get", "pod", name, "-n", ns, "-o", "json"])
        if rc != 0:
            raise RuntimeError(f"kubectl get pod {ns}/{name}: {err.strip()}")
        meta = json.loads(out).get("metadata") or {}
        return meta.get("annotations") or {}, meta.get("labels") or {}

    def test_guards(self, t):
        """The guards (SPEC 4 step 2) through kubectl: the annotation guard
        on UPDATE, reached through the chart's ValidatingWebhookConfiguration
        (on 1.20, without matchConditions, every pod UPDATE), and both
        guards on CREATE through the mutating one."""
        cl = self.cl
        ns, name = "e2e-guards", "guard-target"
        key = "hami.io/vgpu-node"
        rc, out, err = cl.kubectl(["get", "validatingwebhookconfiguration",
                                   WEBHOOK_CONFIG, "-o", "json"])
        if t.check(rc == 0, "the chart's ValidatingWebhookConfiguration is applied", err.strip()):
            wh = json.loads(out)["webhooks"][0]
            svc = wh["clientConfig"].get("service") or {}
            t.equal((wh["name"], svc.get("path"), svc.get("port"), wh["rules"][0]["operations"]),
                    (VALIDATING_NAME, "/validate", cl.webhook_port, ["UPDATE"]),
                    "it sends pod UPDATEs to /validate on the Service's port")
        metric = 'vgpu_webhook_guard_hits_total{guard="%s",action="denied"}'
        hits0 = {g: cl.metric(metric % g) for g in ("annotations", "env")}
        rc, _, err = create(cl, gpu_pod(name, ns), user=TENANT)
        if not t.check(rc == 0, "the tenant creates a GPU pod", err.strip()):
            return
        denied = {"annotations": 0, "env": 0}

        def annotate(user, *args):
            return cl.kubectl(["annotate", "pod", name, "-n", ns] + list(args), user=user)

        def shows(err, what, webhook, message):
            # kubectl create puts 'error when creating "STDIN": ' between.
            t.check(err.startswith(DENIAL_SHOWN[403]) and f'admission webhook "{webhook}" '
                    f"denied the request: {message}" in err,
                    f"{what}: kubectl shows our 403 message", err.strip())

        refusals = []  # denied calls to /validate per refused annotate

        def refused(user, what, args, message):
            before = len(cl.decisions())
            rc, _, err = annotate(user, *args)
            t.check(rc != 0, f"{what}: refused")
            shows(err, what, VALIDATING_NAME, message)
            # A refused PATCH reaches the webhook twice on this API server
            # (it tries the update once more on the object read from etcd
            # rather than its cache); each call counts its key.
            calls = [d for d in cl.decisions()[before:]
                     if (d.get("name"), d.get("operation")) == (name, "UPDATE")]
            t.check(1 <= len(calls) <= 2 and all(d.get("outcome") == "denied" for d in calls),
                    f"{what}: the webhook denied it, once or twice", calls)
            refusals.append((rc != 0, len(calls)))
            denied["annotations"] += len(calls)

        def allowed(user, what, args, want):
            rc, _, err = annotate(user, *args)
            if t.check(rc == 0, f"{what}: allowed", err.strip()):
                got, _ = self.annotations(ns, name)
                t.equal({k: got.get(k) for k in want}, want, f"{what}: stored")

        by_tenant = f'annotation "{key}" is written by the scheduler and cannot be changed ' \
                    f'by "{TENANT}"'
        # 1. The tenant adds the scheduler's annotation.
        refused(TENANT, f"the tenant's annotate {key}=node1", [f"{key}=node1"], by_tenant)
        t.equal(self.annotations(ns, name)[0].get(key), None, f"{key} is not stored")
        # 2. The scheduler's identity adds, changes and removes it; the tenant
        # can neither change nor remove it.
        allowed(SCHEDULER_SA, f"the scheduler's annotate {key}=node1", [f"{key}=node1"],
                {key: "node1"})
        allowed(SCHEDULER_SA, f"the scheduler's annotate --overwrite {key}=node2",
                ["--overwrite", f"{key}=node2"], {key: "node2"})
        refused(TENANT, f"the tenant's annotate --overwrite {key}=node1",
                ["--overwrite", f"{key}=node1"], by_tenant)
        refused(TENANT, f"the tenant's annotate {key}-", [f"{key}-"], by_tenant)
        t.equal(self.annotations(ns, name)[0].get(key), "node2",
                f"{key} is still the scheduler's node2")
        allowed(DEVICE_PLUGIN_SA, "the device plugin's annotate hami.io/bind-phase=success",
                ["hami.io/bind-phase=success"], {"hami.io/bind-phase": "success"})
        allowed(SCHEDULER_SA, f"the scheduler's annotate {key}-", [f"{key}-"], {key: None})
        # 3. Unrelated annotations and labels, while the pod carries a
        # guarded key it does not change.
        before = len(cl.decisions())
        allowed(TENANT, "the tenant's annotate team=ml", ["team=ml"],
                {"team": "ml", "hami.io/bind-phase": "success"})
        rc, _, err = cl.kubectl(["label", "pod", name, "-n", ns, "tier=gpu"], user=TENANT)
        if t.check(rc == 0, "the tenant's label tier=gpu: allowed", err.strip()):
            t.equal(self.annotations(ns, name)[1].get("tier"), "gpu", "the label is stored")
        mine = [(d.get("operation"), d.get("outcome")) for d in cl.decisions()[before:]
                if d.get("name") == name]
        t.equal(mine, [("UPDATE", "allowed")] * 2,
                "both UPDATEs reached the webhook (every pod UPDATE on 1.20) and were allowed")

        # 4. CREATE: env in every container, scheduler annotations from anyone.
        def pod_with_side(pod_name, value, gpu=True):
            pod = gpu_pod(pod_name, ns)
            if not gpu:
                del pod["spec"]["containers"][0]["resources"]
            pod["spec"]["containers"].append({
                "name": "side", "image": "busybox:1.36",
                "env": [{"name": "NVIDIA_VISIBLE_DEVICES", "value": value}]})
            return pod

        env_message = ('container "side": env NVIDIA_VISIBLE_DEVICES="all" cannot be set '
                       '(allowed: "none", "void")')
        for pod_name, gpu, what in (("guard-side-all", True, "a GPU pod"),
                                    ("guard-cpu-all", False, "a pod without GPU")):
            rc, _, err = create(cl, pod_with_side(pod_name, "all", gpu), user=TENANT)
            t.check(rc != 0, f"{what} with NVIDIA_VISIBLE_DEVICES=all in a sidecar: refused")
            shows(err, what, WEBHOOK_NAME, env_message)
            denied["env"] += 1
        rc, got, err = create(cl, pod_with_side("guard-side-none", "none"), user=TENANT)
        if t.check(rc == 0, "NVIDIA_VISIBLE_DEVICES=none in a sidecar: allowed", err.strip()):
            t.equal(clean_env(got["spec"]["containers"][1].get("env")),
                    [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "none"}],
                    "the sidecar's env is stored as given")
            t.check(is_defaulted(got), "the pod is defaulted", got["spec"])
        for user, who, tag in ((SCHEDULER_SA, "the scheduler's identity", "scheduler"),
                               (TENANT, "the tenant", "tenant")):
            pod = gpu_pod(f"guard-annotated-{tag}", ns, annotations={key: "node1"})
            rc, _, err = create(cl, pod, user=user)
            t.check(rc != 0, f"a pod created by {who} with {key}: refused")
            shows(err, f"a pod created by {who} with {key}", WEBHOOK_NAME,
                  f'annotation "{key}" is written by the scheduler and cannot be set')
            denied["annotations"] += 1

        # 5. The counters.
        for g in ("annotations", "env"):
            got = cl.metric(metric % g)
            t.check(hits0[g] is not None and got is not None and got - hits0[g] == denied[g],
                    f"{metric % g} went up by {denied[g]}", f"from {hits0[g]} to {got}")
        t.summary = (f"{sum(r for r, _ in refusals)} of {len(refusals)} annotates refused on "
                     f"UPDATE ({sum(n for _, n in refusals)} calls to "
                     f"/validate), 2 annotated and 2 env CREATEs refused, with our messages; "
                     "the scheduler's and device plugin's writes, the tenant's other "
                     "annotations and labels allowed; guard_hits_total{action=denied} "
                     f"+{denied['annotations']} annotations, +{denied['env']} env")

    # --- 11 ----------------------------------------------------------------

    def profile_config(self, folder, stamp, memory):
        """Writes the chart's config plus the profile "team" as a ConfigMap
        volume holds it: config.json -> ..data/config.json, ..data -> a
        timestamped folder; a rewrite swaps ..data with one rename, as the
        kubelet does.  Returns the path the webhook reads."""
        with open(self.chart_config) as f:
            cfg = json.load(f)
        cfg["profiles"] = [{"name": "team", "namespaces": ["team-*"],
                            "devices": [{"name": "nvidia", "defaultMemory": memory,
                                         "defaultCores": 20}]}]
        os.makedirs(os.path.join(folder, stamp))
        write(os.path.join(folder, stamp, "config.json"), json.dumps(cfg, indent=2))
        tmp = os.path.join(folder, "..data_tmp")
        os.symlink(stamp, tmp)
        os.replace(tmp, os.path.join(folder, "..data"))
        path = os.path.join(folder, "config.json")
        if not os.path.islink(path):
            os.symlink(os.path.join("..data", "config.json"), path)
        return path

    def test_profiles(self, t):
        cl = self.cl
        folder = log_path("profile-config")
        shutil.rmtree(folder, ignore_errors=True)
        os.makedirs(folder)
        path = self.profile_config(folder, "..2026_01", 2000)
        ns = "team-a"

        def decision(name, namespace):
            mine = [d for d in cl.decisions()
                    if d.get("name") == name and d.get("namespace", namespace) == namespace]
            return mine[-1] if mine else {}

        try:
            cl.start_webhook(path)
            # 1. The namespace profile's defaults, for the tenant's pod in team-a.
            rc, got, err = create(cl, gpu_pod("profile-1", ns), user=TENANT)
            if t.check(rc == 0, "a GPU pod in team-a: created by the tenant", err.strip()):
                lim = limits_of(got)
                t.equal(quantity(lim.get("nvidia.com/gpumem")), 2000,
                        "team-a: nvidia.com/gpumem is the profile's defaultMemory")
                t.equal(quantity(lim.get("nvidia.com/gpucores")), 20,
                        "team-a: nvidia.com/gpucores is the profile's defaultCores")
                check_warnings(t, "team-a", err, [
                    'container "cuda": set nvidia.com/gpumem=2000 (defaultMemory, '
                    'profile "team")',
                    'container "cuda": set nvidia.com/gpucores=20 (defaultCores, '
                    'profile "team")'])
                t.equal(decision("profile-1", ns).get("profile"), "team",
                        "team-a: the decision log names profile=team")

            # 2. No profile matches ml: the top-level defaults.
            rc, got, err = create(cl, gpu_pod("profile-ml", "ml"))
            if t.check(rc == 0, "a GPU pod in ml: created", err.strip()):
                t.check(is_defaulted(got), "ml: the top-level defaults (gpumem 5000)",
                        got["spec"])
                check_warnings(t, "ml", err, [DEFAULT_WARNING])
                d = decision("profile-ml", "ml")
                t.check(bool(d) and not d.get("profile"),
                        "ml: the decision log names no profile", d)

            # 3. Live reload: ..data swapped, defaultMemory 3000, same process.
            pid = cl.webhook.p.pid
            self.profile_config(folder, "..2026_02", 3000)
            deadline = time.time() + 10
            reloaded = []
            while time.time() < deadline and not reloaded:
                for line in cl.webhook.lines():
                    try:
                        d = json.loads(line)
                    except ValueError:
                        continue
                    if isinstance(d, dict) and d.get("msg") == "config reloaded":
                        reloaded.append(d)
                if not reloaded:
                    time.sleep(0.2)
            t0 = deadline - 10
            if t.check(bool(reloaded), "`config reloaded` logged within 10 s of the swap",
                       tail(cl.webhook.log)):
                t.equal(reloaded[-1].get("profiles"), 1, "the reload counts 1 profile")
                with open(path, "rb") as f:
                    t.equal(reloaded[-1].get("sha256"), hashlib.sha256(f.read()).hexdigest(),
                            "the reload logs the SHA-256 of the new file")
                t.summary = f"reloaded in {time.time() - t0:.1f} s"
            t.check(cl.webhook.alive() and cl.webhook.p.pid == pid,
                    "the webhook was not restarted")
            rc, got, err = create(cl, gpu_pod("profile-2", ns), user=TENANT)
            if t.check(rc == 0, "a GPU pod in team-a after the reload: created",
                       err.strip()):
                t.equal(quantity(limits_of(got).get("nvidia.com/gpumem")), 3000,
                        "team-a after the reload: nvidia.com/gpumem 3000")
                t.contains(err, 'set nvidia.com/gpumem=3000 (defaultMemory, profile "team")',
                           "team-a after the reload: the warning says 3000")
                t.equal(decision("profile-2", ns).get("profile"), "team",
                        "team-a after the reload: the decision log names profile=team")
        finally:
            cl.start_webhook(self.chart_config)
        t.summary = ("profile \"team\" (team-*) gives team-a gpumem 2000 and gpucores 20 "
                     "with its warnings and log field, ml keeps 5000; the ..data swap to "
                     "3000 is served without a restart, " + (t.summary or "no reload"))

    # --- 17 ----------------------------------------------------------------

    ALLOCATION_NS = {"dra": "e2e-alloc-dra", "off": "e2e-alloc-off"}

    def test_allocation(self, t):
        """allocation dra and off (behaviour §2.4) through the API server:
        the stored pod holds exactly what the mode allows.  The top level
        sets every HAMi-specific key, so that a write of any of them shows."""
        cl = self.cl
        folder = log_path("allocation-config")
        shutil.rmtree(folder, ignore_errors=True)
        os.makedirs(folder)
        path = os.path.join(folder, "config.json")
        family = {"name": "nvidia", "resourceCountName": "nvidia.com/gpu",
                  "resourceMemoryName": "nvidia.com/gpumem",
                  "resourceMemoryPercentageName": "nvidia.com/gpumem-percentage",
                  "resourceCoreName": "nvidia.com/gpucores",
                  "resourcePriorityName": "nvidia.com/priority",
                  "defaultGPUNum": 1, "defaultMemory": 5000, "defaultCores": 30,
                  "tolerations": [GPU_TOLERATION], "gpuCorePolicy": "force",
                  "activeOOMKiller": "true", "overwriteEnv": True}
        write(path, json.dumps({
            "schedulerPolicy": {"node": "binpack", "gpu": "spread"},
            "devices": [family],
            "profiles": [{"name": mode, "namespaces": [ns], "allocation": mode}
                         for mode, ns in self.ALLOCATION_NS.items()]}).encode())
        cl.apply([{"apiVersion": "v1", "kind": "Namespace",
                   "metadata": {"name": ns, "labels": {"kubernetes.io/metadata.name": ns}}}
                  for ns in self.ALLOCATION_NS.values()])
        # ExtendedResourceToleration (test 6) adds the GPU toleration itself.
        by_api = "ExtendedResourceToleration" in cl.plugins
        gpu_tol = json.dumps(GPU_TOLERATION, sort_keys=True)

        def two_containers(name, ns, limits=None):
            pod = gpu_pod(name, ns, limits=limits)
            pod["spec"]["containers"].append(
                {"name": "side", "image": "busybox:1.36",
                 "resources": {"limits": {"cpu": "100m"}}})
            return pod

        def untouched(tag, sent, got, toleration):
            """got holds nothing HAMi-specific: the limits sent, no env,
            default-scheduler, no runtimeClassName, no policy annotations,
            the GPU toleration once when toleration (or the API server's)."""
            for i, c in enumerate(sent["spec"]["containers"]):
                gc = got["spec"]["containers"][i]
                t.check(same_quantities(gc.get("resources", {}).get("limits", {}),
                                        c["resources"]["limits"]),
                        f"{tag}: container {c['name']}: the limits as sent", gc.get("resources"))
                t.equal(gc.get("env"), None, f"{tag}: container {c['name']}: no env written")
            t.equal(got["spec"].get("schedulerName"), "default-scheduler",
                    f"{tag}: schedulerName left to kube-scheduler")
            t.equal(got["spec"].get("runtimeClassName"), None, f"{tag}: no runtimeClassName")
            ann = got["metadata"].get("annotations") or {}
            t.equal(sorted(k for k in ann if k.startswith("hami.io/")), [],
                    f"{tag}: no hami.io annotation")
            want = 1 if toleration or by_api else 0
            t.equal(canon_tolerations(got["spec"].get("tolerations")).count(gpu_tol), want,
                    f"{tag}: the nvidia.com/gpu toleration {want} time(s)")

        try:
            cl.start_webhook(path)
            ns = self.ALLOCATION_NS["dra"]
            sent = two_containers("alloc-dra", ns, {"nvidia.com/gpu": "2"})
            rc, got, err = create(cl, sent)
            if t.check(rc == 0, "dra: a whole-device pod is created", err.strip()):
                untouched("dra", sent, got, True)
                check_warnings(t, "dra", err, [])
                d = [x for x in cl.decisions() if x.get("name") == "alloc-dra"]
                t.check(bool(d) and d[-1].get("allocation") == "dra"
                        and d[-1].get("profile") == "dra",
                        "dra: the decision log names allocation=dra and the profile", d[-1:])
            rc, _, err = create(cl, gpu_pod("alloc-dra-mem", ns, limits={
                "nvidia.com/gpu": "1", "nvidia.com/gpumem": "4000"}))
            t.check(rc != 0 and DENIAL_SHOWN[422] in err
                    and 'container "cuda": nvidia.com/gpumem: DRA serves whole devices '
                        'only (allocation: dra)' in err,
                    "dra: a pod that asks for gpumem is refused with 422", err.strip())
            rc, _, err = create(cl, gpu_pod("alloc-dra-env", ns, env=[
                {"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]))
            t.check(rc != 0 and DENIAL_SHOWN[403] in err,
                    "dra: the env guard still refuses NVIDIA_VISIBLE_DEVICES=all", err.strip())

            ns = self.ALLOCATION_NS["off"]
            sent = two_containers("alloc-off", ns,
                                  {"nvidia.com/gpu": "1", "nvidia.com/gpumem": "3000"})
            rc, got, err = create(cl, sent)
            if t.check(rc == 0, "off: a vGPU pod is created", err.strip()):
                untouched("off", sent, got, False)
                check_warnings(t, "off", err, [
                    'allocation: off (profile "off"): vGPU resources left unchanged'])
            rc, _, err = create(cl, gpu_pod("alloc-off-env", ns, env=[
                {"name": "CUDA_DISABLE_CONTROL", "value": "true"}]))
            t.check(rc != 0 and DENIAL_SHOWN[403] in err,
                    "off: the env guard still refuses CUDA_DISABLE_CONTROL", err.strip())
        finally:
            cl.start_webhook(self.chart_config)
        t.summary = ("dra stores the count and the toleration alone and refuses gpumem; "
                     "off stores the pod as sent; the env guard refuses in both")

    # --- 12 ----------------------------------------------------------------

    EPHEMERAL_NS = "e2e-ephemeral"

    def ephemeral_setup(self):
        """The namespace of escapes-ephemeral, and the tenant's rights there:
        pods, and pods/ephemeralcontainers as `kubectl debug` needs."""
        ns = self.EPHEMERAL_NS
        self.cl.apply([
            {"apiVersion": "v1", "kind": "Namespace",
             "metadata": {"name": ns, "labels": {"kubernetes.io/metadata.name": ns}}},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
             "metadata": {"name": "e2e-debugger", "namespace": ns},
             "rules": [{"apiGroups": [""], "resources": ["pods"],
                        "verbs": ["create", "get", "list", "delete"]},
                       {"apiGroups": [""], "resources": ["pods/ephemeralcontainers"],
                        "verbs": ["get", "update", "patch"]}]},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
             "metadata": {"name": "e2e-debugger", "namespace": ns},
             "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                         "name": "e2e-debugger"},
             "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User",
                           "name": TENANT}]}])

    def add_ephemeral(self, name, container):
        """Adds one ephemeral container to the pod, as the tenant: GET, then
        PUT of pods/NAME/ephemeralcontainers.  Up to 1.21 the subresource
        takes an EphemeralContainers object (its list at the top level),
        from 1.22 the Pod.  Returns (HTTP status, body, the shape's kind)."""
        path = f"/api/v1/namespaces/{self.EPHEMERAL_NS}/pods/{name}/ephemeralcontainers"
        code, obj = self.cl.api("GET", path, user=TENANT)
        if code != 200 or not isinstance(obj, dict):
            return code, obj, None
        if obj.get("kind") == "EphemeralContainers":
            obj.setdefault("ephemeralContainers", []).append(container)
        else:
            obj["spec"].setdefault("ephemeralContainers", []).append(container)
        code, body = self.cl.api("PUT", path, obj, user=TENANT)
        return code, body, obj.get("kind")

    def ephemeral_of(self, name):
        code, obj = self.cl.api("GET", f"/api/v1/namespaces/{self.EPHEMERAL_NS}/pods/{name}")
        if code != 200:
            raise RuntimeError(f"GET pod {name}: HTTP {code}: {obj}")
        return obj["spec"].get("ephemeralContainers") or []

    def ephemeral_refused(self, t, what, name, container, message):
        """The container is refused with our webhook's 403 and the message,
        and not stored; the mutating webhook saw the subresource UPDATE.
        Returns the kind the subresource takes."""
        before = len(self.cl.decisions())
        code, body, kind = self.add_ephemeral(name, container)
        msg = body.get("message", "") if isinstance(body, dict) else str(body)
        calls = [d for d in self.cl.decisions()[before:]
                 if (d.get("name"), d.get("operation")) == (name, "UPDATE")]
        t.check(bool(calls), f"{what}: the mutating webhook was called for the "
                f"pods/ephemeralcontainers UPDATE ({kind})", calls)
        t.check(code == 403 and f'admission webhook "{WEBHOOK_NAME}" denied the request'
                in msg and message in msg, f"{what}: refused by our webhook with 403",
                f"HTTP {code}: {msg}")
        t.equal([c.get("name") for c in self.ephemeral_of(name)], [],
                f"{what}: no ephemeral container stored")
        return kind

    def test_escapes_ephemeral(self, t):
        """Ephemeral containers (`kubectl debug`) through the real API server,
        with the chart's webhook configurations applied as rendered but under
        failurePolicy Ignore, so that a request the webhook does not examine
        is stored unchecked: a privileged ephemeral container added to a vGPU
        pod and one with NVIDIA_VISIBLE_DEVICES=all are refused by our
        webhook; one added to a pod under overwriteEnv is stored with
        NVIDIA_VISIBLE_DEVICES=none.

        1.20 has the subresource behind the EphemeralContainers feature gate
        (on in this suite).  It sends the webhook request.kind
        {"group": "", "version": "v1", "kind": "EphemeralContainers"} and an
        object of that kind: metadata with the pod's name, namespace, uid,
        resourceVersion and creationTimestamp only (no labels, no
        annotations), and the containers in a top-level list
        `ephemeralContainers`; a patch names /ephemeralContainers/N/...
        (from 1.22 it is the Pod).  kubectl 1.33's `kubectl debug` cannot
        use that shape, so the suite GETs and PUTs the subresource.  1.20's
        validation refuses any securityContext in an ephemeral container
        (allowed from 1.21), after the mutating webhooks: our 403 must come
        first."""
        cl = self.cl
        ns = self.EPHEMERAL_NS
        self.ephemeral_setup()
        ignore = ("webhook.failurePolicy=Ignore", "webhook.update.failurePolicy=Ignore")
        docs = {kind: (text, obj) for kind, text, obj in split_docs(self.render(*ignore))}
        mwh = docs["MutatingWebhookConfiguration"][1]["webhooks"][0]
        t.check({"apiGroups": [""], "apiVersions": ["v1"], "operations": ["UPDATE"],
                 "resources": ["pods/ephemeralcontainers"], "scope": "Namespaced"}
                in mwh["rules"] and mwh["failurePolicy"] == "Ignore",
                "the chart's mutating webhook gets UPDATE of pods/ephemeralcontainers "
                "(rendered here under failurePolicy Ignore)", mwh["rules"])
        kind = None
        try:
            cl.apply(docs["MutatingWebhookConfiguration"][0])
            cl.apply(docs["ValidatingWebhookConfiguration"][0])
            self.settle()

            # 1. A vGPU pod, then a privileged debug container and one that
            # asks for every GPU.
            rc, got, err = create(cl, gpu_pod("eph-gpu", ns), user=TENANT)
            if not t.check(rc == 0 and is_defaulted(got), "the tenant's vGPU pod is created "
                           "and defaulted", err.strip() or got):
                return
            debug = {"name": "debug", "image": "busybox:1.36",
                     "terminationMessagePolicy": "File", "imagePullPolicy": "IfNotPresent"}
            kind = self.ephemeral_refused(
                t, "a privileged ephemeral container in the vGPU pod", "eph-gpu",
                dict(debug, securityContext={"privileged": True}), "privileged")
            self.ephemeral_refused(
                t, "an ephemeral container with NVIDIA_VISIBLE_DEVICES=all", "eph-gpu",
                dict(debug, env=[{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]),
                'env NVIDIA_VISIBLE_DEVICES="all" cannot be set')

            # 2. overwriteEnv: the chart rendered with it, its config served.
            with open(os.path.join(CHART, "values.yaml")) as f:
                devices = yaml.safe_load(f)["config"]["devices"]
            devices[0]["overwriteEnv"] = True
            vf = log_path("ephemeral-values.yaml")
            write(vf, yaml.safe_dump({"config": {"devices": devices}}))
            over = {k: (text, obj) for k, text, obj in
                    split_docs(self.render(*ignore, files=[vf]))}
            path = log_path("ephemeral-config.json")
            write(path, over["ConfigMap"][1]["data"]["config.json"])
            cl.start_webhook(path)
            cl.apply(over["MutatingWebhookConfiguration"][0])
            self.settle()
            none = [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "none"}]
            for pod_name, gpu in (("eph-over-cpu", False), ("eph-over-gpu", True)):
                p = gpu_pod(pod_name, ns)
                if not gpu:
                    del p["spec"]["containers"][0]["resources"]
                rc, got, err = create(cl, p, user=TENANT)
                if not t.check(rc == 0, f"{pod_name}: created under overwriteEnv", err.strip()):
                    continue
                t.equal(clean_env(got["spec"]["containers"][0].get("env")),
                        [] if gpu else none,
                        f"{pod_name}: its container's env on CREATE (overwriteEnv)")
                code, body, _ = self.add_ephemeral(pod_name, dict(debug))
                if t.check(code == 200, f"{pod_name}: an ephemeral container is added",
                           f"HTTP {code}: {body}"):
                    t.equal([(c.get("name"), clean_env(c.get("env")))
                             for c in self.ephemeral_of(pod_name)], [("debug", none)],
                            f"{pod_name}: the ephemeral container is stored with "
                            "NVIDIA_VISIBLE_DEVICES=none")
        finally:
            cl.start_webhook(self.chart_config)
            by_kind = {k: text for k, text, _ in self.docs}
            cl.apply(by_kind["MutatingWebhookConfiguration"])
            cl.apply(by_kind["ValidatingWebhookConfiguration"])
            self.settle()
        t.summary = (f"pods/ephemeralcontainers takes kind {kind or '?'} here; under "
                     "failurePolicy Ignore, a privileged and an NVIDIA_VISIBLE_DEVICES=all "
                     "ephemeral container tried on a vGPU pod, and one added to a CPU and "
                     "a vGPU pod under overwriteEnv")

    # --- 13 ----------------------------------------------------------------

    def test_escapes_depth(self, t):
        """Issue 16, escape 1: a tenant's metadata.managedFields[].fieldsV1
        nested 2100 levels deep, which the API server keeps and forwards,
        on a CREATE and in a merge PATCH.  jansson refuses such a body, and
        under the chart's webhook configurations with failurePolicy Ignore
        an HTTP error from the webhook lets the pod through unchecked.  The
        webhook must decide: the guards refuse a forged hami.io/vgpu-node
        and NVIDIA_VISIBLE_DEVICES=all, and a plain GPU pod is defaulted."""
        cl = self.cl
        ns, key = "e2e-guards", "hami.io/vgpu-node"
        ignore = ("webhook.failurePolicy=Ignore", "webhook.update.failurePolicy=Ignore")
        configs = ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")
        rendered = {kind: text for kind, text, _ in split_docs(self.render(*ignore))}
        for kind in configs:
            cl.apply(rendered[kind])
        self.settle()
        try:
            for kind in configs:
                rc, out, err = cl.kubectl(["get", kind.lower(), WEBHOOK_CONFIG, "-o", "json"])
                t.equal(json.loads(out)["webhooks"][0]["failurePolicy"] if rc == 0 else err,
                        "Ignore", f"the chart's {kind} fails open")
            self.depth_cases(t, ns, key)
        finally:
            chart = {kind: text for kind, text, _ in self.docs}
            for kind in configs:
                cl.apply(chart[kind])
            self.settle()
        t.summary = ("managedFields 2100 deep under failurePolicy Ignore: the forged "
                     "annotation and NVIDIA_VISIBLE_DEVICES=all refused on CREATE, the "
                     "annotation refused in a merge PATCH, a GPU pod stored defaulted")

    def depth_cases(self, t, ns, key):
        cl = self.cl
        levels = 2100

        def deep_fields():
            v = {}
            for _ in range(levels):
                v = {"f:a": v}
            return [{"manager": "tenant", "operation": "Update", "apiVersion": "v1",
                     "fieldsType": "FieldsV1", "fieldsV1": v}]

        def stored_depth(pod):
            """How deep the deepest stored fieldsV1 nests."""
            most = 0
            for entry in (pod.get("metadata") or {}).get("managedFields") or []:
                v, n = entry.get("fieldsV1"), 0
                while isinstance(v, dict) and v:
                    v, n = next(iter(v.values())), n + 1
                most = max(most, n)
            return most

        def decided(name, op, before):
            return [d.get("outcome") for d in cl.decisions()[before:]
                    if (d.get("name"), d.get("operation")) == (name, op)]

        def gone(name):
            rc, _, err = cl.kubectl(["get", "pod", name, "-n", ns], user=TENANT)
            return rc != 0 and "NotFound" in err

        # 1. CREATE, the escape as filed: kubectl create as the tenant.
        pod = gpu_pod("depth-escape", ns, annotations={key: "gpu-node-7"},
                      env=[{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}])
        pod["metadata"]["managedFields"] = deep_fields()
        before = len(cl.decisions())
        rc, _, err = create(cl, pod, user=TENANT)
        t.check(rc != 0, "CREATE with managedFields 2100 deep, a forged annotation and "
                "NVIDIA_VISIBLE_DEVICES=all: refused", err.strip())
        t.check(err.startswith(DENIAL_SHOWN[403]) and
                f'admission webhook "{WEBHOOK_NAME}" denied the request: '
                f'annotation "{key}" is written by the scheduler and cannot be set; '
                'container "cuda": env NVIDIA_VISIBLE_DEVICES="all" cannot be set' in err,
                "CREATE: kubectl shows the guards' 403", err.strip())
        t.check(gone("depth-escape"), "CREATE: the pod is not stored")
        t.equal(decided("depth-escape", "CREATE", before), ["denied"],
                "CREATE: the webhook decided it (denied), no HTTP error")

        # 2. CREATE of a plain GPU pod: defaulted, the deep field kept.
        pod = gpu_pod("depth-gpu", ns)
        pod["metadata"]["managedFields"] = deep_fields()
        before = len(cl.decisions())
        rc, got, err = create(cl, pod, user=TENANT, extra=["--show-managed-fields"])
        if t.check(rc == 0, "CREATE of a GPU pod with managedFields 2100 deep: admitted",
                   err.strip()):
            t.check(is_defaulted(got), "it is stored defaulted", got["spec"])
            t.check(stored_depth(got) >= levels, "the API server kept managedFields "
                    f"{levels} deep (what the webhook was sent)", stored_depth(got))
            check_warnings(t, "depth-gpu", err, [DEFAULT_WARNING])
        # A mutating webhook that an earlier test left registered may make
        # the API server call ours again (reinvocation): 0 operations then.
        outcomes = decided("depth-gpu", "CREATE", before)
        t.check(outcomes[:1] == ["patched"] and
                all(o == "allowed" for o in outcomes[1:]),
                "CREATE: the webhook decided it (patched, then any reinvocation allowed "
                "unchanged)", outcomes)

        # 3. A merge PATCH of a running pod that brings managedFields 2100
        # deep and the scheduler's annotation (an UPDATE: /validate).
        rc, _, err = create(cl, gpu_pod("depth-patch", ns), user=TENANT)
        if not t.check(rc == 0, "the tenant creates a GPU pod to patch", err.strip()):
            return
        path = f"/api/v1/namespaces/{ns}/pods/depth-patch"
        merge = "application/merge-patch+json"
        before = len(cl.decisions())
        code, body = cl.api("PATCH", path, {"metadata": {
            "managedFields": deep_fields(), "annotations": {key: "gpu-node-7"}}},
            user=TENANT, content_type=merge)
        msg = body.get("message", "") if isinstance(body, dict) else str(body)
        t.check(code == 403 and f'admission webhook "{VALIDATING_NAME}" denied the request: '
                f'annotation "{key}" is written by the scheduler and cannot be changed by '
                f'"{TENANT}"' in msg, "merge PATCH with managedFields 2100 deep and "
                f"{key}: refused with the guard's 403", f"HTTP {code}: {msg}")
        t.equal(self.annotations(ns, "depth-patch")[0].get(key), None,
                f"merge PATCH: {key} is not stored")
        outcomes = decided("depth-patch", "UPDATE", before)
        t.check(outcomes and set(outcomes) == {"denied"},
                "merge PATCH: the webhook decided it (denied), no HTTP error", outcomes)
        # The same deep field with a harmless label: allowed, by a decision.
        before = len(cl.decisions())
        code, body = cl.api("PATCH", path, {"metadata": {
            "managedFields": deep_fields(), "labels": {"tier": "deep"}}},
            user=TENANT, content_type=merge)
        if t.check(code == 200, "merge PATCH with managedFields 2100 deep and a label: "
                   "allowed", f"HTTP {code}: {body if code != 200 else ''}"):
            t.equal((body.get("metadata") or {}).get("labels", {}).get("tier"), "deep",
                    "merge PATCH: the label is stored")
            t.check(stored_depth(body) >= levels, "merge PATCH: the API server kept "
                    f"managedFields {levels} deep", stored_depth(body))
        t.equal(decided("depth-patch", "UPDATE", before), ["allowed"],
                "merge PATCH: the webhook decided it (allowed), no HTTP error")

    # --- 14 ----------------------------------------------------------------

    def test_escapes_server(self, t):
        """What a tenant could do to the webhook's server so that the API
        server fails open, tried with the chart's MutatingWebhookConfiguration
        under failurePolicy: Ignore: (a) a pod whose env holds 600 KB of "<"
        (a request of 600 KB, which the API server sends on as a review of
        3.6 MB: it writes each "<" as \\u003c) and NVIDIA_VISIBLE_DEVICES=all
        is refused by the webhook; (b) while 4 x 1200 TLS connections that
        each send a byte every 2 s (tests/integration/trickle.py, from
        127.0.0.2-5: the API server comes from 127.0.0.1) hold the
        webhook's slots, GPU pods created through kubectl are stored
        defaulted (or refused), never unchecked."""
        cl = self.cl
        ns = "e2e-escapes"
        cl.apply([{"apiVersion": "v1", "kind": "Namespace",
                   "metadata": {"name": ns, "labels": {"kubernetes.io/metadata.name": ns}}}])
        text, mwc = self.rendered_mwc("webhook.failurePolicy=Ignore")
        t.equal([w.get("failurePolicy") for w in mwc["webhooks"]], ["Ignore"],
                "the chart's webhook, under failurePolicy: Ignore")
        cl.apply(text)
        self.settle()
        gen = None
        try:
            # (a) The escaped review, through the API (kubectl would escape
            # "<" itself, and the API server refuse the 3.6 MB request).
            big = "<" * 600_000
            pod = gpu_pod("escaped-env", ns, env=[{"name": "BIG", "value": big},
                                                  {"name": "NVIDIA_VISIBLE_DEVICES",
                                                   "value": "all"}])
            t.check(len(json.dumps(pod)) < 3 << 20 < 6 * len(big),
                    "the request is under 3 MiB, its review over it")
            code_a, body = cl.api("POST", f"/api/v1/namespaces/{ns}/pods", pod)
            message = body.get("message", "") if isinstance(body, dict) else str(body)
            t.equal(code_a, 403, "(a) the pod is refused with the webhook's 403")
            t.contains(message, f'admission webhook "{WEBHOOK_NAME}" denied the request',
                       "(a) refused by the webhook")
            t.contains(message, "NVIDIA_VISIBLE_DEVICES", "(a) by its env guard")
            code, _ = cl.api("GET", f"/api/v1/namespaces/{ns}/pods/escaped-env")
            t.equal(code, 404, "(a) the pod is not stored")
            mine = [d for d in cl.decisions() if d.get("name") == "escaped-env"]
            t.check(bool(mine) and mine[-1].get("outcome") == "denied",
                    "(a) the webhook logged the denial", mine)

            # (b) The webhook's slots held by slow connections.
            gen = subprocess.Popen(
                [sys.executable, TRICKLE, "--port", str(cl.webhook_port),
                 "--sources", "127.0.0.2,127.0.0.3,127.0.0.4,127.0.0.5",
                 "--tls", "1200", "--seconds", "120", "--interval", "2"],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                preexec_fn=_die_with_parent)
            held, deadline = 0, time.time() + 30
            while time.time() < deadline and held < 2000:
                time.sleep(0.5)
                try:
                    held = cl.metric('vgpu_webhook_connections_open{listener="https"}') or 0
                except OSError:
                    pass
            t.check(held >= 2000, "(b) the slow connections hold the webhook's slots",
                    f"{held} open")
            worst, outcomes = 0.0, {"defaulted": 0, "unchecked": 0, "refused": 0}
            for i in range(6):
                t0 = time.time()
                rc, got, err = create(cl, gpu_pod(f"slow-{i}", ns))
                worst = max(worst, time.time() - t0)
                if rc == 0:
                    ok = is_defaulted(got)
                    outcomes["defaulted" if ok else "unchecked"] += 1
                    t.check(ok, f"(b) slow-{i}: stored defaulted, not unchecked",
                            got["spec"])
                else:
                    outcomes["refused"] += 1
                    t.contains(err, f'admission webhook "{WEBHOOK_NAME}"',
                               f"(b) slow-{i}: refused by the webhook")
                time.sleep(3)
            t.check(gen.poll() is None, "(b) the slow connections lasted to the end",
                    gen.stderr.read().decode() if gen.poll() is not None else "")
            closed = {r: cl.metric('vgpu_webhook_connections_closed_total{listener="https",'
                                   f'reason="{r}"}}') for r in ("evicted", "address",
                                                                 "opening")}
            t.check(closed["address"] and closed["evicted"] + closed["opening"],
                    "(b) the webhook refused and closed slow connections", closed)
            t.summary = (f"(a) the pod of a 3.6 MB review: HTTP {code_a}; (b) under "
                         f"{held:.0f} slow connections, GPU pods {outcomes}, slowest "
                         f"kubectl create {worst:.1f} s; closed {closed}")
        finally:
            if gen is not None:
                gen.terminate()
                gen.communicate(timeout=30)
            cl.apply(self.rendered_mwc()[0])
            self.settle()

    # --- 15 ----------------------------------------------------------------

    def certs_run(self, args, user, *extra):
        """vgpu-webhook ARGS (a Job's args from the chart) as user, against
        the API server: (exit status, stdout, stderr)."""
        cl = self.cl
        token = log_path(f"token-{user.rpartition(':')[2]}")
        write(token, cl.tokens[user] + "\n", 0o600)
        return run([BIN] + list(args) + list(extra) + [
            "--kube-server", f"https://127.0.0.1:{cl.api_port}",
            "--kube-ca", os.path.join(log_path("certs"), "apiserver", "ca.crt"),
            "--kube-token-file", token])

    def certs_state(self):
        """(the Secret, the Mutating- and the ValidatingWebhookConfiguration)
        of the certs-job release, as stored; None for each that is absent."""
        out = []
        for path in (f"/api/v1/namespaces/{RELEASE_NS}/secrets/{CERTS_FULLNAME}-tls",
                     f"/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/"
                     f"{CERTS_CONFIG}",
                     f"/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/"
                     f"{CERTS_CONFIG}"):
            code, body = self.cl.api("GET", path)
            out.append(body if code == 200 else None)
        return out

    def check_certs_chain(self, t, tag, secret):
        """The Secret: kubernetes.io/tls, a chain that openssl verifies for
        each DNS name of the Service; returns its data (bytes by key)."""
        d = log_path(f"certs-job-{tag}")
        os.makedirs(d, exist_ok=True)
        t.equal(secret and secret.get("type"), "kubernetes.io/tls", f"{tag}: Secret type")
        data = {k: base64.b64decode(v) for k, v in ((secret or {}).get("data") or {}).items()}
        if not t.check({"ca.crt", "tls.crt", "tls.key"} <= set(data), f"{tag}: Secret keys",
                       sorted(data)):
            return data
        for k, v in data.items():
            write(os.path.join(d, k), v, 0o600)
        svc = f"{CERTS_FULLNAME}.{RELEASE_NS}"
        for name in (CERTS_FULLNAME, svc, svc + ".svc", svc + ".svc.cluster.local"):
            rc, out, err = run(["openssl", "verify", "-CAfile", os.path.join(d, "ca.crt"),
                                "-purpose", "sslserver", "-verify_hostname", name,
                                os.path.join(d, "tls.crt")])
            t.check(rc == 0, f"{tag}: openssl verifies tls.crt for {name}", err or out)
        rc, out, err = run(["openssl", "verify", "-CAfile", os.path.join(d, "ca.crt"),
                            "-verify_hostname", "other.vgpu-system.svc",
                            os.path.join(d, "tls.crt")])
        t.check(rc != 0, f"{tag}: and not for another name", out)
        rc, a, _ = run(["openssl", "pkey", "-in", os.path.join(d, "tls.key"), "-pubout"])
        rc2, b, _ = run(["openssl", "x509", "-in", os.path.join(d, "tls.crt"), "-noout",
                         "-pubkey"])
        t.check(rc == 0 and rc2 == 0 and a == b, f"{tag}: tls.key is the key of tls.crt")
        return data

    def bundles(self, cfg):
        return [base64.b64decode(w.get("clientConfig", {}).get("caBundle", ""))
                for w in (cfg or {}).get("webhooks", [])]

    def test_certs_job(self, t):
        """certificates.mode job through the real API server: the chart's
        hook Jobs' args run as their ServiceAccounts under the chart's own
        RBAC."""
        cl = self.cl
        docs = split_docs(self.render(release=CERTS_RELEASE,
                                      mode="job"))
        again = split_docs(self.render(release=CERTS_RELEASE,
                                       mode="job"))
        t.check([x[1] for x in docs] == [x[1] for x in again],
                "two renders of the job mode are the same bytes")
        jobs = {o["metadata"]["name"]: o for k, _, o in docs if k == "Job"}
        cron = [o for k, _, o in docs if k == "CronJob"]

        def args(obj, cronjob=False):
            spec = obj["spec"]["jobTemplate"]["spec"] if cronjob else obj["spec"]
            return spec["template"]["spec"]["containers"][0]["args"]
        setup = args(jobs[f"{CERTS_FULLNAME}-certs-setup"])
        patch = args(jobs[f"{CERTS_FULLNAME}-certs-patch"])
        cleanup = args(jobs[f"{CERTS_FULLNAME}-certs-cleanup"])
        t.check(len(cron) == 1 and args(cron[0], True) == patch,
                "the CronJob runs what the post-install Job runs")
        rbac = [o for k, _, o in docs if k in ("ServiceAccount", "Role", "RoleBinding",
                                               "ClusterRole", "ClusterRoleBinding")
                and "-certs" in o["metadata"]["name"]]
        configs = []
        for k, _, o in docs:
            if k in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
                t.check(all("caBundle" not in w["clientConfig"] for w in o["webhooks"]),
                        f"{k}: rendered without a caBundle")
                for w in o["webhooks"]:
                    # Nothing reaches them in this test bed.
                    w["namespaceSelector"] = {"matchLabels": {"e2e-certs-job": "never"}}
                    w["failurePolicy"] = "Ignore"
                configs.append(o)
        t.equal(len(configs), 2, "a Mutating- and a ValidatingWebhookConfiguration")
        for o in rbac:
            o["metadata"].pop("annotations", None)  # hooks, applied as they stand
        try:
            cl.apply(rbac + configs)
            before = self.certs_state()
            t.check(before[0] is None, "no Secret before the setup hook")

            # The lasting account cannot create the Secret: that is the
            # setup hook's, whose Role alone has create.
            rc, out, err = self.certs_run(patch, CERTS_SA)
            t.check(rc == 1 and f'create secret "{RELEASE_NS}/{CERTS_FULLNAME}-tls": http 403: '
                    in err and "forbidden" in err,
                    "the CronJob's account may not create the Secret (403 named)", err)
            rc, out, err = self.certs_run(setup, CERTS_SETUP_SA)
            t.check(rc == 0 and "created (absent)" in out, "pre-install: the Secret created",
                    out + err)
            secret, mwc, vwc = self.certs_state()
            data = self.check_certs_chain(t, "created", secret)
            t.check(not any(self.bundles(mwc) + self.bundles(vwc)),
                    "pre-install patches no webhook configuration")

            rc, out, err = self.certs_run(patch, CERTS_SA)
            t.check(rc == 0 and "kept: valid until" in out and out.count("caBundle set") == 2,
                    "post-install: the Secret kept, both caBundles set", out + err)
            secret2, mwc, vwc = self.certs_state()
            t.equal(self.bundles(mwc) + self.bundles(vwc),
                    [data.get("ca.crt")] * (len(mwc["webhooks"]) + len(vwc["webhooks"])),
                    "every webhook's caBundle is the Secret's ca.crt")
            versions = [o["metadata"]["resourceVersion"] for o in (secret2, mwc, vwc)]
            t.equal(secret2["metadata"]["resourceVersion"], secret["metadata"]["resourceVersion"],
                    "post-install: the Secret unchanged")

            rc, out, err = self.certs_run(patch, CERTS_SA)
            t.check(rc == 0 and out.count("up to date") == 2 and "kept" in out,
                    "a second run: nothing to do", out + err)
            t.equal([o["metadata"]["resourceVersion"] for o in self.certs_state()], versions,
                    "a second run changes no resourceVersion")

            # Near expiry: a pair valid for 2 days, then the CronJob's run
            # (renewBefore 30d) renews it, and trusts both CAs.
            cl.kubectl(["-n", RELEASE_NS, "delete", "secret", f"{CERTS_FULLNAME}-tls"])
            rc, out, err = self.certs_run(setup, CERTS_SETUP_SA, "--validity", "2d",
                                          "--renew-before", "1d")
            t.check(rc == 0 and "created" in out, "a pair valid for 2 days", out + err)
            short = self.certs_state()[0]
            old_ca = base64.b64decode(short["data"]["ca.crt"])
            rc, out, err = self.certs_run(patch, CERTS_SA, "--renew-before", "1d")
            t.check(rc == 0 and "kept" in out and out.count("caBundle set") == 2,
                    "the 2-day pair's CA in the caBundles", out + err)
            rc, out, err = self.certs_run(args(cron[0], True), CERTS_SA)
            t.check(rc == 0 and ("renewed (tls.crt: expires at" in out or
                                 "renewed (ca.crt: expires at" in out),
                    "the CronJob's run renews a pair that expires within 30 days", out + err)
            secret, mwc, vwc = self.certs_state()
            t.check(secret["metadata"]["resourceVersion"] != short["metadata"]["resourceVersion"]
                    and secret["metadata"]["uid"] == short["metadata"]["uid"],
                    "renewed in place (update, not a new Secret)")
            data = self.check_certs_chain(t, "renewed", secret)
            t.check(data.get("ca.crt") != old_ca, "renewed: a new CA")
            t.equal(self.bundles(mwc) + self.bundles(vwc),
                    [data.get("ca.crt") + old_ca] * (len(mwc["webhooks"]) + len(vwc["webhooks"])),
                    "renewed: caBundle is the new CA, then the old one still served")
            rc, out, _ = run(["openssl", "x509", "-noout", "-enddate", "-in",
                              log_path("certs-job-renewed/tls.crt")])
            t.check(rc == 0 and time.strftime("%Y", time.gmtime(time.time() + 365 * 86400))
                    in out, "renewed for the chart's validity (365d)", out)

            # Errors name the object, the status and the API server's message.
            rc, _, err = self.certs_run(["certs", "ensure", "--namespace", RELEASE_NS,
                                         "--secret", "other", "--service", CERTS_FULLNAME],
                                        CERTS_SA)
            t.check(rc == 1 and f'get secret "{RELEASE_NS}/other": http 403: secrets "other" '
                    'is forbidden' in err, "another Secret: 403 with the API server's message",
                    err)
            rc, _, err = self.certs_run(["certs", "cleanup", "--webhook", WEBHOOK_CONFIG],
                                        CERTS_SA)
            t.check(rc == 1 and
                    f'delete mutatingwebhookconfiguration "{WEBHOOK_CONFIG}": http 403' in err,
                    "the account cannot delete another webhook configuration", err)
            t.check(self.cl.api("GET", "/apis/admissionregistration.k8s.io/v1/"
                                f"mutatingwebhookconfigurations/{WEBHOOK_CONFIG}")[0] == 200,
                    "the suite's own webhook configuration is still there")

            # pre-delete.  Applied as plain objects (helm template | kubectl
            # apply), the configurations carry no Helm ownership: the
            # cleanup Job, which then runs at once, deletes neither.
            mname = cleanup[cleanup.index("--webhook") + 1]
            vname = cleanup[cleanup.index("--validating-webhook") + 1]
            rc, out, err = self.certs_run(cleanup, CERTS_CLEANUP_SA)
            t.check(rc == 0 and out.count(": kept: not installed by Helm") == 2,
                    "pre-delete applied with kubectl: both configurations kept", out + err)
            _, mwc, vwc = self.certs_state()
            t.check(mwc is not None and vwc is not None, "both configurations are still there")
            rc, _, err = self.certs_run(["certs", "cleanup", "--webhook", mname], CERTS_SA)
            t.check(rc == 1 and f'delete mutatingwebhookconfiguration "{mname}": http 403' in err,
                    "the lasting account cannot delete its own configuration", err)
            # As Helm installs them: its ownership annotations; another
            # release's are not enough.
            for kind, name, rel in (("mutatingwebhookconfiguration", mname, CERTS_RELEASE),
                                    ("validatingwebhookconfiguration", vname, "other")):
                cl.kubectl(["annotate", "--overwrite", kind, name,
                            f"meta.helm.sh/release-name={rel}",
                            f"meta.helm.sh/release-namespace={RELEASE_NS}"])
            rc, out, err = self.certs_run(cleanup, CERTS_CLEANUP_SA)
            t.check(rc == 0 and f'mutatingwebhookconfiguration "{mname}": deleted' in out and
                    f'validatingwebhookconfiguration "{vname}": kept: of the Helm release '
                    f'"{RELEASE_NS}/other"' in out, "pre-delete: only this release's deleted",
                    out + err)
            cl.kubectl(["annotate", "--overwrite", "validatingwebhookconfiguration", vname,
                        f"meta.helm.sh/release-name={CERTS_RELEASE}"])
            rc, out, err = self.certs_run(cleanup, CERTS_CLEANUP_SA)
            t.check(rc == 0 and out.count("already absent") == 1 and
                    out.count(": deleted") == 1, "pre-delete: the second one too", out + err)
            _, mwc, vwc = self.certs_state()
            t.check(mwc is None and vwc is None, "both configurations are gone")
            rc, out, err = self.certs_run(cleanup, CERTS_CLEANUP_SA)
            t.check(rc == 0 and out.count("already absent") == 2,
                    "a second cleanup: already absent, exit 0", out + err)
            t.summary = "Secret made, caBundles set, idempotent, renewed, cleaned up"
        finally:
            for kind, name, ns in (("secret", f"{CERTS_FULLNAME}-tls", RELEASE_NS),
                                   ("mutatingwebhookconfiguration", CERTS_CONFIG, None),
                                   ("validatingwebhookconfiguration", CERTS_CONFIG, None)):
                cl.kubectl(["delete", kind, name, "--ignore-not-found"] +
                           (["-n", ns] if ns else []))
            for o in rbac:
                cl.kubectl(["delete", o["kind"].lower(), o["metadata"]["name"],
                            "--ignore-not-found"] +
                           (["-n", RELEASE_NS] if o["kind"] in ("ServiceAccount", "Role",
                                                                 "RoleBinding") else []))

    def test_certs_upgrade(self, t):
        """A release on certificates.mode selfSigned upgraded to job, as
        Helm does it, through the real API server: the setup hook keeps the
        Secret (--create-only), Helm deletes it and drops the caBundle, the
        post-upgrade hook's account creates a new pair and sets the
        caBundle, and a GPU pod is admitted by a webhook serving that
        pair.  Then: no renewal in the setup hook, Secrets that cannot be
        replaced refused by name, other keys kept."""
        cl = self.cl
        port = free_port()
        ns_doc = {"apiVersion": "v1", "kind": "Namespace",
                  "metadata": {"name": CERTS_UP_NS,
                               "labels": {"kubernetes.io/metadata.name": CERTS_UP_NS}}}
        owner = {"meta.helm.sh/release-name": CERTS_UP_RELEASE,
                 "meta.helm.sh/release-namespace": RELEASE_NS}
        secret_name = f"{CERTS_UP_FULLNAME}-tls"
        secret_path = f"/api/v1/namespaces/{RELEASE_NS}/secrets/{secret_name}"
        lasting, setup_sa, patch_sa, cleanup_sa = certs_accounts(CERTS_UP_FULLNAME)
        served = log_path("certs-up-tls")
        os.makedirs(served, exist_ok=True)
        webhook = [None]

        def as_helm_installs(docs):
            """The configurations and the Secret with Helm's ownership, the
            configurations selecting CERTS_UP_NS only, failurePolicy Fail."""
            out = []
            for kind, _, o in docs:
                if kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration",
                            "Secret"):
                    o["metadata"].setdefault("annotations", {}).update(owner)
                    for w in o.get("webhooks", []):
                        w["namespaceSelector"] = {"matchLabels": {
                            "kubernetes.io/metadata.name": CERTS_UP_NS}}
                        w["failurePolicy"] = "Fail"
                    out.append(o)
            return out

        def serve(data, tag):
            """The release's webhook, serving the pair data (as its pods do
            after the kubelet refreshed the Secret volume)."""
            if webhook[0] is not None:
                webhook[0].stop()
            for k in ("tls.crt", "tls.key"):
                write(os.path.join(served, k), data[k], 0o600)
            webhook[0] = Proc("vgpu-webhook certs-up", [
                BIN, "serve", "--listen", f"127.0.0.1:{port}",
                "--tls-cert-file", os.path.join(served, "tls.crt"),
                "--tls-private-key-file", os.path.join(served, "tls.key"),
                "--metrics-listen", "", "--log-format", "json", "--config", config],
                f"webhook-certs-up-{tag}.log")
            deadline = time.time() + 20
            up = False
            while not up and webhook[0].alive() and time.time() < deadline:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    up = True
                except OSError:
                    time.sleep(0.05)
            return t.check(up, f"{tag}: the release's webhook serves", tail(webhook[0].log))

        def admitted(tag):
            """A GPU pod in CERTS_UP_NS, admitted through the release's
            webhook (its decision logged)."""
            self.settle()
            name = f"gpu-{tag}"
            rc, pod, err = create(cl, gpu_pod(name, CERTS_UP_NS))
            ok = t.check(rc == 0 and is_defaulted(pod),
                         f"{tag}: a GPU pod is admitted and defaulted through the release's "
                         "webhook", err.strip())
            time.sleep(DECISION_LOG_DELAY)  # its decision line written
            t.check(any(json.loads(x).get("msg") == "decision" for x in webhook[0].lines()
                        if x.startswith("{")), f"{tag}: the release's webhook decided it")
            cl.kubectl(["-n", CERTS_UP_NS, "delete", "pod", name, "--wait=false"])
            return ok

        def secret():
            code, body = cl.api("GET", secret_path)
            return body if code == 200 else None

        def data_of(obj):
            return {k: base64.b64decode(v) for k, v in ((obj or {}).get("data") or {}).items()}

        def bundles(names):
            out = []
            for kind, name in names:
                code, body = cl.api("GET", "/apis/admissionregistration.k8s.io/v1/"
                                    f"{kind.lower()}s/{name}")
                out += [w.get("clientConfig", {}).get("caBundle") for w in
                        (body.get("webhooks", []) if code == 200 else [None])]
            return out

        old_docs = split_docs(self.render(f"service.port={port}", release=CERTS_UP_RELEASE,
                                          mode="selfSigned"))
        new_docs = split_docs(self.render(f"service.port={port}", release=CERTS_UP_RELEASE,
                                          mode="job"))
        config = log_path("certs-up-config.json")
        write(config, [o for k, _, o in old_docs if k == "ConfigMap"][0]["data"]["config.json"])
        svc = [o for k, _, o in old_docs if k == "Service"][0]
        configs = [(o["kind"], o["metadata"]["name"]) for k, _, o in new_docs
                   if k in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")]
        jobs = {o["metadata"]["name"]: o["spec"]["template"]["spec"] for k, _, o in new_docs
                if k == "Job"}
        setup = jobs[f"{CERTS_UP_FULLNAME}-certs-setup"]
        patch = jobs[f"{CERTS_UP_FULLNAME}-certs-patch"]
        cleanup = jobs[f"{CERTS_UP_FULLNAME}-certs-cleanup"]
        t.equal([setup["serviceAccountName"], patch["serviceAccountName"],
                 cleanup["serviceAccountName"]],
                [x.rpartition(":")[2] for x in (setup_sa, patch_sa, cleanup_sa)],
                "each hook Job runs as its own hook account")
        setup, patch, cleanup = (j["containers"][0]["args"] for j in (setup, patch, cleanup))
        rbac = [o for k, _, o in new_docs if k in ("ServiceAccount", "Role", "RoleBinding",
                                                   "ClusterRole", "ClusterRoleBinding")
                and "-certs" in o["metadata"]["name"]]
        for o in rbac:
            o["metadata"].pop("annotations", None)
        try:
            # helm install, selfSigned
            cl.apply([ns_doc, external_name_service(svc)] + as_helm_installs(old_docs))
            before = secret()
            if not t.check(before is not None, "selfSigned: the Secret of the chart"):
                return
            if not serve(data_of(before), "selfsigned"):
                return
            admitted("selfsigned")

            # helm upgrade to job: pre-upgrade, the setup hook
            cl.apply(rbac)
            rc, out, err = self.certs_run(setup, setup_sa)
            t.check(rc == 0 and f'secret "{RELEASE_NS}/{secret_name}": kept' in out,
                    "pre-upgrade: the setup hook keeps the selfSigned Secret", out + err)
            t.equal(secret()["metadata"]["resourceVersion"],
                    before["metadata"]["resourceVersion"], "pre-upgrade: the Secret unchanged")
            # Helm: the Secret is no longer in the manifest (deleted), and
            # the three-way merge drops the caBundle the chart no longer
            # renders.
            cl.kubectl(["-n", RELEASE_NS, "delete", "secret", secret_name])
            cl.apply(as_helm_installs(new_docs))
            t.check(not any(bundles(configs)), "upgrade: the caBundles are gone",
                    bundles(configs))
            # post-upgrade: the lasting account could not create the Secret
            rc, _, err = self.certs_run(patch, lasting)
            t.check(rc == 1 and "http 403" in err and "create secret" in err,
                    "the lasting account may not create the Secret", err)
            rc, out, err = self.certs_run(patch, patch_sa)
            t.check(rc == 0 and "created (absent)" in out and out.count("caBundle set") == 2,
                    "post-upgrade: the patch hook creates the Secret and sets both caBundles",
                    out + err)
            after = secret()
            ca = data_of(after).get("ca.crt")
            t.check(ca and ca != data_of(before).get("ca.crt") and
                    all(b and base64.b64decode(b) == ca for b in bundles(configs)),
                    "every caBundle is the new Secret's CA")
            if serve(data_of(after), "job"):
                admitted("job")

            # A later upgrade when renewal is due: the setup hook keeps the
            # pair the caBundle trusts; the post-upgrade hook renews it.
            version = after["metadata"]["resourceVersion"]
            rc, out, err = self.certs_run(setup, setup_sa, "--validity", "400d",
                                          "--renew-before", "399d")
            t.check(rc == 0 and "kept (--create-only): " in out and "renewal margin" in out,
                    "pre-upgrade: a pair due for renewal is kept", out + err)
            t.equal(secret()["metadata"]["resourceVersion"], version,
                    "pre-upgrade: no write to the Secret")
            rc, out, err = self.certs_run(patch, patch_sa, "--validity", "400d",
                                          "--renew-before", "399d")
            t.check(rc == 0 and "renewed (" in out and out.count("caBundle set") == 2,
                    "post-upgrade: renewed, and the caBundles with it", out + err)
            renewed = data_of(secret())
            t.check(all(b and base64.b64decode(b) == renewed.get("ca.crt") + ca
                        for b in bundles(configs)),
                    "renewed: the new CA first, the old one after it")

            # A Secret that cannot be replaced is refused by name; a valid
            # one of the right type keeps its other keys.
            def put_secret(typ, immutable, data):
                cl.kubectl(["-n", RELEASE_NS, "delete", "secret", secret_name,
                            "--ignore-not-found"])
                obj = {"apiVersion": "v1", "kind": "Secret", "type": typ,
                       "metadata": {"name": secret_name, "namespace": RELEASE_NS},
                       "data": {k: base64.b64encode(v).decode() for k, v in data.items()}}
                if immutable:
                    obj["immutable"] = True
                cl.apply([obj])
            junk = {"tls.crt": b"junk", "tls.key": b"junk", "extra": b"kept"}
            put_secret("Opaque", False, junk)
            rc, _, err = self.certs_run(patch, patch_sa)
            t.check(rc == 1 and f'secret "{RELEASE_NS}/{secret_name}": must be replaced '
                    '(ca.crt: missing) but its type is "Opaque", not kubernetes.io/tls' in err,
                    "an Opaque Secret: refused, named, with why", err)
            put_secret("kubernetes.io/tls", True, junk)
            rc, _, err = self.certs_run(patch, patch_sa)
            t.check(rc == 1 and "but it is immutable: delete it" in err,
                    "an immutable Secret: refused, named, with why", err)
            put_secret("kubernetes.io/tls", False, junk)
            rc, out, err = self.certs_run(patch, patch_sa)
            got = data_of(secret())
            t.check(rc == 0 and "renewed (" in out and got.get("extra") == b"kept" and
                    got.get("tls.crt") != b"junk", "a kubernetes.io/tls Secret: renewed, its "
                    "other keys kept", out + err)
            t.summary = ("selfSigned upgraded to job: Secret recreated by the patch hook, "
                         "caBundles set, GPU pods admitted; no renewal in setup")
        finally:
            if webhook[0] is not None:
                webhook[0].stop()
            cl.kubectl(["-n", RELEASE_NS, "delete", "secret", secret_name, "--ignore-not-found"])
            cl.kubectl(["delete", "namespace", CERTS_UP_NS, "--ignore-not-found", "--wait=false"])
            for kind, name in configs:
                cl.kubectl(["delete", kind.lower(), name, "--ignore-not-found"])
            cl.kubectl(["-n", RELEASE_NS, "delete", "service", svc["metadata"]["name"],
                        "--ignore-not-found"])
            for o in rbac:
                cl.kubectl(["delete", o["kind"].lower(), o["metadata"]["name"],
                            "--ignore-not-found"] +
                           (["-n", RELEASE_NS] if o["kind"] in ("ServiceAccount", "Role",
                                                                 "RoleBinding") else []))


class SecondWebhook:
    """A tiny mutating webhook for the reinvocation test: it appends the env
    entry E2E_SECOND=1 to the first container."""

    def __init__(self, certdir):
        self.calls = 0
        self.port = free_port()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                req = body["request"]
                outer.calls += 1
                c = req["object"]["spec"]["containers"][0]
                entry = {"name": "E2E_SECOND", "value": "1"}
                if c.get("env"):
                    ops = [{"op": "add", "path": "/spec/containers/0/env/-", "value": entry}]
                else:
                    ops = [{"op": "add", "path": "/spec/containers/0/env", "value": [entry]}]
                answer = {"apiVersion": body["apiVersion"], "kind": "AdmissionReview",
                          "response": {"uid": req["uid"], "allowed": True,
                                       "patchType": "JSONPatch",
                                       "patch": base64.b64encode(json.dumps(ops).encode())
                                       .decode()}}
                data = json.dumps(answer).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(os.path.join(certdir, "tls.crt"), os.path.join(certdir, "tls.key"))
        self.server.socket = ctx.wrap_socket(self.server.socket, server_side=True)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def start(self):
        self.thread.start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


# --------------------------------------------------------------------------
# The cluster of the tests, set up once


def missing_tools():
    out = []
    if not APISERVER:
        out.append("KUBE_APISERVER is not set (tests/e2e/get-apiserver.sh prints its path)")
    for what, path in (("kube-apiserver", APISERVER), ("etcd", ETCD), ("kubectl", KUBECTL),
                       ("helm", HELM), ("vgpu-webhook", BIN), ("gen-certs.sh", GEN_CERTS)):
        if path and not os.access(path, os.X_OK):
            out.append(f"{what} is missing: {path}")
    if not shutil.which("openssl"):
        out.append("openssl is missing")
    if not os.path.isdir(CASES):
        out.append(f"no corpus folder {CASES}")
    return out


def corpus_identities(cases):
    ids = {}
    for c in cases:
        if c.is_pod_create:
            user, uid, groups = c.requester()
            ids[c.requester()] = (user, uid or f"uid-{len(ids)}", groups)
    return ids


def runtime_classes(cases):
    names = {"nvidia"}
    for c in cases:
        for pod in (c.pod, c.expect.get("pod")):
            if isinstance(pod, dict) and isinstance(pod.get("spec"), dict):
                v = pod["spec"].get("runtimeClassName")
                if isinstance(v, str) and v:
                    names.add(v)
        if c.config:
            with open(c.config, "rb") as f:
                try:
                    cfg = json.loads(f.read())
                except ValueError:
                    continue
            for d in cfg.get("devices") or [] if isinstance(cfg, dict) else []:
                if isinstance(d, dict) and d.get("runtimeClassName"):
                    names.add(d["runtimeClassName"])
    return names


@pytest.fixture(scope="module")
def suite(request, report):
    """The cluster, set up once for the tests of this module, and the Suite
    that drives it.  Everything it started is stopped at the end, on
    Ctrl-C, SIGTERM and SIGHUP too."""
    handlers = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGHUP)}
    started = time.time()
    ready = None
    lock = None
    interrupted = False
    try:
        missing = missing_tools()
        if missing:
            pytest.skip("; ".join(missing))

        # One run at a time per build folder: a second one would remove the
        # first one's files.
        os.makedirs(os.path.dirname(OUT), exist_ok=True)
        lock = open(OUT + ".lock", "w")
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            busy = False
        except OSError:
            busy = True
        if busy:
            pytest.fail(f"setup: another e2e run is using {os.path.relpath(OUT, ROOT)}/",
                        pytrace=False)
        shutil.rmtree(OUT, ignore_errors=True)
        os.makedirs(OUT)
        cases = load_cases(CASES)
        cl = Cluster()
        ids = {"admin": ("e2e-admin", "uid-admin", ("system:masters",)),
               TENANT: (TENANT, "uid-tenant", ("tenants",)),
               SCHEDULER_SA: (SCHEDULER_SA, "uid-hami-scheduler",
                              ("system:serviceaccounts", "system:serviceaccounts:kube-system")),
               DEVICE_PLUGIN_SA: (DEVICE_PLUGIN_SA, "uid-hami-device-plugin",
                                  ("system:serviceaccounts",
                                   "system:serviceaccounts:kube-system"))}
        for sa in certs_accounts(CERTS_FULLNAME) + certs_accounts(CERTS_UP_FULLNAME):
            ids[sa] = (sa, "uid-" + sa.rpartition(":")[2],
                       ("system:serviceaccounts", f"system:serviceaccounts:{RELEASE_NS}"))
        ids.update(corpus_identities(cases))
        s = Suite(cl, cases)
        failed = None
        try:
            cl.make_certs(ids)
            cl.start_etcd()
            cl.start_apiserver()
            rc, out, err = cl.kubectl(["version", "-o", "json"])
            server = json.loads(out).get("serverVersion", {}).get("gitVersion") if rc == 0 else "?"
            report(f"e2e: kube-apiserver {server} on 127.0.0.1:{cl.api_port}, etcd on "
                   f":{cl.etcd_port}, webhook on :{cl.webhook_port} (logs in "
                   f"{os.path.relpath(OUT, ROOT)}/)")
            for line in err.splitlines():
                if line.strip():
                    report(f"e2e: note: kubectl version says: {line.strip()}")
            report("e2e: note: 1.20 does not set the kubernetes.io/metadata.name label "
                   "(1.21 does); the suite labels its namespaces itself")
            s.bootstrap(runtime_classes(cases),
                        {u for (u, _, _) in corpus_identities(cases).values()})
            s.start_chart_webhook()
        except (RuntimeError, OSError, KeyError, ValueError) as e:
            failed = f"setup: {e}"
        if failed:
            pytest.fail(failed, pytrace=False)
        report(f"e2e: set up in {time.time() - started:.0f} s")
        ready = s
        yield s
    except (KeyboardInterrupt, pytest.exit.Exception):  # while it sets up
        interrupted = True
        raise
    finally:
        stop_all()
        if lock is not None:
            lock.close()
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
        if ready is not None:
            report(f"e2e: {ready.asserts} assertions in {time.time() - started:.0f} s")
        if interrupted or request.session.exitstatus == pytest.ExitCode.INTERRUPTED:
            report("e2e: interrupted; everything it started is stopped")


# The tests, in this order: each leaves the cluster as the next one expects it.
test_corpus = checks(1, "corpus", Suite.test_corpus)
test_dry_run = checks(2, "dry-run", Suite.test_dry_run)
test_reinvocation = checks(3, "reinvocation", Suite.test_reinvocation)
test_v1beta1 = checks(4, "v1beta1", Suite.test_v1beta1)
test_quota = checks(5, "quota", Suite.test_quota)
test_ert = checks(6, "extended-resource-toleration", Suite.test_ert)
test_failure_policy = checks(7, "failure-policy", Suite.test_failure_policy)
test_rotation = checks(8, "rotation", Suite.test_rotation)
test_chart = checks(9, "chart", Suite.test_chart)
test_guards = checks(10, "guards", Suite.test_guards)
test_profiles = checks(11, "profiles", Suite.test_profiles)
test_escapes_ephemeral = checks(12, "escapes-ephemeral", Suite.test_escapes_ephemeral)
test_escapes_depth = checks(13, "escapes-depth", Suite.test_escapes_depth)
test_escapes_server = checks(14, "escapes-server", Suite.test_escapes_server)
test_certs_job = checks(15, "certs-job", Suite.test_certs_job)
test_certs_upgrade = checks(16, "certs-upgrade", Suite.test_certs_upgrade)
test_allocation = checks(17, "allocation", Suite.test_allocation)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__] + sys.argv[1:]))
