#!/usr/bin/python3
"""Writes the fuzzers' seed corpora from the recorded fixtures.

usage: seeds.py OUTDIR
  OUTDIR/review/   every fixture's review.json
  OUTDIR/policy/   a config selector byte, then every fixture's pod
  OUTDIR/quantity/ quantities from the fixtures and a fixed list
  OUTDIR/pick/     short JSON texts, valid and not, some nested deeper
                   than jansson reads; each also after a tab and after a
                   carriage return (read again deep down by fuzz_pick)
  (and OUTDIR/review/ also reviews whose managedFields nest 2100 deep, and
  each review after a newline, which fuzz_review reads again with them;
  each review ends in 0 to 3 newlines, fuzz_review's config selector,
  taken in turn so that every config has seeds of every kind)
  OUTDIR/yaml/     a selector byte, then YAML streams and manifests
  OUTDIR/prefix/   the first KiB of every fixture's review, written as the
                   API server writes it, and a few starts made by hand
  OUTDIR/hami/     HAMi's device-config.yaml of the fixtures, and the
                   YAML streams
  OUTDIR/config/   the fixtures' config files, the chart's values files,
                   and each config file as YAML in a ConfigMap
"""
import copy
import json
import os
import shutil
import sys

QUANTITIES = ["0", "1", "-1", "+1", "1.5", ".5", "5.", "500m", "1n", "1u",
              "3k", "1M", "2G", "4T", "5P", "6E", "1Ki", "16Gi", "8Ei",
              "1e3", "1E3", "1e-3", "1.5e+2", "9223372036854775807",
              "9223372036854775808", "0.000000001", "1e999999999",
              "1e-999999999", "", ".", "1.2.3", "1K", "1ki", " 1", "--1"]


PICK = [b'{"a":[1,-0.5e3,true,null],"o":{"a":"x","b":{"c":[]},"z":1},'
        b'"l":[{"a":1,"b":2},[],"s",3],"skip":{"q":"\\u00e9\\ud83d\\ude00"}}',
        b'[{"a":1,"a":2}]', b'{"o":[1],"l":{"a":1}}', b'[1\x00]',
        b'{"\\u0061":1,"a":2}', b'[9223372036854775807,1e309]',
        b'[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]',
        b'["\xc3\xa9\xed\xa0\x80"]', b'{"a":"\\ud800\\u0041"}',
        b'[{"k\\u0000":1},{"\\\\u0000":2}]',
        # deeper than jansson's 2048 levels: dropped, stubbed, kept
        b'{"skip":' + b'[' * 2100 + b']' * 2100 + b',"a":1}',
        b'{"o":{"b":' + b'{"k":' * 2100 + b'1' + b'}' * 2100 + b'}}',
        b'{"l":[{"x":' + b'[{"k":1,"k":' * 1100 + b'2' + b'}]' * 1100
        + b'}]}',
        b'{"a":' + b'[' * 2100 + b']' * 2100 + b'}']

# managedFields as a tenant may give them: fieldsV1 nested 2100 deep.
DEEP_FIELDS = {"manager": "tenant", "operation": "Update", "apiVersion": "v1",
               "fieldsType": "FieldsV1", "fieldsV1": "DEEP"}
DEEP_TEXT = '{"f:a":' * 2100 + '{}' + '}' * 2100


def deep_managed_fields(review):
    """review (a CREATE) with a managedFields entry nested 2100 deep, as
    text: Python's json cannot write it."""
    r = copy.deepcopy(review)
    meta = r["request"]["object"].get("metadata")
    if not isinstance(meta, dict):
        return None
    meta["managedFields"] = [DEEP_FIELDS]
    return json.dumps(r).replace('"fieldsV1": "DEEP"',
                                 '"fieldsV1": ' + DEEP_TEXT)

YAML = [b"a: 1\n---\n# c\nb: [y, n, 1e3, '1', ~, 0x1f, 1:20, 2001-12-14]\n",
        b"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\n"
        b"spec:\n  template:\n    spec:\n      containers:\n      - name: c\n"
        b"        resources: {limits: {nvidia.com/gpu: 1}}\n",
        b"apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Pod, "
        b"spec: {containers: [{name: c}]}}\n",
        b"x: &a [1, 2]\ny: *a\nz: {<<: {k: v}, j: |\n  lit\n}\n",
        b"a: &a [x,x]\nb: &b [*a,*a]\nc: [*b,*b]\n",
        b"? [a]\n: b\n", b"a: !!str 1\nb: !!float 2\n", b"- - - [[{}]]\n",
        b'"k\\u2028": "\\x85 \\t"\n']


