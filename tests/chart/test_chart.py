#!/usr/bin/python3
"""Checks of the deployment files: the Helm chart and certs/gen-certs.sh (the
image has its own suite, tests/image/test_image.py).

The chart is rendered with the real helm (helm template) for the default
values, each certificate mode (charts/vgpu-webhook/ci/*-values.yaml) and
variants given with --set; the rendered objects are read back as YAML and
checked against what the API server and the kubelet would do with them.
The webhook's matchConditions expression is evaluated with a CEL
implementation on sample pods.  The rendered config.json is fed to the
binary (review --config), and the rendered self-signed certificate is
served by it.

Run by `make chart` under pytest:

    /usr/bin/python3 -m pytest tests/chart/test_chart.py [-k NAME]

Each test is a section of checks (T.check): every check runs, the ones
that fail are listed in the test's failure, and a passing check prints an
`ok` line (shown with pytest -rP).  What cannot run for a missing tool
(helm, node and the CEL evaluator, the binary) makes the test a skip with
the reason, once its other checks have passed.

Environment: CHART_HELM (helm binary), CHART_CEL_JS (folder of
@marcbachmann/cel-js), VGPU_WEBHOOK (the binary), NODE.
"""

import base64
import copy
import functools
import http.client
import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHART = os.path.join(ROOT, "charts", "vgpu-webhook")
HELM = os.environ.get("CHART_HELM", os.path.join(ROOT, "build", "tools", "helm"))
CEL_JS = os.environ.get("CHART_CEL_JS", os.path.join(ROOT, "build", "tools", "cel-js"))
BIN = os.environ.get("VGPU_WEBHOOK", os.path.join(ROOT, "build", "vgpu-webhook"))
NODE = os.environ.get("NODE", "node")
GEN_CERTS = os.path.join(ROOT, "certs", "gen-certs.sh")
OUT = os.path.join(ROOT, "build", "chart")

NS = "vgpu-system"
RELEASE = "vgpu-webhook"  # fullname: vgpu-webhook
UID = 65532

