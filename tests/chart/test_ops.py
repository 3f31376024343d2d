#!/usr/bin/python3
"""Checks of what an operator runs around the webhook: the schema's
patterns, NOTES.txt, the PodDisruptionBudget forms, the `helm test` pod,
the readiness probe, the alerts (PrometheusRule), the Grafana dashboard and
the NetworkPolicy.

Run by `make chart` under pytest, beside tests/chart/test_chart.py, whose
helpers (helm template, Render, the soft checks T.check) it shares:

    /usr/bin/python3 -m pytest tests/chart/test_ops.py [-k NAME]
"""

import copy
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_chart as C  # noqa: E402  (module, so pytest does not collect its tests twice)

T = C.T
checks = C.checks
helm = C.helm
CHART = C.CHART
NS = C.NS
RELEASE = C.RELEASE


def schema_patterns():
    """[(json path, pattern)] of every "pattern" in values.schema.json."""
    with open(os.path.join(CHART, "values.schema.json")) as f:
        schema = json.load(f)
    found = []

    def walk(node, path):
        if isinstance(node, dict):
            if isinstance(node.get("pattern"), str):
                found.append((path, node["pattern"]))
            for k, v in node.items():
                walk(v, f"{path}/{k}")
        elif isinstance(node, list):
            for i, v in enumerate(node):
                walk(v, f"{path}[{i}]")
    walk(schema, "")
    return found


def device(**changes):
    """The first entry of values.yaml's devices, changed."""
    d = copy.deepcopy(C.load_values(os.path.join(CHART, "values.yaml"))["config"]["devices"][0])
    d.update(changes)
    return d


# Per schema pattern: values that only an unanchored pattern (one that can
# match inside the value) lets through.  Each must be refused by
# values.schema.json, naming the field.
BAD_VALUES = {
    # certificates.mode job: durations as `certs ensure` reads them
    "/properties/certificates/properties/job/properties/validity": (
        {"certificates": {"job": {"validity": "1y"}}}, "validity"),
    "/properties/certificates/properties/job/properties/renewBefore": (
        {"certificates": {"job": {"renewBefore": "30 d"}}}, "renewBefore"),
    # profiles (docs/behaviour.md 2.2)
    "/properties/config/properties/profiles/items/properties/schedulerName": (
        {"config": {"profiles": [{"name": "p", "namespaces": ["a"],
                                  "schedulerName": "Bad_Sched.x"}]}}, "schedulerName"),
    "/properties/config/properties/profiles/items/properties/devices/items/properties/runtimeClassName": (
        {"config": {"profiles": [{"name": "p", "namespaces": ["a"], "devices": [
            {"name": "nvidia", "runtimeClassName": "Bad_Class.x"}]}]}}, "runtimeClassName"),
    # the mount guard's paths are absolute
    "/properties/config/properties/guards/properties/volumeMounts/properties/paths/items": (
        {"config": {"guards": {"volumeMounts": {"paths": ["x/var/run/nvidia-container-devices"]}}}},
        "paths"),
    "/properties/config/properties/profiles/items/properties/guards/properties/volumeMounts/properties/paths/items": (
        {"config": {"profiles": [{"name": "p", "namespaces": ["a"], "guards": {
            "volumeMounts": {"paths": ["run/devices"]}}}]}}, "paths"),
    "/properties/hami/properties/namespace": ({"hami": {"namespace": "Kube_system"}}, "namespace"),
    "/properties/hami/properties/releaseName": ({"hami": {"releaseName": "-hami"}}, "releaseName"),
    "/properties/hami/properties/deviceConfig/properties/configMap": (
        {"hami": {"deviceConfig": {"configMap": "Hami_device"}}}, "configMap"),
    "/properties/hami/properties/deviceConfig/properties/key": (
        {"hami": {"deviceConfig": {"configMap": "h", "key": "a/b.yaml"}}}, "key"),
    "/properties/hami/properties/deviceConfig/properties/resourceNames/items": (
        {"hami": {"deviceConfig": {"configMap": "h", "resourceNames": ["a.io/Bad Name"]}}},
        "resourceNames"),
    "/properties/fullnameOverride": ({"fullnameOverride": "Bad_Name-x"}, "fullnameOverride"),
    # a registry is host[:port][/path], never a URL
    "/properties/image/properties/registry": (
        {"image": {"registry": "https://registry.example.com"}}, "registry"),
    "/properties/image/properties/digest": (
        {"image": {"digest": "x" + "sha256:" + "ab" * 32}}, "digest"),
    "/properties/config/properties/schedulerName": (
        {"config": {"schedulerName": "Hami_scheduler.x"}}, "schedulerName"),
    "/properties/config/properties/devices/items/properties/resourceCountName": (
        {"config": {"devices": [device(resourceCountName="_nvidia.com/gpu")]}}, "resourceCountName"),
    "/properties/config/properties/devices/items/properties/resourceMemoryName": (
        {"config": {"devices": [device(resourceMemoryName="_nvidia.com/gpumem")]}},
        "resourceMemoryName"),
    "/properties/config/properties/devices/items/properties/resourceMemoryPercentageName": (
        {"config": {"devices": [device(resourceMemoryPercentageName="_nvidia.com/pct")]}},
        "resourceMemoryPercentageName"),
    "/properties/config/properties/devices/items/properties/resourceCoreName": (
        {"config": {"devices": [device(resourceCoreName="_nvidia.com/gpucores")]}},
        "resourceCoreName"),
    "/properties/config/properties/devices/items/properties/resourcePriorityName": (
        {"config": {"devices": [device(resourcePriorityName="_nvidia.com/priority")]}},
        "resourcePriorityName"),
    "/properties/config/properties/devices/items/properties/runtimeClassName": (
        {"config": {"devices": [device(runtimeClassName="Bad_Class.nvidia")]}}, "runtimeClassName"),
    "/properties/webhook/properties/excludeNamespaces/items": (
        {"webhook": {"excludeNamespaces": ["Bad_ns-x"]}}, "excludeNamespaces"),
    "/properties/certificates/properties/clusterDomain": (
        {"certificates": {"clusterDomain": "Bad_domain.local"}}, "clusterDomain"),
    "/properties/certificates/properties/existingSecret/properties/caBundle": (
        {"certificates": {"existingSecret": {"caBundle": "!!!!QUJD"}}}, "caBundle"),
    "/properties/clientAuth/properties/caKey": (
        {"clientAuth": {"caKey": "ca crt"}}, "caKey"),
    "/properties/podDisruptionBudget/properties/minAvailable/oneOf[1]": (
        {"podDisruptionBudget": {"minAvailable": "x50%"}}, "minAvailable"),
    "/properties/helmTest/properties/clientCertSecret": (
        {"helmTest": {"clientCertSecret": "Bad_Secret.x"}}, "clientCertSecret"),
    "/properties/networkPolicy/properties/metricsNamespace": (
        {"networkPolicy": {"metricsNamespace": "Bad_ns-x"}}, "metricsNamespace"),
    "/properties/podDisruptionBudget/properties/maxUnavailable/oneOf[2]": (
        {"podDisruptionBudget": {"minAvailable": None, "maxUnavailable": "x50%"}},
        "maxUnavailable"),
}


