#!/usr/bin/python3
"""Writes the benchmark's AdmissionReview bodies into a folder.

Each body is shaped like what the API server sends for a Pod CREATE
(docs/behaviour.md §7, #s7-sent): defaulted spec, managedFields,
generateName without name, requests that hold every key of limits,
canonical quantity strings, the two default tolerations and a projected
service-account volume.

    payloads.py --out build/bench/payloads

writes minimal.json (a ConfigMap CREATE, allowed unchanged: the cost of
everything but the pod decision), typical.json (one GPU container),
c40.json (40 GPU containers),
big.json (about 1 MiB: long env lists and a last-applied annotation),
series-cN.json for N in SERIES (N GPU containers each) and
series-kK.json for K in KIB_SERIES (one GPU container and K KiB in all,
the bulk in environment variables), plus index.tsv (name, bytes, containers).
The output is deterministic.
"""

import argparse
import json
import os
import sys

SERIES = (1, 10, 40, 100, 400)
KIB_SERIES = (16, 64, 256, 1024)
BIG_TARGET = 1 << 20
BODY_LIMIT = 3 << 20

TOKEN_VOLUME = "kube-api-access-5x7qk"


def uid(n):
    """A fixed, well-formed UID per payload."""
    return "8f4c2a1e-%04x-4b6d-9e21-%012x" % (n & 0xFFFF, 0x3D5A7C000000 + n)


def env_list(i, extra):
    env = [
        {"name": "NCCL_DEBUG", "value": "WARN"},
        {"name": "OMP_NUM_THREADS", "value": "8"},
        {"name": "WORKER_INDEX", "value": str(i)},
        {"name": "POD_NAME", "valueFrom": {"fieldRef": {
            "apiVersion": "v1", "fieldPath": "metadata.name"}}},
    ]
    for k in range(extra):
        env.append({
            "name": "FEATURE_FLAG_%04d" % k,
            "value": "model=resnet152;batch=256;shard=%d/%d;"
                     "path=/data/shards/part-%05d.tfrecord" % (k, extra, k),
        })
    return env


def container(i, gpu=True, extra_env=0):
    name = "cuda" if i == 0 else "worker-%d" % i
    limits = {"cpu": "2", "memory": "8Gi"}
    if gpu:
        limits["nvidia.com/gpu"] = "1"
    return {
        "name": name,
        "image": "nvcr.io/nvidia/pytorch:24.01-py3",
        "command": ["python3", "/workspace/train.py"],
        "args": ["--epochs=90", "--data=/data", "--worker=%d" % i],
        "ports": [{"name": "metrics", "containerPort": 9400 + i % 100,
                   "protocol": "TCP"}],
        "env": env_list(i, extra_env),
        "resources": {"limits": dict(limits), "requests": dict(limits)},
        "volumeMounts": [
            {"name": "data", "mountPath": "/data"},
            {"name": TOKEN_VOLUME, "readOnly": True,
             "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"},
        ],
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
        "imagePullPolicy": "IfNotPresent",
    }


def managed_container(c):
    """The fieldsV1 entry the controller manager records for container c."""
    fields = {".": {}, "f:args": {}, "f:command": {}, "f:image": {},
              "f:imagePullPolicy": {}, "f:name": {},
              "f:terminationMessagePath": {},
              "f:terminationMessagePolicy": {},
              "f:ports": {}, "f:volumeMounts": {}}
    fields["f:env"] = {
        'k:{"name":"%s"}' % e["name"]: {
            ".": {}, "f:name": {},
            ("f:valueFrom" if "valueFrom" in e else "f:value"): {}}
        for e in c["env"]}
    fields["f:resources"] = {
        "f:limits": {".": {}, **{"f:" + k: {} for k in c["resources"]["limits"]}},
        "f:requests": {".": {},
                       **{"f:" + k: {} for k in c["resources"]["requests"]}},
    }
    return fields