PREFIX = [b'{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1",'
          b'"request":{"uid":"a\\"b\\u00e9\\ud83d\\ude00"',
          b' {"x":[1,"}]",{"a":null}],"apiVersion":"admission.k8s.io/v1beta1",'
          b'"kind":"AdmissionReview","request":{"kind":{"kind":"Pod"},"uid":"u"',
          b'{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1",'
          b'"request":{"uid":"\\ud800"}}',
          b'{"kind":"AdmissionReview","kind":"AdmissionReview"}']


def go_order(review):
    """review with kind and apiVersion first, as the API server writes it."""
    if not isinstance(review, dict):
        return review
    out = {k: review[k] for k in ("kind", "apiVersion") if k in review}
    out.update(review)
    return out


def objects(value):
    """The elements of value that are objects, when it is a list (the
    fixtures include pods with fields of the wrong JSON type on purpose)."""
    return [v for v in value if isinstance(v, dict)] \
        if isinstance(value, list) else []


def pod_quantities(pod):
    """Every string under resources.limits and .requests of every container."""
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        return
    for c in objects(spec.get("containers")) + objects(spec.get("initContainers")):
        res = c.get("resources")
        if not isinstance(res, dict):
            continue
        for m in (res.get("limits"), res.get("requests")):
            if isinstance(m, dict):
                yield from (v for v in m.values() if isinstance(v, str))


def update_reviews(review):
    """UPDATE reviews made from a CREATE: one that adds a guarded
    annotation, one that removes it, and an ephemeralcontainers UPDATE
    with a guarded env entry."""
    req = review.get("request")
    pod = req.get("object") if isinstance(req, dict) else None
    if not isinstance(pod, dict) or not isinstance(pod.get("metadata"), dict):
        return []
    old = copy.deepcopy(pod)
    new = copy.deepcopy(pod)
    ann = new["metadata"].get("annotations")
    new["metadata"]["annotations"] = dict(ann) if isinstance(ann, dict) else {}
    new["metadata"]["annotations"]["hami.io/vgpu-node"] = "gpu-node-1"
    out = []
    for a, b, user in ((old, new, "alice"), (new, old, "alice"),
                       (old, new, "system:serviceaccount:kube-system:"
                                  "hami-scheduler")):
        r = copy.deepcopy(review)
        r["request"].update(operation="UPDATE", object=b, oldObject=a,
                            userInfo={"username": user,
                                      "groups": ["system:authenticated"]})
        out.append(r)
    if isinstance(new.get("spec"), dict):
        eph = copy.deepcopy(old)
        eph["spec"]["ephemeralContainers"] = [{
            "name": "debugger", "image": "busybox",
            "env": [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]}]
        r = copy.deepcopy(review)
        r["request"].update(operation="UPDATE", object=eph, oldObject=old,
                            subResource="ephemeralcontainers")
        out.append(r)
    return out


def config_tail(raw, selector):
    """raw (bytes) ending in selector % 4 newlines: the config fuzz_review
    decides it with."""
    return raw.rstrip(b" \t\r\n") + b"\n" * (selector % 4)


def config_seeds(out, root, names):
    """OUTDIR/config/: fixture configs as they are and in a ConfigMap, and
    the chart's values files."""
    for name in names:
        path = os.path.join(root, name, "config.json")
        if not os.path.exists(path):
            continue
        with open(path, "rb") as f:
            raw = f.read()
        with open(os.path.join(out, "config", name), "wb") as f:
            f.write(raw)
        with open(os.path.join(out, "config", name + "-configmap"), "wb") as f:
            f.write(b"apiVersion: v1\nkind: ConfigMap\ndata:\n  config.json: |\n" +
                    b"".join(b"    " + line + b"\n" for line in raw.splitlines()))
    chart = os.path.join(os.path.dirname(__file__), "..", "..", "charts", "vgpu-webhook")
    for path in [os.path.join(chart, "values.yaml")] + sorted(
            os.path.join(chart, "ci", n) for n in os.listdir(os.path.join(chart, "ci"))):
        shutil.copyfile(path, os.path.join(out, "config", "values-" + os.path.basename(path)))


