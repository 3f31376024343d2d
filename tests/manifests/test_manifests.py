#!/usr/bin/python3
"""`vgpu-webhook default` on manifests (SPEC section 8), under pytest.

    make fixtures          (runs this file after the corpus)
    /usr/bin/python3 -m pytest tests/manifests/test_manifests.py

YAML is judged as Kubernetes reads it: goyaml/ (go-yaml v2 from Debian's
golang-gopkg-yaml.v2-dev, built in GOPATH mode, plus sigs.k8s.io/yaml's
conversion to JSON) reads both the input and the output.  PyYAML is not
used as a reference: it reads y, n and 1:20 differently.  The expected
change of a pod template is the patch that `review` (serve's code path)
sends for the same pod, applied to the input with python3-jsonpatch.
"""

import base64
import copy
import json
import os
import shlex
import shutil
import subprocess
import tempfile

import jsonpatch
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
GOYAML_SRC = os.path.join(HERE, "goyaml")
GOYAML_BIN = os.path.join("build", "manifests", "goyaml")
GOYAML_PKG = "/usr/share/gocode/src/gopkg.in/yaml.v2"
TIMEOUT = 120

GPU_CONTAINER = """\
      - name: cuda
        image: nvcr.io/nvidia/cuda:12.2.0-runtime-ubuntu22.04
        resources:
          limits:
            nvidia.com/gpu: 1
"""


def command():
    return shlex.split(os.environ.get("VGPU_WEBHOOK", "build/vgpu-webhook"))


def run(args, stdin=b""):
    p = subprocess.run(command() + args, input=stdin, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=TIMEOUT)
    return p.returncode, p.stdout, p.stderr.decode("utf-8", "replace")


_goyaml = {}


def goyaml():
    """The goyaml binary, built on first use; skips when Go or go-yaml v2
    is missing."""
    if "path" in _goyaml:
        return _goyaml["path"]
    go = shutil.which("go")
    if not go:
        pytest.skip("no go in PATH (Debian package golang-go)")
    if not os.path.isdir(GOYAML_PKG):
        pytest.skip("no %s (Debian package golang-gopkg-yaml.v2-dev)"
                    % GOYAML_PKG)
    src = os.path.join(GOYAML_SRC, "main.go")
    if not (os.path.exists(GOYAML_BIN) and
            os.path.getmtime(GOYAML_BIN) >= os.path.getmtime(src)):
        os.makedirs(os.path.dirname(GOYAML_BIN), exist_ok=True)
        env = dict(os.environ, GO111MODULE="off", GOPATH="/usr/share/gocode",
                   GOFLAGS="")
        if not os.access(os.path.expanduser("~"), os.W_OK):
            env["GOCACHE"] = os.path.abspath(os.path.join("build", "manifests",
                                                          "gocache"))
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(GOYAML_BIN),
                                   prefix=".goyaml.")
        os.close(fd)
        p = subprocess.run([go, "build", "-o", os.path.abspath(tmp), "."],
                           cwd=GOYAML_SRC, env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=600)
        assert p.returncode == 0, "goyaml does not build:\n" + p.stdout.decode()
        os.replace(tmp, GOYAML_BIN)
    _goyaml["path"] = GOYAML_BIN
    return GOYAML_BIN


def read_yaml(data):
    """The documents of the YAML stream data as Kubernetes reads them
    (empty documents dropped)."""
    p = subprocess.run([goyaml()], input=data, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=TIMEOUT)
    assert p.returncode == 0, "go-yaml refuses %r: %s" % (data[:300], p.stderr)
    return [d for d in json.loads(p.stdout) if d is not None]


def review_patch(pod, namespace="default"):
    """The JSON Patch `review` sends for a Pod CREATE of pod."""
    req = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
           "request": {"uid": "0b6a2d38-5c1e-4b7e-9a55-3f0f3b0f3d11",
                       "kind": {"group": "", "version": "v1", "kind": "Pod"},
                       "resource": {"group": "", "version": "v1",
                                    "resource": "pods"},
                       "namespace": namespace, "operation": "CREATE",
                       "userInfo": {"username": "ci"}, "object": pod,
                       "oldObject": None, "dryRun": False}}
    rc, out, err = run(["review", "-"], json.dumps(req).encode())
    assert rc == 0, err
    resp = json.loads(out)["response"]
    assert resp["allowed"], resp
    if "patch" not in resp:
        return []
    return json.loads(base64.b64decode(resp["patch"]))


def expect_defaulted(obj, path):
    """obj with the pod template at path patched as review patches it."""
    obj = copy.deepcopy(obj)
    parent = obj
    for k in path:
        parent = parent[k]
    pod = {"apiVersion": "v1", "kind": "Pod"}
    for k in ("metadata", "spec"):
        if k in parent:
            pod[k] = parent[k]
    ops = review_patch(pod)
    pod = jsonpatch.apply_patch(pod, ops)
    if path:
        for k in ("metadata", "spec"):
            if k in pod:
                parent[k] = pod[k]
        return obj, len(ops)
    return pod, len(ops)


def workload(api, kind, name, body):
    return ("apiVersion: %s\nkind: %s\nmetadata:\n  name: %s\n"
            "  namespace: ml\n%s" % (api, kind, name, body))


TEMPLATE = """\
  template:
    metadata:
      labels:
        app: trainer
    spec:
      containers:
""" + GPU_CONTAINER

SPEC_TEMPLATE = "spec:\n  replicas: 2\n  selector:\n    matchLabels:\n" \
    "      app: trainer\n" + TEMPLATE

JOB_TEMPLATE = """\
spec:
  schedule: "*/5 * * * *"
  jobTemplate:
    spec:
      template:
        metadata:
          labels:
            app: trainer
        spec:
          restartPolicy: Never
          containers:
""" + "\n".join("      " + line if line else line
                for line in GPU_CONTAINER.split("\n"))

