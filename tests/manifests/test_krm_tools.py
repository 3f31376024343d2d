#!/usr/bin/python3
"""`vgpu-webhook` as an exec KRM function under the real kustomize 5.6.0
(`kustomize build --enable-alpha-plugins --enable-exec`), under pytest:
run by `make krm`, which fetches kustomize into build/tools first
(scripts/get-kustomize.sh).  KUSTOMIZE names the binary.

kustomize 5.6 runs an exec function with no arguments (its exec spec has
no `args`): the binary, given no command and a ResourceList on stdin,
runs `default` on it.
"""

import os
import shutil
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_manifests import command, expect_defaulted, read_yaml, \
    TIMEOUT, PYTORCHJOB, expect_templates, workload, SPEC_TEMPLATE

KUSTOMIZATION = """\
resources:
- workloads.yaml
transformers:
- vgpu-webhook.yaml
"""

FUNCTION = """\
apiVersion: vgpu-webhook.example.com/v1
kind: Defaulter
metadata:
  name: vgpu-webhook
  annotations:
    config.kubernetes.io/function: |
      exec:
        path: %s
"""


def kustomize():
    path = os.environ.get("KUSTOMIZE", "build/tools/kustomize")
    if not shutil.which(path):
        pytest.skip("no kustomize at %s (make krm fetches it: "
                    "scripts/get-kustomize.sh)" % path)
    return path


def build(tmp_path, workloads, function=None):
    binary = os.path.abspath(command()[-1])
    (tmp_path / "kustomization.yaml").write_text(KUSTOMIZATION)
    (tmp_path / "vgpu-webhook.yaml").write_text(FUNCTION % (function or
                                                            binary))
    (tmp_path / "workloads.yaml").write_text(workloads)
    p = subprocess.run([kustomize(), "build", "--enable-alpha-plugins",
                        "--enable-exec", str(tmp_path)],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       stdin=subprocess.DEVNULL, timeout=TIMEOUT)
    return p.returncode, p.stdout, p.stderr.decode("utf-8", "replace")


DEPLOYMENT = workload("apps/v1", "Deployment", "trainer", SPEC_TEMPLATE)
SERVICE = ("apiVersion: v1\nkind: Service\nmetadata:\n  name: trainer\n"
           "  namespace: ml\nspec:\n  ports:\n  - port: 80\n")


def by_kind(docs):
    return {d["kind"]: d for d in docs}


def test_kustomize_runs_the_function(tmp_path):
    src = DEPLOYMENT + "---\n" + SERVICE + "---\n" + PYTORCHJOB
    rc, out, err = build(tmp_path, src)
    assert rc == 0, err
    got = by_kind(read_yaml(out))
    want = by_kind(read_yaml(src.encode()))
    assert got["Deployment"] == expect_defaulted(want["Deployment"],
                                                 ["spec", "template"])[0]
    assert got["Service"] == want["Service"]
    assert got["PyTorchJob"] == expect_templates(
        want["PyTorchJob"], ["spec.pytorchReplicaSpecs.*.template"])[0]
    # kustomize shows the function's stderr
    assert "warning: Deployment ml/trainer: container \"cuda\"" in err


def test_kustomize_fails_on_a_denial(tmp_path):
    pinned = DEPLOYMENT.replace("name: trainer", "name: pinned").replace(
        "    spec:\n      containers:",
        "    spec:\n      nodeName: gpu-7\n      containers:")
    rc, out, err = build(tmp_path, pinned + "---\n" + SERVICE)
    assert rc != 0 and out == b""
    assert ('(Deployment ml/pinned): denied (403 Forbidden): spec.nodeName '
            '"gpu-7" bypasses the vGPU scheduler') in err, err