def pod(containers, annotations=None):
    meta = {
        "generateName": "train-7d9f8b6c54-",
        "namespace": "ml",
        "labels": {"app": "train", "pod-template-hash": "7d9f8b6c54",
                   "team": "vision"},
        "annotations": {"prometheus.io/scrape": "true",
                        "prometheus.io/port": "9400"},
        "ownerReferences": [{
            "apiVersion": "apps/v1", "kind": "ReplicaSet",
            "name": "train-7d9f8b6c54",
            "uid": "3b1f0a52-6a0e-4b7e-8f3c-2d8e5a9c1f47",
            "controller": True, "blockOwnerDeletion": True}],
        "managedFields": [{
            "manager": "kube-controller-manager",
            "operation": "Update",
            "apiVersion": "v1",
            "time": "2024-05-14T09:12:44Z",
            "fieldsType": "FieldsV1",
            "fieldsV1": {
                "f:metadata": {
                    "f:generateName": {},
                    "f:labels": {".": {}, "f:app": {},
                                 "f:pod-template-hash": {}, "f:team": {}},
                    "f:ownerReferences": {
                        ".": {},
                        'k:{"uid":"3b1f0a52-6a0e-4b7e-8f3c-2d8e5a9c1f47"}': {}},
                },
                "f:spec": {
                    "f:containers": {
                        'k:{"name":"%s"}' % c["name"]: managed_container(c)
                        for c in containers},
                    "f:dnsPolicy": {}, "f:enableServiceLinks": {},
                    "f:restartPolicy": {}, "f:schedulerName": {},
                    "f:securityContext": {},
                    "f:terminationGracePeriodSeconds": {},
                    "f:volumes": {".": {}, 'k:{"name":"data"}': {}},
                },
            },
        }],
    }
    if annotations:
        meta["annotations"].update(annotations)
    return {
        "kind": "Pod",
        "apiVersion": "v1",
        "metadata": meta,
        "spec": {
            "volumes": [
                {"name": "data", "persistentVolumeClaim": {
                    "claimName": "imagenet"}},
                {"name": TOKEN_VOLUME, "projected": {
                    "sources": [
                        {"serviceAccountToken": {"expirationSeconds": 3607,
                                                 "path": "token"}},
                        {"configMap": {"name": "kube-root-ca.crt", "items": [
                            {"key": "ca.crt", "path": "ca.crt"}]}},
                        {"downwardAPI": {"items": [{"path": "namespace",
                            "fieldRef": {"apiVersion": "v1",
                                         "fieldPath": "metadata.namespace"}}]}},
                    ],
                    "defaultMode": 420}},
            ],
            "containers": containers,
            "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst",
            "serviceAccountName": "default",
            "serviceAccount": "default",
            "securityContext": {},
            "schedulerName": "default-scheduler",
            "tolerations": [
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                 "effect": "NoExecute", "tolerationSeconds": 300},
                {"key": "node.kubernetes.io/unreachable",
                 "operator": "Exists", "effect": "NoExecute",
                 "tolerationSeconds": 300},
            ],
            "priority": 0,
            "enableServiceLinks": True,
            "preemptionPolicy": "PreemptLowerPriority",
        },
        "status": {},
    }


def review(n, obj, kind="Pod", resource="pods"):
    return {
        "kind": "AdmissionReview",
        "apiVersion": "admission.k8s.io/v1",
        "request": {
            "uid": uid(n),
            "kind": {"group": "", "version": "v1", "kind": kind},
            "resource": {"group": "", "version": "v1", "resource": resource},
            "requestKind": {"group": "", "version": "v1", "kind": kind},
            "requestResource": {"group": "", "version": "v1",
                                "resource": resource},
            "namespace": "ml",
            "operation": "CREATE",
            "userInfo": {
                "username": "system:serviceaccount:kube-system:"
                            "replicaset-controller",
                "uid": "0c6f3f0e-9d1b-4f55-a1f5-6c2a8b7e4d10",
                "groups": ["system:serviceaccounts",
                           "system:serviceaccounts:kube-system",
                           "system:authenticated"],
            },
            "object": obj,
            "oldObject": None,
            "dryRun": False,
            "options": {"kind": "CreateOptions",
                        "apiVersion": "meta.k8s.io/v1"},
        },
    }


def encode(doc):
    return json.dumps(doc, separators=(",", ":")).encode()


def big_review(n, target, gpu_containers, plain_containers, annotation):
    """A review of about target bytes: env lists grown to fit."""
    def build(extra):
        cs = [container(i, gpu=i < gpu_containers, extra_env=extra)
              for i in range(gpu_containers + plain_containers)]
        ann = None
        if annotation:
            # kubectl apply keeps the manifest it applied, as JSON.
            # Kubernetes caps all annotations at 256 KiB: keep the
            # manifest of as many containers as fit in a quarter of target.
            text = ""
            for k in range(1, len(cs) + 1):
                manifest = {"apiVersion": "v1", "kind": "Pod",
                            "metadata": {"name": "train", "namespace": "ml"},
                            "spec": {"containers": cs[:k]}}
                longer = json.dumps(manifest, separators=(",", ":"))
                if len(longer) > min(target // 4, 200 * 1024):
                    break
                text = longer
            ann = {"kubectl.kubernetes.io/last-applied-configuration": text}
        return encode(review(n, pod(cs, ann)))

    lo, hi = 0, 1
    while len(build(hi)) <= target:
        lo, hi = hi, hi * 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if len(build(mid)) <= target:
            lo = mid
        else:
            hi = mid
    return build(lo)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="output folder")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)

    bodies = {
        # Not a Pod: allowed unchanged after the least work, which leaves
        # the cost of TLS, HTTP and the log line.
        "minimal": encode(review(4, {
            "kind": "ConfigMap", "apiVersion": "v1",
            "metadata": {"name": "settings", "namespace": "ml"},
            "data": {"mode": "train"}}, "ConfigMap", "configmaps")),
        "typical": encode(review(1, pod([container(0)]))),
        "c40": encode(review(2, pod([container(i) for i in range(40)]))),
        "big": big_review(3, BIG_TARGET, 4, 12, True),
    }
    for n in SERIES:
        bodies["series-c%d" % n] = encode(
            review(100 + n, pod([container(i) for i in range(n)])))
    for k in KIB_SERIES:
        bodies["series-k%d" % k] = big_review(200 + k, k * 1024, 1, 0, False)

    with open(os.path.join(args.out, "index.tsv"), "w") as index:
        for name, body in bodies.items():
            if len(body) > BODY_LIMIT:
                sys.exit("payloads: %s is %d bytes, over the 3 MiB limit"
                         % (name, len(body)))
            obj = json.loads(body)["request"]["object"]
            containers = len(obj.get("spec", {}).get("containers", []))
            with open(os.path.join(args.out, name + ".json"), "wb") as f:
                f.write(body)
            index.write("%s\t%d\t%d\n" % (name, len(body), containers))
    return 0


if __name__ == "__main__":
    sys.exit(main())