KINDS = [
    ("apps/v1", "Deployment", SPEC_TEMPLATE, ["spec", "template"]),
    ("apps/v1", "ReplicaSet", SPEC_TEMPLATE, ["spec", "template"]),
    ("apps/v1", "StatefulSet", SPEC_TEMPLATE, ["spec", "template"]),
    ("apps/v1", "DaemonSet", SPEC_TEMPLATE, ["spec", "template"]),
    ("batch/v1", "Job", "spec:\n" + TEMPLATE, ["spec", "template"]),
    ("v1", "ReplicationController", SPEC_TEMPLATE, ["spec", "template"]),
    ("batch/v1", "CronJob", JOB_TEMPLATE,
     ["spec", "jobTemplate", "spec", "template"]),
    ("batch/v1beta1", "CronJob", JOB_TEMPLATE,
     ["spec", "jobTemplate", "spec", "template"]),
    ("v1", "PodTemplate", TEMPLATE.replace("\n  ", "\n").lstrip(" "),
     ["template"]),
    ("v1", "Pod", "spec:\n  containers:\n" + "\n".join(
        line[4:] for line in GPU_CONTAINER.split("\n")), []),
]


@pytest.mark.parametrize("api,kind,body,path", KINDS,
                         ids=["%s/%s" % (k[0], k[1]) for k in KINDS])
def test_workload_kind(api, kind, body, path):
    src = workload(api, kind, "trainer", body).encode()
    [obj] = read_yaml(src)
    want, nops = expect_defaulted(obj, path)
    assert nops > 0
    rc, out, err = run(["default", "-"], src)
    assert rc == 0, err
    assert read_yaml(out) == [want]
    assert ('warning: %s ml/trainer: container "cuda": set '
            'nvidia.com/gpumem=5000 (defaultMemory)' % kind) in err
    # Key order: the input's keys first, in their order.
    assert out.decode().startswith("apiVersion: %s\nkind: %s\nmetadata:\n"
                                   % (api, kind))
    # Round trip: the output is a fixed point.
    rc2, out2, err2 = run(["default", "-"], out)
    assert (rc2, out2) == (0, out), err2
    rc3, out3, err3 = run(["default", "--check", "-"], out)
    assert (rc3, out3, err3) == (0, b"", "")
    rc4, out4, err4 = run(["default", "--check", "-"], src)
    assert (rc4, out4) == (3, b"")
    assert err4 == "%s ml/trainer: %d operations\n" % (kind, nops)


def test_other_group_passes_unchanged_with_a_warning():
    """A kind not known whose containers ask for a GPU: its pods would go
    undecided, which default says and --check fails on."""
    src = (workload("example.com/v1", "Job", "j", "spec:\n" + TEMPLATE) +
           "---\n" +
           workload("apps/v1beta2", "Deployment", "d", SPEC_TEMPLATE)).encode()
    rc, out, err = run(["default", "-"], src)
    assert rc == 0
    assert out == src
    for kind, api, name in (("Job", "example.com/v1", "j"),
                            ("Deployment", "apps/v1beta2", "d")):
        assert ("warning: %s ml/%s: spec.template.spec.containers[0] asks for "
                "nvidia.com/gpu, but vgpu-webhook does not know where the pod "
                "templates of %s %s are: its pods are not defaulted (name "
                "them in the config's \"workloads\")\n" % (kind, name, api,
                                                            kind)) in err, err
    rc, out, err = run(["default", "--check", "-"], src)
    assert (rc, out) == (3, b"")
    assert err.startswith("Job ml/j: spec.template.spec.containers[0] asks "
                          "for nvidia.com/gpu, but "), err


def test_unknown_kind_without_gpu_is_clean():
    src = (workload("example.com/v1", "Job", "j", "spec:\n" + TEMPLATE.replace(
        "nvidia.com/gpu: 1", "cpu: 1")) + "---\n" +
        "apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: q}\n"
        "spec:\n  hard: {requests.nvidia.com/gpu: 4}\n").encode()
    for args in (["default", "-"], ["default", "--check", "-"]):
        rc, out, err = run(args, src)
        assert (rc, err) == (0, ""), err


STREAM = b"""\
# rendered by helm template
---
# Source: chart/templates/config.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings   # trailing comment
  labels: &labels
    app: trainer
    tier: "1"
data:
  enabled: "yes"
---
---
# Source: chart/templates/deploy.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: trainer
  labels: &labels
    app: trainer
spec:
  selector:
    matchLabels: *labels
  template:
    metadata:
      labels: *labels
    spec:
      containers:
""" + GPU_CONTAINER.encode() + b"""\
...
---
apiVersion: v1
kind: Service
metadata: {name: trainer, labels: &l {app: trainer, tier: "1"}}
spec: {ports: [{port: 80, targetPort: 8080}], selector: *l}
"""


def test_stream_comments_empty_documents_anchors():
    docs = read_yaml(STREAM)
    assert [d["kind"] for d in docs] == ["ConfigMap", "Deployment", "Service"]
    want = [docs[0], expect_defaulted(docs[1], ["spec", "template"])[0],
            docs[2]]
    rc, out, err = run(["default", "--namespace", "ml", "-"], STREAM)
    assert rc == 0, err
    assert read_yaml(out) == want
    assert "warning: Deployment ml/trainer: " in err
    # The documents not changed, and the text around the changed one's
    # value, come out as they went in.
    head, _, rest = STREAM.partition(b"apiVersion: apps/v1\n")
    assert out.startswith(head)
    assert out.endswith(b"...\n" + STREAM.partition(b"...\n")[2])
    assert out.count(b"# Source: ") == 2 and out.count(b"---\n") == 4


