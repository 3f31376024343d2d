#!/usr/bin/python3
"""`vgpu-webhook test DIR` (docs/behaviour.md §11), under pytest: run by
`make fixtures`.  It runs the shipped examples/policy-tests/, checks their
expected objects independently (the patch `review` sends, applied with
python3-jsonpatch), and breaks each kind of expectation to see it fail.
"""

import base64
import json
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_manifests import expect_defaulted, expect_templates, read_yaml, \
    run

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
EXAMPLES = os.path.join(ROOT, "examples", "policy-tests")


def example(*parts):
    with open(os.path.join(EXAMPLES, *parts), "rb") as f:
        return f.read()


def test_examples_pass():
    rc, out, err = run(["test", EXAMPLES])
    assert rc == 0, out.decode() + err
    lines = out.decode().splitlines()
    assert lines[-1] == "9 passed, 0 failed"
    assert all(line.startswith("PASS ") for line in lines[:-1]), lines


def test_examples_expected_objects_are_reviews_patch():
    """The shipped patchedResource files are what serve would make."""
    docs = read_yaml(example("built-in-defaults", "resources.yaml"))
    trainer = [d for d in docs if d["metadata"]["name"] == "trainer"][0]
    [want] = read_yaml(example("built-in-defaults", "trainer-defaulted.yaml"))
    assert want == expect_defaulted(trainer, ["spec", "template"])[0]
    [job] = read_yaml(example("pytorchjob", "pytorchjob.yaml"))
    [want] = read_yaml(example("pytorchjob", "pytorchjob-defaulted.yaml"))
    assert want == expect_templates(
        job, ["spec.pytorchReplicaSpecs.*.template"])[0]


def copy_examples(tmp_path):
    dst = tmp_path / "policy-tests"
    shutil.copytree(EXAMPLES, dst)
    return dst


def test_a_wrong_object_fails_with_the_first_difference(tmp_path):
    dst = copy_examples(tmp_path)
    f = dst / "built-in-defaults" / "trainer-defaulted.yaml"
    f.write_text(f.read_text().replace('gpumem: "5000"', 'gpumem: "4000"'))
    rc, out, err = run(["test", str(dst)])
    text = out.decode()
    assert rc == 1, text + err
    assert ("FAIL built-in-defaults: Deployment ml/trainer: the defaulted "
            "object differs\n"
            "  first difference at spec.template.spec.containers[0]."
            "resources.limits.nvidia.com/gpumem:\n"
            '  - "4000"\n'
            '  + "5000"\n') in text, text
    # namespace-profile names the same file
    assert text.endswith("7 passed, 2 failed\n"), text


def test_each_expectation_can_fail(tmp_path):
    dst = copy_examples(tmp_path)
    t = dst / "built-in-defaults" / "vgpu-webhook-test.yaml"
    src = t.read_text()
    t.write_text(src.replace("  resources: [pinned]\n  result: fail",
                             "  resources: [pinned]\n  result: pass")
                 .replace("  resources: [ml/web]\n  result: skip",
                          "  resources: [ml/web]\n  result: fail")
                 .replace("set nvidia.com/gpumem=5000 (defaultMemory)'",
                          "set nvidia.com/gpumem=5000'")
                 .replace("resources: [batch]", "resources: [other/batch]"))
    rc, out, _ = run(["test", str(dst / "built-in-defaults")])
    text = out.decode()
    assert rc == 1
    assert ("FAIL built-in-defaults: Pod ml/pinned: expected pass, got fail "
            '(denied (403 Forbidden): spec.nodeName "gpu-node-7" bypasses the '
            "vGPU scheduler") in text, text
    assert ("FAIL built-in-defaults: Deployment ml/web: expected fail, got "
            "skip") in text, text
    assert ("FAIL built-in-defaults: Deployment ml/trainer: the warnings "
            "differ\n  first difference at [0]:\n") in text, text
    assert "FAIL built-in-defaults: Pod other/batch: no such object in " \
        "resources" in text, text
    assert text.endswith("0 passed, 4 failed\n"), text
    t.write_text(src.replace("the vGPU scheduler\n", "the scheduler\n"))
    rc, out, _ = run(["test", str(t)])
    text = out.decode()
    assert rc == 1
    assert ("FAIL built-in-defaults: Pod ml/pinned: the denial does not say "
            "\"spec.nodeName \"gpu-node-7\" bypasses the scheduler\"\n"
            "  - spec.nodeName \"gpu-node-7\" bypasses the scheduler\n"
            "  + denied (403 Forbidden): spec.nodeName \"gpu-node-7\" "
            "bypasses the vGPU scheduler") in text, text


def test_review_patch_and_requester(tmp_path):
    """A review's patch is compared with the one `review` sends; the
    requester of the file replaces the review's userInfo."""
    review = os.path.join(ROOT, "examples", "review-gpu-pod.json")
    rc, out, _ = run(["review", review])
    assert rc == 0
    patch = json.loads(base64.b64decode(json.loads(out)["response"]["patch"]))
    (tmp_path / "patch.json").write_text(json.dumps(patch))
    test = tmp_path / "vgpu-webhook-test.yaml"
    test.write_text("name: gpu-pod\nuser: ci\nresults:\n- review: %s\n"
                    "  result: pass\n  patch: patch.json\n" % review)
    rc, out, _ = run(["test", str(tmp_path)])
    assert (rc, out) == (0, b"PASS gpu-pod: review %s\n1 passed, 0 failed\n"
                         % review.encode())
    (tmp_path / "patch.json").write_text(json.dumps(patch[:-1]))
    rc, out, _ = run(["test", str(tmp_path)])
    assert rc == 1 and b"the patch differs\n  first difference at [%d]" \
        % (len(patch) - 1) in out, out


def test_broken_test_files(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "vgpu-webhook-test.yaml").write_text(
        "name: a\nresult: []\n")
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "vgpu-webhook-test.yaml").write_text(
        "name: b\nresources: [missing.yaml]\nresults:\n- kind: Pod\n"
        "  resources: [p]\n")
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "vgpu-webhook-test.yaml").write_text(
        "name: c\nconfig: config.json\nresults:\n- kind: Pod\n"
        "  resources: [p]\n  result: maybe\n")
    rc, out, _ = run(["test", str(tmp_path)])
    text = out.decode()
    assert rc == 1
    assert 'unknown key "result"' in text
    assert "missing.yaml: No such file or directory" in text, text
    assert 'results[0].result: "maybe" is not pass, fail or skip' in text
    assert text.endswith("0 passed, 3 failed\n")


def test_nothing_to_run(tmp_path):
    rc, out, err = run(["test", str(tmp_path)])
    assert rc == 2 and out == b""
    assert "no vgpu-webhook-test.yaml under" in err
    rc, out, err = run(["test", str(tmp_path / "absent")])
    assert rc == 2 and "cannot read" in err