def anchored(pattern):
    """Every alternative of the top-level | begins with ^ and ends with $."""
    depth, alts, cur, i = 0, [], "", 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            cur += pattern[i:i + 2]
            i += 2
            continue
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == "|" and depth == 0:
            alts.append(cur)
            cur = ""
        else:
            cur += ch
        i += 1
    alts.append(cur)
    return all(a.startswith("^") and a.endswith("$") for a in alts)


@checks
def test_schema_patterns(helm):
    T.section("values.schema.json: every pattern anchored, each refuses a bad value")
    patterns = schema_patterns()
    for path, pat in patterns:
        T.check(f"schema: {path} anchored at both ends", anchored(pat), pat)
    T.equal("schema: a negative test for every pattern",
            sorted(p for p, _ in patterns), sorted(BAD_VALUES))
    with tempfile.TemporaryDirectory() as d:
        for path, (values, field) in sorted(BAD_VALUES.items()):
            f = os.path.join(d, "bad.yaml")
            with open(f, "w") as out:
                yaml.safe_dump(values, out)
            rc, _, err = C.helm_template([f], registry=False)
            T.check(f"schema: refuses {json.dumps(values)[:90]}",
                    rc != 0 and field in err and "pattern" in err, err.strip()[-300:])
    rc, _, err = C.helm_template(sets=["fullnameOverride=Bad_Name-x"])
    T.check("schema: --set fullnameOverride=Bad_Name-x refused", rc != 0 and
            "fullnameOverride" in err, err.strip())
    r = C.render("fullname-ok", sets=["fullnameOverride=gpu-defaults"])
    if r:
        T.equal("schema: a good fullnameOverride names the Deployment",
                r.one("Deployment")["metadata"]["name"], "gpu-defaults")


@checks
def test_schema_profiles(helm):
    T.section("values.schema.json: profiles (docs/behaviour.md 2.2)")
    ok = {"name": "p", "podLabels": {"size": "whole"}, "schedulerPolicy": {"gpu": "spread"},
          "devices": [{"name": "nvidia", "defaultMemory": 0, "runtimeClassName": "nvidia"}]}
    bad = [({"name": "p"}, "no selector"),
           ({"namespaces": ["a"]}, "no name"),
           (dict(ok, privilegedPolicy="warn"), "podLabels and privilegedPolicy"),
           (dict(ok, devices=[{"name": "nvidia", "gpuCorePolicy": "force"}]),
            "podLabels and gpuCorePolicy"),
           ({"name": "p", "namespaces": ["a"], "devices": [
               {"name": "nvidia", "resourceCountName": "x.io/g"}]}, "a resource name"),
           ({"name": "p", "namespaces": ["a"], "devices": [
               {"name": "nvidia", "overwriteEnv": True}]}, "overwriteEnv")]
    with tempfile.TemporaryDirectory() as d:
        f = os.path.join(d, "v.yaml")
        for prof, what in [(ok, None)] + bad:
            with open(f, "w") as out:
                yaml.safe_dump({"config": {"profiles": [prof]}}, out)
            rc, _, err = C.helm_template([f])
            if what is None:
                T.check("schema: a podLabels profile changing defaults renders", rc == 0,
                        err.strip()[-300:])
            else:
                T.check(f"schema: refuses a profile with {what}", rc != 0, err.strip()[-300:])


