"""The Helm 4 post-renderer plugin (helm-plugin/), with the project's helm.

The plugin is installed with `helm plugin install helm-plugin` into a helm home
under build/ (HELM_CONFIG_HOME, HELM_CACHE_HOME, HELM_DATA_HOME: nothing
reaches the user's home), and run by `helm template --post-renderer
vgpu-webhook` with the binary under test first on PATH.  Its output must be
what `vgpu-webhook default` makes of `helm template`'s own; a denial must make
helm fail with the object and the reason on helm's stderr, although Helm 4.1
keeps a post-renderer's stderr to itself.
"""

import os
import pty
import re
import shutil
import subprocess
import sys
import tempfile

import pytest
import yaml

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from ptyio import read_pty  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HELM = os.environ.get("CHART_HELM", os.path.join(ROOT, "build", "tools", "helm"))
if not os.path.isabs(HELM):
    HELM = os.path.join(ROOT, HELM)
BIN = os.path.abspath(os.environ.get("VGPU_WEBHOOK", os.path.join(ROOT, "build", "vgpu-webhook")))
PLUGIN = os.path.join(ROOT, "helm-plugin")
APP = os.path.join(ROOT, "tests", "chart", "plugin-chart")
CHART = os.path.join(ROOT, "charts", "vgpu-webhook")

NS_PROFILE = ("profiles:\n  - name: ml-team\n    namespaces: [ml]\n"
              "    devices: [{name: nvidia, defaultMemory: 3000}]\n")


