#!/usr/bin/python3
"""`vgpu-webhook default` as a KRM function (docs/behaviour.md §8 "KRM
functions"), under pytest: run by `make fixtures`.

The inputs in krm/ are ResourceLists recorded from the tools themselves:
kustomize 5.6.0 (`kustomize build --enable-alpha-plugins --enable-exec`,
an exec transformer) and kpt 1.0.0-beta.56 (`kpt fn eval DIR --exec`).
Items are judged as test_manifests.py judges manifests: the expected pod
template is the one `review` patches.  test_krm_tools.py runs the real
kustomize (make krm).
"""

import copy
import json
import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_manifests import command, expect_defaulted, read_yaml, run, \
    TIMEOUT, PYTORCHJOB, expect_templates

HERE = os.path.dirname(os.path.abspath(__file__))
WARNING = 'container "cuda": set nvidia.com/gpumem=5000 (defaultMemory)'
TRAINER_REF = {"apiVersion": "apps/v1", "kind": "Deployment",
               "name": "trainer", "namespace": "ml"}


def fixture(name):
    with open(os.path.join(HERE, "krm", name), "rb") as f:
        return f.read()


def run_bare(stdin):
    """vgpu-webhook without arguments, stdin a pipe: as kustomize runs an
    exec function."""
    p = subprocess.run(command(), input=stdin, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=TIMEOUT)
    return p.returncode, p.stdout, p.stderr.decode("utf-8", "replace")


def expected_list(rl, results):
    """rl with its Deployments and Pods defaulted as review defaults them,
    and results appended."""
    want = copy.deepcopy(rl)
    for i, item in enumerate(want["items"]):
        if item["kind"] == "Deployment":
            want["items"][i] = expect_defaulted(item, ["spec", "template"])[0]
    want["results"] = rl.get("results", []) + results
    return want


@pytest.mark.parametrize("name", ["kustomize-input.yaml", "kpt-input.yaml"])
def test_resource_list_items_defaulted_with_results(name):
    src = fixture(name)
    [rl] = read_yaml(src)
    want = expected_list(rl, [{"message": WARNING, "severity": "warning",
                               "resourceRef": TRAINER_REF}])
    rc, out, err = run(["default", "-"], src)
    assert rc == 0, err
    [got] = read_yaml(out)
    assert got == want
    assert out.startswith(b"apiVersion: config.kubernetes.io/v1\n"
                          b"kind: ResourceList\nitems:\n")
    assert got["functionConfig"] == rl["functionConfig"]
    # the messages stay on stderr too (kustomize passes them through)
    assert "warning: Deployment ml/trainer: " + WARNING in err
    # kustomize runs the function without arguments
    rc2, out2, err2 = run_bare(src)
    assert (rc2, out2, err2) == (rc, out, err)


def test_denial_is_an_error_result_and_exit_1():
    src = fixture("kustomize-denied-input.yaml")
    [rl] = read_yaml(src)
    rc, out, err = run_bare(src)
    assert rc == 1
    [got] = read_yaml(out)
    msg = ('denied (403 Forbidden): spec.nodeName "gpu-7" bypasses the vGPU '
           'scheduler (nodeNamePolicy: deny)')
    assert got == expected_list(rl, [
        {"message": WARNING, "severity": "warning",
         "resourceRef": TRAINER_REF},
        {"message": msg, "severity": "error",
         "resourceRef": {"apiVersion": "v1", "kind": "Pod", "name": "pinned",
                         "namespace": "ml"}}])
    assert "error: document 1 item 3 (Pod ml/pinned): " + msg in err


def test_json_in_json_out_and_results_kept():
    [rl] = read_yaml(fixture("kustomize-input.yaml"))
    rl["results"] = [{"message": "from an earlier function",
                      "severity": "info"}]
    rc, out, err = run(["default", "-"], json.dumps(rl).encode())
    assert rc == 0, err
    got = json.loads(out)
    assert got == expected_list(rl, [{"message": WARNING,
                                      "severity": "warning",
                                      "resourceRef": TRAINER_REF}])
    assert got["results"][0]["message"] == "from an earlier function"


def test_nothing_to_do_is_byte_for_byte():
    src = fixture("kustomize-input.yaml").replace(b"nvidia.com/gpu: 1",
                                                  b"cpu: 1")
    for args in (["default", "-"], None):
        rc, out, err = run(args, src) if args else run_bare(src)
        assert (rc, out, err) == (0, src, "")


def test_custom_workload_result_names_the_template():
    [job] = read_yaml(PYTORCHJOB.encode())
    rl = {"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList",
          "items": [job]}
    rc, out, err = run_bare(json.dumps(rl).encode())
    assert rc == 0, err
    got = json.loads(out)
    want = expect_templates(job, ["spec.pytorchReplicaSpecs.*.template"])[0]
    assert got["items"] == [want]
    assert got["results"] == [{
        "message": "spec.pytorchReplicaSpecs.Master.template: container "
                   "\"pytorch\": set nvidia.com/gpumem=5000 (defaultMemory)",
        "severity": "warning",
        "resourceRef": {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
                        "name": "pytorch-simple", "namespace": "ml"},
        "field": {"path": "spec.pytorchReplicaSpecs.Master.template"}}]


def test_without_arguments_only_a_resource_list():
    rc, out, err = run_bare(b"apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n")
    assert rc == 2 and out == b""
    assert "without a command, the input must be a KRM ResourceList" in err


def test_resource_list_is_the_only_document():
    src = fixture("kustomize-input.yaml")
    for stream in (b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"
                   b"---\n" + src, src + b"---\napiVersion: v1\nkind: "
                   b"ConfigMap\nmetadata: {name: c}\n"):
        rc, out, err = run(["default", "-"], stream)
        assert rc == 2 and out == b"", err
        assert "a ResourceList must be the only document of its stream" \
            in err


def test_items_not_an_array():
    rc, out, err = run(["default", "-"], b"apiVersion: config.kubernetes.io/v1"
                       b"\nkind: ResourceList\nitems: {a: 1}\n")
    assert rc == 2 and out == b""
    assert "ResourceList items: expected an array, got an object" in err


def test_output_is_a_fixed_point():
    """A result already in the list is not added again: default on its own
    output (a later run, or a warning that every run gives) changes
    nothing, and --check agrees."""
    src = fixture("kustomize-input.yaml").replace(
        b"        containers:\n",
        b"        schedulerName: volcano\n        containers:\n")
    rc, out, err = run(["default", "-"], src)
    assert rc == 0, err
    [got] = read_yaml(out)
    assert [r["severity"] for r in got["results"]] == ["warning"]
    assert "left unchanged" in got["results"][0]["message"]
    # warnings only: --check says the list would change (its results)
    rc, _, _ = run(["default", "--check", "-"], src)
    assert rc == 3
    rc2, out2, err2 = run(["default", "-"], out)
    assert (rc2, out2) == (0, out), err2
    rc3, out3, _ = run(["default", "--check", "-"], out)
    assert (rc3, out3) == (0, b"")