def main():
    out = sys.argv[1]
    for sub in ("review", "policy", "quantity", "pick", "yaml", "prefix", "hami",
                "config"):
        os.makedirs(os.path.join(out, sub), exist_ok=True)
    root = os.path.join(os.path.dirname(__file__), "..", "fixtures", "cases")
    quantities = set(QUANTITIES)
    names = sorted(os.listdir(root)) if os.path.isdir(root) else []
    for n, name in enumerate(names):
        path = os.path.join(root, name, "review.json")
        if not os.path.exists(path):
            continue
        with open(path, "rb") as f:
            raw = f.read()
        with open(os.path.join(out, "review", name), "wb") as f:
            f.write(config_tail(raw, n))
        # fuzz_review reads one that starts with white space again with
        # deep managedFields
        with open(os.path.join(out, "review", name + "-lead"), "wb") as f:
            f.write(b"\n" + config_tail(raw, n + 1))
        try:
            review = json.loads(raw)
        except (ValueError, RecursionError):  # a deep fixture
            continue
        with open(os.path.join(out, "prefix", name), "wb") as f:
            f.write(json.dumps(go_order(review)).encode()[:1024])
        if isinstance(review, dict) and \
                (review.get("request") or {}).get("operation") == "CREATE":
            for i, r in enumerate(update_reviews(review)):
                with open(os.path.join(out, "review", "%s-update%d" % (name, i)),
                          "wb") as f:
                    f.write(config_tail(json.dumps(r).encode(), n + i + 2))
            deep = deep_managed_fields(review) \
                if isinstance(review["request"].get("object"), dict) else None
            if deep:
                with open(os.path.join(out, "review", "%s-deep" % name),
                          "wb") as f:
                    f.write(config_tail(deep.encode(), n + 3))
        pod = (review.get("request") or {}).get("object")
        if not isinstance(pod, dict):
            continue
        for selector in range(4):
            with open(os.path.join(out, "policy", "%s-%d" % (name, selector)),
                      "wb") as f:
                f.write(bytes([selector]) + json.dumps(pod).encode())
        quantities.update(pod_quantities(pod))
    for i, text in enumerate(PREFIX):
        with open(os.path.join(out, "prefix", "h%02d" % i), "wb") as f:
            f.write(text)
    for i, text in enumerate(PICK):
        # fuzz_pick reads a text that starts with a tab or a carriage
        # return again 3000 levels deep, dropped or stubbed
        for lead, tag in ((b"", ""), (b"\t", "-drop"), (b"\r", "-stub")):
            with open(os.path.join(out, "pick", "p%02d%s" % (i, tag)),
                      "wb") as f:
                f.write(lead + text)
    for i, text in enumerate(YAML):
        for selector in (0, 5):
            with open(os.path.join(out, "yaml", "y%02d-%d" % (i, selector)),
                      "wb") as f:
                f.write(bytes([selector]) + text)
    # KRM ResourceLists recorded from kustomize and kpt (behaviour §8)
    krm = os.path.join(os.path.dirname(__file__), "..", "manifests", "krm")
    for name in sorted(os.listdir(krm)) if os.path.isdir(krm) else []:
        with open(os.path.join(krm, name), "rb") as f:
            text = f.read()
        for selector in (0, 4):
            with open(os.path.join(out, "yaml", "k-%s-%d" % (name, selector)),
                      "wb") as f:
                f.write(bytes([selector]) + text)
    hami = os.path.join(os.path.dirname(__file__), "..", "fixtures", "hami")
    for name in sorted(os.listdir(hami)) if os.path.isdir(hami) else []:
        shutil.copyfile(os.path.join(hami, name), os.path.join(out, "hami", name))
    for i, text in enumerate(YAML):
        with open(os.path.join(out, "hami", "y%02d" % i), "wb") as f:
            f.write(text)
    config_seeds(out, root, names)
    for i, q in enumerate(sorted(quantities)):
        with open(os.path.join(out, "quantity", "q%03d" % i), "w") as f:
            f.write(q)


if __name__ == "__main__":
    main()