@checks
def test_pdb_forms(helm):
    T.section("PodDisruptionBudget: minAvailable or maxUnavailable")
    values = C.load_values(os.path.join(CHART, "values.yaml"))
    T.check("values.yaml: podDisruptionBudget.maxUnavailable present (null)",
            "maxUnavailable" in values["podDisruptionBudget"] and
            values["podDisruptionBudget"]["maxUnavailable"] is None, values["podDisruptionBudget"])
    rc, _, err = C.helm_template(sets=["podDisruptionBudget.maxUnavailable=1"])
    T.check("pdb: maxUnavailable with minAvailable still set fails the render",
            rc != 0 and "not both" in err, err.strip())
    r = C.render("pdb-percent", sets=["podDisruptionBudget.minAvailable=null",
                                      "podDisruptionBudget.maxUnavailable=50%"])
    if r:
        spec = r.one("PodDisruptionBudget")["spec"]
        T.check("pdb-percent: maxUnavailable 50%, no minAvailable",
                spec.get("maxUnavailable") == "50%" and "minAvailable" not in spec, spec)
    r = C.render("pdb-default")
    if r:
        spec = r.one("PodDisruptionBudget")["spec"]
        T.check("pdb-default: minAvailable 1 only",
                spec.get("minAvailable") == 1 and "maxUnavailable" not in spec, spec)


def notes(*sets, namespace=NS):
    args = [C.HELM, "install", RELEASE, CHART, "--namespace", namespace, "--dry-run=client",
            *C.REGISTRY_SET]
    for s in sets:
        args += ["--set", s]
    p = subprocess.run(args, capture_output=True, text=True, env=C.helm_env(),
                       stdin=subprocess.DEVNULL, timeout=120)
    return p.returncode, p.stdout.partition("NOTES:")[2], p.stderr


def notes_pod(text):
    """The sample pod of NOTES.txt step 3, and the namespace it is sent to."""
    m = re.search(r"kubectl -n (\S+) create --dry-run=server -o yaml -f - <<'POD'\n(.*?)\n\s*POD\n",
                  text, re.S)
    if not m:
        return None, None
    return m.group(1), yaml.safe_load(m.group(2))


@checks
def test_notes_every_setting(helm):
    T.section("NOTES.txt: the sample pod is defaulted under every setting")
    rc, text, err = notes()
    ns, pod = notes_pod(text)
    T.check("notes: default: sample pod in namespace default", rc == 0 and ns == "default",
            err or text)
    T.check("notes: default: pod names no scheduler (force overwrites default-scheduler)",
            pod and "schedulerName" not in pod["spec"], pod)

    rc, text, err = notes("config.forceOverwriteDefaultScheduler=false")
    ns, pod = notes_pod(text)
    T.check("notes: force false: the sample pod names the webhook's scheduler",
            rc == 0 and pod and pod["spec"].get("schedulerName") == "hami-scheduler", err or pod)
    rc, text, err = notes("config.forceOverwriteDefaultScheduler=false",
                          "config.schedulerName=gpu-sched")
    ns, pod = notes_pod(text)
    T.check("notes: force false, other scheduler: named in the pod",
            rc == 0 and pod and pod["spec"].get("schedulerName") == "gpu-sched", err or pod)

    rc, text, err = notes("webhook.excludeNamespaces={default,batch}")
    ns, pod = notes_pod(text)
    T.check("notes: default excluded: no namespace default, a placeholder said so",
            rc == 0 and ns == "NAMESPACE" and "Replace NAMESPACE" in text, text[:600])
    rc, text, err = notes(namespace="default")
    ns, pod = notes_pod(text)
    T.check("notes: released in default: the sample does not use the release namespace",
            rc == 0 and ns == "NAMESPACE", text[:600])


# --- helm test ------------------------------------------------------------

def helm_test_pod(r):
    pods = [d for d in r.all("Pod")
            if (d["metadata"].get("annotations") or {}).get("helm.sh/hook") == "test"]
    return pods[0] if len(pods) == 1 else None


def check_test_pod(r, ca_volume, client=None):
    tag = r.name
    pod = helm_test_pod(r)
    if not T.check(f"{tag}: one helm test pod", pod is not None):
        return None
    dep, web = C.webhook_container(r)
    (c,) = pod["spec"]["containers"]
    T.equal(f"{tag}: test pod runs the webhook's own image", c["image"], web["image"])
    args = c.get("args") or []
    url = f"https://{RELEASE}.{NS}.svc:443/mutate"
    T.check(f"{tag}: test pod runs check against the Service",
            args[:1] == ["check"] and "command" not in c and
            args[args.index("--url") + 1] == url and args[args.index("--ca-file") + 1] == "/ca/ca.crt"
            and args[args.index("--resource") + 1] == "nvidia.com/gpu", args)
    svc = r.one("Service")
    T.check(f"{tag}: the Service serves port 443 to the webhook's https port",
            any(p["port"] == 443 and p["targetPort"] == "https" for p in svc["spec"]["ports"]))
    vols = {v["name"]: v for v in pod["spec"].get("volumes") or []}
    mounts = {m["mountPath"]: m["name"] for m in c.get("volumeMounts") or []}
    T.equal(f"{tag}: the CA comes from {ca_volume}", vols.get(mounts.get("/ca"), {}).get(
        list(ca_volume)[0]), list(ca_volume.values())[0])
    if client:
        T.check(f"{tag}: client certificate from Secret {client}",
                vols.get(mounts.get("/client"), {}).get("secret", {}).get("secretName") == client
                and "--cert-file" in args and "--key-file" in args, (args, vols))
    labels = pod["metadata"].get("labels") or {}
    raw = [l for l in r.text.split("\n---")
           if "helm.sh/hook: test" in l and "kind: Pod" in l]
    T.check(f"{tag}: test pod labels without duplicate keys",
            raw and len(re.findall(r"^    app\.kubernetes\.io/component:", raw[0], re.M)) == 1, raw)
    selectors = [("Service", svc["spec"]["selector"]), ("Deployment", dep["spec"]["selector"])]
    selectors += [("PodDisruptionBudget", p["spec"]["selector"]) for p in r.all("PodDisruptionBudget")]
    selectors += [("NetworkPolicy", p["spec"]["podSelector"]) for p in r.all("NetworkPolicy")]
    for kind, sel in selectors:
        if kind == "Service":
            sel = {"matchLabels": sel}
        T.check(f"{tag}: the {kind} does not select the test pod",
                not C.selector_matches(sel, labels), (sel, labels))
    sc = c.get("securityContext") or {}
    T.check(f"{tag}: test pod non-root, read-only root, no capabilities",
            pod["spec"]["securityContext"].get("runAsNonRoot") and sc.get("readOnlyRootFilesystem")
            and sc.get("capabilities", {}).get("drop") == ["ALL"] and
            pod["spec"].get("restartPolicy") == "Never", (pod["spec"], sc))
    return pod


