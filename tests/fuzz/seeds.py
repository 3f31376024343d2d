#!/usr/bin/python3
"""Writes the fuzzers' seed corpora from the recorded fixtures.

usage: seeds.py OUTDIR
  OUTDIR/review/   every fixture's review.json
  OUTDIR/policy/   a config selector byte, then every fixture's pod
  OUTDIR/quantity/ quantities from the fixtures and a fixed list
"""
import json
import os
import sys

QUANTITIES = ["0", "1", "-1", "+1", "1.5", ".5", "5.", "500m", "1n", "1u",
              "3k", "1M", "2G", "4T", "5P", "6E", "1Ki", "16Gi", "8Ei",
              "1e3", "1E3", "1e-3", "1.5e+2", "9223372036854775807",
              "9223372036854775808", "0.000000001", "1e999999999",
              "1e-999999999", "", ".", "1.2.3", "1K", "1ki", " 1", "--1"]


def main():
    out = sys.argv[1]
    for sub in ("review", "policy", "quantity"):
        os.makedirs(os.path.join(out, sub), exist_ok=True)
    root = os.path.join(os.path.dirname(__file__), "..", "fixtures", "cases")
    quantities = set(QUANTITIES)
    for name in sorted(os.listdir(root)) if os.path.isdir(root) else []:
        path = os.path.join(root, name, "review.json")
        if not os.path.exists(path):
            continue
        with open(path, "rb") as f:
            raw = f.read()
        with open(os.path.join(out, "review", name), "wb") as f:
            f.write(raw)
        try:
            review = json.loads(raw)
        except ValueError:
            continue
        pod = (review.get("request") or {}).get("object")
        if not isinstance(pod, dict):
            continue
        for selector in range(4):
            with open(os.path.join(out, "policy", "%s-%d" % (name, selector)),
                      "wb") as f:
                f.write(bytes([selector]) + json.dumps(pod).encode())
        spec = pod.get("spec") or {}
        for c in (spec.get("containers") or []) + (spec.get("initContainers") or []):
            res = c.get("resources") or {}
            for m in (res.get("limits") or {}, res.get("requests") or {}):
                for v in m.values():
                    if isinstance(v, str):
                        quantities.add(v)
    for i, q in enumerate(sorted(quantities)):
        with open(os.path.join(out, "quantity", "q%03d" % i), "w") as f:
            f.write(q)


if __name__ == "__main__":
    main()