QUIET = [
    # comments, quoting, flow style, key order, indentation, markers
    b"# top\n---\napiVersion: v1   # trailing\nkind: ConfigMap\n"
    b"metadata: {name: 'q', labels: {b: \"2\", a: '1'}}\n"
    b"data:\n    z: |\n        #!/bin/sh\n        echo hi\n    a: >-\n      folded\n"
    b"...\n# between\n---\n---\n# an empty document above\n"
    b"kind: Service\napiVersion: v1\nmetadata:\n    name: s\n# end\n",
    # a pod asking for no GPU, with a byte order mark, CRLF and text
    # outside ASCII
    b"\xef\xbb\xbfapiVersion: v1\r\nkind: Pod\r\nmetadata:\r\n  name: caf\xc3\xa9\r\n"
    b"spec:\r\n  containers:\r\n  - name: c\r\n    image: \"\xe2\x82\xac\"\r\n",
    # comments only, and nothing at all
    b"# only a comment\n", b"---\n---\n", b"",
    # JSON, indented its own way
    b'{ "apiVersion":"v1",\n  "kind":"Pod", "metadata":{"name":"p"},\n'
    b'  "spec":{"containers":[{"name":"c","image":"i"}]} }\n',
]


@pytest.mark.parametrize("src", QUIET)
def test_unchanged_stream_is_byte_identical(src):
    rc, out, err = run(["default", "-"], src)
    assert (rc, err) == (0, "")
    assert out == src


COMMENTED = b"""\
# Source: chart/templates/job.yaml
apiVersion: batch/v1
kind: Job
metadata:
  name: train
  namespace: ml
  # the team's label
  labels:
    team: ml
spec:
  template:
    spec:
      # GPU work

      # (two groups)
      containers:
      - # an item that opens with a comment: not a comment line
        name: cuda
        image: cuda
        # one card
        resources:
          limits:
            nvidia.com/gpu: 1
        command:
        - sh
        - -c
        - |
          # not a comment: the script's first line
          echo hi
        args: ["#not", "# a comment either"]
      # restart
      restartPolicy: Never
      # last of the template
# end of the value
"""


def comment_lines(text):
    return [line for line in text.splitlines()
            if line.lstrip().startswith(b"#") and b"not a comment" not in line]


def test_changed_document_keeps_every_comment_line():
    rc, out, err = run(["default", "-"], COMMENTED)
    assert rc == 0, err
    [job] = read_yaml(out)
    assert job == expect_defaulted(read_yaml(COMMENTED)[0], ["spec", "template"])[0]
    # every comment line, in its order, and each before the line it
    # stood before
    assert comment_lines(out) == comment_lines(COMMENTED)
    lines = out.splitlines()
    for comment, follows in ((b"  # the team's label", b"  labels:"),
                             (b"      # (two groups)", b"      containers:"),
                             (b"        # one card", b"        resources:"),
                             (b"      # restart", b"      restartPolicy: Never")):
        assert lines[lines.index(comment) + 1] == follows, out.decode()
    # the block scalar's "#" line is its text, not a comment put back, and
    # an item's comment after its "- " goes with the item's line
    assert out.count(b"not a comment") == 1
    rc2, out2, _ = run(["default", "-"], out)
    assert (rc2, out2) == (0, out)


def test_comment_lines_indented_by_tabs_still_read():
    # A tab may indent a comment inside a flow collection, not at the start
    # of a block line: put back, the indent is spaces, a blank line empty.
    src = (b"apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ml}\n"
           b"spec:\n  containers: [\n\t# c\n \t\n\t# d\n"
           b"    {name: a, image: x, resources: {limits: {nvidia.com/gpu: 1}}}]\n")
    rc, out, err = run(["default", "-"], src)
    assert rc == 0, err
    assert b"\t" not in out and b" # c\n\n # d\n" in out
    assert read_yaml(out) == [expect_defaulted(read_yaml(src)[0], [])[0]]
    rc2, out2, _ = run(["default", "-"], out)
    assert (rc2, out2) == (0, out)


def test_changed_document_keeps_its_neighbours_bytes():
    other = b"# Source: cm.yaml\napiVersion: v1\nkind: ConfigMap\n" \
        b"metadata: {name: cm}   # flow\ndata: {k: 'v'}\n"
    pod = workload("v1", "Pod", "p", KINDS[-1][2]).encode()
    src = other + b"---\n# Source: pod.yaml\n" + pod + b"...\n---\n" + other + \
        b"# the end\n"
    rc, out, err = run(["default", "-"], src)
    assert rc == 0, err
    assert out.startswith(other + b"---\n# Source: pod.yaml\n")
    assert out.endswith(b"...\n---\n" + other + b"# the end\n")
    docs = read_yaml(out)
    assert docs[1] == expect_defaulted(read_yaml(pod)[0], [])[0]
    # and the defaulted stream is left as it is the second time
    rc2, out2, _ = run(["default", "-"], out)
    assert (rc2, out2) == (0, out)


def test_list_json_stays_json():
    items = [json.loads(json.dumps(read_yaml(workload(
        api, kind, "w%d" % i, body).encode())[0]))
        for i, (api, kind, body, _) in enumerate(KINDS[:3])]
    lst = {"apiVersion": "v1", "kind": "List", "metadata": {},
           "items": items + [{"apiVersion": "v1", "kind": "Service",
                              "metadata": {"name": "s"}}]}
    rc, out, err = run(["default", "-"], json.dumps(lst, indent=1).encode())
    assert rc == 0, err
    got = json.loads(out)
    want = copy.deepcopy(lst)
    for i, (_, _, _, path) in enumerate(KINDS[:3]):
        want["items"][i] = expect_defaulted(items[i], path)[0]
    assert got == want
    assert list(got) == ["apiVersion", "kind", "metadata", "items"]


def test_list_yaml_and_typed_list():
    src = b"apiVersion: apps/v1\nkind: DeploymentList\nitems:\n- " + \
        workload("apps/v1", "Deployment", "a", SPEC_TEMPLATE).replace(
            "\n", "\n  ").rstrip(" ").encode()
    [lst] = read_yaml(src)
    rc, out, err = run(["default", "-"], src)
    assert rc == 0, err
    [got] = read_yaml(out)
    assert got["kind"] == "DeploymentList"
    assert got["items"] == [expect_defaulted(lst["items"][0],
                                             ["spec", "template"])[0]]