@pytest.fixture(scope="module")
def env():
    """helm's environment: a fresh helm home under build/ with the plugin
    installed, and a PATH whose vgpu-webhook is the binary under test."""
    if not os.access(HELM, os.X_OK):
        pytest.skip(f"no helm at {HELM}: make chart-tools (scripts/get-helm.sh)")
    if not os.access(BIN, os.X_OK):
        pytest.skip(f"no binary at {BIN}: make")
    home = os.path.join(ROOT, "build", "helm-plugin-home")
    shutil.rmtree(home, ignore_errors=True)
    bindir = os.path.join(home, "bin")
    os.makedirs(bindir)
    os.symlink(BIN, os.path.join(bindir, "vgpu-webhook"))
    e = {k: v for k, v in os.environ.items() if not k.startswith("HELM_")}
    e.update(HELM_CONFIG_HOME=os.path.join(home, "config"),
             HELM_CACHE_HOME=os.path.join(home, "cache"),
             HELM_DATA_HOME=os.path.join(home, "data"),
             PATH=bindir + ":/usr/bin:/bin")
    p = subprocess.run([HELM, "plugin", "install", PLUGIN], env=e, capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    yield e
    shutil.rmtree(home, ignore_errors=True)


def helm(env, *args, stdin=None):
    p = subprocess.run([HELM, *args], env=env, capture_output=True, text=True,
                       timeout=120, input=stdin, stdin=None if stdin else subprocess.DEVNULL)
    return p.returncode, p.stdout, p.stderr


def default(env, text, *args):
    p = subprocess.run([BIN, "default", *args, "-"], input=text, capture_output=True,
                       text=True, timeout=60, env=env)
    assert p.returncode == 0, p.stderr
    return p.stdout, p.stderr


def objects(text):
    """The objects of a stream, keyed by kind and name, comments ignored."""
    out = {}
    for doc in yaml.safe_load_all(text):
        if doc:
            out[(doc["kind"], doc["metadata"]["name"])] = doc
    return out


def test_plugin_installed(env):
    rc, out, err = helm(env, "plugin", "list")
    assert rc == 0, err
    row = [line.split() for line in out.splitlines() if line.startswith("vgpu-webhook")]
    assert row and row[0][2] == "postrenderer/v1" and row[0][3] == "v1", out
    version = subprocess.run([BIN, "version"], capture_output=True, text=True).stdout.split()[1]
    assert row[0][1] == version, "plugin.yaml's version is the binary's"


@pytest.mark.parametrize("chart,sets", [(APP, []), (CHART, ["image.registry=r.example.com"])])
def test_template_is_default(env, chart, sets):
    """helm template --post-renderer vgpu-webhook gives the objects that
    vgpu-webhook default makes of helm template's output."""
    extra = [a for s in sets for a in ("--set", s)]
    rc, plain, err = helm(env, "template", "rel", chart, "--namespace", "ml", *extra)
    assert rc == 0, err
    rc, got, err = helm(env, "template", "rel", chart, "--namespace", "ml", *extra,
                        "--post-renderer", "vgpu-webhook")
    assert rc == 0, err
    want, _ = default(env, plain)
    assert objects(got) == objects(want)
    if chart == APP:
        trainer = objects(got)[("Deployment", "trainer")]["spec"]["template"]["spec"]
        assert trainer["schedulerName"] == "hami-scheduler"
        assert trainer["containers"][0]["resources"]["limits"]["nvidia.com/gpumem"] == "5000"
        assert objects(got)[("Deployment", "web")] == objects(plain)[("Deployment", "web")]
        # The warnings, as comments at the head of the stream.
        assert '# vgpu-webhook: warning: Deployment default/trainer: container "cuda": ' \
               'set nvidia.com/gpumem=5000 (defaultMemory)' in got


def test_denial_reason_on_helms_stderr(env):
    rc, out, err = helm(env, "template", "rel", APP, "--set", "pin=true",
                        "--post-renderer", "vgpu-webhook")
    assert rc != 0 and out == "", (rc, out)
    assert "vgpu-webhook default -: exit status 1" in err, err
    assert re.search(r'error: document \d+ \(Deployment default/trainer\): denied '
                     r'\(403 Forbidden\): spec.nodeName "gpu-node-7" bypasses the vGPU '
                     r'scheduler', err), err


def test_args_reach_default(env):
    with tempfile.TemporaryDirectory() as tmp:
        cfg = os.path.join(tmp, "values.yaml")
        with open(cfg, "w") as f:
            f.write("config:\n" + "".join("  " + line + "\n"
                                          for line in NS_PROFILE.splitlines()))
        rc, out, err = helm(env, "template", "rel", APP, "--post-renderer", "vgpu-webhook",
                            "--post-renderer-args", "--config=" + cfg,
                            "--post-renderer-args", "--namespace=ml")
        assert rc == 0, err
        limits = objects(out)[("Deployment", "trainer")]["spec"]["template"]["spec"][
            "containers"][0]["resources"]["limits"]
        assert limits["nvidia.com/gpumem"] == "3000", "the profile of namespace ml"
        assert "no namespace" not in out
        # Without the namespace: the built-in default, and the warning.
        rc, out, err = helm(env, "template", "rel", APP, "--post-renderer", "vgpu-webhook",
                            "--post-renderer-args", "--config=" + cfg)
        assert rc == 0, err
        limits = objects(out)[("Deployment", "trainer")]["spec"]["template"]["spec"][
            "containers"][0]["resources"]["limits"]
        assert limits["nvidia.com/gpumem"] == "5000"
        assert re.search(r"# vgpu-webhook: warning: Deployment trainer: no namespace .*"
                         r"--post-renderer-args --namespace=NS.*\(ml-team\)", out), out
        # A bad argument is reported as a denial is.
        rc, out, err = helm(env, "template", "rel", APP, "--post-renderer", "vgpu-webhook",
                            "--post-renderer-args", "--namspace=ml")
        assert rc != 0 and 'unknown flag "--namspace" (did you mean "--namespace"?)' in err, err


def test_binary_not_on_path(env):
    e = dict(env, PATH="/usr/bin:/bin")
    if shutil.which("vgpu-webhook", path=e["PATH"]):
        pytest.skip("a vgpu-webhook is installed in /usr/bin or /bin")
    rc, out, err = helm(e, "template", "rel", APP, "--post-renderer", "vgpu-webhook")
    assert rc != 0 and "vgpu-webhook: not found" in err, err


def test_warnings_reach_the_terminal(env):
    """With a terminal, the warnings are shown on it as on stderr, although
    helm keeps the plugin's stderr."""
    pid, fd = pty.fork()
    if pid == 0:
        os.execve(HELM, [HELM, "template", "rel", APP, "--post-renderer", "vgpu-webhook",
                         "--output-dir", os.path.join(env["HELM_DATA_HOME"], "out")], env)
    out = read_pty(fd, None, 60)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, out
    assert b'warning: Deployment default/trainer: container "cuda": set ' \
           b'nvidia.com/gpumem=5000 (defaultMemory)' in out, out


def test_install_stops_on_a_denial(env):
    """helm install renders as helm template does: a denial stops it with the
    reason, before anything is sent (--dry-run=client needs no cluster)."""
    rc, out, err = helm(env, "install", "rel", APP, "--dry-run=client", "--set", "pin=true",
                        "--post-renderer", "vgpu-webhook")
    assert rc != 0 and err.startswith("Error: INSTALLATION FAILED: "), err
    assert 'spec.nodeName "gpu-node-7" bypasses the vGPU scheduler' in err, err
    rc, out, err = helm(env, "install", "rel", APP, "--dry-run=client", "--namespace", "ml",
                        "--post-renderer", "vgpu-webhook",
                        "--post-renderer-args", "--namespace=ml")
    assert rc == 0, err
    manifest = out.split("MANIFEST:", 1)[1]
    trainer = objects(manifest)[("Deployment", "trainer")]["spec"]["template"]["spec"]
    assert trainer["schedulerName"] == "hami-scheduler", manifest
    assert '# vgpu-webhook: warning: Deployment ml/trainer: container "cuda": set ' \
           'nvidia.com/gpumem=5000 (defaultMemory)' in manifest
