"""Configuration reload (behaviour §6) and profiles through `serve`: the
config in a ConfigMap-style volume (a `..data` symlink swapped, as the
kubelet does) under continuous load.
"""

import base64
import hashlib
import json
import os
import re
import shutil
import signal
import sys
import threading
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import CertDir, Server, good_review, temp_dir  # noqa: E402

MEM_RX = re.compile(r'limits/nvidia\.com~1gpumem","value":"(\d+)"')


@pytest.fixture(scope="module")
def certs():
    tmp = temp_dir("vgpu-reload-")
    yield CertDir(os.path.join(tmp, "ca"))
    shutil.rmtree(tmp, ignore_errors=True)


def configmap_layout(d, version, data, name="config.json"):
    """Writes d/VERSION/NAME and swaps d/..data to it atomically; d/NAME is
    a symlink through ..data.  Returns the bytes' SHA-256."""
    v = os.path.join(d, version)
    os.makedirs(v)
    with open(os.path.join(v, name), "wb") as f:
        f.write(data)
    tmp = os.path.join(d, "..data_tmp")
    os.symlink(version, tmp)
    os.rename(tmp, os.path.join(d, "..data"))
    link = os.path.join(d, name)
    if not os.path.islink(link):
        os.symlink(os.path.join("..data", name), link)
    return hashlib.sha256(data).hexdigest()


class Load:
    """Threads sending the sample review (namespace ml) until stopped; each
    answer's defaulted gpumem is recorded with the time its request
    started.  Every failure is recorded."""

    def __init__(self, srv, threads=3):
        self.srv = srv
        self.stop_flag = threading.Event()
        self.lock = threading.Lock()
        self.seen = []  # (start, end, gpumem)
        self.failures = []
        self.threads = [threading.Thread(target=self._run)
                        for _ in range(threads)]

    def _run(self):
        conn = None
        while not self.stop_flag.is_set():
            start = time.monotonic()
            try:
                if conn is None:
                    conn = self.srv.conn()
                status, _, body = self.srv.post(good_review(), conn=conn)
                if status != 200:
                    raise AssertionError("status %d" % status)
                resp = json.loads(body)["response"]
                if not resp.get("allowed"):
                    raise AssertionError("denied: %s" % resp)
                patch = base64.b64decode(resp["patch"]).decode()
                m = MEM_RX.search(patch.replace(" ", ""))
                if not m:
                    raise AssertionError("no gpumem in %s" % patch)
                with self.lock:
                    self.seen.append((start, time.monotonic(), m.group(1)))
            except Exception as e:  # noqa: BLE001
                with self.lock:
                    self.failures.append("%s: %s" % (type(e).__name__, e))
                if conn is not None:
                    conn.close()
                conn = None
            time.sleep(0.003)
        if conn is not None:
            conn.close()

    def start(self):
        for t in self.threads:
            t.start()

    def stop(self):
        self.stop_flag.set()
        for t in self.threads:
            t.join(30)

    def count(self):
        with self.lock:
            return len(self.seen)

    def wait_count(self, n, timeout=20.0):
        deadline = time.monotonic() + timeout
        while self.count() < n and time.monotonic() < deadline:
            time.sleep(0.02)
        assert self.count() >= n, "load stalled at %d answers" % self.count()

    def first(self, mem, after):
        with self.lock:
            for start, end, m in self.seen:
                if start >= after and m == mem:
                    return end
        return None

    def values_since(self, t):
        with self.lock:
            return {m for start, _, m in self.seen if start >= t}


PROFILE = {"profiles": [{"name": "ml-team", "namespaces": ["ml"],
                         "devices": [{"name": "nvidia",
                                      "defaultMemory": 3000}]}]}