SCALARS = b"""\
apiVersion: v1
kind: ConfigMap
metadata:
  name: scalars
data:
  y: y
  Y_: Y
  yes_: yes
  "no": no
  On_: On
  OFF: OFF
  tilde: ~
  empty:
  Null_: Null
  exp: 1e3
  expneg: -1.5E-3
  dot: .5
  hex: 0x1F
  oct: 017
  oct2: 0o17
  bin: 0b101
  under: 1_000
  huge: 99999999999999999999
  eight: 08
  quoted: "1"
  single: 'true'
  time: 1:20
  date: 2001-12-14
  stamp: 2001-12-14T21:59:43.10-05:00
  ver: 1.10
  str: !!str 123
  int: !!int "7"
  colon: "a: b"
  hash: "a #b"
  lead: " x"
  multi: |
    line one
    line two
  folded: >
    folded
    text
  unicode: "caf\\u00e9 \\u2028 \\x85 end"
  ctl: "tab\\tbell\\a"
  dash: -x
  dashes: --flag
  dashnum: -1
  merge: {<<: [{a: 1}, {b: 2}], c: 3}
  1: int key
  2.5: real key
  1e6: real key 2
  0.00001: real key 3
  100.0: real key 4
  1234567.0: real key 5
  list: [a, 'b', "c", 1.0, -0, +7]
  edges: [0x, +0x1, -0x1F, 0X1F, 0B11, 0b2, -0b101, 0o, 00, "+", -, 1__0, _1,
          1., +.5, .5., 1e, 1e+3, 1.5E3, 1_000.5, 9223372036854775807,
          -9223372036854775808, 1e400, .5e400, ._5,
          .Inf_, nulL, nO, oN, Off, tRUE, yES, -.5, +1_0, 0_x1, 12:30:45,
          2001-12-14t21:59:43.10-05:00, 1.0.0, v1, =, <<a]
"""


def rewritten(src):
    """src (one YAML mapping) as a GPU Pod's member "x": a document the
    defaulter changes, so that it writes the whole of it anew."""
    pod = workload("v1", "Pod", "p", KINDS[-1][2]).encode()
    return pod + b"x:\n" + b"".join(b"  " + line + b"\n"
                                    for line in src.splitlines())


def test_yaml_scalars_read_as_go_yaml_reads_them():
    src = rewritten(SCALARS)
    rc, out, err = run(["default", "-"], src)
    assert rc == 0, err
    assert read_yaml(out)[0]["x"] == read_yaml(SCALARS)[0]
    text = out.decode()
    for quoted in ['"no"', '"1"', '"1:20"', '"2001-12-14"',
                   '"true"', '"123"']:
        assert quoted in text, quoted
    rc2, out2, _ = run(["default", "-"], out)
    assert (rc2, out2) == (0, out)


def test_integer_beyond_int64_becomes_a_real():
    # go-yaml keeps a uint64; JSON numbers go through jansson here, which
    # has none (README, "What survives").
    rc, out, err = run(["default", "-"], rewritten(b"a: 9223372036854775808"))
    assert rc == 0 and out.endswith(b"x:\n  a: 9.223372036854776e+18\n"), (out, err)


def test_strings_needing_quotes_survive():
    words = ["y", "Y", "n", "yes", "No", "on", "OFF", "true", "False", "null",
             "Null", "~", "", "1", "-1", "+1", "1e3", "1E3", ".5", "0x10",
             "0o7", "0b1", "017", "1_0", "1:20", "2001-12-14",
             "2001-12-14 21:59:43.10", ".inf", "-.Inf", ".NaN", "<<", "- x",
             "#c", "a #c", "a: b", "[x]", "{x}", "*x", "&x", "!x", "%x",
             "@x", "`x", "'x'", '"x"', "x ", " x", "x\ny", "---", "...",
             "? x", "|", ">", "caf\u00e9", "\u2028", "\ufeff", "tab\t"]
    data = {"k%d" % i: w for i, w in enumerate(words)}
    data.update({w: "key" for w in words if w})
    obj = {"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": "words"}, "data": data}
    # JSON in gives JSON out; YAML out is tested through a YAML input
    # that go-yaml reads as obj (JSON is YAML, in flow style), in a
    # document the defaulter changes and so writes anew.
    src = rewritten(b"# words\n" + json.dumps(obj).encode())
    rc, out, err = run(["default", "-"], src)
    assert rc == 0, err
    assert read_yaml(out)[0]["x"] == obj


def test_json_in_json_out_round_trip():
    pod = read_yaml(workload("v1", "Pod", "p", KINDS[-1][2]).encode())[0]
    pod["spec"]["containers"][0]["resources"]["requests"] = {"cpu": 0.1}
    rc, out, err = run(["default", "-"], json.dumps(pod).encode())
    assert rc == 0, err
    got = json.loads(out)
    assert got == expect_defaulted(pod, [])[0]
    assert b'"cpu": 0.1' in out
    rc2, out2, _ = run(["default", "-"], out)
    assert (rc2, out2) == (0, out)


PINNED = workload("apps/v1", "Deployment", "pinned", SPEC_TEMPLATE.replace(
    "    spec:\n      containers:", "    spec:\n      nodeName: gpu-node-7\n"
    "      containers:")).encode()


def test_denial_mid_stream():
    good = workload("apps/v1", "Deployment", "trainer", SPEC_TEMPLATE).encode()
    src = good + b"---\n" + PINNED + b"---\n" + good.replace(b"trainer",
                                                            b"other")
    rc, out, err = run(["default", "-"], src)
    assert rc == 1 and out == b""
    assert ('error: document 2 (Deployment ml/pinned): denied (403 '
            'Forbidden): spec.nodeName "gpu-node-7" bypasses the vGPU '
            'scheduler') in err
    rc, out, err = run(["default", "--check", "-"], src)
    assert rc == 1 and out == b""