@checks
def test_helm_test(helm):
    T.section("helm test: vgpu-webhook check in every certificate mode")
    r = C.render("test-selfsigned", [C.ci_values("selfsigned")])
    if r:
        check_test_pod(r, {"secret": {"secretName": f"{RELEASE}-tls",
                                       "items": [{"key": "ca.crt", "path": "ca.crt"}]}})
    r = C.render("test-certmanager", [C.ci_values("certmanager")])
    if r:
        check_test_pod(r, {"secret": {"secretName": f"{RELEASE}-tls",
                                       "items": [{"key": "ca.crt", "path": "ca.crt"}]}})
    r = C.render("test-existing", [C.ci_values("existingsecret")])
    if r:
        key = "vgpu-webhook.hami.io/ca.crt"
        pod = check_test_pod(r, {"downwardAPI": {"items": [{"path": "ca.crt", "fieldRef": {
            "fieldPath": f"metadata.annotations['{key}']"}}]}})
        bundle = C.load_values(C.ci_values("existingsecret"))["certificates"]["existingSecret"]["caBundle"]
        import base64
        T.check("test-existing: the pod's CA annotation is the caBundle",
                pod is not None and pod["metadata"]["annotations"].get(key) ==
                base64.b64decode(bundle).decode(), pod and pod["metadata"]["annotations"])
    r = C.render("test-client", sets=["clientAuth.enabled=true", "clientAuth.caConfigMap=ca",
                                      "helmTest.clientCertSecret=check-client"])
    if r:
        check_test_pod(r, {"secret": {"secretName": f"{RELEASE}-tls",
                                       "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                       client="check-client")
    r = C.render("test-client-none", sets=["clientAuth.enabled=true", "clientAuth.caConfigMap=ca"])
    if r:
        pod = helm_test_pod(r)
        c = pod["spec"]["containers"][0] if pod else {}
        T.check("test-client-none: the check runs, without a client certificate (it fails "
                "with the webhook's 403), and needs no shell",
                pod is not None and "command" not in c and c.get("args", [])[:1] == ["check"]
                and "--cert-file" not in c.get("args", []), c)
        T.check("test-client-none: no client volume",
                pod is not None and all(v["name"] != "client" for v in pod["spec"]["volumes"]),
                pod and pod["spec"]["volumes"])
        rc, text, _ = notes("clientAuth.enabled=true", "clientAuth.caConfigMap=ca")
        T.check("test-client-none: NOTES say the test fails with 403 without the Secret",
                "403" in text and "helmTest.clientCertSecret" in text, text[-600:])
    # The families from HAMi's file only (config.devices null or []): the
    # check asks for HAMi's nvidia resource.
    with tempfile.TemporaryDirectory() as d:
        for tag, devices in (("null", None), ("empty", [])):
            vf = os.path.join(d, f"{tag}.yaml")
            with open(vf, "w") as f:
                yaml.safe_dump({"config": {"devices": devices},
                                "hami": {"deviceConfig": {"configMap": "hami-scheduler-device"}}},
                               f)
            r = C.render(f"test-devices-{tag}", [vf])
            pod = helm_test_pod(r) if r else None
            args = pod["spec"]["containers"][0].get("args", []) if pod else []
            T.check(f"test-devices-{tag}: the check asks for nvidia.com/gpu",
                    "--resource" in args and args[args.index("--resource") + 1] ==
                    "nvidia.com/gpu", args)
    r = C.render("test-off", sets=["helmTest.enabled=false"])
    if r:
        T.equal("test-off: no test pod", helm_test_pod(r), None)
    rc, text, err = notes()
    T.check("notes: tell how to run helm test", f"helm test {RELEASE} -n {NS}" in text, text[-800:])


# --- probes, AKS -----------------------------------------------------------

@checks
def test_readiness_and_aks(helm):
    T.section("readiness over HTTPS; AKS annotation")
    for name, sets in (("probe-default", []), ("probe-no-metrics", ["metrics.enabled=false"])):
        r = C.render(name, sets=sets)
        if not r:
            continue
        _, c = C.webhook_container(r)
        g = c["readinessProbe"]["httpGet"]
        T.check(f"{name}: readiness GET /readyz on the HTTPS port, scheme HTTPS",
                g["path"] == "/readyz" and C.container_port(c, g["port"]) == 9443 and
                g["scheme"] == "HTTPS", g)
        wh = r.one("MutatingWebhookConfiguration")
        T.equal(f"{name}: admissions.enforcer/disabled on the webhook configuration",
                (wh["metadata"].get("annotations") or {}).get("admissions.enforcer/disabled"), "true")
    r = C.render("aks-off", sets=["aks.admissionsEnforcerDisabled=false"])
    if r:
        T.check("aks-off: no AKS annotation", "admissions.enforcer/disabled" not in
                (r.one("MutatingWebhookConfiguration")["metadata"].get("annotations") or {}))


# --- alerts, dashboard, NetworkPolicy ---------------------------------------

OPS = os.path.join(CHART, "ci", "operations-values.yaml")
ALERTS = ["VgpuWebhookAPIServerFailOpen", "VgpuWebhookCallsRejected",
          "VgpuWebhookCertificateExpiresSoon", "VgpuWebhookReloadRefused", "VgpuWebhookErrors",
          "VgpuWebhookSlow", "VgpuWebhookTargetMissing", "VgpuWebhookGuardHits"]
JOB = f'job="{RELEASE}"'
HOOK = "pods.vgpu-webhook.hami.io"


def ops_render(name="operations", extra=()):
    p = subprocess.run([C.HELM, "template", RELEASE, CHART, "--namespace", NS, "-f", OPS,
                        *C.REGISTRY_SET, *extra], capture_output=True, text=True, env=C.helm_env(),
                       stdin=subprocess.DEVNULL, timeout=120)
    rc, out, err = p.returncode, p.stdout, p.stderr
    if not T.check(f"{name}: helm template -f ci/operations-values.yaml {' '.join(extra)}",
                   rc == 0, err.strip()):
        return None
    return C.Render(name, out)


@checks
def test_operations_render(helm):
    T.section("ci/operations-values.yaml: PrometheusRule, dashboard, NetworkPolicy")
    r = ops_render("operations-no-crd", ["--set", "prometheusRule.skipAPICheck=false"])
    if r:
        T.equal("operations-no-crd: no PrometheusRule without monitoring.coreos.com/v1",
                r.all("PrometheusRule"), [])
    r = ops_render("operations-crd", ["--set", "prometheusRule.skipAPICheck=false",
                                      "--api-versions", "monitoring.coreos.com/v1"])
    if r:
        T.equal("operations-crd: a PrometheusRule where monitoring.coreos.com/v1 exists",
                len(r.all("PrometheusRule")), 1)
    r = ops_render("operations")
    if not r:
        return
    rule = r.one("PrometheusRule")
    names = [x.get("alert") for g in rule["spec"]["groups"] for x in g["rules"]]
    T.equal("operations: the alerts (guardHits.enabled)", names, ALERTS)
    r2 = ops_render("operations-no-guard-hits", ["--set", "prometheusRule.guardHits.enabled=false"])
    if r2:
        names = [x.get("alert") for g in r2.one("PrometheusRule")["spec"]["groups"]
                 for x in g["rules"]]
        T.equal("operations-no-guard-hits: VgpuWebhookGuardHits is opt-in", names, ALERTS[:-1])
    r2 = ops_render("operations-guard-threshold", ["--set", "prometheusRule.guardHits.threshold=5"])
    if r2:
        rules = {x["alert"]: x for g in r2.one("PrometheusRule")["spec"]["groups"]
                 for x in g["rules"]}
        T.check("operations-guard-threshold: the threshold is in the rule",
                rules.get("VgpuWebhookGuardHits", {}).get("expr", "").endswith("> 5"),
                rules.get("VgpuWebhookGuardHits"))
    readme = open(os.path.join(CHART, "README.md")).read() if os.path.exists(
        os.path.join(CHART, "README.md")) else ""
    for a in ALERTS:
        T.check(f"operations: chart README has a runbook line for {a}",
                re.search(rf"^\s*[-*] \*\*{a}\*\*", readme, re.M) is not None)
    np_ = r.one("NetworkPolicy")
    dep = r.one("Deployment")
    T.check("operations: NetworkPolicy selects the webhook pods",
            C.selector_matches(np_["spec"]["podSelector"], dep["spec"]["template"]["metadata"]["labels"]))
    tp = helm_test_pod(r)
    T.check("operations: NetworkPolicy leaves the helm test pod alone",
            tp is not None and not C.selector_matches(np_["spec"]["podSelector"],
                                                      tp["metadata"]["labels"]))
    ing = np_["spec"]["ingress"]
    T.check("operations: HTTPS port open to everyone by default",
            ing[0]["ports"][0]["port"] == "https" and "from" not in ing[0], ing)
    T.check("operations: metrics port open to the monitoring namespace",
            ing[1]["ports"][0]["port"] == "metrics" and ing[1]["from"] == [{"namespaceSelector": {
                "matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}], ing)
    cm = r.named("ConfigMap", f"{RELEASE}-dashboard")
    ok = cm is not None and cm["metadata"]["labels"].get("grafana_dashboard") == "1"
    T.check("operations: dashboard ConfigMap labelled grafana_dashboard", ok)
    if ok:
        dash = json.loads(cm["data"]["vgpu-webhook.json"])
        exprs = " ".join(t["expr"] for p in dash["panels"] for t in p["targets"])
        for want in ("vgpu_webhook_requests_total", "histogram_quantile(0.5",
                     "histogram_quantile(0.99", "vgpu_webhook_requests_in_flight",
                     "vgpu_webhook_certificate_expiry_timestamp_seconds",
                     "apiserver_admission_webhook_fail_open_count",
                     "apiserver_admission_webhook_admission_duration_seconds_bucket"):
            T.check(f"operations: dashboard shows {want}", want in exprs)
    r = ops_render("operations-peers", ["--set", "networkPolicy.webhookFrom[0].ipBlock.cidr=10.0.0.0/8",
                                        "--set", "networkPolicy.metricsNamespace="])
    if r:
        ing = r.one("NetworkPolicy")["spec"]["ingress"]
        T.check("operations-peers: webhook port from the peers given, metrics from anywhere",
                ing[0].get("from") == [{"ipBlock": {"cidr": "10.0.0.0/8"}}] and "from" not in ing[1], ing)
    rc, out, err = C.helm_template()
    r = C.Render("default-ops", out) if rc == 0 else None
    T.check("default: no PrometheusRule, NetworkPolicy or dashboard (all opt-in)",
            r is not None and not (r.all("PrometheusRule") or r.all("NetworkPolicy") or
                                   r.named("ConfigMap", f"{RELEASE}-dashboard")), err)


def alert(rule, **labels):
    """The alert promtool should see: the rule's labels and these, and its
    annotations with {{ $labels.NAME }} filled in."""
    ann = {}
    for k, v in (rule.get("annotations") or {}).items():
        for name, value in labels.items():
            v = v.replace("{{ $labels.%s }}" % name, value)
        ann[k] = v
    return {"exp_labels": dict(rule.get("labels") or {}, **labels), "exp_annotations": ann}


def promtool_tests(rules):
    """promtool unit tests: each alert fires on one set of series and stays
    silent on another."""
    by = {x["alert"]: x for x in rules}
    hook = f'name="{HOOK}",type="admit",operation="CREATE"'
    bucket = "vgpu_webhook_latency_seconds_bucket{job=\"%s\",le=\"%s\"}" % (RELEASE, "%s")
    cases = {
        "VgpuWebhookAPIServerFailOpen": (
            [(f"apiserver_admission_webhook_fail_open_count{{{hook}}}", "0x10 1x10"),
             ('apiserver_admission_webhook_fail_open_count{name="other.example.com"}', "0+1x20")],
            [("5m", []), ("12m", [alert(by["VgpuWebhookAPIServerFailOpen"])])]),
        "VgpuWebhookCallsRejected": (
            [(f'apiserver_admission_webhook_rejection_count{{{hook},error_type="calling_webhook_error",rejection_code="0"}}', "0x10 1x10"),
             (f'apiserver_admission_webhook_rejection_count{{{hook},error_type="no_error",rejection_code="403"}}', "0+1x20")],
            [("5m", []), ("12m", [alert(by["VgpuWebhookCallsRejected"])])]),
        "VgpuWebhookCertificateExpiresSoon": (
            [(f'vgpu_webhook_certificate_expiry_timestamp_seconds{{{JOB},pod="a"}}', "2000000x30"),
             (f'vgpu_webhook_certificate_expiry_timestamp_seconds{{{JOB},pod="b"}}', "3000000x10 1000000x20")],
            [("8m", []), ("25m", [alert(by["VgpuWebhookCertificateExpiresSoon"])])]),
        "VgpuWebhookReloadRefused": (
            [(f'vgpu_webhook_certificate_reloads_total{{{JOB},result="done"}}', "0+1x10 10x10"),
             (f'vgpu_webhook_config_reloads_total{{{JOB},result="refused"}}', "0x10 1x10")],
            [("8m", []), ("12m", [alert(by["VgpuWebhookReloadRefused"])])]),
        "VgpuWebhookErrors": (
            [(f'vgpu_webhook_requests_total{{{JOB},outcome="patched"}}', "0+100x40"),
             (f'vgpu_webhook_requests_total{{{JOB},outcome="error"}}', "0+1x15 16+20x25")],
            [("14m", []), ("35m", [alert(by["VgpuWebhookErrors"])])]),
        "VgpuWebhookSlow": (
            [(bucket % "0.05", "0+10x15 150x25"), (bucket % "0.1", "0+10x15 150x25"),
             (bucket % "0.25", "0+10x40"), (bucket % "+Inf", "0+10x40")],
            [("14m", []), ("35m", [alert(by["VgpuWebhookSlow"])])]),
        "VgpuWebhookTargetMissing": (
            [(f"up{{{JOB},instance=\"a\"}}", "1x5 0x20"), (f"up{{{JOB},instance=\"b\"}}", "1x5")],
            [("4m", []), ("20m", [alert(by["VgpuWebhookTargetMissing"])])]),
        # Every series exists from the start (the webhook exports all of
        # them at 0): one env denial fires, for its guard and action only;
        # another job's hits do not.
        "VgpuWebhookGuardHits": (
            [(f'vgpu_webhook_guard_hits_total{{{JOB},pod="a",guard="env",action="denied"}}',
              "0x10 1x30"),
             (f'vgpu_webhook_guard_hits_total{{{JOB},pod="a",guard="annotations",action="warned"}}',
              "0x40"),
             ('vgpu_webhook_guard_hits_total{job="other",guard="env",action="denied"}', "0+1x40")],
            [("8m", []),
             ("12m", [alert(by["VgpuWebhookGuardHits"], guard="env", action="denied")]),
             ("35m", [])]),
    }
    tests = []
    for name, (series, evals) in cases.items():
        tests.append({
            "interval": "1m",
            "input_series": [{"series": s, "values": v} for s, v in series],
            "alert_rule_test": [{"eval_time": t, "alertname": name, "exp_alerts": exp}
                                for t, exp in evals]})
    return tests


@checks
def test_alert_rules_promtool(helm):
    T.section("alerts: promtool check rules and promtool test rules")
    r = ops_render("alerts")
    if not r:
        return
    spec = r.one("PrometheusRule")["spec"]
    promtool = shutil.which("promtool")
    if not promtool:
        T.cannot("promtool: not installed (Debian's prometheus package; make deps)")
        return
    with tempfile.TemporaryDirectory() as d:
        rules = os.path.join(d, "rules.yaml")
        with open(rules, "w") as f:
            yaml.safe_dump(spec, f)
        p = subprocess.run([promtool, "check", "rules", rules], capture_output=True, text=True)
        T.check("promtool check rules: the rendered PrometheusRule", p.returncode == 0,
                p.stdout + p.stderr)
        tests = os.path.join(d, "tests.yaml")
        with open(tests, "w") as f:
            yaml.safe_dump({"rule_files": [rules], "evaluation_interval": "1m",
                            "tests": promtool_tests(spec["groups"][0]["rules"])}, f)
        p = subprocess.run([promtool, "test", "rules", tests], capture_output=True, text=True)
        T.check("promtool test rules: every alert fires on its series and not before",
                p.returncode == 0, (p.stdout + p.stderr)[-3000:])
        # The tests do test: a rule that can never fire fails them.
        broken = copy.deepcopy(spec)
        broken["groups"][0]["rules"][0]["expr"] = "vector(0) > 1"
        with open(rules, "w") as f:
            yaml.safe_dump(broken, f)
        p = subprocess.run([promtool, "test", "rules", tests], capture_output=True, text=True)
        T.check("promtool test rules: fails when an alert cannot fire", p.returncode != 0,
                p.stdout[-500:])


# --- selfSigned: CA overlap after regeneration -------------------------------

@checks
def test_self_signed_ca_overlap(helm):
    T.section("selfSigned: a regenerated CA keeps the old one in caBundle until the next upgrade")
    import base64
    first = C.render("overlap-first", [C.ci_values("selfsigned")])
    if not C.selfsigned_ok(first):
        return
    old = C.tls_secret_data(first, f"{RELEASE}-tls")
    old_hook = copy.deepcopy(first.one("MutatingWebhookConfiguration"))
    old_hook["metadata"].setdefault("annotations", {}).update({
        "meta.helm.sh/release-name": RELEASE, "meta.helm.sh/release-namespace": NS})
    old_hook["metadata"]["labels"]["app.kubernetes.io/managed-by"] = "Helm"
    with tempfile.TemporaryDirectory() as d, C.FakeAPIServer() as api:
        kubeconfig = os.path.join(d, "kubeconfig")
        C.write(kubeconfig, yaml.safe_dump({
            "apiVersion": "v1", "kind": "Config", "current-context": "fake",
            "clusters": [{"name": "fake", "cluster": {"server": f"http://127.0.0.1:{api.port}"}}],
            "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "fake"}}],
            "users": [{"name": "fake", "user": {"token": "fake"}}]}))
        env = C.helm_env()
        env["KUBECACHEDIR"] = os.path.join(d, "cache")

        def upgrade(name):
            p = subprocess.run([C.HELM, "template", RELEASE, CHART, "--namespace", NS,
                                "-f", C.ci_values("selfsigned"), *C.REGISTRY_SET,
                                "--dry-run=server",
                                "--disable-openapi-validation", "--kubeconfig", kubeconfig],
                               capture_output=True, text=True, env=env,
                               stdin=subprocess.DEVNULL, timeout=120)
            if not T.check(f"{name}: helm template --dry-run=server", p.returncode == 0,
                           p.stderr.strip()):
                return None, None, None
            r = C.Render(name, p.stdout)
            hook = r.one("MutatingWebhookConfiguration")
            return (C.tls_secret_data(r, f"{RELEASE}-tls"), hook,
                    base64.b64decode(hook["webhooks"][0]["clientConfig"]["caBundle"]))

        # The Secret was deleted; the webhook configuration still trusts the old CA.
        api.set_secret(None)
        api.webhook = old_hook
        data, hook, bundle = upgrade("overlap-regenerated")
        if data:
            T.check("overlap-regenerated: a new CA in the Secret", data["ca.crt"] != old["ca.crt"])
            T.equal("overlap-regenerated: caBundle is the new CA, then the old one",
                    bundle, data["ca.crt"] + old["ca.crt"])
            for leaf, tag in ((old["tls.crt"], "the old leaf"), (data["tls.crt"], "the new leaf")):
                with tempfile.NamedTemporaryFile("wb", suffix=".pem") as ca, \
                        tempfile.NamedTemporaryFile("wb", suffix=".pem") as crt:
                    ca.write(bundle)
                    ca.flush()
                    crt.write(leaf)
                    crt.flush()
                    rc, out, err = C.openssl("verify", "-CAfile", ca.name, crt.name)
                    T.check(f"overlap-regenerated: the bundle verifies {tag}", rc == 0, err)
            # The next upgrade: the Secret is there, so only its CA is trusted.
            api.set_secret(data)
            api.webhook = copy.deepcopy(hook)
            api.webhook["metadata"]["annotations"].update(old_hook["metadata"]["annotations"])
            api.webhook["metadata"]["labels"]["app.kubernetes.io/managed-by"] = "Helm"
            data2, _, bundle2 = upgrade("overlap-next")
            if data2:
                T.equal("overlap-next: the Secret is kept", data2, data)
                T.equal("overlap-next: caBundle is the Secret's CA alone", bundle2, data["ca.crt"])


# --- helm test, run: the test pod's own arguments against the binary --------

def serve(d, cert, key, client_ca=None):
    """The binary serving cert on 127.0.0.1; (process, port) once ready."""
    import socket
    import time
    port = C.free_port()
    argv = [C.BIN, "serve", "--listen", f"127.0.0.1:{port}", "--tls-cert-file", cert,
            "--tls-private-key-file", key, "--metrics-listen", ""]
    if client_ca:
        argv += ["--tls-client-ca-file", client_ca]
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=open(os.path.join(d, "serve.log"), "w"))
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), 0.5).close()
            return proc, port
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise AssertionError("the server did not start")


def run_pod_check(pod, port, files):
    """Runs the test pod's check with its own arguments, the Service URL
    pointed at 127.0.0.1:port (its name kept for SNI and verification) and
    the mounted files at local paths.  Returns (status, output)."""
    from urllib.parse import urlsplit
    args = list(pod["spec"]["containers"][0]["args"])
    i = args.index("--url") + 1
    url = urlsplit(args[i])
    args[i] = f"https://127.0.0.1:{port}{url.path}"
    args = [files.get(a, a) for a in args] + ["--server-name", url.hostname]
    p = subprocess.run([C.BIN] + args, capture_output=True, text=True,
                       stdin=subprocess.DEVNULL, timeout=60)
    return p.returncode, (p.stdout + p.stderr).strip()


@checks
def test_helm_test_runs(helm):
    T.section("helm test: the test pod's check passes against the binary serving the mode's pair")
    if not os.access(C.BIN, os.X_OK):
        T.cannot(f"no {C.BIN} (make build)")
        return
    with tempfile.TemporaryDirectory() as d:
        # selfSigned: the pair and CA the chart generated.
        r = C.render("run-selfsigned", [C.ci_values("selfsigned")])
        if C.selfsigned_ok(r):
            data = C.tls_secret_data(r, f"{RELEASE}-tls")
            for k in data:
                C.write(os.path.join(d, k), data[k])
            proc, port = serve(d, os.path.join(d, "tls.crt"), os.path.join(d, "tls.key"))
            try:
                rc, out = run_pod_check(helm_test_pod(r), port, {"/ca/ca.crt": os.path.join(d, "ca.crt")})
                T.check("run-selfsigned: helm test's check passes", rc == 0 and out.startswith("ok: "), out)
                other = C.render("run-other", [C.ci_values("selfsigned")])
                if C.selfsigned_ok(other):
                    C.write(os.path.join(d, "other.crt"),
                            C.tls_secret_data(other, f"{RELEASE}-tls")["ca.crt"])
                    rc, out = run_pod_check(helm_test_pod(other), port,
                                            {"/ca/ca.crt": os.path.join(d, "other.crt")})
                    T.check("run-selfsigned: a CA from another install fails with tls:",
                            rc == 1 and "tls:" in out, out)
            finally:
                proc.terminate()
                proc.wait(30)

        # existingSecret and clientAuth: a pair from certs/gen-certs.sh.
        gen = os.path.join(d, "gen")
        p = subprocess.run(["sh", C.GEN_CERTS, "--service", RELEASE, "--namespace", NS, "--out",
                            gen, "--client", "kube-apiserver", "--force"],
                           capture_output=True, text=True, timeout=60)
        if not T.check("gen-certs.sh makes a pair", p.returncode == 0, p.stderr):
            return
        bundle = p.stdout.strip()
        r = C.render("run-existing", [C.ci_values("existingsecret")],
                     sets=[f"certificates.existingSecret.caBundle={bundle}"])
        if not r:
            return
        pod = helm_test_pod(r)
        C.write(os.path.join(d, "annotation-ca.crt"),
                pod["metadata"]["annotations"]["vgpu-webhook.hami.io/ca.crt"].encode())
        proc, port = serve(d, os.path.join(gen, "tls.crt"), os.path.join(gen, "tls.key"))
        try:
            rc, out = run_pod_check(pod, port, {"/ca/ca.crt": os.path.join(d, "annotation-ca.crt")})
            T.check("run-existing: helm test's check passes with the CA of the annotation",
                    rc == 0, out)
        finally:
            proc.terminate()
            proc.wait(30)

        r = C.render("run-client", [C.ci_values("existingsecret")],
                     sets=[f"certificates.existingSecret.caBundle={bundle}",
                           "clientAuth.enabled=true", "clientAuth.caConfigMap=apiserver-ca",
                           "helmTest.clientCertSecret=check-client"])
        if not r:
            return
        pod = helm_test_pod(r)
        proc, port = serve(d, os.path.join(gen, "tls.crt"), os.path.join(gen, "tls.key"),
                           client_ca=os.path.join(gen, "ca.crt"))
        files = {"/ca/ca.crt": os.path.join(d, "annotation-ca.crt"),
                 "/client/tls.crt": os.path.join(gen, "client.crt"),
                 "/client/tls.key": os.path.join(gen, "client.key")}
        try:
            rc, out = run_pod_check(pod, port, files)
            T.check("run-client: helm test's check passes with the client certificate", rc == 0, out)
            bare = copy.deepcopy(pod)
            a = bare["spec"]["containers"][0]["args"]
            del a[a.index("--cert-file"):a.index("--key-file") + 2]
            rc, out = run_pod_check(bare, port, files)
            T.check("run-client: without it the webhook answers 403", rc == 1 and "403" in out, out)
        finally:
            proc.terminate()
            proc.wait(30)
