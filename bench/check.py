#!/usr/bin/python3
"""Checks the answers of the benchmarked servers before any load is sent.

    check.py REVIEW NAME=ANSWER [NAME=ANSWER...]

Each ANSWER file must be an AdmissionReview response to the REVIEW file:
same apiVersion and uid, allowed, with a JSON Patch that applies to the
request's object (python3-jsonpatch).  Then the answers are compared with
each other: the patched pods and the warnings should be the same, so that
the servers are measured doing the same work.

Prints one line: the operations of each answer, and "same" or what
differs.  Exit status 1 when an answer is not valid, 0 otherwise (a
difference between valid answers is reported, not fatal).
"""

import base64
import json
import sys

import jsonpatch


def load(path):
    with open(path, "rb") as f:
        return json.loads(f.read())


def judge(review, name, path):
    """Returns (patched pod, warnings, number of operations)."""
    try:
        answer = load(path)
    except (OSError, ValueError) as e:
        raise SystemExit("check: %s: answer is not JSON: %s" % (name, e))
    req = review["request"]
    resp = answer.get("response") or {}
    problems = []
    if answer.get("apiVersion") != review["apiVersion"]:
        problems.append("apiVersion %r" % answer.get("apiVersion"))
    if answer.get("kind") != "AdmissionReview":
        problems.append("kind %r" % answer.get("kind"))
    if resp.get("uid") != req["uid"]:
        problems.append("uid %r" % resp.get("uid"))
    if resp.get("allowed") is not True:
        problems.append("not allowed: %r" % resp.get("status"))
    if resp.get("patchType") != "JSONPatch" or not resp.get("patch"):
        problems.append("no JSONPatch")
    if problems:
        raise SystemExit("check: %s: bad answer: %s"
                         % (name, "; ".join(problems)))
    ops = json.loads(base64.b64decode(resp["patch"]))
    try:
        pod = jsonpatch.apply_patch(req["object"], ops)
    except jsonpatch.JsonPatchException as e:
        raise SystemExit("check: %s: patch does not apply: %s" % (name, e))
    return pod, resp.get("warnings") or [], len(ops)


def main(argv):
    if len(argv) < 3:
        sys.stderr.write(__doc__)
        return 2
    review = load(argv[1])
    results = []
    for arg in argv[2:]:
        name, _, path = arg.partition("=")
        results.append((name,) + judge(review, name, path))
    first = results[0]
    diffs = []
    for other in results[1:]:
        if other[1] != first[1]:
            diffs.append("patched pod of %s differs from %s"
                         % (other[0], first[0]))
        if other[2] != first[2]:
            diffs.append("warnings of %s differ from %s"
                         % (other[0], first[0]))
    print("%s; %s" % (", ".join("%s %d ops" % (r[0], r[3]) for r in results),
                      "; ".join(diffs) if diffs else "same patched pod "
                      "and warnings"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