def test_template_of_wrong_type_is_a_400_denial():
    src = workload("apps/v1", "Deployment", "bad",
                   "spec:\n  template:\n    spec:\n      containers: {}\n")
    rc, out, err = run(["default", "-"], src.encode())
    assert rc == 1 and out == b""
    assert "error: document 1 (Deployment ml/bad): denied (400 BadRequest)" \
        in err
    src = workload("apps/v1", "Deployment", "bad", "spec:\n  template: []\n")
    rc, out, err = run(["default", "-"], src.encode())
    assert rc == 1 and out == b""
    assert "spec.template: expected an object, got an array" in err


def test_kind_not_a_string_warns_and_passes():
    src = b"apiVersion: v1\nkind: [Pod]\nmetadata: {name: odd}\n"
    rc, out, err = run(["default", "-"], src)
    assert rc == 0
    assert read_yaml(out) == read_yaml(src)
    assert "warning: document 1" in err and "kind is not a string" in err


@pytest.mark.parametrize("src,want", [
    (b"apiVersion: v1\nkind: Pod\nmetadata: {name: [x}\n",
     "error: document 1: line 3, column "),
    (b"a: 1\n---\nb: [1, 2\n", "error: document 2: line "),
    (b"a: 1\na: 2\n", 'mapping key "a" already defined'),
    (b"- 1\n- 2\n", "error: document 1: line 1: not a mapping but an array"),
    (b"---\nkind: x\n---\njust a string\n",
     "error: document 2: line 3: not a mapping but a string"),
    (b"[1, 2]", "a JSON array is not a manifest"),
    (b"a: *nope\n", 'unknown anchor "nope"'),
    (b"b: &b {x: 1}\nm: {<<: *b, x: 2}\n", 'mapping key "x" already defined'),
    (b"m: {<<: [1]}\n", "a merge key (<<) needs a mapping"),
    (b"a: .inf\n", "not a number JSON can hold"),
    (b"a: !foo x\n", "unsupported tag"),
    (b"a: !!int x\n", "cannot decode"),
    (b"? [a]\n: b\n", "a mapping key must be"),
    (b"~: b\n", "a mapping key must be"),
    (b"a: \xff\n", "error: document"),
    (b"a: " + b"[" * 300 + b"]" * 300 + b"\n", "nested deeper than"),
], ids=["syntax", "syntax-doc2", "duplicate-key", "sequence", "scalar-doc",
        "json-array", "unknown-anchor", "merge-duplicate", "merge-scalar", "inf", "custom-tag", "bad-int-tag",
        "collection-key", "null-key", "bad-utf8", "deep"])
def test_input_errors(src, want):
    rc, out, err = run(["default", "-"], src)
    assert rc == 2 and out == b"", err
    assert want in err, err


def test_alias_bomb_is_refused_quickly():
    lines = ['a0: &a0 ["x", "x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    for i in range(1, 10):
        lines.append("a%d: &a%d [%s]" % (i, i, ", ".join(["*a%d" % (i - 1)] * 10)))
    src = ("\n".join(lines) + "\n").encode()
    rc, out, err = run(["default", "-"], src)
    assert rc == 2 and out == b""
    assert "aliases expand to more than" in err


def test_aliases_do_not_nest_past_the_depth_limit():
    """Each anchor is 150 levels deep and holds the one before: the text
    never nests past 200, but the tree its aliases build would, and the
    output would grow with the square of the depth."""
    lines = ["a0: &a0 " + "{a: " * 150 + "x" + "}" * 150]
    for i in range(1, 6):
        lines.append("a%d: &a%d " % (i, i) + "{a: " * 150 + "*a%d" % (i - 1)
                     + "}" * 150)
    src = ("\n".join(lines) + "\n").encode()
    rc, out, err = run(["default", "-"], src)
    assert rc == 2 and out == b"", err
    assert "nested deeper than 200 levels through aliases" in err, err


def test_document_over_3_mib():
    big = b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: big}\ndata:\n" + \
        b"".join(b"  k%07d: vvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvv\n"
                 % i for i in range(60000))
    assert len(big) > 3 << 20
    rc, out, err = run(["default", "-"], b"a: 1\n---\n" + big)
    assert rc == 2 and out == b""
    assert "error: document 2: the document is larger than 3145728 bytes" \
        in err


def test_exit_status_order():
    # An input error (2) wins over a denial (1).
    src = PINNED + b"---\n- not a mapping\n"
    rc, out, err = run(["default", "-"], src)
    assert rc == 2 and out == b""
    assert "document 1 (Deployment ml/pinned): denied" in err
    assert "document 2: line " in err


def test_namespace_flag_names_objects():
    src = b"apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n" \
          b"  containers:\n  - name: cuda\n    image: x\n    resources:\n" \
          b"      limits: {nvidia.com/gpu: 1}\n"
    rc, _, err = run(["default", "--namespace", "team-a", "-"], src)
    assert rc == 0 and "warning: Pod team-a/p: " in err
    rc, _, err = run(["default", "-"], src)
    assert rc == 0 and "warning: Pod default/p: " in err
    rc, _, err = run(["review", "--check", "-"], src)
    assert rc == 2 and "--check" in err


def test_anchors_do_not_cross_documents():
    rc, out, err = run(["default", "-"], b"a: &x 1\n---\nb: *x\n")
    assert rc == 2 and 'document 2: line 3, column 4: unknown anchor "x"' \
        in err, err


def test_empty_input():
    rc, out, err = run(["default", "-"], b"")
    assert (rc, out, err) == (0, b"", "")


# --- Custom workloads: kinds of Kubeflow, Ray, JobSet, LeaderWorkerSet and
# Volcano, shaped like the examples of those projects.

