#!/usr/bin/python3
"""`vgpu-webhook default` on a YAML stream like `helm template` prints for
a large release: N documents, a third each Deployments (a GPU container in
the pod template), Services and ConfigMaps, with comments and `---`.

    bench/manifests.py BIN [--out DIR] [--runs R]

Times BIN default on streams of 250, 500, 1000 and 2000 documents (the
best of R runs each, CPU time of the child: user + system), prints one row
per size (MB/s and microseconds per document) and says whether the cost
grows linearly: the cost per document of the largest stream within 1.5x
of the smallest's.  Writes DIR/manifests.tsv (default build/bench).  Exit
1 when default fails or the output is not as many documents as the input.
"""

import argparse
import os
import resource
import subprocess
import sys

SIZES = (250, 500, 1000, 2000)

DEPLOYMENT = """\
---
# Source: release/templates/deployment-{i}.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: trainer-{i}
  namespace: ml
  labels:
    app.kubernetes.io/name: trainer-{i}
    app.kubernetes.io/instance: release
    helm.sh/chart: trainer-1.2.3
spec:
  replicas: 2
  selector:
    matchLabels:
      app.kubernetes.io/name: trainer-{i}
  template:
    metadata:
      labels:
        app.kubernetes.io/name: trainer-{i}
      annotations:
        checksum/config: 3f1c0d7e9a5b2c4d6e8f0a1b3c5d7e9f
    spec:
      serviceAccountName: trainer
      containers:
      - name: cuda
        image: "nvcr.io/nvidia/cuda:12.2.0-runtime-ubuntu22.04"
        imagePullPolicy: IfNotPresent
        args: ["--epochs", "10", "--batch", "64"]
        env:
        - name: LOG_LEVEL
          value: "info"
        - name: ENABLED
          value: "yes"
        ports:
        - containerPort: 8080
          name: http
        resources:
          limits:
            nvidia.com/gpu: 1
            cpu: "2"
            memory: 8Gi
          requests:
            cpu: 500m
            memory: 4Gi
"""

SERVICE = """\
---
# Source: release/templates/service-{i}.yaml
apiVersion: v1
kind: Service
metadata:
  name: trainer-{i}
  namespace: ml
spec:
  type: ClusterIP
  ports:
  - port: 80
    targetPort: http
    protocol: TCP
  selector:
    app.kubernetes.io/name: trainer-{i}
"""

CONFIGMAP = """\
---
# Source: release/templates/configmap-{i}.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: trainer-{i}
  namespace: ml
data:
  mode: "on"
  version: "1.10"
  config.yaml: |
    learningRate: 0.001
    shards: 8
"""


def stream(n):
    parts = []
    for i in range(n):
        parts.append((DEPLOYMENT, SERVICE, CONFIGMAP)[i % 3].format(i=i))
    return "".join(parts).encode()


def cpu_of_child(argv, data):
    """(CPU seconds, stdout) of one run of argv with data on stdin."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run(argv, input=data, stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        sys.exit("bench: default exit %d" % p.returncode)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, p.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bin")
    ap.add_argument("--out", default=os.path.join(os.environ.get("BUILD", "build"),
                                                  "bench"))
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    rows = []
    print("  %6s %10s %9s %9s %10s" % ("docs", "bytes", "cpu ms", "MB/s",
                                        "us/doc"))
    for n in SIZES:
        data = stream(n)
        best, out = None, b""
        for _ in range(a.runs):
            t, out = cpu_of_child([a.bin, "default", "-"], data)
            best = t if best is None else min(best, t)
        docs_out = out.count(b"\n---\n") + 1
        if docs_out != n:
            sys.exit("bench: %d documents in, %d out" % (n, docs_out))
        best = max(best, 1e-6)
        rows.append((n, len(data), best))
        print("  %6d %10d %9.1f %9.1f %10.1f" % (
            n, len(data), best * 1e3, len(data) / best / 1e6, best / n * 1e6))
    per_doc = [t / n for n, _, t in rows]
    ratio = per_doc[-1] / per_doc[0]
    linear = ratio < 1.5
    print("  cost per document, %d docs over %d docs: %.2fx (%s)" % (
        rows[-1][0], rows[0][0], ratio,
        "linear" if linear else "NOT linear"))
    with open(os.path.join(a.out, "manifests.tsv"), "w") as f:
        f.write("docs\tbytes\tcpu_s\tmb_per_s\tus_per_doc\n")
        for n, size, t in rows:
            f.write("%d\t%d\t%.6f\t%.2f\t%.2f\n" % (n, size, t, size / t / 1e6,
                                                  t / n * 1e6))
    return 0


if __name__ == "__main__":
    sys.exit(main())
