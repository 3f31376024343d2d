#!/usr/bin/python3
"""Turns the rows of bench/run.sh into the Markdown report, with the
targets marked PASS or MISS.

    report.py --results results.tsv --index index.tsv --check check.txt \
              --elapsed SECONDS --server-cpu N --client-cpu N
"""

import argparse
import csv
import os
import platform
import statistics
import subprocess
import sys

SERVERS = ("ours", "goref")
LABEL = {"ours": "vgpu-webhook", "goref": "Go reference",
         "core": "admission core alone"}
PAYLOAD = {"typical": "typical (1 container)", "c40": "40 containers",
           "big": "~1 MiB"}

TARGET_RATIO = 3.0
TARGET_P99_US = 1000
TARGET_RSS_BYTES = 10 * 1000 * 1000
TARGET_BIG_US = 20000
SATURATED = 90  # server CPU percent above which a run is server-bound


def num(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def load_rows(path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    for r in rows:
        for k in ("conns", "rps", "p50_us", "p99_us", "mean_us", "errors",
                  "cpu_pct", "cpu_us_req", "hwm_kb", "rss_kb", "other_pct"):
            r[k] = num(r.get(k))
    return rows


def pick(rows, phase, server, payload=None, conns=None):
    return [r for r in rows if r["phase"] == phase and r["server"] == server
            and (payload is None or r["payload"] == payload)
            and (conns is None or r["conns"] == conns)]


def fmt_int(v):
    return "-" if v is None else "{:,.0f}".format(v)


def fmt_ms(us):
    return "-" if us is None else "%.2f ms" % (us / 1000)


def fmt_us(us):
    return "-" if us is None else "%.0f" % us


def fmt_mb(kb):
    return "-" if kb is None else "%.1f MB" % (kb * 1024 / 1e6)


def verdict(ok):
    return "**PASS**" if ok else "**MISS**"


def fit(points):
    """Least squares y = a + b x; returns (a, b, r2) or None."""
    if len(points) < 3:
        return None
    xs = [p[0] for p in points]
    ys = [p[1] for p in points]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    if not sxx:
        return None
    b = sum((x - mx) * (y - my) for x, y in points) / sxx
    a = my - b * mx
    ss_tot = sum((y - my) ** 2 for y in ys)
    ss_res = sum((y - a - b * x) ** 2 for x, y in points)
    return a, b, 1 - ss_res / ss_tot if ss_tot else 1.0


# The kinds of system calls in the table, each the calls it counts; the
# rest is "other".
SYSCALL_KINDS = (
    ("send", ("sendmsg", "sendto", "write", "writev", "sendmmsg")),
    ("receive", ("recvfrom", "recvmsg", "read", "readv", "recvmmsg")),
    ("poll", ("epoll_wait", "epoll_pwait", "epoll_pwait2", "epoll_ctl",
              "poll", "ppoll", "select", "pselect6")),
    ("setsockopt", ("setsockopt",)),
    ("futex", ("futex",)),
)


def load_syscalls(path):
    """{server: (requests, {call: count})} of syscalls.tsv."""
    out = {}
    with open(path, newline="") as f:
        for r in csv.DictReader(f, delimiter="\t"):
            n, calls = out.setdefault(r["server"], (int(r["requests"]), {}))
            calls[r["syscall"]] = calls.get(r["syscall"], 0) + int(r["calls"])
    return out


def syscall_table(w, counts):
    """The system calls per request of each server, by kind."""
    if not counts:
        return
    w("System calls per request, typical pod over 16 keep-alive connections "
      "(`strace -f -c` attached to the server during a wrk run of its own; "
      "counts of the whole process, idle wake-ups included):")
    w("")
    w("| server | requests | all | " +
      " | ".join(k for k, _ in SYSCALL_KINDS) + " | other |")
    w("|---|---:|---:|" + "---:|" * (len(SYSCALL_KINDS) + 1))
    for s in SERVERS:
        if s not in counts or not counts[s][0]:
            continue
        n, calls = counts[s]
        left = dict(calls)
        cells = []
        for _, names in SYSCALL_KINDS:
            cells.append(sum(left.pop(c, 0) for c in names) / n)
        cells.append(sum(left.values()) / n)
        w("| %s | %s | %.2f | %s |" % (
            LABEL[s], fmt_int(n), sum(calls.values()) / n,
            " | ".join("%.2f" % c for c in cells)))
    w("")


def machine():
    model = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        wrk = subprocess.run(["wrk", "--version"], capture_output=True,
                             text=True).stdout.split("\n")[0]
        wrk = " ".join(wrk.split()[:2])
    except OSError:
        wrk = "wrk"
    return "%s, %d cores, Linux %s; load by %s" % (
        model, os.cpu_count() or 0, platform.release(), wrk)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--results", required=True)
    ap.add_argument("--index", required=True)
    ap.add_argument("--check", required=True)
    ap.add_argument("--syscalls")
    ap.add_argument("--elapsed", type=int, default=0)
    ap.add_argument("--server-cpu", default="0")
    ap.add_argument("--client-cpu", default="1")
    args = ap.parse_args()

    rows = load_rows(args.results)
    sizes = {}
    with open(args.index) as f:
        for line in f:
            name, size, containers = line.split("\t")
            sizes[name] = (int(size), int(containers))
    checks = {}
    with open(args.check) as f:
        for line in f:
            name, _, text = line.rstrip("\n").partition("\t")
            checks[name] = text

    out = []
    w = out.append
    w("## Benchmark results")
    w("")
    w("%s. Server pinned to core %s, load generator to core %s; "
      "`make bench` took %d s." % (machine(), args.server_cpu,
                                   args.client_cpu, args.elapsed))
    others = sorted(r["other_pct"] for r in rows
                    if r["other_pct"] is not None
                    and r["phase"] not in ("warmup", "syscalls"))
    if others:
        w("Other processes (and the hypervisor) took a median %.0f%% and at "
          "most %.0f%% of the server's core during the runs%s."
          % (statistics.median(others), others[-1],
             "; **the machine was busy: figures are low and noisy**"
             if statistics.median(others) > 5 else ""))
    w("")

    # Targets.
    best = {}
    for s in SERVERS:
        runs = pick(rows, "compare", s)
        best[s] = max(runs, key=lambda r: r["rps"]) if runs else None
    ratio = (best["ours"]["rps"] / best["goref"]["rps"]
             if best["ours"] and best["goref"] else None)
    p99_runs = (pick(rows, "compare", "ours") +
                pick(rows, "grid", "ours", "typical", 16))
    p99s = sorted(r["p99_us"] for r in p99_runs)
    typ64 = pick(rows, "grid", "ours", "typical", 64)
    rss = typ64[0]["hwm_kb"] if typ64 else None
    big1 = pick(rows, "grid", "ours", "big", 1) + pick(rows, "big1", "ours")
    big_best = min(big1, key=lambda r: r["p99_us"]) if big1 else None
    big_p99 = big_best["p99_us"] if big_best else None
    big_p50 = big_best["p50_us"] if big_best else None

    w("### Targets")
    w("")
    w("| target | measured | result |")
    w("|---|---|---|")
    if ratio is not None:
        w("| throughput >= %.0fx the Go reference, typical pod, 16 connections "
          "(best of %d rounds each) | %s vs %s req/s = **%.2fx** (server "
          "CPU %.0f%% and %.0f%%) | %s |"
          % (TARGET_RATIO, len(pick(rows, "compare", "ours")),
             fmt_int(best["ours"]["rps"]), fmt_int(best["goref"]["rps"]),
             ratio, best["ours"]["cpu_pct"], best["goref"]["cpu_pct"],
             verdict(ratio >= TARGET_RATIO)))
    if p99s:
        w("| p99 < 1 ms at 16 connections, typical pod (best of %d runs; "
          "worst %s) | %s | %s |"
          % (len(p99s), fmt_ms(p99s[-1]), fmt_ms(p99s[0]),
             verdict(p99s[0] < TARGET_P99_US)))
    if rss is not None:
        w("| RSS < 10 MB, typical pod, up to 64 keep-alive connections "
          "(VmHWM) | %s | %s |"
          % (fmt_mb(rss), verdict(rss * 1024 < TARGET_RSS_BYTES)))
    core = {r["payload"]: r["cpu_us_req"] for r in rows
            if r["phase"] == "core"}
    if big_p99 is not None:
        w("| ~1 MiB pod (%d bytes) answered in < 20 ms (p99, 1 connection, "
          "best of %d runs) | %s (p50 %s; admission core alone %s) | %s |"
          % (sizes["big"][0], len(big1), fmt_ms(big_p99), fmt_ms(big_p50),
             fmt_ms(core.get("big")), verdict(big_p99 < TARGET_BIG_US)))
    w("")
    w("wrk keeps every connection busy (a closed loop without pauses), so "
      "at 16 connections the latency is mostly queueing: the mean is 16 / "
      "throughput, and a p99 under 1 ms needs more than 16,000 req/s.")
    w("")
    floor = {}
    for s in SERVERS:
        runs = pick(rows, "floor", s)
        floor[s] = min(runs, key=lambda r: r["cpu_us_req"]) if runs else None
    if best["ours"] and best["goref"] and floor["ours"] and floor["goref"]:
        o, g = best["ours"]["cpu_us_req"], best["goref"]["cpu_us_req"]
        fo, fg = floor["ours"]["cpu_us_req"], floor["goref"]["cpu_us_req"]
        w("Where the time goes, typical pod at 16 connections (CPU per "
          "request of the best round): vgpu-webhook %.0f us, the Go reference "
          "%.0f us. A review that is not a Pod (%d bytes, allowed unchanged) "
          "costs vgpu-webhook %.0f us (%s req/s) and the reference %.0f us "
          "(%s req/s): that is TLS, HTTP, the log line and the system calls. "
          "The pod decision therefore costs vgpu-webhook about %.0f us in the "
          "server; alone, in a warm loop (`bench/core`), %s us. 3x the "
          "reference's throughput needs about %.0f us per request in all."
          % (o, g, sizes["minimal"][0], fo, fmt_int(floor["ours"]["rps"]),
             fg, fmt_int(floor["goref"]["rps"]), max(o - fo, 0),
             fmt_us(core.get("typical")), g / TARGET_RATIO))
        w("")
    if args.syscalls:
        syscall_table(w, load_syscalls(args.syscalls))
    if "typical-50-profiles" in core:
        w("Profiles: the typical pod under a config of 50 profiles that only "
          "the last selects costs %s us in the core loop (%s us with none)."
          % (fmt_us(core["typical-50-profiles"]), fmt_us(core.get("typical"))))
        w("")
    # Same work.
    w("Both servers were checked to give the same patched pod and warnings "
      "before the load (python3-jsonpatch applies each patch):")
    w("")
    for name, text in checks.items():
        w("- %s: %s" % (PAYLOAD.get(name, name), text))
    w("")

    # Grid.
    w("### Keep-alive throughput and latency")
    w("")
    w("`wrk -t1 -cN`, one TLS connection per wrk connection, the same body "
      "over and over. CPU is the server's user+system time per request.")
    w("")
    w("| payload | conns | vgpu-webhook req/s | p50 | p99 | CPU us/req "
      "| Go req/s | p50 | p99 | CPU us/req | ratio |")
    w("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for p in ("typical", "c40", "big"):
        for c in (1, 16, 64):
            o = pick(rows, "grid", "ours", p, c)
            g = pick(rows, "grid", "goref", p, c)
            o = o[0] if o else None
            g = g[0] if g else None
            if not o and not g:
                continue
            cells = ["%s (%.0f KiB)" % (PAYLOAD[p], sizes[p][0] / 1024), str(c)]
            for r in (o, g):
                cells += ([fmt_int(r["rps"]), fmt_ms(r["p50_us"]),
                           fmt_ms(r["p99_us"]), fmt_us(r["cpu_us_req"])]
                          if r else ["-"] * 4)
            cells.append("%.2fx" % (o["rps"] / g["rps"]) if o and g else "-")
            w("| " + " | ".join(cells) + " |")
    w("")

    # Memory.
    w("### Memory")
    w("")
    w("Peak resident set (VmHWM) of a fresh server after one request (idle) "
      "and after the runs at 1, 16 and 64 connections of each payload; in "
      "brackets the largest VmRSS sampled every 50 ms during the runs.")
    w("")
    w("| server | idle | typical | 40 containers | ~1 MiB |")
    w("|---|---:|---:|---:|---:|")
    for s in SERVERS:
        idle = pick(rows, "idle", s, "typical")
        cells = [LABEL[s], fmt_mb(idle[0]["hwm_kb"]) if idle else "-"]
        for p in ("typical", "c40", "big"):
            runs = pick(rows, "grid", s, p)
            if runs:
                cells.append("%s (%s)" % (
                    fmt_mb(max(r["hwm_kb"] for r in runs)),
                    fmt_mb(max(r["rss_kb"] for r in runs))))
            else:
                cells.append("-")
        w("| " + " | ".join(cells) + " |")
    w("")

    # Handshakes.
    w("### New connections")
    w("")
    w("`bench/handshake -c16`: each request (the typical pod) on a new TCP "
      "connection with a full TLS handshake, no session resumption (wrk "
      "would resume), TLS 1.3 suites offered in the order of the API "
      "server's Go client. Best of 2 rounds. Server CPU per connection is "
      "the cost that does not depend on the client.")
    w("")
    w("| certificate | server | conn/s | p50 | p99 | server CPU | CPU us/conn "
      "| bound by | TLS |")
    w("|---|---|---:|---:|---:|---:|---:|---|---|")
    for key, label in (("ec", "ECDSA P-256"), ("rsa", "RSA 2048")):
        for s in SERVERS:
            runs = pick(rows, "handshake-" + key, s)
            if not runs:
                continue
            r = max(runs, key=lambda x: x["rps"])
            note = r["note"].split()[-1] if r["note"] else ""
            w("| %s | %s | %s | %s | %s | %.0f%% | %s | %s | %s |"
              % (label, LABEL[s], fmt_int(r["rps"]), fmt_ms(r["p50_us"]),
                 fmt_ms(r["p99_us"]), r["cpu_pct"], fmt_us(r["cpu_us_req"]),
                 "server" if r["cpu_pct"] >= SATURATED else "client",
                 note))
    w("")
    w("A server below %d%% CPU was not saturated: the rate is then bounded "
      "by the client on its one core (the client's share of a TLS 1.3 "
      "handshake, key exchange and signature check, is close to the "
      "server's), and CPU us/conn is the figure to compare." % SATURATED)
    w("")

    # Cost against size.
    w("### Cost against size")
    w("")
    w("One connection, keep-alive. Series c: N GPU containers; series k: "
      "one GPU container, the rest environment variables.")
    w("")
    w("| payload | KiB | containers | core us/review | vgpu-webhook CPU "
      "us/req | mean latency | Go CPU us/req | mean latency |")
    w("|---|---:|---:|---:|---:|---:|---:|---:|")
    series = sorted({r["payload"] for r in rows if r["phase"] == "series"},
                    key=lambda n: (n.split("-")[1][0], sizes[n][0]))
    points = {}
    for p in series:
        cells = [p, "%.0f" % (sizes[p][0] / 1024), str(sizes[p][1]),
                 fmt_us(core.get(p))]
        if p in core:
            points.setdefault(("core", p.split("-")[1][0]), []).append(
                (sizes[p][0] / 1024, core[p]))
        for s in SERVERS:
            runs = pick(rows, "series", s, p)
            if runs:
                r = runs[0]
                cells += [fmt_us(r["cpu_us_req"]), fmt_us(r["mean_us"]) + " us"]
                points.setdefault((s, p.split("-")[1][0]), []).append(
                    (sizes[p][0] / 1024, r["cpu_us_req"]))
            else:
                cells += ["-", "-"]
        w("| " + " | ".join(cells) + " |")
    w("")
    for (s, kind), pts in sorted(points.items()):
        f = fit(pts)
        if f:
            w("- %s, series %s: CPU us/req = %.0f + %.2f x KiB (R^2 = %.4f%s)"
              % (LABEL[s], kind, f[0], f[1], f[2],
                 ", linear" if f[2] >= 0.98 else ", NOT linear"))
    w("")
    sys.stdout.write("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