PYTORCHJOB = """\
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: pytorch-simple
  namespace: ml
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      restartPolicy: OnFailure
      template:
        spec:
          containers:
            - name: pytorch
              image: docker.io/kubeflowkatib/pytorch-mnist:v1beta1-45c5727
              imagePullPolicy: Always
              command: ["python3", "/opt/pytorch-mnist/mnist.py", "--epochs=1"]
              resources:
                limits:
                  nvidia.com/gpu: 1
    Worker:
      replicas: 2
      restartPolicy: OnFailure
      template:
        metadata:
          labels:
            role: worker
        spec:
          containers:
            - name: pytorch
              image: docker.io/kubeflowkatib/pytorch-mnist:v1beta1-45c5727
              imagePullPolicy: Always
              command: ["python3", "/opt/pytorch-mnist/mnist.py", "--epochs=1"]
              resources:
                limits:
                  nvidia.com/gpu: 2
                  nvidia.com/gpumem: 8000
"""

TFJOB = """\
apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: dist-mnist
  namespace: ml
spec:
  runPolicy:
    cleanPodPolicy: None
  tfReplicaSpecs:
    PS:
      replicas: 1
      restartPolicy: Never
      template:
        spec:
          containers:
            - name: tensorflow
              image: kubeflow/tf-dist-mnist-test:latest
    Worker:
      replicas: 2
      restartPolicy: Never
      template:
        spec:
          containers:
            - name: tensorflow
              image: kubeflow/tf-dist-mnist-test:latest
              resources:
                limits:
                  nvidia.com/gpu: 1
"""

MPIJOB = """\
apiVersion: kubeflow.org/v2beta1
kind: MPIJob
metadata:
  name: tensorflow-benchmarks
  namespace: ml
spec:
  slotsPerWorker: 1
  runPolicy:
    cleanPodPolicy: Running
  mpiReplicaSpecs:
    Launcher:
      replicas: 1
      template:
        spec:
          containers:
          - image: mpioperator/tensorflow-benchmarks:latest
            name: tensorflow-benchmarks
            command:
            - mpirun
            - --allow-run-as-root
            - -np
            - "2"
            - python
            - scripts/tf_cnn_benchmarks/tf_cnn_benchmarks.py
    Worker:
      replicas: 2
      template:
        spec:
          containers:
          - image: mpioperator/tensorflow-benchmarks:latest
            name: tensorflow-benchmarks
            resources:
              limits:
                nvidia.com/gpu: 1
"""

RAY_CLUSTER_SPEC = """\
    rayVersion: '2.9.0'
    headGroupSpec:
      rayStartParams:
        dashboard-host: '0.0.0.0'
      template:
        spec:
          containers:
          - name: ray-head
            image: rayproject/ray:2.9.0
            ports:
            - containerPort: 6379
              name: gcs-server
            resources:
              limits:
                cpu: "1"
                memory: "2G"
    workerGroupSpecs:
    - replicas: 1
      minReplicas: 1
      maxReplicas: 5
      groupName: small-group
      rayStartParams: {}
      template:
        spec:
          containers:
          - name: ray-worker
            image: rayproject/ray:2.9.0-gpu
            resources:
              limits:
                cpu: "4"
                nvidia.com/gpu: 1
    - replicas: 1
      groupName: big-group
      rayStartParams: {}
      template:
        metadata:
          labels:
            size: big
        spec:
          containers:
          - name: ray-worker
            image: rayproject/ray:2.9.0-gpu
            resources:
              limits:
                nvidia.com/gpu: 2
                nvidia.com/gpucores: 50
"""


def indent(text, n):
    return "".join((" " * n + line if line.strip() else line)
                   for line in text.splitlines(True))


RAYCLUSTER = """\
apiVersion: ray.io/v1
kind: RayCluster
metadata:
  name: raycluster-kuberay
  namespace: ml
spec:
""" + "".join(line[2:] for line in RAY_CLUSTER_SPEC.splitlines(True))

RAYJOB = """\
apiVersion: ray.io/v1
kind: RayJob
metadata:
  name: rayjob-sample
  namespace: ml
spec:
  entrypoint: python /home/ray/samples/sample_code.py
  shutdownAfterJobFinishes: true
  rayClusterSpec:
""" + RAY_CLUSTER_SPEC

RAYSERVICE = """\
apiVersion: ray.io/v1
kind: RayService
metadata:
  name: rayservice-sample
  namespace: ml
spec:
  serveConfigV2: |
    applications:
      - name: fruit_app
        import_path: fruit.deployment_graph
  rayClusterConfig:
""" + RAY_CLUSTER_SPEC

JOBSET = """\
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata:
  name: paralleljobs
  namespace: ml
spec:
  replicatedJobs:
  - name: workers
    replicas: 2
    template:
      spec:
        parallelism: 4
        completions: 4
        backoffLimit: 0
        template:
          spec:
            containers:
            - name: sleep
              image: python:3.10
              command: ["sleep", "10"]
              resources:
                limits:
                  nvidia.com/gpu: 1
  - name: driver
    template:
      spec:
        template:
          spec:
            containers:
            - name: driver
              image: python:3.10
"""

LWS = """\
apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata:
  name: vllm
  namespace: ml
spec:
  replicas: 2
  leaderWorkerTemplate:
    size: 2
    restartPolicy: RecreateGroupOnPodRestart
    leaderTemplate:
      metadata:
        labels:
          role: leader
      spec:
        containers:
          - name: vllm-leader
            image: vllm/vllm-openai:latest
            resources:
              limits:
                nvidia.com/gpu: "1"
    workerTemplate:
      spec:
        containers:
          - name: vllm-worker
            image: vllm/vllm-openai:latest
            resources:
              limits:
                nvidia.com/gpu: "1"
"""

VOLCANO_TASKS = """\
  tasks:
    - replicas: 1
      name: ps
      template:
        spec:
          containers:
            - image: volcanosh/dist-mnist-tf-example:0.0.1
              name: tensorflow
              ports:
                - containerPort: 2222
                  name: tfjob-port
          restartPolicy: Never
    - replicas: 2
      name: worker
      policies:
        - event: TaskCompleted
          action: CompleteJob
      template:
        spec:
          containers:
            - image: volcanosh/dist-mnist-tf-example:0.0.1
              name: tensorflow
              resources:
                limits:
                  nvidia.com/gpu: 1
          restartPolicy: Never
"""