def test_reload_configmap_volume(certs, note):
    """A new config is served within 10 s of the swap, with no failed
    request; a broken one is refused with a log line naming the key and the
    old one keeps answering; the same bytes again count nothing; /metrics
    shows one done, one refused and the hash in force."""
    d = os.path.join(certs.path, "configmap")
    os.makedirs(d)
    configmap_layout(d, "..2026_01_01_a", b"{}\n")
    with Server(certs, config=os.path.join(d, "config.json"),
                args=["--default-mem", "4000"]) as srv:
        load = Load(srv)
        load.start()
        try:
            load.wait_count(30)
            assert load.values_since(0) == {"4000"}, "flag over the file"
            good = json.dumps(PROFILE).encode()
            t_swap = time.monotonic()
            sha = configmap_layout(d, "..2026_01_02_b", good)
            seen = None
            deadline = t_swap + 10
            while time.monotonic() < deadline and seen is None:
                seen = load.first("3000", t_swap)
                time.sleep(0.05)
            assert seen is not None, "the new config was not served in 10 s"
            delay = seen - t_swap
            line = srv.wait_log(r"config reloaded", 5.0)
            assert line and sha in line and "profiles=1" in line, line
            t_new = time.monotonic()
            load.wait_count(load.count() + 30)
            assert load.values_since(t_new) == {"3000"}
            m = srv.metrics()
            assert m['vgpu_webhook_config_reloads_total{result="done"}'] == 1
            assert m['vgpu_webhook_config_info{sha256="%s"}' % sha] == 1

            mark = len(srv.log_lines())
            t_bad = time.monotonic()
            configmap_layout(d, "..2026_01_03_c",
                             b'{"profiles": [{"name": "x"}]}')
            line = srv.wait_log(r"config reload refused", 10.0, start=mark)
            assert line and "profiles[0]" in line, srv.log_lines()[mark:]
            load.wait_count(load.count() + 30)
            assert load.values_since(t_bad) == {"3000"}
            # The same broken bytes again, then the bytes in force again:
            # neither counts.
            configmap_layout(d, "..2026_01_04_d",
                             b'{"profiles": [{"name": "x"}]}')
            time.sleep(3)
            configmap_layout(d, "..2026_01_05_e", good)
            time.sleep(3)
            srv.proc.send_signal(signal.SIGHUP)
            time.sleep(0.5)
            m = srv.metrics()
            assert m['vgpu_webhook_config_reloads_total{result="done"}'] == 1
            assert m['vgpu_webhook_config_reloads_total{result="refused"}'] == 1
            assert m['vgpu_webhook_config_info{sha256="%s"}' % sha] == 1
            assert len([x for x in srv.log_lines()
                        if "config reload refused" in x]) == 1
            assert load.values_since(t_bad) == {"3000"}
        finally:
            load.stop()
        assert not load.failures, "%d requests failed: %s" % (
            len(load.failures), load.failures[:5])
        decisions = [x for x in srv.log_lines() if "decision" in x]
        assert any('profile=ml-team' in x for x in decisions), decisions[-1:]
        assert srv.stop() == 0
        note("new config served %.1f s after the swap, %d requests" % (
            delay, load.count()))


def hami_yaml(memory):
    """A HAMi device-config.yaml (the shape of its chart's) whose nvidia
    section has defaultMemory memory."""
    return ("nvidia:\n"
            "  resourceCountName: nvidia.com/gpu\n"
            "  resourceMemoryName: nvidia.com/gpumem\n"
            "  resourceMemoryPercentageName: nvidia.com/gpumem-percentage\n"
            "  resourceCoreName: nvidia.com/gpucores\n"
            "  resourcePriorityName: nvidia.com/priority\n"
            "  overwriteEnv: false\n"
            "  defaultMemory: %s\n"
            "  defaultCores: 0\n"
            "  defaultGPUNum: 1\n"
            "  deviceSplitCount: 10\n"
            "  gpuCorePolicy: default\n"
            "cambricon:\n"
            "  resourceCountName: cambricon.com/vmlu\n"
            "  resourceMemoryName: cambricon.com/mlu.smlu.vmemory\n"
            % memory).encode()


def two_files_hash(*files):
    """The hash of several files as the server takes it (behaviour §6):
    each file's length (8 bytes, little-endian), then its bytes."""
    h = hashlib.sha256()
    for data in files:
        h.update(len(data).to_bytes(8, "little") + data)
    return h.hexdigest()


def test_reload_hami_device_config(certs, note):
    """HAMi's device-config.yaml (behaviour §2.3) in its own ConfigMap
    volume is followed with the config file: its new defaultMemory is
    served within 10 s of the swap; a broken one is refused naming the
    file and the key, and the old defaults keep answering."""
    cd = os.path.join(certs.path, "cm-config")
    hd = os.path.join(certs.path, "cm-hami")
    os.makedirs(cd)
    os.makedirs(hd)
    config = b'{"schedulerName": "hami-scheduler"}\n'
    configmap_layout(cd, "..2026_02_01_a", config)
    configmap_layout(hd, "..2026_02_01_a", hami_yaml(2000),
                     name="device-config.yaml")
    hami = os.path.join(hd, "device-config.yaml")
    with Server(certs, config=os.path.join(cd, "config.json"),
                args=["--hami-device-config", hami]) as srv:
        load = Load(srv)
        load.start()
        try:
            load.wait_count(30)
            assert load.values_since(0) == {"2000"}, "HAMi's defaultMemory"
            m = srv.metrics()
            assert m['vgpu_webhook_config_info{sha256="%s"}' % two_files_hash(
                config, hami_yaml(2000))] == 1
            t_swap = time.monotonic()
            configmap_layout(hd, "..2026_02_02_b", hami_yaml(2500),
                             name="device-config.yaml")
            seen = None
            while time.monotonic() < t_swap + 10 and seen is None:
                seen = load.first("2500", t_swap)
                time.sleep(0.05)
            assert seen is not None, "HAMi's new default not served in 10 s"
            delay = seen - t_swap
            line = srv.wait_log(r"config reloaded", 5.0)
            assert line and "hamiDeviceConfig=" in line and hami in line, line
            t_new = time.monotonic()
            load.wait_count(load.count() + 30)
            assert load.values_since(t_new) == {"2500"}

            mark = len(srv.log_lines())
            t_bad = time.monotonic()
            configmap_layout(hd, "..2026_02_03_c", hami_yaml('"lots"'),
                             name="device-config.yaml")
            line = srv.wait_log(r"config reload refused", 10.0, start=mark)
            assert line and "nvidia.defaultMemory" in line and \
                "hami-device-config" in line, srv.log_lines()[mark:]
            load.wait_count(load.count() + 30)
            assert load.values_since(t_bad) == {"2500"}
            m = srv.metrics()
            assert m['vgpu_webhook_config_reloads_total{result="done"}'] == 1
            assert m['vgpu_webhook_config_reloads_total{result="refused"}'] == 1
        finally:
            load.stop()
        assert not load.failures, "%d requests failed: %s" % (
            len(load.failures), load.failures[:5])
        assert srv.stop() == 0
        note("HAMi's new default served %.1f s after the swap" % delay)