# docs/behaviour.md §2: the built-in configuration, written out
# independently of values.yaml.
BUILTIN_CONFIG = {
    "allocation": "hami",
    "schedulerName": "hami-scheduler",
    "forceOverwriteDefaultScheduler": True,
    "privilegedPolicy": "deny",
    "nodeNamePolicy": "deny",
    "resourceAnnotationPolicy": "warn",
    "envFromPolicy": "warn",
    "schedulerPolicy": {"node": "", "gpu": ""},
    "hamiDeviceConfig": "",
    "workloads": [],
    "devices": [
        {
            "name": "nvidia",
            "resourceCountName": "nvidia.com/gpu",
            "resourceMemoryName": "nvidia.com/gpumem",
            "resourceMemoryPercentageName": "nvidia.com/gpumem-percentage",
            "resourceCoreName": "nvidia.com/gpucores",
            "resourcePriorityName": "nvidia.com/priority",
            "defaultGPUNum": 1,
            "defaultMemory": 5000,
            "defaultCores": 0,
            "tolerations": [
                {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
            ],
            "runtimeClassName": "",
            "gpuCorePolicy": "",
            "activeOOMKiller": "",
            "overwriteEnv": False,
        }
    ],
    # docs/behaviour.md 2.1, with the writers the chart derives from hami.namespace and
    # hami.releaseName (kube-system, hami).
    "guards": {
        "schedulerAnnotations": {
            "policy": "deny",
            "keys": ["hami.io/vgpu-node", "hami.io/vgpu-time", "hami.io/bind-time",
                     "hami.io/bind-phase", "hami.io/*-devices-to-allocate",
                     "hami.io/*-allocated"],
            "writers": ["system:serviceaccount:kube-system:hami-scheduler",
                        "system:serviceaccount:kube-system:hami-device-plugin"],
        },
        "env": {
            "policy": "deny",
            "names": ["NVIDIA_VISIBLE_DEVICES", "CUDA_DEVICE_MEMORY_LIMIT",
                      "CUDA_DEVICE_MEMORY_LIMIT_*", "CUDA_DEVICE_SM_LIMIT",
                      "CUDA_DEVICE_SM_LIMIT_*", "CUDA_DEVICE_MEMORY_SHARED_CACHE",
                      "CUDA_DISABLE_CONTROL", "CUDA_OVERSUBSCRIBE",
                      "CUDA_TASK_PRIORITY", "GPU_CORE_UTILIZATION_POLICY",
                      "ACTIVE_OOM_KILLER", "CUDA_REDIRECT", "RECORD_KERNEL_INTERVAL"],
            "allowedValues": {"NVIDIA_VISIBLE_DEVICES": ["none", "void"]},
        },
        "volumeMounts": {
            "policy": "deny",
            "paths": ["/var/run/nvidia-container-devices"],
        },
    },
}

# docs/behaviour.md §2.1: the mount guard's built-in paths, which the
# chart's matchConditions cover when a config leaves them out.
BUILTIN_MOUNT_PATHS = ["/var/run/nvidia-container-devices"]

SERVE_ARGS = [
    "serve", "--listen", "0.0.0.0:9443",
    "--tls-cert-file", "/certs/tls.crt",
    "--tls-private-key-file", "/certs/tls.key",
    "--metrics-listen", "0.0.0.0:9090",
    "--config", "/config/config.json",
    "--log-format", "json",
    "--shutdown-delay", "5",
]


class Suite:
    """Soft checks: each is counted and printed, and the failures wait
    for the end of the test (see checks below)."""

    def __init__(self):
        self.passed = 0
        self.failures = []
        self.taken = 0
        self.missing = []

    def check(self, name, ok, detail=""):
        if ok:
            self.passed += 1
            print(f"ok   {name}")
        else:
            detail = str(detail)
            if len(detail) > 600:
                detail = detail[:600] + "..."
            self.failures.append(f"FAIL {name}" + (f": {detail}" if detail else ""))
            print(self.failures[-1])
        return ok

    def equal(self, name, got, want):
        return self.check(name, got == want, f"got {got!r}, want {want!r}")

    def section(self, title):
        print(f"--- {title}")

    def cannot(self, reason):
        """Some checks of this test cannot run here (a tool is missing)."""
        print(f"SKIP {reason}")
        self.missing.append(reason)

    def take(self):
        """(failures, reasons of checks that could not run) since the last
        take: the checks of one test, and of the fixtures it set up."""
        fails, self.taken = self.failures[self.taken:], len(self.failures)
        missing, self.missing = self.missing, []
        return fails, missing


T = Suite()


def checks(fn):
    """Makes a section of T.check() calls one pytest test: it fails with
    every failed check, else it is skipped when T.cannot() was called."""
    @functools.wraps(fn)
    def test(*args, **kwargs):
        try:
            fn(*args, **kwargs)
        except BaseException:
            fails, _ = T.take()
            if fails:
                print("checks failed before the error:\n" + "\n".join(fails))
            raise
        fails, missing = T.take()
        if fails:
            pytest.fail("\n".join(fails), pytrace=False)
        if missing:
            pytest.skip("; ".join(missing))
    return test


# --- the renders that several tests read ----------------------------------

@pytest.fixture(scope="module")
def helm():
    if not os.access(HELM, os.X_OK):
        pytest.skip(f"no helm at {HELM}: make chart-tools (scripts/get-helm.sh)")
    return HELM


@pytest.fixture(scope="module")
def default_render(helm):
    """The default values; its checks are test_default's."""
    return render("default")


@pytest.fixture(scope="module")
def selfsigned_render(helm):
    """The selfSigned mode; its checks are test_self_signed's."""
    return render("selfsigned", [ci_values("selfsigned")])


@pytest.fixture(scope="module")
def full_render(helm):
    """Every key non-default; its checks are test_full_config's."""
    return render("full-config", [ci_values("full-config")])


def selfsigned_ok(r):
    """r rendered, with a complete Secret (test_self_signed checks it)."""
    data = tls_secret_data(r, f"{RELEASE}-tls") if r else None
    return data is not None and {"ca.crt", "tls.crt", "tls.key"} <= set(data)


# --- helm ---------------------------------------------------------------

def helm_env():
    env = dict(os.environ)
    home = os.path.join(ROOT, "build", "tools", "helm-home")
    env.setdefault("HELM_CONFIG_HOME", os.path.join(home, "config"))
    env.setdefault("HELM_CACHE_HOME", os.path.join(home, "cache"))
    env.setdefault("HELM_DATA_HOME", os.path.join(home, "data"))
    return env


# The chart refuses an image with no registry (it is published nowhere):
# every render names one unless a test asks for none.
REGISTRY = "registry.example.com"
REGISTRY_SET = ["--set", "image.registry=" + REGISTRY]


def helm_template(files=(), sets=(), release=RELEASE, namespace=NS, kube=None, chart=CHART,
                  extra=(), registry=True):
    """Runs helm template; returns (returncode, stdout, stderr)."""
    cmd = [HELM, "template", release, chart, "--namespace", namespace, *extra]
    if registry:
        cmd += REGISTRY_SET
    for f in files:
        cmd += ["-f", f]
    for s in sets:
        cmd += ["--set", s]
    if kube:
        cmd += ["--kube-version", kube]
    p = subprocess.run(cmd, capture_output=True, text=True, env=helm_env(),
                       stdin=subprocess.DEVNULL, timeout=120)
    return p.returncode, p.stdout, p.stderr


class Render:
    """The objects of one successful render, by kind."""

    def __init__(self, name, text):
        self.name = name
        self.text = text
        self.docs = [d for d in yaml.safe_load_all(text) if d]
        os.makedirs(OUT, exist_ok=True)
        with open(os.path.join(OUT, name + ".yaml"), "w") as f:
            f.write(text)

    def all(self, kind):
        return [d for d in self.docs if d.get("kind") == kind]

    def one(self, kind):
        found = self.all(kind)
        if len(found) != 1:
            raise AssertionError(f"{self.name}: {len(found)} objects of kind {kind}")
        return found[0]

    def named(self, kind, name):
        for d in self.all(kind):
            if d["metadata"]["name"] == name:
                return d
        return None


def render(name, files=(), sets=(), **kw):
    rc, out, err = helm_template(files, sets, **kw)
    where = " ".join([f"-f {os.path.relpath(f, ROOT)}" for f in files] +
                     [f"--set {s if len(s) < 80 else s[:60] + '...'}" for s in sets])
    if not T.check(f"{name}: helm template {where}".rstrip(), rc == 0, err.strip()):
        return None
    return Render(name, out)


def ci_values(mode):
    return os.path.join(CHART, "ci", f"{mode}-values.yaml")


def load_values(path):
    with open(path) as f:
        return yaml.safe_load(f)


# --- helpers on objects ---------------------------------------------------

def selector_matches(sel, labels):
    """Kubernetes label selector semantics (matchLabels, matchExpressions)."""
    for k, v in (sel.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for e in sel.get("matchExpressions") or []:
        key, op, vals = e["key"], e["operator"], e.get("values") or []
        if op == "In" and labels.get(key) not in vals:
            return False
        if op == "NotIn" and key in labels and labels[key] in vals:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
    return True


def ns_labels(name, extra=None):
    labels = {"kubernetes.io/metadata.name": name}
    labels.update(extra or {})
    return labels


def container_port(container, port):
    """Resolves a probe or Service port (number or name) to a number."""
    if isinstance(port, int):
        return port
    for p in container.get("ports") or []:
        if p.get("name") == port:
            return p["containerPort"]
    return None


def webhook_container(r):
    dep = r.one("Deployment")
    return dep, dep["spec"]["template"]["spec"]["containers"][0]


def b64(s):
    return base64.b64encode(s.encode()).decode()


def openssl(*args, data=None):
    p = subprocess.run(["openssl", *args], capture_output=True,
                       input=data, stdin=None if data else subprocess.DEVNULL)
    return p.returncode, p.stdout, p.stderr


def write(path, data, mode=0o600):
    with open(path, "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())
    os.chmod(path, mode)


def verify_serving(tag, ca_pem, crt_pem, key_pem, hostnames, ip=None):
    """tls.crt verifies against ca.crt for a TLS server with these names, and
    tls.key is its key."""
    with tempfile.TemporaryDirectory() as d:
        ca, crt, key = (os.path.join(d, n) for n in ("ca.crt", "tls.crt", "tls.key"))
        write(ca, ca_pem)
        write(crt, crt_pem)
        write(key, key_pem)
        for h in hostnames:
            rc, out, err = openssl("verify", "-CAfile", ca, "-purpose", "sslserver",
                                   "-verify_hostname", h, crt)
            T.check(f"{tag}: tls.crt verifies for {h}", rc == 0, (out + err).decode().strip())
        if ip:
            rc, out, err = openssl("verify", "-CAfile", ca, "-purpose", "sslserver",
                                   "-verify_ip", ip, crt)
            T.check(f"{tag}: tls.crt verifies for {ip}", rc == 0, (out + err).decode().strip())
        rc, pub_crt, _ = openssl("x509", "-in", crt, "-noout", "-pubkey")
        rc2, pub_key, _ = openssl("pkey", "-in", key, "-pubout")
        T.check(f"{tag}: tls.key is the key of tls.crt",
                rc == 0 and rc2 == 0 and pub_crt == pub_key)
        rc, out, _ = openssl("x509", "-in", crt, "-noout", "-ext", "extendedKeyUsage")
        T.check(f"{tag}: tls.crt has extended key usage serverAuth",
                rc == 0 and b"TLS Web Server Authentication" in out, out.decode())


# --- checks on one render -------------------------------------------------

def check_webhook(r, *, failure="Fail", timeout=10, namespace=NS, fullname=RELEASE,
                  extra_excluded=(), served_labels=None, pod_opt_out=False):
    """served_labels: labels a served namespace needs besides its name."""
    served = dict(served_labels or {})
    tag = r.name
    mwc = r.one("MutatingWebhookConfiguration")
    T.equal(f"{tag}: MutatingWebhookConfiguration named after the release and its namespace",
            mwc["metadata"]["name"], f"{fullname}-{namespace}")
    T.equal(f"{tag}: one webhook", len(mwc["webhooks"]), 1)
    wh = mwc["webhooks"][0]
    T.equal(f"{tag}: admissionReviewVersions", wh["admissionReviewVersions"], ["v1", "v1beta1"])
    T.equal(f"{tag}: sideEffects", wh["sideEffects"], "None")
    T.equal(f"{tag}: failurePolicy", wh["failurePolicy"], failure)
    T.equal(f"{tag}: timeoutSeconds", wh["timeoutSeconds"], timeout)
    T.equal(f"{tag}: reinvocationPolicy", wh["reinvocationPolicy"], "IfNeeded")
    T.equal(f"{tag}: rules: pods CREATE, pods/ephemeralcontainers UPDATE", wh["rules"], [
        {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
         "resources": ["pods"], "scope": "Namespaced"},
        {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["UPDATE"],
         "resources": ["pods/ephemeralcontainers"], "scope": "Namespaced"}])
    T.check(f"{tag}: webhook name is a fully qualified name",
            re.fullmatch(r"[a-z0-9-]+(\.[a-z0-9-]+){2,}", wh["name"]) is not None, wh["name"])

    svc = r.one("Service")
    ref = wh["clientConfig"]["service"]
    T.equal(f"{tag}: clientConfig names the Service",
            (ref["name"], ref["namespace"]), (svc["metadata"]["name"], namespace))
    T.equal(f"{tag}: clientConfig path", ref["path"], "/mutate")
    https = [p for p in svc["spec"]["ports"] if p["port"] == ref.get("port", 443)]
    dep, c = webhook_container(r)
    T.check(f"{tag}: Service port 443 reaches container port 9443",
            ref.get("port") == 443 and len(https) == 1 and
            container_port(c, https[0]["targetPort"]) == 9443, svc["spec"]["ports"])
    pod_labels = dep["spec"]["template"]["metadata"]["labels"]
    T.check(f"{tag}: Service selects the webhook pods",
            selector_matches({"matchLabels": svc["spec"]["selector"]}, pod_labels))

    nsel, osel = wh["namespaceSelector"], wh["objectSelector"]
    name_expr = [e for e in nsel["matchExpressions"]
                 if e["key"] == "kubernetes.io/metadata.name"]
    T.check(f"{tag}: namespaceSelector uses kubernetes.io/metadata.name NotIn",
            len(name_expr) == 1 and name_expr[0]["operator"] == "NotIn", name_expr)
    for ns in ("kube-system", namespace) + tuple(extra_excluded):
        T.check(f"{tag}: namespace {ns} is not sent",
                not selector_matches(nsel, ns_labels(ns, served)))
    T.check(f"{tag}: namespace ml is sent", selector_matches(nsel, ns_labels("ml", served)))
    T.check(f"{tag}: namespace labelled hami.io/webhook=ignore is not sent",
            not selector_matches(nsel, ns_labels("ml", dict(served, **{"hami.io/webhook": "ignore"}))))
    if pod_opt_out:
        T.check(f"{tag}: pod labelled hami.io/webhook=ignore is not sent (webhook.podOptOut)",
                not selector_matches(osel, {"app": "train", "hami.io/webhook": "ignore"}))
    else:
        T.check(f"{tag}: pod labelled hami.io/webhook=ignore is sent (webhook.podOptOut off)",
                selector_matches(osel, {"app": "train", "hami.io/webhook": "ignore"}))
    T.check(f"{tag}: ordinary pod is sent", selector_matches(osel, {"app": "train"}))
    return wh


def check_security(r):
    tag = r.name
    dep, c = webhook_container(r)
    pod = dep["spec"]["template"]["spec"]
    psc, csc = pod.get("securityContext") or {}, c.get("securityContext") or {}

    def eff(key):
        return csc.get(key, psc.get(key))

    T.equal(f"{tag}: runAsNonRoot", eff("runAsNonRoot"), True)
    T.equal(f"{tag}: runAsUser", eff("runAsUser"), UID)
    T.equal(f"{tag}: runAsGroup", eff("runAsGroup"), UID)
    T.equal(f"{tag}: readOnlyRootFilesystem", csc.get("readOnlyRootFilesystem"), True)
    T.equal(f"{tag}: allowPrivilegeEscalation", csc.get("allowPrivilegeEscalation"), False)
    T.equal(f"{tag}: capabilities drop ALL", (csc.get("capabilities") or {}).get("drop"), ["ALL"])
    T.check(f"{tag}: no capability added", not (csc.get("capabilities") or {}).get("add"))
    T.equal(f"{tag}: seccomp RuntimeDefault", (eff("seccompProfile") or {}).get("type"),
            "RuntimeDefault")
    T.check(f"{tag}: not privileged", not csc.get("privileged"))
    res = c.get("resources") or {}
    T.check(f"{tag}: resources requests and limits set",
            bool(res.get("requests")) and bool(res.get("limits")), res)
    T.equal(f"{tag}: no service account token mounted",
            pod.get("automountServiceAccountToken"), False)


def check_probes(r, metrics=True):
    tag = r.name
    _, c = webhook_container(r)
    port, scheme = (9090, "HTTP") if metrics else (9443, "HTTPS")
    for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
        if probe == "readinessProbe":  # ready means TLS works
            port, scheme = 9443, "HTTPS"
        g = (c.get(probe) or {}).get("httpGet") or {}
        T.check(f"{tag}: {probe} GET {path} on {port} {scheme}",
                g.get("path") == path and container_port(c, g.get("port")) == port and
                g.get("scheme", "HTTP") == scheme, g)


def check_deployment(r, *, replicas=2, args=SERVE_ARGS, tls_secret=None, roll=False):
    tag = r.name
    dep, c = webhook_container(r)
    pod = dep["spec"]["template"]["spec"]
    T.equal(f"{tag}: replicas", dep["spec"]["replicas"], replicas)
    T.equal(f"{tag}: container args", c.get("args"), args)
    T.check(f"{tag}: no command override (the image's ENTRYPOINT runs)", "command" not in c)
    T.check(f"{tag}: Deployment selector matches its pods",
            selector_matches(dep["spec"]["selector"], dep["spec"]["template"]["metadata"]["labels"]))
    mounts = {m["mountPath"]: m for m in c.get("volumeMounts") or []}
    vols = {v["name"]: v for v in pod.get("volumes") or []}
    certs = mounts.get("/certs")
    if certs:
        T.equal(f"{tag}: certificate files mode 0440",
                vols.get(certs["name"], {}).get("secret", {}).get("defaultMode"), 0o440)
        T.equal(f"{tag}: fsGroup 65532 owns the certificate files",
                (pod.get("securityContext") or {}).get("fsGroup"), UID)
    T.check(f"{tag}: /certs mounted read-only from a Secret, without subPath",
            certs is not None and certs.get("readOnly") and "subPath" not in certs and
            "secret" in vols.get(certs["name"], {}), mounts)
    if certs and tls_secret:
        T.equal(f"{tag}: /certs comes from Secret {tls_secret}",
                vols[certs["name"]]["secret"]["secretName"], tls_secret)
    cfg = mounts.get("/config")
    cm = r.one("ConfigMap")
    T.check(f"{tag}: /config mounted from the config ConfigMap",
            cfg is not None and vols.get(cfg["name"], {}).get("configMap", {}).get("name") ==
            cm["metadata"]["name"] and "config.json" in cm["data"])
    aff = (pod.get("affinity") or {}).get("podAntiAffinity") or {}
    pref = aff.get("preferredDuringSchedulingIgnoredDuringExecution") or []
    T.check(f"{tag}: preferred pod anti-affinity over nodes, on its own pods",
            len(pref) == 1 and pref[0]["podAffinityTerm"]["topologyKey"] == "kubernetes.io/hostname"
            and selector_matches(pref[0]["podAffinityTerm"]["labelSelector"],
                                 dep["spec"]["template"]["metadata"]["labels"])
            and not aff.get("requiredDuringSchedulingIgnoredDuringExecution"), aff)
    ann = dep["spec"]["template"]["metadata"].get("annotations") or {}
    # The server reloads the config (docs/behaviour.md 6): a checksum only on request.
    T.check(f"{tag}: checksum/config annotation {'present' if roll else 'absent'}",
            (re.fullmatch(r"[0-9a-f]{64}", str(ann.get("checksum/config", ""))) is not None)
            if roll else "checksum/config" not in ann)
    return dep


def check_pdb(r, expected):
    tag = r.name
    pdbs = r.all("PodDisruptionBudget")
    if not expected:
        T.equal(f"{tag}: no PodDisruptionBudget", len(pdbs), 0)
        return
    if not T.equal(f"{tag}: one PodDisruptionBudget", len(pdbs), 1):
        return
    dep = r.one("Deployment")
    T.check(f"{tag}: PodDisruptionBudget selects the webhook pods",
            selector_matches(pdbs[0]["spec"]["selector"],
                             dep["spec"]["template"]["metadata"]["labels"]))
    T.equal(f"{tag}: PodDisruptionBudget minAvailable", pdbs[0]["spec"].get("minAvailable"),
            expected)


def config_of(r):
    return json.loads(r.one("ConfigMap")["data"]["config.json"])


def tls_secret_data(r, name):
    s = r.named("Secret", name)
    if s is None:
        return None
    return {k: base64.b64decode(v) for k, v in s["data"].items()}


# --- CEL ----------------------------------------------------------------

def pod(containers, init=None, **spec):
    s = {"containers": containers}
    if init is not None:
        s["initContainers"] = init
    s.update(spec)
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"generateName": "p-", "namespace": "ml"}, "spec": s}


def ctr(name, limits=None, requests=None, **extra):
    c = {"name": name, "image": "busybox",
         "terminationMessagePath": "/dev/termination-log",
         "terminationMessagePolicy": "File", "imagePullPolicy": "IfNotPresent"}
    res = {}
    if limits is not None:
        res["limits"] = limits
    if requests is not None:
        res["requests"] = requests
    c["resources"] = res
    c.update(extra)
    return c


# --- the binary ----------------------------------------------------------

def review(pod_object, uid="0f6b5c1e-7d1a-4a52-9f0e-2b8c6d4e1a01"):
    """An AdmissionReview shaped like the API server's (behaviour §7,
    #s7-sent)."""
    obj = copy.deepcopy(pod_object)
    spec = obj["spec"]
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("securityContext", {})
    spec.setdefault("serviceAccountName", "default")
    spec.setdefault("serviceAccount", "default")
    spec.setdefault("enableServiceLinks", True)
    spec.setdefault("priority", 0)
    spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
    spec.setdefault("tolerations", [
        {"key": "node.kubernetes.io/not-ready", "operator": "Exists",
         "effect": "NoExecute", "tolerationSeconds": 300},
        {"key": "node.kubernetes.io/unreachable", "operator": "Exists",
         "effect": "NoExecute", "tolerationSeconds": 300}])
    obj["metadata"].setdefault("creationTimestamp", None)
    obj["status"] = {}
    gvk = {"group": "", "version": "v1", "kind": "Pod"}
    gvr = {"group": "", "version": "v1", "resource": "pods"}
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {"uid": uid, "kind": gvk, "resource": gvr, "requestKind": gvk,
                        "requestResource": gvr, "namespace": "ml", "operation": "CREATE",
                        "userInfo": {"username": "system:serviceaccount:kube-system:replicaset-controller",
                                     "groups": ["system:serviceaccounts", "system:authenticated"]},
                        "object": obj, "oldObject": None, "dryRun": False,
                        "options": {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"}}}


def run_review(config_path, rev):
    """Runs `vgpu-webhook review --config FILE -`; returns (rc, response,
    stderr)."""
    p = subprocess.run([BIN, "review", "--config", config_path, "-"],
                       input=json.dumps(rev), capture_output=True, text=True, timeout=60)
    resp = None
    if p.returncode == 0:
        try:
            resp = json.loads(p.stdout)
        except ValueError:
            resp = None
    return p.returncode, resp, p.stderr


def patched_pod(rev, resp):
    """The pod after the answer's patch (python3-jsonpatch), or the pod as it
    was when there is no patch."""
    import jsonpatch
    obj = rev["request"]["object"]
    r = resp["response"]
    if "patch" not in r:
        return copy.deepcopy(obj)
    ops = json.loads(base64.b64decode(r["patch"]))
    return jsonpatch.apply_patch(obj, ops)


def env_of(c):
    return {e["name"]: e.get("value") for e in c.get("env") or []}


# --- sections -------------------------------------------------------------

@checks
def test_default(default_render):
    T.section("default values")
    r = default_render
    if not r:
        return
    check_webhook(r)
    wh = r.one("MutatingWebhookConfiguration")["webhooks"][0]
    T.equal("default: failurePolicy Fail (fails closed)", wh["failurePolicy"], "Fail")
    T.check("default: matchConditions (helm's own Kubernetes version is 1.28 or later)",
            len(wh.get("matchConditions") or []) == 1, wh.get("matchConditions"))
    vwc = r.one("ValidatingWebhookConfiguration")
    T.equal("default: the UPDATE webhooks fail closed too",
            [w["failurePolicy"] for w in vwc["webhooks"]], ["Fail"] * len(vwc["webhooks"]))
    check_security(r)
    check_probes(r, metrics=True)
    check_deployment(r, tls_secret=f"{RELEASE}-tls")
    check_pdb(r, 1)
    T.equal("default: config.json is the built-in configuration (behaviour §2)",
            config_of(r), BUILTIN_CONFIG)
    T.equal("default: no ServiceMonitor", r.all("ServiceMonitor"), [])
    T.check("default: no priorityClassName",
            "priorityClassName" not in r.one("Deployment")["spec"]["template"]["spec"])
    sa = r.named("ServiceAccount", RELEASE)
    T.equal("default: pods run as the chart's ServiceAccount",
            r.one("Deployment")["spec"]["template"]["spec"]["serviceAccountName"],
            sa["metadata"]["name"])
    svc_ports = {p["name"]: p for p in r.one("Service")["spec"]["ports"]}
    _, c = webhook_container(r)
    T.check("default: Service exposes metrics on 9090",
            "metrics" in svc_ports and container_port(c, svc_ports["metrics"]["targetPort"]) == 9090)


@checks
def test_notes_and_version(helm):
    T.section("NOTES.txt and versions")
    p = subprocess.run([HELM, "install", RELEASE, CHART, "--namespace", NS, "--dry-run=client",
                        *REGISTRY_SET],
                       capture_output=True, text=True, env=helm_env(),
                       stdin=subprocess.DEVNULL, timeout=120)
    notes = p.stdout.partition("NOTES:")[2]
    T.check("NOTES: rendered by helm install --dry-run=client", p.returncode == 0 and notes,
            p.stderr.strip())
    T.check("NOTES: tells how to wait for the pods",
            f"kubectl -n {NS} rollout status deployment/{RELEASE}" in notes)
    T.check("NOTES: tells how to check the webhook with a server-side dry run",
            "create --dry-run=server -o yaml" in notes and "nvidia.com/gpu: 1" in notes)
    T.check("NOTES: reads the caBundle of the release's own webhook configuration",
            f"kubectl get mutatingwebhookconfiguration {RELEASE}-{NS} " in notes, notes)
    T.check("NOTES: names the namespaces never sent",
            f"kube-system, gpu-operator, {NS}" in notes)
    T.check("NOTES: names the guard's writers and how to check them",
            "system:serviceaccount:kube-system:hami-scheduler" in notes and
            "kubectl -n kube-system get serviceaccounts" in notes)
    with open(os.path.join(ROOT, "lib", "vgpu.h")) as f:
        m = re.search(r'#define VGPU_VERSION "([^"]+)"', f.read())
    with open(os.path.join(CHART, "Chart.yaml")) as f:
        chart = yaml.safe_load(f)
    T.equal("Chart.yaml appVersion is VGPU_VERSION", chart["appVersion"], m.group(1) if m else None)
    if os.access(BIN, os.X_OK):
        v = subprocess.run([BIN, "version"], capture_output=True, text=True)
        T.equal("the binary reports the chart's appVersion on its first line",
                v.stdout.partition("\n")[0], f"vgpu-webhook {chart['appVersion']}")
    else:
        T.cannot(f"the binary's version: no {BIN} (make build)")


@checks
def test_self_signed(default_render, selfsigned_render):
    T.section("certificates: selfSigned (built-in genCA/genSignedCert)")
    default = default_render
    r = selfsigned_render
    if not r:
        return
    check_webhook(r)
    name = f"{RELEASE}-tls"
    data = tls_secret_data(r, name)
    if not T.check("selfsigned: Secret with ca.crt, tls.crt and tls.key",
                   data is not None and {"ca.crt", "tls.crt", "tls.key"} <= set(data)):
        return
    T.equal("selfsigned: Secret type kubernetes.io/tls", r.named("Secret", name)["type"],
            "kubernetes.io/tls")
    wh = r.one("MutatingWebhookConfiguration")
    T.equal("selfsigned: caBundle is the Secret's ca.crt",
            base64.b64decode(wh["webhooks"][0]["clientConfig"]["caBundle"]), data["ca.crt"])
    T.check("selfsigned: no cert-manager injection annotation",
            "cert-manager.io/inject-ca-from" not in (wh["metadata"].get("annotations") or {}))
    T.equal("selfsigned: no cert-manager objects",
            r.all("Certificate") + r.all("Issuer"), [])
    check_deployment(r, tls_secret=name)
    svc = f"{RELEASE}.{NS}"
    verify_serving("selfsigned", data["ca.crt"], data["tls.crt"], data["tls.key"],
                   [RELEASE, svc, svc + ".svc", svc + ".svc.cluster.local"])
    rc, out, _ = openssl("x509", "-noout", "-ext", "basicConstraints", data=data["ca.crt"])
    T.check("selfsigned: ca.crt is a CA", rc == 0 and b"CA:TRUE" in out, out.decode())
    # lookup finds nothing under helm template: every render is a new pair.
    again = render("selfsigned-again", [ci_values("selfsigned")])
    if again is not None:
        other = tls_secret_data(again, name)
        T.check("selfsigned: a second render makes another CA (no lookup under template)",
                other is not None and other["ca.crt"] != data["ca.crt"])
    if default is not None:
        T.equal("default: certificates.mode job renders no Secret", default.all("Secret"), [])


@checks
def test_job_mode(default_render):
    T.section("certificates: job (certs ensure in hook Jobs, the default)")
    r = default_render
    if not r:
        return
    again = render("default-again")
    T.check("job: two renders are the same bytes (GitOps-stable)",
            again is not None and again.text == r.text)
    T.check("job: the webhook configurations carry no caBundle (the hook Job sets it)",
            all("caBundle" not in w["clientConfig"]
                for k in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")
                for o in r.all(k) for w in o["webhooks"]))
    check_deployment(r, tls_secret=f"{RELEASE}-tls")
    full, secret = RELEASE, f"{RELEASE}-tls"
    cluster = f"{RELEASE}-{NS}"  # the webhook configurations, cluster-scoped
    jobs = {j["metadata"]["name"]: j for j in r.all("Job")}
    hooks = {n: (j["metadata"]["annotations"] or {}).get("helm.sh/hook") for n, j in jobs.items()}
    T.equal("job: the hook Jobs and their events", hooks, {
        f"{full}-certs-setup": "pre-install,pre-upgrade",
        f"{full}-certs-patch": "post-install,post-upgrade",
        f"{full}-certs-cleanup": "pre-delete"})

    def spec(j):
        return j["spec"]["template"]["spec"]
    ensure = ["certs", "ensure", "--namespace", NS, "--secret", secret, "--service", full,
              "--cluster-domain", "cluster.local", "--validity", "365d", "--renew-before", "30d"]
    webhooks = ["--webhook", cluster, "--validating-webhook", cluster]
    args = {n: spec(j)["containers"][0]["args"] for n, j in jobs.items()}
    T.equal("job: setup only creates an absent Secret (no renewal before the caBundle "
            "trusts it)", args.get(f"{full}-certs-setup"), ensure + ["--create-only"])
    T.equal("job: patch also sets both caBundles", args.get(f"{full}-certs-patch"),
            ensure + webhooks)
    T.equal("job: cleanup deletes both configurations of this Helm release only",
            args.get(f"{full}-certs-cleanup"),
            ["certs", "cleanup", "--namespace", NS, "--helm-release", RELEASE] + webhooks)
    cron = r.all("CronJob")
    T.check("job: a CronJob renews with the patch Job's args, as the lasting account",
            len(cron) == 1 and spec(cron[0]["spec"]["jobTemplate"])["containers"][0]["args"] ==
            ensure + webhooks and cron[0]["spec"]["concurrencyPolicy"] == "Forbid" and
            spec(cron[0]["spec"]["jobTemplate"])["serviceAccountName"] == f"{full}-certs", cron)
    accounts = {n: spec(j)["serviceAccountName"] for n, j in jobs.items()}
    T.equal("job: each hook Job runs as its own hook account", accounts, {
        f"{full}-certs-setup": f"{full}-certs-setup", f"{full}-certs-patch": f"{full}-certs-patch",
        f"{full}-certs-cleanup": f"{full}-certs-cleanup"})
    for n, j in jobs.items():
        c = spec(j)["containers"][0]
        T.check(f"job: {n}: the image's binary, non-root, read-only, no capabilities",
                "command" not in c and c["securityContext"]["readOnlyRootFilesystem"] and
                c["securityContext"]["capabilities"]["drop"] == ["ALL"] and
                spec(j)["securityContext"]["runAsNonRoot"], c)
    role = r.named("Role", f"{full}-certs")
    T.equal("job: the lasting Role: its Secret by name, get and update, no create",
            role and role["rules"], [{"apiGroups": [""], "resources": ["secrets"],
                                      "resourceNames": [secret], "verbs": ["get", "update"]}])
    create = {"apiGroups": [""], "resources": ["secrets"], "verbs": ["create"]}
    hooks_of = {"setup": "pre-install,pre-upgrade", "patch": "post-install,post-upgrade",
                "cleanup": "pre-delete"}
    for hook, event in hooks_of.items():
        for kind, name in (("ServiceAccount", f"{full}-certs-{hook}"),
                           ("Role", f"{full}-certs-{hook}"),
                           ("RoleBinding", f"{full}-certs-{hook}"),
                           ("ClusterRole", f"{cluster}-certs-{hook}"),
                           ("ClusterRoleBinding", f"{cluster}-certs-{hook}")):
            o = r.named(kind, name)
            wanted = (kind == "ServiceAccount" or
                      (kind in ("Role", "RoleBinding") and hook != "cleanup") or
                      (kind == "ClusterRole" and hook == "cleanup") or
                      (kind == "ClusterRoleBinding" and hook != "setup"))
            if not T.check(f"job: {kind} {name}: {'rendered' if wanted else 'none'}",
                           (o is not None) == wanted):
                continue
            if o is None:
                continue
            ann = o["metadata"].get("annotations") or {}
            T.check(f"job: {kind} {name}: a {event} hook, deleted when it succeeds or fails",
                    ann.get("helm.sh/hook") == event and
                    set(ann.get("helm.sh/hook-delete-policy", "").split(",")) ==
                    {"before-hook-creation", "hook-succeeded", "hook-failed"}, ann)
    for hook in ("setup", "patch"):
        o = r.named("Role", f"{full}-certs-{hook}")
        T.check(f"job: create of Secrets in the {hook} hook's Role", o and create in o["rules"],
                o and o["rules"])
    T.check("job: create of Secrets in no lasting Role",
            all(create not in o["rules"] for o in r.all("Role")
                if "helm.sh/hook" not in (o["metadata"].get("annotations") or {})))
    cr = r.named("ClusterRole", f"{cluster}-certs")
    T.equal("job: the lasting ClusterRole: the two configurations by name, get and patch",
            cr and cr["rules"], [
                {"apiGroups": ["admissionregistration.k8s.io"], "resources": [res],
                 "resourceNames": [cluster], "verbs": ["get", "patch"]}
                for res in ("mutatingwebhookconfigurations", "validatingwebhookconfigurations")])
    crb = r.named("ClusterRoleBinding", f"{cluster}-certs-patch")
    T.check("job: the patch hook account is bound to the lasting ClusterRole",
            crb and crb["roleRef"]["name"] == f"{cluster}-certs" and
            crb["subjects"][0]["name"] == f"{full}-certs-patch", crb)
    cr = r.named("ClusterRole", f"{cluster}-certs-cleanup")
    T.equal("job: the cleanup hook's ClusterRole: the two configurations by name, get and "
            "delete", cr and cr["rules"], [
                {"apiGroups": ["admissionregistration.k8s.io"], "resources": [res],
                 "resourceNames": [cluster], "verbs": ["get", "delete"]}
                for res in ("mutatingwebhookconfigurations", "validatingwebhookconfigurations")])
    crb = r.named("ClusterRoleBinding", f"{cluster}-certs-cleanup")
    T.check("job: the cleanup hook account is bound to it",
            crb and crb["roleRef"]["name"] == f"{cluster}-certs-cleanup" and
            crb["subjects"][0]["name"] == f"{full}-certs-cleanup", crb)
    T.check("job: delete of a configuration only in a hook's ClusterRole",
            all("delete" not in rule["verbs"] for o in r.all("ClusterRole")
                if "helm.sh/hook" not in (o["metadata"].get("annotations") or {})
                for rule in o["rules"]))
    nodel = render("job-no-cleanup", sets=["certificates.job.cleanupOnDelete=false"])
    if nodel:
        T.check("job: cleanupOnDelete=false: no cleanup Job, account or ClusterRole",
                not any("certs-cleanup" in o["metadata"]["name"] for o in nodel.docs), [
                    o["metadata"]["name"] for o in nodel.docs
                    if "certs-cleanup" in o["metadata"]["name"]])
        T.check("job: cleanupOnDelete=false: setup and patch Jobs still there",
                {j["metadata"]["name"] for j in nodel.all("Job")} ==
                {f"{full}-certs-setup", f"{full}-certs-patch"})
    for kind in ("Role", "ClusterRole"):
        for o in r.all(kind):
            T.check(f"job: {kind} {o['metadata']['name']}: no wildcard",
                    all("*" not in x for rule in o["rules"]
                        for x in rule["verbs"] + rule["resources"]), o["rules"])
    off = render("job-guards-off", sets=["config.guards.schedulerAnnotations.policy=off",
                                         "certificates.job.renewal.enabled=false"])
    if off:
        T.equal("job: without the validating configuration, only the mutating one is named",
                spec(off.named("Job", f"{full}-certs-cleanup"))["containers"][0]["args"],
                ["certs", "cleanup", "--namespace", NS, "--helm-release", RELEASE,
                 "--webhook", cluster])
        T.equal("job: renewal.enabled=false: no CronJob", off.all("CronJob"), [])
    for mode in ("selfsigned", "certmanager", "existingsecret"):
        other = render(f"no-job-{mode}", [ci_values(mode)])
        T.check(f"{mode}: no certs Job, CronJob or RBAC", other is not None and
                not other.all("Job") and not other.all("CronJob") and
                not other.all("Role") and not other.all("ClusterRole"))


# --- helm upgrade of the selfSigned mode: lookup against a fake API server

class FakeAPIServer:
    """Just enough of the Kubernetes API for `helm template --dry-run=server`:
    discovery of the kinds the chart renders, one Secret that lookup may
    find, and dry-run creates echoed back.  Plain HTTP on 127.0.0.1."""

    CORE = [("secrets", "Secret"), ("configmaps", "ConfigMap"), ("services", "Service"),
            ("serviceaccounts", "ServiceAccount")]
    GROUPS = {"apps": [("deployments", "Deployment", True)],
              "policy": [("poddisruptionbudgets", "PodDisruptionBudget", True)],
              "admissionregistration.k8s.io": [
                  ("mutatingwebhookconfigurations", "MutatingWebhookConfiguration", False),
                  ("validatingwebhookconfigurations", "ValidatingWebhookConfiguration",
                   False)]}

    def __init__(self):
        self.secret = None
        self.webhook = None  # the MutatingWebhookConfiguration lookup may find
        self.lookups = 0
        fake = self

        def resource(name, kind, namespaced):
            return {"name": name, "singularName": kind.lower(), "namespaced": namespaced,
                    "kind": kind, "verbs": ["get", "list", "create", "update", "patch"]}

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def reply(self, code, obj):
                body = json.dumps(obj).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self):
                path = self.path.split("?")[0]
                if path == "/version":
                    return self.reply(200, {"major": "1", "minor": "30", "gitVersion": "v1.30.0"})
                if path == "/api":
                    return self.reply(200, {"kind": "APIVersions", "versions": ["v1"]})
                if path == "/apis":
                    return self.reply(200, {"kind": "APIGroupList", "apiVersion": "v1", "groups": [
                        {"name": g, "versions": [{"groupVersion": g + "/v1", "version": "v1"}],
                         "preferredVersion": {"groupVersion": g + "/v1", "version": "v1"}}
                        for g in fake.GROUPS]})
                if path == "/api/v1":
                    return self.reply(200, {"kind": "APIResourceList", "groupVersion": "v1",
                                            "resources": [resource(n, k, True) for n, k in fake.CORE]})
                for g, items in fake.GROUPS.items():
                    if path == f"/apis/{g}/v1":
                        return self.reply(200, {"kind": "APIResourceList", "groupVersion": g + "/v1",
                                                "resources": [resource(*i) for i in items]})
                if path == ("/apis/admissionregistration.k8s.io/v1/"
                            f"mutatingwebhookconfigurations/{RELEASE}-{NS}") and fake.webhook:
                    return self.reply(200, fake.webhook)
                if path == f"/api/v1/namespaces/{NS}/secrets/{RELEASE}-tls":
                    fake.lookups += 1
                    if fake.secret is not None:
                        return self.reply(200, fake.secret)
                return self.reply(404, {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                                        "reason": "NotFound", "code": 404})

            def do_POST(self):
                n = int(self.headers.get("Content-Length") or 0)
                self.reply(201, json.loads(self.rfile.read(n) or b"{}"))

            do_PUT = do_PATCH = do_POST

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()

    def set_secret(self, data):
        """The Secret a previous release of the chart left (helm's ownership
        metadata included), or None."""
        if data is None:
            self.secret = None
            return
        self.secret = {
            "apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
            "metadata": {"name": f"{RELEASE}-tls", "namespace": NS,
                         "labels": {"app.kubernetes.io/managed-by": "Helm"},
                         "annotations": {"meta.helm.sh/release-name": RELEASE,
                                         "meta.helm.sh/release-namespace": NS}},
            "data": {k: base64.b64encode(v).decode() for k, v in data.items()}}


@checks
def test_self_signed_upgrade(selfsigned_render):
    T.section("certificates: selfSigned on upgrade (lookup, fake API server)")
    if not selfsigned_ok(selfsigned_render):
        return
    old = tls_secret_data(selfsigned_render, f"{RELEASE}-tls")
    with tempfile.TemporaryDirectory() as d, FakeAPIServer() as api:
        kubeconfig = os.path.join(d, "kubeconfig")
        write(kubeconfig, yaml.safe_dump({
            "apiVersion": "v1", "kind": "Config", "current-context": "fake",
            "clusters": [{"name": "fake", "cluster": {"server": f"http://127.0.0.1:{api.port}"}}],
            "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "fake"}}],
            "users": [{"name": "fake", "user": {"token": "fake"}}]}))
        env = helm_env()
        env["KUBECACHEDIR"] = os.path.join(d, "cache")

        def upgrade_render(name):
            p = subprocess.run([HELM, "template", RELEASE, CHART, "--namespace", NS,
                                "-f", ci_values("selfsigned"), *REGISTRY_SET,
                                "--dry-run=server",
                                "--disable-openapi-validation", "--kubeconfig", kubeconfig],
                               capture_output=True, text=True, env=env,
                               stdin=subprocess.DEVNULL, timeout=120)
            if not T.check(f"{name}: helm template --dry-run=server", p.returncode == 0,
                           p.stderr.strip()):
                return None
            r = Render(name, p.stdout)
            data = tls_secret_data(r, f"{RELEASE}-tls")
            bundle = base64.b64decode(
                r.one("MutatingWebhookConfiguration")["webhooks"][0]["clientConfig"]["caBundle"])
            return data, bundle

        api.set_secret(old)
        got = upgrade_render("upgrade-existing")
        if got:
            data, bundle = got
            T.check("upgrade-existing: lookup asked for the Secret", api.lookups > 0)
            T.equal("upgrade-existing: the existing Secret is kept as it is", data, old)
            T.equal("upgrade-existing: caBundle stays the existing CA", bundle, old["ca.crt"])

        api.set_secret({"tls.crt": old["tls.crt"], "tls.key": old["tls.key"]})
        got = upgrade_render("upgrade-no-ca")
        if got:
            data, bundle = got
            T.check("upgrade-no-ca: a Secret without ca.crt is replaced by a new pair",
                    data["ca.crt"] != old["ca.crt"] and data["tls.crt"] != old["tls.crt"])
            T.equal("upgrade-no-ca: caBundle is the new CA", bundle, data["ca.crt"])

        api.set_secret(None)
        got = upgrade_render("upgrade-none")
        if got:
            data, bundle = got
            T.check("upgrade-none: first install makes a pair",
                    data["ca.crt"] != old["ca.crt"] and bundle == data["ca.crt"])


@checks
def test_cert_manager(helm):
    T.section("certificates: certManager")
    r = render("certmanager", [ci_values("certmanager")])
    if not r:
        return
    check_webhook(r)
    wh = r.one("MutatingWebhookConfiguration")
    ann = (wh["metadata"].get("annotations") or {}).get("cert-manager.io/inject-ca-from", "")
    serving = r.named("Certificate", f"{RELEASE}-tls")
    T.check("certmanager: serving Certificate", serving is not None)
    if serving is None:
        return
    T.equal("certmanager: webhook annotated inject-ca-from the serving Certificate", ann,
            f"{NS}/{serving['metadata']['name']}")
    T.check("certmanager: no static caBundle", "caBundle" not in wh["webhooks"][0]["clientConfig"])
    T.equal("certmanager: no Secret rendered (cert-manager writes it)", r.all("Secret"), [])
    check_deployment(r, tls_secret=serving["spec"]["secretName"])
    svc = f"{RELEASE}.{NS}"
    T.equal("certmanager: serving dnsNames", serving["spec"]["dnsNames"],
            [RELEASE, svc, svc + ".svc", svc + ".svc.cluster.local"])
    T.check("certmanager: serving usages include server auth",
            "server auth" in serving["spec"].get("usages", []))
    vals = load_values(ci_values("certmanager"))["certificates"]["certManager"]
    T.equal("certmanager: duration and renewBefore from values",
            (serving["spec"]["duration"], serving["spec"]["renewBefore"]),
            (vals["duration"], vals["renewBefore"]))
    # The chain: serving <- CA Issuer <- CA Certificate <- SelfSigned Issuer.
    ca_issuer = r.named("Issuer", serving["spec"]["issuerRef"]["name"])
    T.check("certmanager: serving Certificate is issued by a CA Issuer",
            ca_issuer is not None and "ca" in ca_issuer["spec"] and
            serving["spec"]["issuerRef"].get("kind", "Issuer") == "Issuer")
    if ca_issuer is None or "ca" not in ca_issuer["spec"]:
        return
    ca_cert = [c for c in r.all("Certificate")
               if c["spec"].get("secretName") == ca_issuer["spec"]["ca"]["secretName"]]
    T.check("certmanager: the CA Issuer's Secret comes from a CA Certificate",
            len(ca_cert) == 1 and ca_cert[0]["spec"].get("isCA") is True)
    if len(ca_cert) == 1:
        root = r.named("Issuer", ca_cert[0]["spec"]["issuerRef"]["name"])
        T.check("certmanager: the CA Certificate is issued by a SelfSigned Issuer",
                root is not None and "selfSigned" in root["spec"])

    r2 = render("certmanager-issuer", [ci_values("certmanager")],
                ["certificates.certManager.issuerRef.kind=ClusterIssuer",
                 "certificates.certManager.issuerRef.name=internal-ca"])
    if r2:
        serving = r2.named("Certificate", f"{RELEASE}-tls")
        T.equal("certmanager-issuer: serving Certificate uses the given issuer",
                (serving["spec"]["issuerRef"]["kind"], serving["spec"]["issuerRef"]["name"]),
                ("ClusterIssuer", "internal-ca"))
        T.equal("certmanager-issuer: no chart CA chain",
                (len(r2.all("Certificate")), r2.all("Issuer")), (1, []))


@checks
def test_existing_secret(helm):
    T.section("certificates: existingSecret")
    path = ci_values("existingsecret")
    vals = load_values(path)["certificates"]["existingSecret"]
    r = render("existingsecret", [path])
    if not r:
        return
    check_webhook(r)
    wh = r.one("MutatingWebhookConfiguration")
    T.equal("existingsecret: caBundle from values",
            wh["webhooks"][0]["clientConfig"]["caBundle"], vals["caBundle"])
    T.check("existingsecret: no injection annotation",
            "cert-manager.io/inject-ca-from" not in (wh["metadata"].get("annotations") or {}))
    T.equal("existingsecret: no Secret or cert-manager objects rendered",
            r.all("Secret") + r.all("Certificate") + r.all("Issuer"), [])
    check_deployment(r, tls_secret=vals["name"])
    for sets, what in ((["certificates.existingSecret.name="], "without a name"),
                       (["certificates.existingSecret.caBundle="], "without caBundle"),
                       (["certificates.existingSecret.caBundle=" + b64("not a certificate")],
                        "with a caBundle that is no certificate")):
        rc, _, err = helm_template([path], sets)
        T.check(f"existingsecret: refused {what}", rc != 0 and "existingSecret" in err,
                err.strip())


@checks
def test_variants(helm):
    T.section("variants")
    r = render("one-replica", sets=["replicaCount=1"])
    if r:
        check_pdb(r, None)
        check_deployment(r, replicas=1, tls_secret=f"{RELEASE}-tls")

    args = [a for a in SERVE_ARGS if a not in ("--metrics-listen", "0.0.0.0:9090")]
    args.insert(args.index("--config"), "--metrics-listen=")
    r = render("no-metrics", sets=["metrics.enabled=false"])
    if r:
        check_probes(r, metrics=False)
        check_deployment(r, args=args, tls_secret=f"{RELEASE}-tls")
        _, c = webhook_container(r)
        T.check("no-metrics: no metrics container port",
                all(p["containerPort"] != 9090 for p in c.get("ports") or []))
        T.check("no-metrics: no metrics Service port",
                [p["port"] for p in r.one("Service")["spec"]["ports"]] == [443])
    rc, _, err = helm_template(sets=["metrics.enabled=false", "metrics.serviceMonitor.enabled=true"])
    T.check("no-metrics: ServiceMonitor refused without metrics", rc != 0, err.strip())

    r = render("ignore-policy", sets=["webhook.failurePolicy=Ignore", "webhook.timeoutSeconds=3",
                                      "webhook.excludeNamespaces={monitoring,batch}"])
    if r:
        check_webhook(r, failure="Ignore", timeout=3, extra_excluded=("monitoring", "batch"))
        T.equal("ignore-policy: the UPDATE webhooks keep their own failurePolicy (Fail)",
                [w["failurePolicy"] for w in r.one("ValidatingWebhookConfiguration")["webhooks"]],
                ["Fail", "Fail"])

    r = render("other-release", release="gpu", namespace="gpu-ops")
    if r:
        check_webhook(r, namespace="gpu-ops", fullname="gpu-vgpu-webhook")

    r = render("pdb-max-unavailable", sets=["podDisruptionBudget.minAvailable=null",
                                            "podDisruptionBudget.maxUnavailable=1"])
    if r:
        spec = r.one("PodDisruptionBudget")["spec"]
        T.check("pdb-max-unavailable: maxUnavailable form",
                spec.get("maxUnavailable") == 1 and "minAvailable" not in spec, spec)

    digest = "sha256:" + "ab" * 32
    r = render("image", sets=["image.repository=registry.example/vgpu-webhook",
                              "image.digest=" + digest], registry=False)
    if r:
        T.equal("image: a digest pins the image", webhook_container(r)[1]["image"],
                "registry.example/vgpu-webhook@" + digest)
    app = yaml.safe_load(open(os.path.join(CHART, "Chart.yaml")))["appVersion"]
    r = render("image-default")
    if r:
        T.equal("image-default: the registry, and the appVersion as tag",
                webhook_container(r)[1]["image"], f"{REGISTRY}/vgpu-webhook:{app}")
    r = render("image-global", sets=["global.imageRegistry=mirror.example:5000/",
                                     "global.imagePullSecrets[0]=mirror-pull",
                                     "imagePullSecrets[0].name=own-pull"])
    if r:
        dep, c = webhook_container(r)
        T.equal("image-global: global.imageRegistry wins over image.registry",
                c["image"], f"mirror.example:5000/vgpu-webhook:{app}")
        T.equal("image-global: global and own pull secrets, as pod references",
                dep["spec"]["template"]["spec"].get("imagePullSecrets"),
                [{"name": "mirror-pull"}, {"name": "own-pull"}])
        test_pod = [d for d in r.all("Pod")]
        T.check("image-global: the helm test pod pulls with the same secrets and image",
                test_pod and all(p["spec"].get("imagePullSecrets") ==
                                 [{"name": "mirror-pull"}, {"name": "own-pull"}] and
                                 p["spec"]["containers"][0]["image"] == c["image"]
                                 for p in test_pod), test_pod)
    # No registry: the image would be looked for on Docker Hub, where it is
    # not; the install stops and says what to do instead.
    rc, _, err = helm_template(registry=False)
    T.check("image-no-registry: refused at render, naming image.registry and make image",
            rc != 0 and "image.registry" in err and "make image" in err and
            "pullPolicy=Never" in err, err.strip())
    r = render("image-preloaded", sets=["image.pullPolicy=Never"], registry=False)
    if r:
        T.equal("image-preloaded: pullPolicy Never takes the bare name (kind load)",
                webhook_container(r)[1]["image"], f"vgpu-webhook:{app}")

    r = render("host-network", sets=["hostNetwork=true", "containerPort=10250"])
    if r:
        dep, c = webhook_container(r)
        pod = dep["spec"]["template"]["spec"]
        args = c["args"]
        T.check("host-network: hostNetwork, with ClusterFirstWithHostNet",
                pod.get("hostNetwork") is True and
                pod.get("dnsPolicy") == "ClusterFirstWithHostNet", pod)
        T.check("host-network: the server listens on containerPort, which the port names",
                args[args.index("--listen") + 1] == "0.0.0.0:10250" and
                {"name": "https", "containerPort": 10250, "protocol": "TCP"} in c["ports"],
                (args, c["ports"]))
        anti = pod["affinity"]["podAntiAffinity"]
        T.check("host-network: replicas required on distinct nodes (one port per node)",
                "requiredDuringSchedulingIgnoredDuringExecution" in anti and
                "preferredDuringSchedulingIgnoredDuringExecution" not in anti, anti)
        svc = r.one("Service")["spec"]["ports"]
        T.check("host-network: the Service still sends 443 to the https port",
                {"name": "https", "port": 443, "targetPort": "https", "protocol": "TCP"} in svc,
                svc)
    r = render("dns-policy", sets=["dnsPolicy=Default"])
    if r:
        pod = webhook_container(r)[0]["spec"]["template"]["spec"]
        T.check("dns-policy: set as given, no hostNetwork",
                pod.get("dnsPolicy") == "Default" and "hostNetwork" not in pod, pod)
    if default_r := render("names-default"):
        pod = webhook_container(default_r)[0]["spec"]["template"]["spec"]
        T.check("names-default: no hostNetwork, no dnsPolicy, port 9443",
                "hostNetwork" not in pod and "dnsPolicy" not in pod and
                pod["containers"][0]["ports"][0]["containerPort"] == 9443, pod)
    # Two releases of one name in two namespaces: the cluster-scoped objects
    # must not be the same objects.
    a = render("names-a", namespace="team-a")
    b = render("names-b", namespace="team-b")
    if a and b:
        cluster = ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")
        na = {(d["kind"], d["metadata"]["name"]) for d in a.docs if d["kind"] in cluster}
        nb = {(d["kind"], d["metadata"]["name"]) for d in b.docs if d["kind"] in cluster}
        T.check("names: the cluster-scoped objects of two releases of one name differ",
                len(na) == 2 and len(nb) == 2 and not na & nb, (na, nb))
        cluster += ("ClusterRole", "ClusterRoleBinding")  # of the job mode
        na = {(d["kind"], d["metadata"]["name"]) for d in a.docs if d["kind"] in cluster}
        nb = {(d["kind"], d["metadata"]["name"]) for d in b.docs if d["kind"] in cluster}
        # the lasting ClusterRole and its binding, the patch hook's binding,
        # the cleanup hook's ClusterRole and binding
        T.check("names: with the job mode's RBAC too, none the same",
                len(na) == 7 and len(nb) == 7 and not na & nb, (na, nb))
        scoped = {d["kind"] for d in a.docs if "namespace" not in d["metadata"]}
        T.check("names: no other cluster-scoped object", scoped <= set(cluster), scoped)

    r = render("client-auth", sets=["clientAuth.enabled=true", "clientAuth.caConfigMap=apiserver-ca"])
    if r:
        dep, c = webhook_container(r)
        args = c["args"]
        ca = args[args.index("--tls-client-ca-file") + 1] if "--tls-client-ca-file" in args else ""
        mounts = {m["mountPath"]: m["name"] for m in c["volumeMounts"]}
        vols = {v["name"]: v for v in dep["spec"]["template"]["spec"]["volumes"]}
        T.check("client-auth: --tls-client-ca-file names a file of the mounted ConfigMap",
                ca == "/client-ca/ca.crt" and
                vols.get(mounts.get("/client-ca"), {}).get("configMap", {}).get("name") == "apiserver-ca",
                (args, mounts))
    rc, _, err = helm_template(sets=["clientAuth.enabled=true"])
    T.check("client-auth: refused without a ConfigMap", rc != 0 and "caConfigMap" in err, err.strip())

    for sets in (["webhook.matchConditions.enabled=false"], ["metrics.enabled=false"],
                 ["replicaCount=1"], ["clientAuth.enabled=true", "clientAuth.caConfigMap=ca"]):
        p = subprocess.run([HELM, "lint", "--strict", CHART, "--namespace", NS, *REGISTRY_SET] +
                           [a for s_ in sets for a in ("--set", s_)],
                           capture_output=True, text=True, env=helm_env(),
                           stdin=subprocess.DEVNULL, timeout=120)
        T.check(f"helm lint --strict --set {' --set '.join(sets)}", p.returncode == 0,
                (p.stdout + p.stderr).strip())

    roll = ["rollOnConfigChange=true"]
    base = helm_template(sets=roll)
    same = helm_template(sets=roll + ["replicaCount=3"])
    changed = helm_template(sets=roll + ["config.schedulerName=other-scheduler"])

    def checksum(res):
        for d in yaml.safe_load_all(res[1]):
            if d and d["kind"] == "Deployment":
                return d["spec"]["template"]["metadata"]["annotations"]["checksum/config"]
        return None

    T.check("checksum/config: unchanged when the policy is unchanged",
            checksum(base) is not None and checksum(base) == checksum(same))
    T.check("checksum/config: changes with the policy (pods roll)",
            checksum(changed) is not None and checksum(base) != checksum(changed))

    for sets, what in ((["webhook.failurePolicy=Sometimes"], "failurePolicy Sometimes"),
                       (["webhook.timeoutSeconds=31"], "timeoutSeconds 31"),
                       (["config.unknownKey=1"], "an unknown config key"),
                       (["config.privilegedPolicy=allow"], "privilegedPolicy allow"),
                       (["certificates.mode=none"], "certificate mode none")):
        rc, _, err = helm_template(sets=sets)
        T.check(f"schema: refused {what}", rc != 0, err.strip())


def mutate_condition(r):
    """The expression of the mutating webhook's matchCondition, or None."""
    mc = r.one("MutatingWebhookConfiguration")["webhooks"][0].get("matchConditions") or []
    T.check(f"{r.name}: at most one matchCondition on the mutating webhook", len(mc) <= 1, mc)
    if mc:
        T.check(f"{r.name}: the condition's name is a qualified name",
                re.fullmatch(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?", mc[0]["name"])
                is not None, mc[0]["name"])
    return mc[0]["expression"] if mc else None


POD_GVK = {"group": "", "version": "v1", "kind": "Pod"}
POD_GVR = {"group": "", "version": "v1", "resource": "pods"}


def create_vars(obj):
    """The CEL variables of a pod CREATE as the API server binds them:
    `request` leaves out what is empty (subResource, as its JSON does)."""
    return {"object": obj, "oldObject": None,
            "request": {"kind": POD_GVK, "resource": POD_GVR, "requestKind": POD_GVK,
                        "requestResource": POD_GVR, "name": "", "namespace": "ml",
                        "operation": "CREATE", "userInfo": {"username": "alice"}}}


def ephemeral_vars(obj, added):
    """The CEL variables of an UPDATE of pods/ephemeralcontainers that adds
    the containers `added` to the pod obj (Kubernetes 1.22 and later send the
    Pod)."""
    new = copy.deepcopy(obj)
    new["spec"]["ephemeralContainers"] = list(added)
    v = create_vars(new)
    v["oldObject"] = obj
    v["request"].update(operation="UPDATE", subResource="ephemeralcontainers",
                        requestSubResource="ephemeralcontainers", name="p")
    return v


def check_cel(tag, expression, cases):
    """cases: (what, CEL variables, wanted result); each result must be
    exactly true or false (an error counts as neither)."""
    got = cel_eval_bindings(expression, [c[1] for c in cases])
    if got is None:
        T.cannot(f"{tag}: CEL on sample requests: no {CEL_JS}/lib/index.js "
                 f"(make chart-tools) or no {NODE}")
        return
    for (what, _, want), result in zip(cases, got):
        T.check(f"{tag}: CEL on {what} is {str(want).lower()}", result is want,
                f"got {result!r}")


def env_pod(name, value="x", init=False):
    c = ctr("a", env=[{"name": name, "value": value}])
    return pod([ctr("m")], [c]) if init else pod([c])


def annotated_pod(ann):
    p = pod([ctr("a", {"cpu": "1"})])
    p["metadata"]["annotations"] = dict(ann)
    return p


def labelled_pod(labels):
    p = pod([ctr("a", {"cpu": "1"})])
    p["metadata"]["labels"] = dict(labels)
    return p


def mounted_pod(path, init=False):
    c = ctr("a", volumeMounts=[{"name": "v", "mountPath": path}])
    p = pod([ctr("m")], [c]) if init else pod([c])
    p["spec"]["volumes"] = [{"name": "v", "hostPath": {"path": "/var/run/nvidia-container-devices"}}]
    return p


@checks
def test_match_conditions(helm):
    """The mutating webhook's matchConditions, on by default from Kubernetes
    1.28: built from the families' resource names and the union of every
    guard (top level, every profile, the built-in values the config leaves
    out), and evaluated on sample requests."""
    T.section("matchConditions")
    r = render("match-conditions", kube="1.30.0")
    if not r:
        return
    expr = mutate_condition(r)
    if not T.check("match-conditions: on by default from Kubernetes 1.28", expr is not None):
        return
    names = [BUILTIN_CONFIG["devices"][0][k] for k in
             ("resourceCountName", "resourceMemoryName", "resourceMemoryPercentageName",
              "resourceCoreName", "resourcePriorityName")]
    T.check("match-conditions: expression names every family resource",
            all(f'"{n}"' in expr for n in names), expr)
    cpu = pod([ctr("a", {"cpu": "1"})])
    gpu = pod([ctr("a", {"nvidia.com/gpu": "1"})])
    cases = [
        ("GPU limit", pod([ctr("a", {"nvidia.com/gpu": "1"}, {"nvidia.com/gpu": "1"})]), True),
        ("memory request only", pod([ctr("a", None, {"nvidia.com/gpumem": "3k"})]), True),
        ("cores in the second container", pod([ctr("a", {"cpu": "1"}),
                                               ctr("b", {"nvidia.com/gpucores": "30"})]), True),
        ("percentage in an init container", pod([ctr("a", {"cpu": "1"})],
                                                [ctr("i", {"nvidia.com/gpumem-percentage": "50"})]), True),
        ("priority only", pod([ctr("a", {"nvidia.com/priority": "1"})]), True),
        ("CPU-only pod", pod([ctr("a", {"cpu": "1", "memory": "1Gi"}, {"cpu": "1"})]), False),
        ("empty resources", pod([ctr("a")]), False),
        ("no resources field", pod([{"name": "a", "image": "busybox"}]), False),
        ("CPU-only init container", pod([ctr("a")], [ctr("i", {"cpu": "1"})]), False),
        ("another vendor's GPU", pod([ctr("a", {"amd.com/gpu": "1"})]), False),
        ("CPU pod with NVIDIA_VISIBLE_DEVICES=all", env_pod("NVIDIA_VISIBLE_DEVICES", "all"), True),
        ("CPU pod with CUDA_DEVICE_MEMORY_LIMIT_0 in an init container",
         env_pod("CUDA_DEVICE_MEMORY_LIMIT_0", "1g", init=True), True),
        ("CPU pod with CUDA_REDIRECT", env_pod("CUDA_REDIRECT"), True),
        ("CPU pod with RECORD_KERNEL_INTERVAL", env_pod("RECORD_KERNEL_INTERVAL", "1"), True),
        ("CPU pod with other env", env_pod("PORT", "80"), False),
        ("CPU pod with hami.io/vgpu-node", annotated_pod({"hami.io/vgpu-node": "n"}), True),
        ("CPU pod with hami.io/vgpu-devices-allocated",
         annotated_pod({"hami.io/vgpu-devices-allocated": "x"}), True),
        ("CPU pod with other annotations", annotated_pod({"prometheus.io/scrape": "true"}), False),
        ("CPU pod with a resource written as an annotation (resourceAnnotationPolicy warn)",
         annotated_pod({"nvidia.com/gpumem": "4000"}), True),
        ("CPU pod with a resource written as a label",
         labelled_pod({"nvidia.com/gpu": "1"}), True),
        ("CPU pod with other labels", labelled_pod({"app": "web"}), False),
        ("only a volume mount at /var/run/nvidia-container-devices",
         mounted_pod("/var/run/nvidia-container-devices"), True),
        ("only a volume mount below it, in an init container",
         mounted_pod("/var/run/nvidia-container-devices/GPU-0", init=True), True),
        ("only a volume mount spelled //var/run//nvidia-container-devices/",
         mounted_pod("//var/run//nvidia-container-devices/"), True),
        ("only another volume mount", mounted_pod("/data"), False),
        ("a pod whose spec lists an ephemeral container with a guarded env",
         pod([ctr("a")], ephemeralContainers=[ctr("d", env=[{"name": "CUDA_DISABLE_CONTROL",
                                                              "value": "true"}])]), True),
    ]
    cases = [(w, create_vars(o), want) for w, o, want in cases]
    cases += [
        ("an ephemeral container added to a CPU pod (pods/ephemeralcontainers)",
         ephemeral_vars(cpu, [ctr("debug")]), True),
        ("a privileged ephemeral container added to a GPU pod",
         ephemeral_vars(gpu, [ctr("debug", securityContext={"privileged": True})]), True),
    ]
    check_cel("match-conditions", expr, cases)

    r = render("match-conditions-resource-keys-off", kube="1.30.0",
               sets=["config.resourceAnnotationPolicy=off"])
    if r:
        check_cel("match-conditions-resource-keys-off", mutate_condition(r) or "false", [
            ("resourceAnnotationPolicy off: a CPU pod with a resource annotation is not sent",
             create_vars(annotated_pod({"nvidia.com/gpumem": "4000"})), False),
            ("resourceAnnotationPolicy off: nor with a resource label",
             create_vars(labelled_pod({"nvidia.com/gpu": "1"})), False)])

    r = render("match-conditions-family",
               sets=["config.devices[0].name=mlu",
                     "config.devices[0].resourceCountName=cambricon.com/vmlu",
                     "config.devices[0].resourceMemoryName=cambricon.com/mlu.smlu.vmemory",
                     "config.devices[0].defaultGPUNum=1",
                     "config.devices[0].defaultMemory=0",
                     "config.devices[0].defaultCores=0",
                     "config.devices[0].tolerations[0].key=cambricon.com/mlu",
                     "config.devices[0].tolerations[0].operator=Exists"])
    if r:
        check_cel("match-conditions-family", mutate_condition(r) or "false", [
            ("the family's count", create_vars(pod([ctr("a", {"cambricon.com/vmlu": "1"})])), True),
            ("nvidia.com/gpu, not a configured family",
             create_vars(pod([ctr("a", {"nvidia.com/gpu": "1"})])), False)])

    with tempfile.TemporaryDirectory() as d:
        # A pod that only a profile's guard refuses is sent too.
        vf = os.path.join(d, "profiles.yaml")
        write(vf, yaml.safe_dump({"config": {
            "guards": {"env": {"policy": "off"}},
            "profiles": [
                {"name": "lab", "namespaces": ["lab"], "guards": {
                    "schedulerAnnotations": {"keys": ["lab.example.com/node"]},
                    "env": {"policy": "deny", "names": ["LAB_GPU_*"]},
                    "volumeMounts": {"policy": "warn", "paths": ["/opt/lab-devices/"]}}},
                {"name": "strict", "namespaces": ["strict"],
                 "guards": {"env": {"policy": "deny"}}},
                {"name": "loose", "namespaces": ["loose"],
                 "guards": {"volumeMounts": {"policy": "off"}}}]}}))
        r = render("match-conditions-profiles", [vf], kube="1.30.0")
        expr = mutate_condition(r) if r else None
        if expr:
            check_cel("match-conditions-profiles", expr, [(w, create_vars(o), want) for w, o, want in [
                ("a pod that only profile lab's env guard refuses (LAB_GPU_0)",
                 env_pod("LAB_GPU_0"), True),
                ("a pod that only profile lab's annotation guard refuses",
                 annotated_pod({"lab.example.com/node": "n"}), True),
                ("the top level's keys, kept by profile lab's guard that names other keys",
                 annotated_pod({"hami.io/vgpu-node": "n"}), True),
                ("a mount that only profile lab's mount guard warns about",
                 mounted_pod("/opt/lab-devices/0"), True),
                ("NVIDIA_VISIBLE_DEVICES, guarded only by profile strict (top level off, "
                 "the top level's names)", env_pod("NVIDIA_VISIBLE_DEVICES", "all"), True),
                ("the built-in mount path, off only in profile loose",
                 mounted_pod("/var/run/nvidia-container-devices"), True),
                ("other env", env_pod("LAB", "1"), False)]])
        write(vf, yaml.safe_dump({"config": {"guards": {"env": {"policy": "off"}}}}))
        r = render("match-conditions-env-off", [vf], kube="1.30.0")
        expr = mutate_condition(r) if r else None
        if expr:
            T.check("match-conditions-env-off: env names not in the expression",
                    "NVIDIA_VISIBLE_DEVICES" not in expr and "hami.io/vgpu-node" in expr, expr)
            check_cel("match-conditions-env-off", expr, [
                ("NVIDIA_VISIBLE_DEVICES=all with every env guard off",
                 create_vars(env_pod("NVIDIA_VISIBLE_DEVICES", "all")), False)])

        # Keys the values leave out are the binary's built-in values: left
        # out of config.json, covered by the condition all the same.
        write(vf, "config:\n  guards:\n    env:\n      names: null\n"
                  "    volumeMounts:\n      paths: null\n")
        r = render("match-conditions-builtin", [vf], kube="1.30.0")
        expr = mutate_condition(r) if r else None
        if expr:
            T.check("match-conditions-builtin: config.json leaves env.names to the binary",
                    "names" not in config_of(r)["guards"]["env"], config_of(r)["guards"])
            T.check("match-conditions-builtin: config.json leaves volumeMounts.paths to the binary",
                    "paths" not in config_of(r)["guards"].get("volumeMounts", {}),
                    config_of(r)["guards"])
            check_cel("match-conditions-builtin", expr, [
                (f"env {n} (built-in)", create_vars(env_pod(n)), True)
                for n in BUILTIN_CONFIG["guards"]["env"]["names"]] + [
                (f"a mount at {p} (built-in)", create_vars(mounted_pod(p + "/x")), True)
                for p in BUILTIN_MOUNT_PATHS])
        r = render("match-conditions-mounts", kube="1.30.0",
                   sets=["config.guards.volumeMounts.policy=deny",
                         "config.guards.volumeMounts.paths[0]=/dev/vendor-gpus"])
        expr = mutate_condition(r) if r else None
        if expr:
            T.equal("match-conditions-mounts: config.json has the values' mount guard",
                    config_of(r)["guards"].get("volumeMounts"),
                    {"policy": "deny", "paths": ["/dev/vendor-gpus"]})
            check_cel("match-conditions-mounts", expr, [
                ("a mount below the given path", create_vars(mounted_pod("/dev/vendor-gpus/0")), True),
                ("a mount at the built-in path the values replaced",
                 create_vars(mounted_pod("/var/run/nvidia-container-devices")), False)])
        r = render("match-conditions-mounts-off", kube="1.30.0",
                   sets=["config.guards.volumeMounts.policy=off"])
        expr = mutate_condition(r) if r else None
        if expr:
            T.check("match-conditions-mounts-off: no mount term", "mountPath" not in expr, expr)

        # Patterns that start with `*`: a superset test, no refusal.
        r = render("match-conditions-star", kube="1.30.0",
                   sets=["config.guards.schedulerAnnotations.keys[0]=*-node",
                         "config.guards.env.names[0]=*_LIMIT_*", "config.guards.env.names[1]=**"])
        expr = mutate_condition(r) if r else None
        if expr:
            check_cel("match-conditions-star", expr, [
                ("annotation x.io/gpu-node (key *-node)",
                 create_vars(annotated_pod({"x.io/gpu-node": "n"})), True),
                ("any env (name **)", create_vars(env_pod("PORT", "80")), True)])
        r = render("match-conditions-star-one", kube="1.30.0",
                   sets=["config.guards.schedulerAnnotations.keys[0]=*-node",
                         "config.guards.env.names[0]=*_LIMIT_*"])
        expr = mutate_condition(r) if r else None
        if expr:
            check_cel("match-conditions-star-one", expr, [
                ("env X_LIMIT_0 (name *_LIMIT_*)", create_vars(env_pod("X_LIMIT_0")), True),
                ("env PORT", create_vars(env_pod("PORT", "80")), False)])

        # overwriteEnv: every pod must reach the mutating webhook.
        devices = copy.deepcopy(BUILTIN_CONFIG["devices"])
        second = copy.deepcopy(devices[0])
        second.update({"name": "other", "resourceCountName": "example.com/vgpu",
                       "resourceMemoryName": "example.com/vgpu-memory",
                       "resourceMemoryPercentageName": "", "resourceCoreName": "",
                       "resourcePriorityName": "", "overwriteEnv": True})
        write(vf, yaml.safe_dump({"config": {"devices": devices + [second]}}))
        r = render("overwrite-env", [vf], kube="1.30.0")
        if r:
            T.equal("overwrite-env: overwriteEnv in a second family: no matchConditions on "
                    "the mutating webhook", mutate_condition(r), None)
            T.check("overwrite-env: the UPDATE webhook keeps its own",
                    all(w.get("matchConditions") for w in
                        r.one("ValidatingWebhookConfiguration")["webhooks"]))
            text = notes_text([vf], kube="1.30.0")
            T.check("overwrite-env: NOTES says every pod CREATE is sent, and why",
                    "every pod CREATE" in text and "overwriteEnv is on" in text, text[-900:])

    r = render("match-conditions-off", sets=["webhook.matchConditions.enabled=false"],
               kube="1.30.0")
    if r:
        T.equal("match-conditions-off: none on the mutating webhook", mutate_condition(r), None)
        T.check("match-conditions-off: the UPDATE webhooks keep theirs",
                all(w.get("matchConditions") for w in
                    r.one("ValidatingWebhookConfiguration")["webhooks"]))
    r = render("match-conditions-1.27", kube="1.27.0")
    if r:
        T.equal("match-conditions-1.27: left out before Kubernetes 1.28 (no refusal)",
                mutate_condition(r), None)
        text = notes_text(kube="1.27.0")
        T.check("match-conditions-1.27: NOTES says every pod CREATE is sent, and why",
                "every pod CREATE" in text and "v1.27.0" in text and
                "has no matchConditions" in text and "waits for the webhook" in text,
                text[-900:])
        T.check("match-conditions-1.27: NOTES says pods/status and Bindings are left to "
                "RBAC", "pods/status and Bindings are not sent" in text, text[-900:])
    text = notes_text(kube="1.30.0")
    T.check("match-conditions: NOTES says which pods are sent",
            "only pods that name a resource of a device family" in text, text[-900:])


def notes_text(files=(), sets=(), kube=None):
    """NOTES.txt as helm renders it for this Kubernetes version (helm
    install --dry-run has no --kube-version): a copy of the chart renders it
    through tpl into a ConfigMap under helm template.  "" on failure."""
    with tempfile.TemporaryDirectory() as d:
        chart = os.path.join(d, "vgpu-webhook")
        shutil.copytree(CHART, chart)
        os.makedirs(os.path.join(chart, "files"), exist_ok=True)
        shutil.copy(os.path.join(chart, "templates", "NOTES.txt"),
                    os.path.join(chart, "files", "notes-copy.txt"))
        write(os.path.join(chart, "templates", "zz-notes.yaml"),
              "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: notes\ndata:\n"
              "  notes: {{ tpl (.Files.Get \"files/notes-copy.txt\") . | toJson }}\n")
        rc, out, err = helm_template(files, sets, kube=kube, chart=chart,
                                     extra=["--show-only", "templates/zz-notes.yaml"])
        if not T.check(f"NOTES for Kubernetes {kube}: rendered", rc == 0, err.strip()):
            return ""
        return yaml.safe_load(out)["data"]["notes"]


def vwc_of(r):
    """The ValidatingWebhookConfiguration's webhooks by name, or None."""
    items = r.all("ValidatingWebhookConfiguration")
    if not items:
        return None
    T.equal(f"{r.name}: one ValidatingWebhookConfiguration", len(items), 1)
    return {w["name"]: w for w in items[0]["webhooks"]}


UPDATES = "pod-updates.vgpu-webhook.hami.io"
BINDINGS = "pod-bindings.vgpu-webhook.hami.io"


def update_binding(old_ann, new_ann, sub=""):
    """The CEL variables of a pod UPDATE whose annotations go from old_ann
    to new_ann (None: no annotations map); sub "status" for pods/status,
    with a status change besides."""
    def p(ann, phase):
        o = pod([ctr("a", {"nvidia.com/gpu": "1"})])
        o["status"] = {"phase": phase}
        if ann is not None:
            o["metadata"]["annotations"] = dict(ann)
        return o
    v = create_vars(p(new_ann, "Running" if sub == "status" else "Pending"))
    v["oldObject"] = p(old_ann, "Pending")
    v["request"].update(operation="UPDATE", name="p")
    if sub:
        v["request"].update(subResource=sub, requestSubResource=sub)
    return v


def binding_vars(ann, legacy=False):
    """The CEL variables of a CREATE of pods/binding (legacy: of the older
    bindings resource): the object is a Binding, with the annotations ann
    (None: none)."""
    b = {"apiVersion": "v1", "kind": "Binding",
         "metadata": {"name": "p", "namespace": "ml", "uid": "0f6b5c1e"},
         "target": {"apiVersion": "v1", "kind": "Node", "name": "gpu-node-1"}}
    if ann is not None:
        b["metadata"]["annotations"] = dict(ann)
    gvk = {"group": "", "version": "v1", "kind": "Binding"}
    req = {"kind": gvk, "requestKind": gvk, "resource": POD_GVR, "requestResource": POD_GVR,
           "subResource": "binding", "requestSubResource": "binding", "name": "p",
           "namespace": "ml", "operation": "CREATE",
           "userInfo": {"username": "system:kube-scheduler"}}
    if legacy:
        gvr = {"group": "", "version": "v1", "resource": "bindings"}
        req.update(resource=gvr, requestResource=gvr)
        del req["subResource"], req["requestSubResource"]
    return {"object": b, "oldObject": None, "request": req}


def cel_eval_bindings(expression, bindings):
    if not os.path.isfile(os.path.join(CEL_JS, "lib", "index.js")) or not shutil.which(NODE):
        return None
    p = subprocess.run([NODE, os.path.join(os.path.dirname(__file__), "cel_eval.mjs"), CEL_JS],
                       input=json.dumps({"expression": expression, "bindings": bindings}),
                       capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        return [{"error": p.stderr.strip()}] * len(bindings)
    return json.loads(p.stdout)


@checks
def test_guards(helm):
    """The guards in the chart: config.json, the UPDATE webhooks (pods,
    pods/status, pods/binding) and their matchConditions, the writers from
    HAMi's names and the pod opt-out label."""
    T.section("guards")
    r = render("guards-1.30", kube="1.30.0")
    if not r:
        return
    mwh = r.one("MutatingWebhookConfiguration")["webhooks"][0]
    hooks = vwc_of(r)
    if not T.check("guards-1.30: a ValidatingWebhookConfiguration by default", hooks is not None):
        return
    T.equal("guards-1.30: its webhooks", sorted(hooks), sorted([UPDATES, BINDINGS]))
    wh, bh = hooks.get(UPDATES), hooks.get(BINDINGS)
    if not (wh and bh):
        return
    T.equal("guards-1.30: UPDATE of pods and pods/status", wh["rules"], [{
        "apiGroups": [""], "apiVersions": ["v1"], "operations": ["UPDATE"],
        "resources": ["pods", "pods/status"], "scope": "Namespaced"}])
    T.equal("guards-1.30: CREATE of Bindings (pods/binding, and the older bindings)",
            bh["rules"], [{
                "apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                "resources": ["bindings", "pods/binding"], "scope": "Namespaced"}])
    for tag, h in (("updates", wh), ("bindings", bh)):
        T.equal(f"guards-1.30: {tag}: failurePolicy Fail and timeout 5 by default",
                (h["failurePolicy"], h["timeoutSeconds"]), ("Fail", 5))
        T.equal(f"guards-1.30: {tag}: sideEffects None", h["sideEffects"], "None")
        T.equal(f"guards-1.30: {tag}: path /validate of the same Service",
                (h["clientConfig"]["service"]["path"], h["clientConfig"]["service"]["name"],
                 h["clientConfig"]["service"]["port"]), ("/validate", RELEASE, 443))
        T.equal(f"guards-1.30: {tag}: the same caBundle as the mutating webhook",
                h["clientConfig"].get("caBundle"), mwh["clientConfig"].get("caBundle"))
        T.equal(f"guards-1.30: {tag}: the same namespaceSelector as the mutating webhook",
                h["namespaceSelector"], mwh["namespaceSelector"])
        for ns in ("kube-system", NS, "gpu-operator"):
            T.check(f"guards-1.30: {tag}: namespace {ns} is not sent",
                    not selector_matches(h["namespaceSelector"], ns_labels(ns)))
        T.equal(f"guards-1.30: {tag}: one matchCondition", len(h.get("matchConditions") or []), 1)
    T.equal("guards-1.30: updates: the same objectSelector as the mutating webhook",
            wh["objectSelector"], mwh["objectSelector"])
    T.equal("guards-1.30: bindings: no objectSelector (a Binding has no labels)",
            bh["objectSelector"], {})
    node, alloc = "hami.io/vgpu-node", "hami.io/vgpu-devices-to-allocate"
    if wh.get("matchConditions"):
        check_cel("guards-1.30: UPDATE", wh["matchConditions"][0]["expression"], [
            ("a guarded key added", update_binding(None, {node: "n1"}), True),
            ("a guarded key added to other annotations",
             update_binding({"team": "a"}, {"team": "a", alloc: "x"}), True),
            ("a guarded key changed", update_binding({node: "n1"}, {node: "n2"}), True),
            ("a guarded key removed", update_binding({node: "n1", "team": "a"}, {"team": "a"}),
             True),
            ("a *-allocated key added",
             update_binding({}, {"hami.io/vgpu-devices-allocated": "x"}), True),
            ("only another annotation changed",
             update_binding({node: "n1", "team": "a"}, {node: "n1", "team": "b"}), False),
            ("no annotations on either side", update_binding(None, None), False),
            ("labels-only update (same annotations)", update_binding({node: "n"}, {node: "n"}),
             False),
            ("a kubelet status update (pods/status, annotations unchanged)",
             update_binding({node: "n1"}, {node: "n1"}, "status"), False),
            ("a status update without annotations", update_binding(None, None, "status"), False),
            ("a status update that adds a guarded key",
             update_binding(None, {node: "n1"}, "status"), True),
            ("a status update that changes a guarded key",
             update_binding({alloc: "a"}, {alloc: "b"}, "status"), True),
        ])
    if bh.get("matchConditions"):
        check_cel("guards-1.30: binding", bh["matchConditions"][0]["expression"], [
            ("a Binding without annotations (the schedulers')", binding_vars(None), False),
            ("a Binding with other annotations", binding_vars({"team": "a"}), False),
            ("a Binding with hami.io/vgpu-node", binding_vars({node: "n1"}), True),
            ("a Binding with a *-devices-to-allocate key", binding_vars({alloc: "x"}), True),
            ("a Binding of the older bindings resource with hami.io/vgpu-node",
             binding_vars({node: "n1"}, legacy=True), True),
            ("a Binding of the older bindings resource without annotations",
             binding_vars(None, legacy=True), False),
        ])

    r = render("guards-1.27", kube="1.27.0")
    if r:
        hooks = vwc_of(r) or {}
        wh = hooks.get(UPDATES)
        T.equal("guards-1.27: only the pod UPDATE webhook before 1.28 (no pods/binding)",
                sorted(hooks), [UPDATES])
        T.check("guards-1.27: pods only, no pods/status, no matchConditions (every pod UPDATE "
                "is sent)", wh is not None and "matchConditions" not in wh and
                wh["rules"][0]["resources"] == ["pods"], wh)
    r = render("guards-off", sets=["config.guards.schedulerAnnotations.policy=off",
                                   "config.guards.env.policy=off"], kube="1.30.0")
    if r:
        T.check("guards-off: no ValidatingWebhookConfiguration with both guards off",
                not r.all("ValidatingWebhookConfiguration"))
    r = render("guards-env-only", sets=["config.guards.schedulerAnnotations.policy=off"],
               kube="1.30.0")
    if r:
        T.check("guards-env-only: no ValidatingWebhookConfiguration without the annotation "
                "guard (ephemeral containers go to the mutating webhook)",
                not r.all("ValidatingWebhookConfiguration"))
        T.check("guards-env-only: the mutating webhook gets pods/ephemeralcontainers",
                ["pods/ephemeralcontainers"] in
                [x["resources"] for x in r.one("MutatingWebhookConfiguration")["webhooks"][0]["rules"]])
    with tempfile.TemporaryDirectory() as d:
        vf = os.path.join(d, "profile-annotations.yaml")
        write(vf, yaml.safe_dump({"config": {
            "guards": {"schedulerAnnotations": {"policy": "off"}},
            "profiles": [{"name": "lab", "namespaces": ["lab"],
                          "guards": {"schedulerAnnotations": {"policy": "deny",
                                                              "keys": ["lab.example.com/*"]}}}]}}))
        r = render("guards-profile-only", [vf], kube="1.30.0")
        if r:
            hooks = vwc_of(r) or {}
            T.equal("guards-profile-only: a profile's annotation guard renders the UPDATE "
                    "webhooks", sorted(hooks), sorted([UPDATES, BINDINGS]))
            if UPDATES in hooks:
                check_cel("guards-profile-only: UPDATE",
                          hooks[UPDATES]["matchConditions"][0]["expression"], [
                              ("the profile's key added",
                               update_binding(None, {"lab.example.com/node": "n"}), True),
                              ("the top level's key (off everywhere) added",
                               update_binding(None, {"hami.io/vgpu-node": "n"}), False)])
    r = render("guards-star-key", sets=["config.guards.schedulerAnnotations.keys[0]=*-node"],
               kube="1.30.0")
    if r:
        hooks = vwc_of(r) or {}
        T.equal("guards-star-key: the key is in config.json",
                config_of(r)["guards"]["schedulerAnnotations"]["keys"], ["*-node"])
        if T.check("guards-star-key: a key starting with * keeps the matchConditions",
                   bool(hooks.get(UPDATES, {}).get("matchConditions")) and
                   bool(hooks.get(BINDINGS, {}).get("matchConditions"))):
            check_cel("guards-star-key: UPDATE",
                      hooks[UPDATES]["matchConditions"][0]["expression"], [
                          ("example.com/gpu-node added",
                           update_binding(None, {"example.com/gpu-node": "n"}), True),
                          ("team changed", update_binding({"team": "a"}, {"team": "b"}), False)])
            check_cel("guards-star-key: binding",
                      hooks[BINDINGS]["matchConditions"][0]["expression"], [
                          ("a Binding with example.com/gpu-node",
                           binding_vars({"example.com/gpu-node": "n"}), True)])
    rc, _, err = helm_template(sets=["config.guards.schedulerAnnotations.writers[0]="
                                     "group:system:authenticated"])
    T.check("guards: schema allows any writer string (the binary refuses the group)",
            rc == 0, err.strip())

    # Writers derived from HAMi's namespace and release name.
    r = render("guards-hami-names", sets=["hami.namespace=hami-system",
                                          "hami.releaseName=vgpu"])
    if r:
        T.equal("guards-hami-names: writers are HAMi's service accounts",
                config_of(r)["guards"]["schedulerAnnotations"]["writers"],
                ["system:serviceaccount:hami-system:vgpu-scheduler",
                 "system:serviceaccount:hami-system:vgpu-device-plugin"])
        wh = r.one("MutatingWebhookConfiguration")["webhooks"][0]
        T.check("guards-hami-names: HAMi's namespace is not sent",
                not selector_matches(wh["namespaceSelector"], ns_labels("hami-system")))
    r = render("guards-writers", sets=["config.guards.schedulerAnnotations.writers[0]=bob"])
    if r:
        T.equal("guards-writers: given writers are kept",
                config_of(r)["guards"]["schedulerAnnotations"]["writers"], ["bob"])
    r = render("guards-update-policy", sets=["webhook.update.failurePolicy=Ignore",
                                             "webhook.update.timeoutSeconds=2"])
    if r:
        T.equal("guards-update-policy: failurePolicy and timeout of the UPDATE webhooks",
                [(w["failurePolicy"], w["timeoutSeconds"])
                 for w in (vwc_of(r) or {}).values()], [("Ignore", 2)] * 2)
        T.equal("guards-update-policy: the mutating webhook keeps its own",
                r.one("MutatingWebhookConfiguration")["webhooks"][0]["failurePolicy"], "Fail")
    r = render("guards-pod-opt-out", sets=["webhook.podOptOut.enabled=true"])
    if r:
        for kind, w in (("MutatingWebhookConfiguration",
                         r.one("MutatingWebhookConfiguration")["webhooks"][0]),
                        ("ValidatingWebhookConfiguration", (vwc_of(r) or {}).get(UPDATES, {}))):
            osel = w.get("objectSelector") or {}
            T.check(f"guards-pod-opt-out: {kind} skips pods labelled hami.io/webhook=ignore",
                    not selector_matches(osel, {"hami.io/webhook": "ignore"}) and
                    selector_matches(osel, {"app": "a"}))

    # The full config: every guard key given.
    r = render("guards-full-config", [ci_values("full-config")], kube="1.30.0")
    if r:
        wh = (vwc_of(r) or {}).get(UPDATES)
        T.equal("guards-full-config: UPDATE webhook failurePolicy and timeout",
                wh and (wh["failurePolicy"], wh["timeoutSeconds"]), ("Ignore", 3))
        T.check("guards-full-config: UPDATE matchCondition tests the configured keys",
                bool(wh) and 'k.startsWith("hami.io/vgpu-devices-")' in
                wh["matchConditions"][0]["expression"])


@checks
def test_full_config(full_render):
    T.section("full-config (every key non-default)")
    path = ci_values("full-config")
    values = load_values(path)
    r = full_render
    if not r:
        return
    check_webhook(r, failure="Ignore", timeout=5, extra_excluded=("monitoring", "hami-system"),
                  pod_opt_out=True,
                  served_labels={"gpu.example/tenant": "a"})
    wh = r.one("MutatingWebhookConfiguration")["webhooks"][0]
    T.check("full-config: extra objectSelector expression applies",
            not selector_matches(wh["objectSelector"], {"app.kubernetes.io/component": "vgpu-webhook"}))
    nsel = wh["namespaceSelector"]
    T.check("full-config: extra namespaceSelector expression applies",
            selector_matches(nsel, ns_labels("ml", {"gpu.example/tenant": "a"})) and
            not selector_matches(nsel, ns_labels("ml")) and
            not selector_matches(nsel, ns_labels(NS, {"gpu.example/tenant": "a"})))
    cfg = config_of(r)
    T.equal("full-config: config.json is the values' config", cfg, values["config"])
    for key in BUILTIN_CONFIG:
        # hamiDeviceConfig names a file the pod must have: test_hami_device_config.
        # allocation stays hami, whose writes the pod below checks; the
        # inference profile sets dra.
        if key in ("devices", "hamiDeviceConfig", "allocation"):
            continue
        T.check(f"full-config: {key} differs from the default",
                cfg[key] != BUILTIN_CONFIG[key])
    dev0 = BUILTIN_CONFIG["devices"][0]
    T.check("full-config: every device key set, each differing from the default",
            all(set(d) == set(dev0) for d in cfg["devices"]) and
            all(cfg["devices"][0][k] != dev0[k] for k in dev0 if k != "name"),
            [k for k in dev0 if cfg["devices"][0].get(k) == dev0[k]])
    args = list(SERVE_ARGS)
    args[args.index("json")] = "text"
    args += ["-v", "2"]
    check_deployment(r, replicas=3, args=args, tls_secret=f"{RELEASE}-tls", roll=True)
    check_pdb(r, 2)
    check_security(r)
    T.equal("full-config: priorityClassName",
            r.one("Deployment")["spec"]["template"]["spec"].get("priorityClassName"),
            "system-cluster-critical")
    sms = r.all("ServiceMonitor")
    if T.equal("full-config: one ServiceMonitor", len(sms), 1):
        svc = r.one("Service")
        sm = sms[0]
        T.check("full-config: ServiceMonitor selects the Service's metrics port",
                selector_matches(sm["spec"]["selector"], svc["metadata"]["labels"]) and
                sm["spec"]["endpoints"][0]["port"] in [p["name"] for p in svc["spec"]["ports"]])
        T.equal("full-config: ServiceMonitor labels", sm["metadata"]["labels"].get("release"),
                "prometheus")
    data = tls_secret_data(r, f"{RELEASE}-tls")
    if data:
        rc, out, _ = openssl("x509", "-noout", "-ext", "subjectAltName", data=data["tls.crt"])
        T.check("full-config: serving certificate uses the cluster domain",
                f"{RELEASE}.{NS}.svc.cluster.example".encode() in out, out.decode())


@checks
def test_binary(default_render, full_render):
    T.section("rendered config.json fed to the binary")
    default, full = default_render, full_render
    if not os.access(BIN, os.X_OK):
        T.cannot(f"no {BIN} (make build)")
        return
    with tempfile.TemporaryDirectory() as d:
        if default:
            cfg = os.path.join(d, "default.json")
            write(cfg, default.one("ConfigMap")["data"]["config.json"])
            rev = review(pod([ctr("cuda", {"nvidia.com/gpu": "1"}, {"nvidia.com/gpu": "1"}),
                              ctr("side")]))
            rc, resp, err = run_review(cfg, rev)
            if T.check("default config: review accepted (exit 0)", rc == 0 and resp, err.strip()):
                res = resp["response"]
                T.check("default config: GPU pod allowed with a patch",
                        res.get("allowed") is True and res.get("patchType") == "JSONPatch")
                p = patched_pod(rev, resp)
                lim = p["spec"]["containers"][0]["resources"]["limits"]
                T.equal("default config: gpumem defaulted to 5000", lim.get("nvidia.com/gpumem"), "5000")
                T.equal("default config: schedulerName", p["spec"]["schedulerName"], "hami-scheduler")
                T.check("default config: GPU toleration added",
                        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
                        in p["spec"]["tolerations"])

            # The env names HAMi-core reads besides the limits (CUDA_REDIRECT,
            # RECORD_KERNEL_INTERVAL) are guarded by the chart's config.
            for name in ("CUDA_REDIRECT", "RECORD_KERNEL_INTERVAL"):
                rc, resp, err = run_review(cfg, review(pod([ctr("side", env=[
                    {"name": name, "value": "1"}])])))
                res = (resp or {}).get("response") or {}
                T.check(f"default config: a CPU pod with env {name} is denied",
                        rc == 0 and res.get("allowed") is False and name in
                        (res.get("status") or {}).get("message", ""), err.strip() or res)

            bad = json.loads(default.one("ConfigMap")["data"]["config.json"])
            bad["schedulerPolicy"]["bogusKey"] = "x"
            badp = os.path.join(d, "bad.json")
            write(badp, json.dumps(bad))
            rc, _, err = run_review(badp, rev)
            T.check("a bad config (unknown key) is refused (exit 2)",
                    rc == 2 and "bogusKey" in err, f"exit {rc}: {err.strip()}")

        if full:
            cfg = os.path.join(d, "full.json")
            write(cfg, full.one("ConfigMap")["data"]["config.json"])
            rev = review(pod([ctr("cuda", {"nvidia.com/vgpu-memory": "4096"},
                                  {"nvidia.com/vgpu-memory": "4096"}),
                              ctr("side", securityContext={"privileged": True})],
                             schedulerName="vgpu-scheduler", nodeName="node-1"))
            rc, resp, err = run_review(cfg, rev)
            if T.check("full config: review accepted (exit 0)", rc == 0 and resp, err.strip()):
                res = resp["response"]
                T.check("full config: privileged and nodeName only warned (warn policies)",
                        res.get("allowed") is True and len(res.get("warnings") or []) >= 2,
                        res)
                p = patched_pod(rev, resp)
                c0, c1 = p["spec"]["containers"]
                lim = c0["resources"]["limits"]
                T.equal("full config: count defaulted to defaultGPUNum 2", lim.get("nvidia.com/vgpu"), "2")
                T.equal("full config: given memory kept", lim.get("nvidia.com/vgpu-memory"), "4096")
                T.equal("full config: cores defaulted to 30", lim.get("nvidia.com/vgpu-cores"), "30")
                e0 = env_of(c0)
                T.equal("full config: gpuCorePolicy and activeOOMKiller env",
                        (e0.get("GPU_CORE_UTILIZATION_POLICY"), e0.get("ACTIVE_OOM_KILLER")),
                        ("force", "true"))
                T.equal("full config: overwriteEnv hides GPUs from the other container",
                        env_of(c1).get("NVIDIA_VISIBLE_DEVICES"), "none")
                T.equal("full config: runtimeClassName", p["spec"].get("runtimeClassName"), "nvidia")
                ann = p["metadata"].get("annotations") or {}
                T.equal("full config: scheduler policy annotations",
                        (ann.get("hami.io/node-scheduler-policy"), ann.get("hami.io/gpu-scheduler-policy")),
                        ("binpack", "spread"))
                T.check("full config: both family tolerations added",
                        {"key": "gpu-pool", "operator": "Equal", "value": "shared",
                         "effect": "NoSchedule"} in p["spec"]["tolerations"] and
                        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
                        in p["spec"]["tolerations"])

            rev = review(pod([ctr("mlu", {"cambricon.com/vmlu": "1"})], schedulerName=""))
            rc, resp, err = run_review(cfg, rev)
            if T.check("full config: second family review accepted", rc == 0 and resp, err.strip()):
                p = patched_pod(rev, resp)
                c0 = p["spec"]["containers"][0]
                lim = c0["resources"]["limits"]
                T.equal("full config: second family memory and cores defaults",
                        (lim.get("cambricon.com/mlu.smlu.vmemory"), lim.get("cambricon.com/mlu.smlu.vcore")),
                        ("1024", "10"))
                e0 = env_of(c0)
                T.equal("full config: second family env",
                        (e0.get("GPU_CORE_UTILIZATION_POLICY"), e0.get("ACTIVE_OOM_KILLER")),
                        ("disable", "false"))
                T.check("full config: second family toleration with tolerationSeconds",
                        {"key": "cambricon.com/mlu", "operator": "Exists", "effect": "NoExecute",
                         "tolerationSeconds": 600} in p["spec"]["tolerations"])
                T.equal("full config: schedulerName vgpu-scheduler", p["spec"]["schedulerName"],
                        "vgpu-scheduler")

            rev = review(pod([ctr("cuda", {"nvidia.com/vgpu": "1"})]))
            rc, resp, err = run_review(cfg, rev)
            T.check("full config: default-scheduler pod left alone "
                    "(forceOverwriteDefaultScheduler false)",
                    rc == 0 and resp and resp["response"].get("allowed") is True and
                    "patch" not in resp["response"], err.strip() or resp)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@checks
def test_serve(selfsigned_render):
    T.section("the rendered certificate and config served by the binary")
    if not os.access(BIN, os.X_OK):
        T.cannot(f"no {BIN} (make build)")
        return
    if not selfsigned_ok(selfsigned_render):
        return
    data = tls_secret_data(selfsigned_render, f"{RELEASE}-tls")
    with tempfile.TemporaryDirectory() as d:
        for k in ("ca.crt", "tls.crt", "tls.key"):
            write(os.path.join(d, k), data[k])
        write(os.path.join(d, "config.json"),
              selfsigned_render.one("ConfigMap")["data"]["config.json"])
        port, mport = free_port(), free_port()
        log = open(os.path.join(d, "serve.log"), "w+")
        proc = subprocess.Popen([BIN, "serve", "--listen", f"127.0.0.1:{port}",
                                 "--tls-cert-file", os.path.join(d, "tls.crt"),
                                 "--tls-private-key-file", os.path.join(d, "tls.key"),
                                 "--metrics-listen", f"127.0.0.1:{mport}",
                                 "--config", os.path.join(d, "config.json"),
                                 "--log-format", "json"],
                                stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        try:
            ctx = ssl.create_default_context(cafile=os.path.join(d, "ca.crt"))
            host = f"{RELEASE}.{NS}.svc"
            status, body = None, b""
            deadline = time.monotonic() + 10
            rev = review(pod([ctr("cuda", {"nvidia.com/gpu": "1"})]))
            last = ""
            while time.monotonic() < deadline and proc.poll() is None:
                try:
                    conn = http.client.HTTPSConnection("127.0.0.1", port, timeout=5, context=ctx)
                    # Verify the name the API server uses.
                    conn.sock = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port), 5),
                                                server_hostname=host)
                    conn.request("POST", "/mutate?timeout=10s", body=json.dumps(rev),
                                 headers={"Content-Type": "application/json"})
                    resp = conn.getresponse()
                    status, body = resp.status, resp.read()
                    conn.close()
                    break
                except (OSError, http.client.HTTPException) as e:
                    last = str(e)
                    time.sleep(0.2)
            ok = T.check(f"serve: HTTPS POST /mutate verified as {host} with the caBundle",
                         status == 200, f"status {status}, {last}")
            if ok:
                answer = json.loads(body)
                T.check("serve: answer is the review response",
                        answer["response"]["uid"] == rev["request"]["uid"] and
                        answer["response"].get("patchType") == "JSONPatch")
            for path in ("/healthz", "/readyz"):
                try:
                    conn = http.client.HTTPConnection("127.0.0.1", mport, timeout=5)
                    conn.request("GET", path)
                    st = conn.getresponse().status
                    conn.close()
                except OSError as e:
                    st = str(e)
                T.equal(f"serve: probe GET {path} on the metrics port", st, 200)
                try:
                    conn = http.client.HTTPSConnection("127.0.0.1", port, timeout=5,
                                                       context=ctx)
                    conn.sock = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port), 5),
                                                server_hostname=host)
                    conn.request("GET", path)
                    st = conn.getresponse().status
                    conn.close()
                except OSError as e:
                    st = str(e)
                T.equal(f"serve: probe GET {path} on the HTTPS port", st, 200)
        finally:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    rc = proc.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    rc = proc.wait()
            else:
                rc = proc.returncode
            T.equal("serve: exits 0 on SIGTERM", rc, 0)
            if rc != 0:
                log.seek(0)
                print(log.read()[-2000:])
            log.close()


@checks
def test_gen_certs(helm):
    T.section("certs/gen-certs.sh")
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "dev")

        def gen(*args):
            return subprocess.run([GEN_CERTS, *args], capture_output=True, text=True,
                                  stdin=subprocess.DEVNULL, timeout=120)

        p = gen("--out", out)
        if not T.check("gen-certs: default run succeeds", p.returncode == 0, p.stderr):
            return
        files = sorted(os.listdir(out))
        T.equal("gen-certs: writes ca.crt ca.key tls.crt tls.key", files,
                ["ca.crt", "ca.key", "tls.crt", "tls.key"])
        ca = open(os.path.join(out, "ca.crt"), "rb").read()
        T.equal("gen-certs: stdout is only the base64 CA bundle",
                p.stdout, base64.b64encode(ca).decode() + "\n")
        for k in ("ca.key", "tls.key"):
            T.equal(f"gen-certs: {k} mode 0600", os.stat(os.path.join(out, k)).st_mode & 0o777, 0o600)
        svc = "vgpu-webhook.vgpu-system"
        verify_serving("gen-certs", ca, open(os.path.join(out, "tls.crt"), "rb").read(),
                       open(os.path.join(out, "tls.key"), "rb").read(),
                       ["vgpu-webhook", svc, svc + ".svc", svc + ".svc.cluster.local", "localhost"],
                       ip="127.0.0.1")
        rc, out_t, _ = openssl("pkey", "-in", os.path.join(out, "tls.key"), "-noout", "-text")
        T.check("gen-certs: EC P-256 key by default", rc == 0 and b"prime256v1" in out_t)

        before = {f: open(os.path.join(out, f), "rb").read() for f in files}
        p = gen("--out", out)
        after = {f: open(os.path.join(out, f), "rb").read() for f in files}
        T.check("gen-certs: refuses to overwrite without --force, files untouched",
                p.returncode != 0 and "--force" in p.stderr and before == after and p.stdout == "",
                p.stderr)

        p = gen("--out", out, "--client", "kube-apiserver")
        T.check("gen-certs: --client on an existing CA succeeds", p.returncode == 0, p.stderr)
        T.equal("gen-certs: --client keeps the CA and the serving pair",
                {f: open(os.path.join(out, f), "rb").read() for f in files}, before)
        crt = os.path.join(out, "client.crt")
        rc, o, e = openssl("verify", "-CAfile", os.path.join(out, "ca.crt"), "-purpose",
                           "sslclient", crt)
        T.check("gen-certs: client.crt verifies as a TLS client", rc == 0, (o + e).decode())
        rc, o, _ = openssl("x509", "-in", crt, "-noout", "-subject")
        T.check("gen-certs: client.crt common name", b"kube-apiserver" in o, o.decode())
        T.equal("gen-certs: client.key mode 0600",
                os.stat(os.path.join(out, "client.key")).st_mode & 0o777, 0o600)

        p = gen("--out", out, "--force")
        T.check("gen-certs: --force makes a new CA",
                p.returncode == 0 and open(os.path.join(out, "ca.crt"), "rb").read() != ca, p.stderr)
        T.check("gen-certs: stale client pair removed with the old CA",
                not os.path.exists(crt))

        rsa = os.path.join(d, "rsa")
        p = gen("--out", rsa, "--key-type", "rsa", "--service", "hook", "--namespace", "gpu",
                "--days", "2", "--client", "probe")
        T.check("gen-certs: rsa, other names, --client in a fresh folder", p.returncode == 0, p.stderr)
        if p.returncode == 0:
            rc, o, _ = openssl("pkey", "-in", os.path.join(rsa, "tls.key"), "-noout", "-text")
            T.check("gen-certs: RSA 2048 key", rc == 0 and b"2048 bit" in o)
            rc, o, e = openssl("verify", "-CAfile", os.path.join(rsa, "ca.crt"), "-purpose",
                               "sslserver", "-verify_hostname", "hook.gpu.svc",
                               os.path.join(rsa, "tls.crt"))
            T.check("gen-certs: --service/--namespace in the names", rc == 0, (o + e).decode())
            rc, o, _ = openssl("x509", "-in", os.path.join(rsa, "tls.crt"), "-noout",
                               "-checkend", str(3 * 86400))
            rc2, _, _ = openssl("x509", "-in", os.path.join(rsa, "tls.crt"), "-noout",
                                "-checkend", str(86400))
            T.check("gen-certs: --days 2 validity", rc != 0 and rc2 == 0)

        for args, what in ((["--days", "0"], "--days 0"), (["--service", "Bad_Name"], "a bad service"),
                           (["--key-type", "dsa"], "--key-type dsa"), (["--bogus"], "an unknown flag")):
            p = gen("--out", os.path.join(d, "refused"), *args)
            T.check(f"gen-certs: refuses {what}", p.returncode != 0 and
                    not os.path.exists(os.path.join(d, "refused", "ca.key")), p.stderr)

        # Without --out, the keys go to certs/dev beside the script (the
        # git-ignored folder), whatever the current folder.
        copy_dir = os.path.join(d, "repo", "certs")
        os.makedirs(copy_dir)
        shutil.copy(GEN_CERTS, copy_dir)
        p = subprocess.run([os.path.join(copy_dir, "gen-certs.sh")], capture_output=True,
                           text=True, cwd=d, stdin=subprocess.DEVNULL, timeout=120)
        T.check("gen-certs: default folder is certs/dev beside the script",
                p.returncode == 0 and os.path.isfile(os.path.join(copy_dir, "dev", "tls.key")) and
                not os.path.exists(os.path.join(d, "certs")), p.stderr)

        p = gen("--help")
        T.check("gen-certs: usage says never to commit the keys",
                p.returncode == 0 and "never commit" in p.stdout.lower())

        # The existingSecret mode with what the script printed.
        p = gen("--out", os.path.join(d, "es"))
        r = render("existingsecret-gen-certs", [ci_values("existingsecret")],
                   ["certificates.existingSecret.caBundle=" + p.stdout.strip()])
        if r:
            T.equal("gen-certs: its output is the chart's caBundle",
                    r.one("MutatingWebhookConfiguration")["webhooks"][0]["clientConfig"]["caBundle"],
                    p.stdout.strip())

    with open(os.path.join(ROOT, ".gitignore")) as f:
        ignored = [l.strip() for l in f]
    T.check("gen-certs: default folder certs/dev/ is git-ignored",
            "/certs/dev/" in ignored or "certs/dev/" in ignored)


@checks
def test_service_port(helm):
    """service.port moves the Service's HTTPS port and the port that the
    webhook's clientConfig names together; the container port stays 9443."""
    T.section("service.port")
    r = render("service-port", sets=["service.port=18443"])
    if not r:
        return
    ref = r.one("MutatingWebhookConfiguration")["webhooks"][0]["clientConfig"]["service"]
    https = [p for p in r.one("Service")["spec"]["ports"] if p["name"] == "https"]
    _, c = webhook_container(r)
    T.check("service-port: clientConfig and Service port 18443 reach container port 9443",
            ref.get("port") == 18443 and len(https) == 1 and https[0]["port"] == 18443
            and container_port(c, https[0]["targetPort"]) == 9443, (ref, https))
    vref = r.one("ValidatingWebhookConfiguration")["webhooks"][0]["clientConfig"]["service"]
    T.equal("service-port: the validating webhook's clientConfig names port 18443 too",
            vref.get("port"), 18443)
    for bad in ("0", "65536", "https"):
        rc, _, err = helm_template(sets=[f"service.port={bad}"])
        T.check(f"service-port: refused service.port={bad}", rc != 0 and "port" in err,
                err.strip())


@checks
def test_hami_device_config(helm, default_render):
    """hami.deviceConfig.configMap mounts HAMi's ConfigMap (its key as
    device-config.yaml, no subPath) and passes --hami-device-config; empty
    (the default), neither the volume nor the flag."""
    T.section("hami.deviceConfig")
    _, c = webhook_container(default_render)
    T.check("hami-device-config: off by default",
            "--hami-device-config" not in c["args"], c["args"])
    r = render("hami-device-config", sets=[
        "hami.deviceConfig.configMap=hami-scheduler-device",
        "hami.deviceConfig.key=device-config.yaml"])
    if not r:
        return
    dep, c = webhook_container(r)
    args = c["args"]
    T.check("hami-device-config: --hami-device-config names the mounted file",
            "--hami-device-config" in args and
            args[args.index("--hami-device-config") + 1] ==
            "/hami-device-config/device-config.yaml", args)
    vols = {v["name"]: v for v in dep["spec"]["template"]["spec"]["volumes"]}
    cm = vols.get("hami-device-config", {}).get("configMap", {})
    T.check("hami-device-config: the ConfigMap's key is mounted as device-config.yaml",
            cm.get("name") == "hami-scheduler-device" and
            cm.get("items") == [{"key": "device-config.yaml",
                                 "path": "device-config.yaml"}], cm)
    mounts = [m for m in c["volumeMounts"] if m["name"] == "hami-device-config"]
    T.check("hami-device-config: mounted read-only at /hami-device-config, no subPath",
            len(mounts) == 1 and mounts[0]["mountPath"] == "/hami-device-config"
            and mounts[0].get("readOnly") and "subPath" not in mounts[0], mounts)
    rc, _, err = helm_template(sets=["hami.deviceConfig.configMap=Bad_Name"])
    T.check("hami-device-config: a ConfigMap name that is not DNS-1123 is refused",
            rc != 0 and "configMap" in err, err.strip())

    # HAMi's families are not in config.devices: the matchConditions would
    # never send their pods.  Off, unless resourceNames lists them.
    cm = "hami.deviceConfig.configMap=hami-scheduler-device"
    r = render("hami-device-config-1.30", sets=[cm], kube="1.30.0")
    if r:
        T.equal("hami-device-config-1.30: no matchConditions on the mutating webhook",
                mutate_condition(r), None)
        text = notes_text(sets=[cm], kube="1.30.0")
        T.check("hami-device-config-1.30: NOTES says every pod CREATE is sent, and why",
                "every pod CREATE" in text and "hami.deviceConfig.resourceNames" in text,
                text[-900:])
    r = render("hami-device-config-names", sets=[
        cm, "hami.deviceConfig.resourceNames={example.com/vgpu,example.com/vgpu-memory}"],
        kube="1.30.0")
    if r:
        expr = mutate_condition(r)
        if T.check("hami-device-config-names: matchConditions kept with resourceNames",
                   expr is not None):
            T.check("hami-device-config-names: they name HAMi's and config.devices' resources",
                    '"example.com/vgpu"' in expr and '"example.com/vgpu-memory"' in expr and
                    '"nvidia.com/gpu"' in expr, expr)
            check_cel("hami-device-config-names", expr, [
                (w, create_vars(o), want) for w, o, want in (
                    ("a pod of HAMi's family", pod([ctr("a", {"example.com/vgpu": "1"})]), True),
                    ("a CPU-only pod", pod([ctr("a", {"cpu": "1"})]), False))])
    rc, _, err = helm_template(sets=[cm, "hami.deviceConfig.resourceNames={Bad Name}"])
    T.check("hami-device-config: a resource name that is not one is refused",
            rc != 0 and "resourceNames" in err, err.strip())


@checks
def test_tls_values(helm, default_render):
    """tls.minVersion and tls.cipherSuites become serve's --tls-min-version
    and --tls-cipher-suites (none at the defaults); the schema refuses TLS
    1.0/1.1 and suites without forward secrecy; the binary takes every name
    the schema allows."""
    T.section("tls values")
    if default_render:
        _, c = webhook_container(default_render)
        T.check("tls: no TLS flag at the defaults",
                not any(a.startswith("--tls-m") or a.startswith("--tls-ci")
                        for a in c["args"]), c["args"])
    suites = ["TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
              "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"]
    r = render("tls", sets=["tls.minVersion=VersionTLS13",
                            "tls.cipherSuites={%s}" % ",".join(suites)])
    if r:
        _, c = webhook_container(r)
        args = c["args"]
        T.check("tls: --tls-min-version VersionTLS13",
                "--tls-min-version" in args and
                args[args.index("--tls-min-version") + 1] == "VersionTLS13", args)
        T.check("tls: --tls-cipher-suites, comma-separated",
                "--tls-cipher-suites" in args and
                args[args.index("--tls-cipher-suites") + 1] == ",".join(suites), args)
    for bad in ("tls.minVersion=VersionTLS11", "tls.minVersion=VersionTLS10",
                "tls.cipherSuites={TLS_RSA_WITH_AES_128_GCM_SHA256}",
                "tls.cipherSuites={AES128-GCM-SHA256}",
                "tls.cipherSuites={TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256}"):
        rc, _, err = helm_template(sets=[bad])
        T.check(f"tls: refused {bad}", rc != 0 and "tls" in err, err.strip()[-300:])
    with open(os.path.join(CHART, "values.schema.json")) as f:
        names = json.load(f)["properties"]["tls"]["properties"]["cipherSuites"][
            "items"]["enum"]
    if not os.access(BIN, os.X_OK):
        T.cannot(f"the binary against the schema's suite names: no {BIN} (make build)")
        return
    # The TLS flags are checked before the certificate files are read.
    p = subprocess.run([BIN, "serve", "--tls-cert-file", "/nonexistent/tls.crt",
                        "--tls-private-key-file", "/nonexistent/tls.key",
                        "--tls-cipher-suites", ",".join(names)],
                       capture_output=True, text=True, stdin=subprocess.DEVNULL)
    T.check("tls: the binary takes every suite name of the schema",
            p.returncode == 2 and "--tls-cipher-suites" not in p.stderr and
            "/nonexistent/tls.crt" in p.stderr, p.stderr.strip())


def pod_specs(doc):
    """The pod specs of a rendered object: a Pod's, or a workload's template."""
    if doc.get("kind") == "Pod":
        return [doc.get("spec") or {}]
    spec = doc.get("spec") or {}
    if doc.get("kind") == "CronJob":
        spec = (spec.get("jobTemplate") or {}).get("spec") or {}
    tpl = (spec.get("template") or {}).get("spec")
    return [tpl] if tpl else []


@checks
def test_no_shell(helm):
    """The image holds the binary and its libraries, no shell (make image):
    every container the chart runs from it, in every values file of ci/,
    starts the binary itself, and no hook of the pod's life cycle runs a
    command (a preStop sleep needs a shell's sleep: --shutdown-delay does
    its job)."""
    T.section("no shell in what the chart runs")
    renders = [render("no-shell-default", kube="1.30.0")]
    for mode in ("selfsigned", "certmanager", "existingsecret", "full-config", "operations"):
        renders.append(render(f"no-shell-{mode}", [ci_values(mode)], kube="1.30.0"))
    renders.append(render("no-shell-client-auth", kube="1.30.0",
                          sets=["clientAuth.enabled=true", "clientAuth.caConfigMap=ca"]))
    for r in renders:
        if not r:
            continue
        n = 0
        for doc in r.docs:
            for spec in pod_specs(doc):
                for c in (spec.get("initContainers") or []) + (spec.get("containers") or []):
                    n += 1
                    where = f"{r.name}: {doc['kind']} {doc['metadata']['name']} {c['name']}"
                    cmd = c.get("command")
                    T.check(f"{where}: starts the binary (no command, or the binary)",
                            cmd is None or cmd[:1] == ["/usr/bin/vgpu-webhook"], cmd)
                    hooks = c.get("lifecycle") or {}
                    T.check(f"{where}: no exec hook", not any(
                        "exec" in (hooks.get(h) or {}) for h in ("preStop", "postStart")), hooks)
                    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
                        T.check(f"{where}: no exec {probe}",
                                "exec" not in (c.get(probe) or {}), c.get(probe))
        T.check(f"{r.name}: containers found", n > 0, n)
    r = renders[0]
    if r:
        _, c = webhook_container(r)
        args = c["args"]
        T.check("default: --shutdown-delay 5 (shutdownDelaySeconds)",
                "--shutdown-delay" in args and
                args[args.index("--shutdown-delay") + 1] == "5", args)
    r = render("no-shell-no-delay", sets=["shutdownDelaySeconds=0"])
    if r:
        _, c = webhook_container(r)
        T.check("shutdownDelaySeconds=0: no --shutdown-delay",
                "--shutdown-delay" not in c["args"], c["args"])



@checks
def test_package(helm):
    """make chart-package: the archive helm installs, with the binary's version,
    its home and sources, and the same objects as the chart's folder."""
    T.section("helm package")
    source = "https://git.example.org/vgpu-webhook"
    p = subprocess.run(["make", "-s", "chart-package", f"CHART_SOURCE={source}"], cwd=ROOT,
                       capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=300)
    if not T.check("package: make chart-package", p.returncode == 0, (p.stdout + p.stderr).strip()):
        return
    tgz = os.path.join(ROOT, p.stdout.strip().splitlines()[-1])
    version = subprocess.run([BIN, "version"], capture_output=True,
                             text=True).stdout.split()[1]
    T.equal("package: named after the binary's version", os.path.basename(tgz),
            f"vgpu-webhook-{version}.tgz")
    p = subprocess.run([HELM, "show", "chart", tgz], capture_output=True, text=True,
                       env=helm_env(), stdin=subprocess.DEVNULL, timeout=120)
    meta = yaml.safe_load(p.stdout) if p.returncode == 0 else {}
    T.check("package: version, appVersion, home, sources, license",
            meta.get("version") == version and meta.get("appVersion") == version and
            meta.get("home") == source and meta.get("sources") == [source] and
            meta.get("annotations", {}).get("artifacthub.io/license") == "Apache-2.0", meta)
    p = subprocess.run(["tar", "-tzf", tgz], capture_output=True, text=True)
    T.check("package: holds the LICENSE and the schema",
            {"vgpu-webhook/LICENSE", "vgpu-webhook/values.schema.json"} <= set(p.stdout.split()),
            p.stdout)
    # existingSecret: the selfSigned mode makes a new CA at every render
    fixed = [ci_values("existingsecret")]
    rc, packed, err = helm_template(fixed, chart=tgz)
    rc2, folder, _ = helm_template(fixed)
    T.check("package: renders the same objects as the folder", rc == 0 and rc2 == 0 and
            packed == folder, err.strip())
    p = subprocess.run([HELM, "lint", "--strict", tgz, *REGISTRY_SET], capture_output=True,
                       text=True, env=helm_env(), stdin=subprocess.DEVNULL, timeout=120)
    T.check("package: helm lint --strict", p.returncode == 0, (p.stdout + p.stderr).strip())

if __name__ == "__main__":
    sys.exit(pytest.main([__file__] + sys.argv[1:]))


# --- the values file as the binary's --config ------------------------------

def config_show(path):
    """`vgpu-webhook config --config PATH`: (rc, the configuration, stderr)."""
    p = subprocess.run([BIN, "config", "--config", path], capture_output=True,
                       text=True, timeout=60)
    return p.returncode, (json.loads(p.stdout) if p.returncode == 0 else None), p.stderr


def configmap_text(r):
    """The ConfigMap document of render r, as helm template wrote it."""
    for doc in re.split(r"(?m)^---\s*$", r.text):
        if re.search(r"(?m)^kind: ConfigMap$", doc) and "config.json:" in doc:
            return doc
    return None


@checks
def test_values_as_config(helm, default_render, full_render):
    """--config takes the chart's values file (its config key) and the rendered
    ConfigMap (its data."config.json"), with the configuration config.json gives."""
    T.section("the values file and the ConfigMap as --config")
    with tempfile.TemporaryDirectory() as tmp:
        for name, r, values in (
                ("default", default_render, os.path.join(CHART, "values.yaml")),
                ("full-config", full_render, ci_values("full-config"))):
            if not r:
                continue
            rendered = os.path.join(tmp, name + "-config.json")
            write(rendered, r.one("ConfigMap")["data"]["config.json"])
            cm = os.path.join(tmp, name + "-configmap.yaml")
            write(cm, configmap_text(r) or "")
            rc, want, err = config_show(rendered)
            if not T.check(f"{name}: config --config config.json (rendered)", rc == 0, err):
                continue
            for label, path in (("the values file " + os.path.relpath(values, ROOT), values),
                                ("the rendered ConfigMap document", cm)):
                rc, got, err = config_show(path)
                T.check(f"{name}: config --config {label}: read", rc == 0, err)
                if rc == 0:
                    T.equal(f"{name}: {label} gives what config.json gives", got, want)