def volcano_job(scheduler):
    return ("apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata:\n"
            "  name: tensorflow-dist-mnist\n  namespace: ml\nspec:\n"
            "  minAvailable: 3\n%s  plugins:\n    env: []\n    svc: []\n"
            % (("  schedulerName: %s\n" % scheduler) if scheduler else "") +
            VOLCANO_TASKS)


def walk_templates(obj, path):
    """(where, parent keys) of each template of obj at path, as the
    webhook's path language means it: * every member, NAME[] every item."""
    found = [([], "", obj)]
    if path == "":
        return [("", [])]
    for seg in path.split("."):
        nxt = []
        arr = seg.endswith("[]")
        name = seg[:-2] if arr else seg
        for keys, where, v in found:
            members = list(v.items()) if name == "*" else \
                [(name, v.get(name))]
            for k, val in members:
                if val is None:
                    continue
                w = where + ("." if where else "") + k
                if arr:
                    nxt += [(keys + [k, i], "%s[%d]" % (w, i), item)
                            for i, item in enumerate(val) if item is not None]
                else:
                    nxt.append((keys + [k], w, val))
        found = nxt
    return [(where, keys) for keys, where, _ in found]


def expect_templates(obj, paths, namespace="ml", inherit=None):
    """obj with each template at paths patched as review patches the pod
    made of it; inherit: the schedulerName its pods get when the template
    has none (Volcano).  Returns (obj, operations, wheres)."""
    obj = copy.deepcopy(obj)
    nops, wheres = 0, []
    for path in paths:
        for where, keys in walk_templates(obj, path):
            tpl = obj
            for k in keys:
                tpl = tpl[k]
            pod = {"apiVersion": "v1", "kind": "Pod"}
            for k in ("metadata", "spec"):
                if k in tpl:
                    pod[k] = copy.deepcopy(tpl[k])
            given = inherit and not pod["spec"].get("schedulerName")
            if given:
                pod["spec"]["schedulerName"] = inherit
            ops = review_patch(pod, namespace)
            pod = jsonpatch.apply_patch(pod, ops)
            if given and pod["spec"]["schedulerName"] == inherit:
                del pod["spec"]["schedulerName"]
            for k in ("metadata", "spec"):
                if k in pod:
                    tpl[k] = pod[k]
            nops += len(ops)
            wheres.append(where)
    return obj, nops, wheres


CUSTOM = [
    ("pytorchjob", PYTORCHJOB, ["spec.pytorchReplicaSpecs.*.template"],
     ["spec.pytorchReplicaSpecs.Master.template"]),
    ("tfjob", TFJOB, ["spec.tfReplicaSpecs.*.template"],
     ["spec.tfReplicaSpecs.Worker.template"]),
    ("mpijob", MPIJOB, ["spec.mpiReplicaSpecs.*.template"],
     ["spec.mpiReplicaSpecs.Worker.template"]),
    ("raycluster", RAYCLUSTER,
     ["spec.headGroupSpec.template", "spec.workerGroupSpecs[].template"],
     ["spec.workerGroupSpecs[0].template",
      "spec.workerGroupSpecs[1].template"]),
    ("rayjob", RAYJOB,
     ["spec.rayClusterSpec.headGroupSpec.template",
      "spec.rayClusterSpec.workerGroupSpecs[].template"],
     ["spec.rayClusterSpec.workerGroupSpecs[0].template",
      "spec.rayClusterSpec.workerGroupSpecs[1].template"]),
    ("rayservice", RAYSERVICE,
     ["spec.rayClusterConfig.headGroupSpec.template",
      "spec.rayClusterConfig.workerGroupSpecs[].template"],
     ["spec.rayClusterConfig.workerGroupSpecs[0].template",
      "spec.rayClusterConfig.workerGroupSpecs[1].template"]),
    ("jobset", JOBSET, ["spec.replicatedJobs[].template.spec.template"],
     ["spec.replicatedJobs[0].template.spec.template"]),
    ("leaderworkerset", LWS,
     ["spec.leaderWorkerTemplate.leaderTemplate",
      "spec.leaderWorkerTemplate.workerTemplate"],
     ["spec.leaderWorkerTemplate.leaderTemplate",
      "spec.leaderWorkerTemplate.workerTemplate"]),
    ("volcano-hami", volcano_job("hami-scheduler"),
     ["spec.tasks[].template"], ["spec.tasks[1].template"]),
]


@pytest.mark.parametrize("src,paths,warned", [c[1:] for c in CUSTOM],
                         ids=[c[0] for c in CUSTOM])
def test_custom_workload(src, paths, warned):
    [obj] = read_yaml(src.encode())
    inherit = None
    if obj["apiVersion"].startswith("batch.volcano.sh/"):
        inherit = obj["spec"].get("schedulerName") or "volcano"
    want, nops, wheres = expect_templates(obj, paths, inherit=inherit)
    assert nops > 0 and want != obj
    rc, out, err = run(["default", "-"], src.encode())
    assert rc == 0, err
    assert read_yaml(out) == [want]
    label = "%s ml/%s" % (obj["kind"], obj["metadata"]["name"])
    # Each template with a GPU warns, naming the object and the template.
    for where in warned:
        assert ("warning: %s: %s: container " % (label, where)) in err, err
    assert err.count("warning: ") >= len(warned)
    for where in set(wheres) - set(warned):
        assert "%s: %s: " % (label, where) not in err
    rc2, out2, err2 = run(["default", "-"], out)
    assert (rc2, out2) == (0, out), err2
    rc3, out3, err3 = run(["default", "--check", "-"], out)
    assert (rc3, out3, err3) == (0, b"", "")
    rc4, _, err4 = run(["default", "--check", "-"], src.encode())
    assert (rc4, err4) == (3, "%s: %d operations\n" % (label, nops))