def test_reload_without_config(certs):
    """Without --config, the info metric has an empty hash and SIGHUP
    changes nothing."""
    with Server(certs) as srv:
        srv.proc.send_signal(signal.SIGHUP)
        time.sleep(0.3)
        m = srv.metrics()
        assert m['vgpu_webhook_config_info{sha256=""}'] == 1
        assert m['vgpu_webhook_config_reloads_total{result="done"}'] == 0
        assert srv.stop() == 0


def test_decision_log_names_allocation(certs):
    """The decision line names the allocation of the configuration applied
    when it is not hami (behaviour §2.4, §6 logs): a namespace profile with
    dra gives allocation=dra and a patch of the toleration alone; the top
    level's hami gives no such field."""
    d = temp_dir("alloc")
    path = os.path.join(d, "config.json")
    with open(path, "w") as f:
        json.dump({"profiles": [{"name": "dra-pool", "namespaces": ["ml"],
                                 "allocation": "dra"}]}, f)
    with Server(certs, config=path) as srv:
        review = good_review()
        status, _, body = srv.post(review)
        assert status == 200, body
        resp = json.loads(body)["response"]
        ops = json.loads(base64.b64decode(resp["patch"]))
        assert [o["path"] for o in ops] == ["/spec/tolerations/-"], ops
        other = good_review()
        other["request"]["namespace"] = "web"
        other["request"]["object"]["metadata"]["namespace"] = "web"
        status, _, body = srv.post(other)
        assert status == 200, body
        line = srv.wait_log(r"decision .*namespace=web", 5.0)
        assert line and "allocation=" not in line, line
        dra = [x for x in srv.log_lines() if "decision" in x and
               "namespace=ml" in x]
        assert dra and "profile=dra-pool allocation=dra" in dra[0], dra
        assert srv.stop() == 0
    shutil.rmtree(d, ignore_errors=True)


def test_reload_yaml(certs):
    """The reload reads YAML as the start does: a values file of the chart
    (its config key), then the chart's ConfigMap as kubectl prints it; a
    YAML syntax error is refused naming its line, and the old config keeps
    serving."""
    d = os.path.join(certs.path, "configmap-yaml")
    os.makedirs(d)
    values = (b"image: {repository: vgpu-webhook}\n"
              b"config:\n  profiles:\n    - name: ml-team\n      namespaces: [ml]\n"
              b"      devices: [{name: nvidia, defaultMemory: 3000}]\n")
    configmap_layout(d, "..2026_01_01_a", values, name="config.yaml")
    with Server(certs, config=os.path.join(d, "config.yaml")) as srv:
        load = Load(srv, threads=1)
        load.start()
        try:
            load.wait_count(5)
            assert load.values_since(0) == {"3000"}, "the values file at start"
            cm = (b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata:\n"
                  b"  config.json: |\n"
                  b"    {\"profiles\": [{\"name\": \"ml-team\", \"namespaces\": [\"ml\"],\n"
                  b"      \"devices\": [{\"name\": \"nvidia\", \"defaultMemory\": 2000}]}]}\n")
            t_swap = time.monotonic()
            configmap_layout(d, "..2026_01_02_b", cm, name="config.yaml")
            deadline, seen = t_swap + 10, None
            while time.monotonic() < deadline and seen is None:
                seen = load.first("2000", t_swap)
                time.sleep(0.05)
            assert seen is not None, "the ConfigMap was not served in 10 s"
            mark = len(srv.log_lines())
            configmap_layout(d, "..2026_01_03_c", b"config:\n  a: 1\n   b: 2\n",
                             name="config.yaml")
            line = srv.wait_log(r"config reload refused", 10.0, start=mark)
            assert line and "line 3, column" in line, srv.log_lines()[mark:]
            t_bad = time.monotonic()
            load.wait_count(load.count() + 5)
            assert load.values_since(t_bad) == {"2000"}
        finally:
            load.stop()
        assert not load.failures, load.failures[:5]
        assert srv.stop() == 0