def test_custom_workload_profile_by_namespace(tmp_path):
    """Each template is decided with the object's namespace."""
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps({"profiles": [
        {"name": "ml", "namespaces": ["ml"],
         "devices": [{"name": "nvidia", "defaultMemory": 1234}]}]}))
    rc, out, err = run(["default", "--config", str(cfg), "-"],
                       PYTORCHJOB.encode())
    assert rc == 0, err
    [got] = read_yaml(out)
    master = got["spec"]["pytorchReplicaSpecs"]["Master"]["template"]
    assert master["spec"]["containers"][0]["resources"]["limits"][
        "nvidia.com/gpumem"] == "1234"
    rc, out, err = run(["default", "--config", str(cfg), "-"],
                       PYTORCHJOB.replace("namespace: ml",
                                          "namespace: other").encode())
    [got] = read_yaml(out)
    master = got["spec"]["pytorchReplicaSpecs"]["Master"]["template"]
    assert master["spec"]["containers"][0]["resources"]["limits"][
        "nvidia.com/gpumem"] == "5000"


def test_volcano_job_takes_the_jobs_scheduler():
    """Volcano's controller gives a pod without schedulerName the Job's
    (Volcano's webhook makes it "volcano" when the Job has none): the
    webhook leaves those pods to that scheduler, with its warning."""
    for sched in (None, "volcano"):
        src = volcano_job(sched).encode()
        rc, out, err = run(["default", "-"], src)
        assert rc == 0 and out == src, err
        assert ('warning: Job ml/tensorflow-dist-mnist: spec.tasks[1].template: '
                'pod asks for vGPU resources but spec.schedulerName is '
                '"volcano", not "hami-scheduler"; left unchanged') in err, err
    # A template that names the scheduler itself is decided on its own.
    src = volcano_job("volcano").replace(
        "          restartPolicy: Never\n",
        "          restartPolicy: Never\n          schedulerName: hami-scheduler\n"
    ).encode()
    [obj] = read_yaml(src)
    want, nops, _ = expect_templates(obj, ["spec.tasks[].template"],
                                     inherit="volcano")
    rc, out, err = run(["default", "-"], src)
    assert rc == 0, err
    assert read_yaml(out) == [want] and nops > 0
    # The Job's hami-scheduler reaches the pods, but is not written into
    # the templates (the pods take it from the Job).
    src = volcano_job("hami-scheduler").encode()
    rc, out, err = run(["default", "-"], src)
    [got] = read_yaml(out)
    for task in got["spec"]["tasks"]:
        assert "schedulerName" not in task["template"]["spec"]
    assert "nvidia.com/gpumem" in json.dumps(got)


def test_custom_workload_denial_names_the_template():
    src = LWS.replace("    workerTemplate:\n      spec:\n",
                      "    workerTemplate:\n      spec:\n        nodeName: n1\n")
    rc, out, err = run(["default", "-"], src.encode())
    assert rc == 1 and out == b""
    assert ("error: document 1 (LeaderWorkerSet ml/vllm): "
            "spec.leaderWorkerTemplate.workerTemplate: denied (403 Forbidden): "
            "spec.nodeName \"n1\" bypasses the vGPU scheduler") in err, err
    src = PYTORCHJOB.replace("    Worker:\n      replicas: 2\n",
                             "    Worker: []\n    Other:\n      replicas: 2\n")
    rc, out, err = run(["default", "-"], src.encode())
    assert rc == 1 and out == b""
    assert ("(PyTorchJob ml/pytorch-simple): denied (400 BadRequest): "
            "spec.pytorchReplicaSpecs.Worker: expected an object, got an "
            "array") in err, err


TRAINER = """\
apiVersion: example.com/v1
kind: Trainer
metadata:
  name: t
  namespace: ml
spec:
  roles:
    chief:
      template:
        spec:
          containers:
""" + indent(GPU_CONTAINER, 4) + """\
  workers:
  - template:
      spec:
        containers:
""" + indent(GPU_CONTAINER, 2)


def test_config_workloads_add_a_kind(tmp_path):
    cfg = tmp_path / "config.json"
    paths = ["spec.roles.*.template", "spec.workers[].template"]
    cfg.write_text(json.dumps({"workloads": [
        {"apiVersion": "example.com/v1", "kind": "Trainer",
         "templates": paths}]}))
    [obj] = read_yaml(TRAINER.encode())
    want, nops, wheres = expect_templates(obj, paths)
    assert wheres == ["spec.roles.chief.template",
                      "spec.workers[0].template"]
    rc, out, err = run(["default", "--config", str(cfg), "-"],
                       TRAINER.encode())
    assert rc == 0, err
    assert read_yaml(out) == [want]
    assert "warning: Trainer ml/t: spec.workers[0].template: container " \
        in err
    # Without the key, the kind is not known: warned, left as it is.
    rc, out, err = run(["default", "-"], TRAINER.encode())
    assert rc == 0 and out == TRAINER.encode()
    assert "warning: Trainer ml/t: spec.roles.chief.template.spec." \
        "containers[0] asks for nvidia.com/gpu" in err, err
    rc, out, err = run(["default", "--check", "-"], TRAINER.encode())
    assert rc == 3 and "Trainer ml/t: spec.roles.chief" in err


@pytest.mark.parametrize("entry,want", [
    ({"apiVersion": "x/v1", "kind": "T"},
     'workloads[0]: missing required key "templates"'),
    ({"apiVersion": "x/v1", "kind": "T", "templates": []},
     "workloads[0].templates: expected a non-empty array, got []"),
    ({"apiVersion": "x/v1", "kind": "T", "templates": ["spec..x"]},
     'workloads[0].templates[0]: "spec..x": an empty segment'),
    ({"apiVersion": "", "kind": "T", "templates": ["spec.t"]},
     "workloads[0].apiVersion: expected a non-empty string"),
    ({"apiVersion": "x/v1", "kind": "T", "templates": ["t"], "x": 1},
     'unknown key "workloads[0].x"'),
])
def test_config_workloads_refused(tmp_path, entry, want):
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps({"workloads": [entry]}))
    rc, out, err = run(["default", "--config", str(cfg), "-"], b"")
    assert rc == 2 and want in err, err
