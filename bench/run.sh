#!/bin/bash
# run.sh - the benchmark behind `make bench`: vgpu-webhook against the Go
# reference webhook (bench/goref), both on 127.0.0.1 over TLS.
#
#   bench/run.sh BIN GOREF HANDSHAKE CORE
#
# BIN is build/vgpu-webhook, GOREF the Go reference, HANDSHAKE the
# new-connection client (bench/handshake.c), CORE the admission core in a
# loop without HTTP or TLS (bench/core.c).  The server runs pinned to one
# core (BENCH_SERVER_CPU, default 0), the load generator to another
# (BENCH_CLIENT_CPU, default 1).  Knobs: BENCH_DURATION (seconds per run,
# default 3), BENCH_ROUNDS (alternating rounds of the throughput comparison,
# default 3), BENCH_SERIES_DURATION (seconds per run of the size series,
# default 2), BENCH_SYSCALL_DURATION (seconds of the run under strace that
# counts system calls per request, default 2), BENCH_OUT (default $BUILD/bench, BUILD defaulting to build),
# BENCH_PROFILE=1 (also record a perf profile of our server under load).
#
# Writes BENCH_OUT/results.tsv (one row per run), BENCH_OUT/syscalls.tsv
# (system calls per kind in the strace run) and BENCH_OUT/results.md
# (the tables, also printed).  Exit status 1 when a server fails to start,
# gives a wrong answer or errors under load; a missed target is reported in
# the table, not in the exit status.
set -euo pipefail

if [ $# -ne 4 ]; then
	echo "usage: bench/run.sh BIN GOREF HANDSHAKE CORE" >&2
	exit 2
fi
BIN=$1
GOREF=$2
HANDSHAKE=$3
CORE=$4
HERE=$(cd "$(dirname "$0")" && pwd)
PYTHON=${PYTHON:-/usr/bin/python3}
OUT=${BENCH_OUT:-${BUILD:-build}/bench}
DUR=${BENCH_DURATION:-3}
ROUNDS=${BENCH_ROUNDS:-3}
SERIES_DUR=${BENCH_SERIES_DURATION:-2}
SCPU=${BENCH_SERVER_CPU:-0}
CCPU=${BENCH_CLIENT_CPU:-1}
PAY=$OUT/payloads
TSV=$OUT/results.tsv
SYSTSV=$OUT/syscalls.tsv
SYS_DUR=${BENCH_SYSCALL_DURATION:-2}
HZ=$(getconf CLK_TCK)

for tool in wrk taskset curl openssl strace; do
	command -v "$tool" >/dev/null ||
		{ echo "bench: $tool not found" >&2; exit 1; }
done
for f in "$BIN" "$GOREF" "$HANDSHAKE" "$CORE"; do
	[ -x "$f" ] || { echo "bench: '$f' is not an executable" >&2; exit 1; }
done
# A profile asked for and impossible: said at once, not after the run.
if [ "${BENCH_PROFILE:-0}" = 1 ] && ! command -v perf >/dev/null; then
	echo "SKIP profile: BENCH_PROFILE=1 needs perf (Debian package linux-perf)"
	exit 1
fi
if [ "$(nproc)" -lt 2 ]; then
	echo "bench: only one core: the server and the load share it" >&2
	CCPU=$SCPU
fi

mkdir -p "$OUT"
started_at=$(date +%s)
# This script, its samplers and its clients stay off the server's core.
taskset -pc "$CCPU" $$ >/dev/null

# --- servers --------------------------------------------------------------

PIDS=()
LOADPID=
# On exit: the load generator, then every server still running (SIGTERM,
# then SIGKILL after 5 s, as stop() does).
cleanup() {
	local pid
	[ -n "$LOADPID" ] && kill -TERM "$LOADPID" 2>/dev/null
	for pid in "${PIDS[@]}"; do
		stop "$pid"
	done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() {
	"$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# start NAME KEY: starts server NAME (ours or goref) with the certificate of
# type KEY (ec or rsa); sets PID, PORT, METRICS (ours only) and LOG.
start() {
	local name=$1 key=$2 i
	PORT=$(free_port)
	LOG=$OUT/$name.log
	: >"$LOG"
	if [ "$name" = ours ]; then
		METRICS=$(free_port)
		taskset -c "$SCPU" "$BIN" serve --listen "127.0.0.1:$PORT" \
			--tls-cert-file "$OUT/certs/$key.crt" \
			--tls-private-key-file "$OUT/certs/$key.key" \
			--metrics-listen "127.0.0.1:$METRICS" 2>>"$LOG" &
	else
		METRICS=
		taskset -c "$SCPU" "$GOREF" -listen "127.0.0.1:$PORT" \
			-cert "$OUT/certs/$key.crt" -key "$OUT/certs/$key.key" \
			2>>"$LOG" &
	fi
	PID=$!
	PIDS+=("$PID")
	for i in $(seq 100); do
		if curl -skf -o /dev/null "https://127.0.0.1:$PORT/healthz"; then
			return 0
		fi
		if ! kill -0 "$PID" 2>/dev/null; then
			break
		fi
		sleep 0.1
	done
	echo "bench: $name did not start on 127.0.0.1:$PORT; its log:" >&2
	tail -n 20 "$LOG" >&2
	exit 1
}

# stop PID: SIGTERM, then SIGKILL after 5 s (said on stderr: a server
# must exit by itself on SIGTERM).
stop() {
	local pid=$1 i
	kill -TERM "$pid" 2>/dev/null || true
	for i in $(seq 50); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	if kill -KILL "$pid" 2>/dev/null; then
		echo "bench: server $pid did not exit within 5 s of SIGTERM; killed" >&2
	fi
	wait "$pid" 2>/dev/null || true
	for i in "${!PIDS[@]}"; do
		[ "${PIDS[$i]}" = "$pid" ] && unset "PIDS[$i]"
	done
	return 0
}

# cpu_ticks PID: user + system time of the process, in clock ticks.
cpu_ticks() {
	local stat
	stat=$(cat "/proc/$1/stat")
	stat=${stat##*) }
	set -- $stat
	echo $((${12} + ${13}))
}

# core_busy: the ticks the server's core spent on anything but idling.
core_busy() {
	local name user nice sys idle iowait irq softirq steal rest
	while read -r name user nice sys idle iowait irq softirq steal rest; do
		if [ "$name" = "cpu$SCPU" ]; then
			echo $((user + nice + sys + irq + softirq + steal))
			return 0
		fi
	done </proc/stat
	echo 0
}

# status_kb PID FIELD: VmRSS or VmHWM in kB (empty once PID is gone).
status_kb() {
	local k v rest
	while read -r k v rest; do
		[ "$k" = "$2:" ] && { echo "$v"; return 0; }
	done 2>/dev/null <"/proc/$1/status" || true
}

# patched PORT: the patched-requests counter of our /metrics (or empty).
patched() {
	[ -n "$1" ] || return 0
	curl -sf "http://127.0.0.1:$1/metrics" 2>/dev/null |
		awk '/^vgpu_webhook_requests_total\{outcome="patched"\}/ { print $2 }' ||
		true
}

# --- load -----------------------------------------------------------------

printf 'server\trequests\tsyscall\tcalls\n' >"$SYSTSV"
printf 'phase\tserver\tpayload\tconns\trps\tp50_us\tp99_us\tmean_us\terrors\tcpu_pct\tcpu_us_req\thwm_kb\trss_kb\tother_pct\tnote\n' >"$TSV"

# load PHASE NAME PAYLOAD CONNS SECONDS [close|handshake]: one run against
# the server in PID/PORT; appends a row to results.tsv and leaves the
# figures in R[...].
declare -A R
load() {
	local phase=$1 name=$2 payload=$3 conns=$4 secs=$5 mode=${6:-keepalive}
	local t0 t1 b0 b1 rss_max=0 rss line kv before after sampler note=""
	local body=$PAY/$payload.json
	before=$(patched "$METRICS")
	b0=$(core_busy)
	t0=$(cpu_ticks "$PID")
	if [ "$mode" = handshake ]; then
		taskset -c "$CCPU" "$HANDSHAKE" -c "$conns" -d "$secs" \
			-b "$body" -u "/mutate?timeout=10s" 127.0.0.1 "$PORT" \
			>"$OUT/load.out" 2>&1 &
	else
		BENCH_BODY=$body BENCH_CLOSE=$([ "$mode" = close ] && echo 1 || echo 0) \
			taskset -c "$CCPU" wrk -t1 -c"$conns" -d"${secs}s" \
			--timeout 10s -s "$HERE/post.lua" \
			"https://127.0.0.1:$PORT/mutate?timeout=10s" \
			>"$OUT/load.out" 2>&1 &
	fi
	sampler=$!
	LOADPID=$sampler
	# Sample the resident set while the load runs.
	while kill -0 "$sampler" 2>/dev/null; do
		rss=$(status_kb "$PID" VmRSS)
		[ "${rss:-0}" -gt "$rss_max" ] && rss_max=$rss
		sleep 0.05
	done
	wait "$sampler" || { cat "$OUT/load.out" >&2; exit 1; }
	LOADPID=
	t1=$(cpu_ticks "$PID")
	b1=$(core_busy)
	line=$(grep '^RESULT ' "$OUT/load.out") ||
		{ echo "bench: no result from the load generator:" >&2;
		  cat "$OUT/load.out" >&2; exit 1; }
	R=()
	for kv in ${line#RESULT }; do
		R[${kv%%=*}]=${kv#*=}
	done
	R[cpu_pct]=$(awk -v t=$((t1 - t0)) -v hz="$HZ" -v d="${R[duration_us]}" \
		'BEGIN { printf "%.0f", t / hz * 1e8 / d }')
	R[cpu_us_req]=$(awk -v t=$((t1 - t0)) -v hz="$HZ" -v n="${R[requests]}" \
		'BEGIN { printf "%.1f", n ? t / hz * 1e6 / n : 0 }')
	# Time the server's core gave to other processes (or the hypervisor).
	R[other_pct]=$(awk -v b=$((b1 - b0 - t1 + t0)) -v hz="$HZ" \
		-v d="${R[duration_us]}" \
		'BEGIN { if (b < 0) b = 0; printf "%.0f", b / hz * 1e8 / d }')
	R[hwm_kb]=$(status_kb "$PID" VmHWM)
	R[rss_kb]=$rss_max
	after=$(patched "$METRICS")
	if [ -n "$before" ] && [ -n "$after" ]; then
		note="patched=$(awk -v a="$after" -v b="$before" 'BEGIN { printf "%d", a - b }')"
	fi
	[ "$mode" = handshake ] && note="${note:+$note }${R[proto]}/${R[group]}"
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' \
		"$phase" "$name" "$payload" "$conns" "${R[rps]}" "${R[p50_us]}" \
		"${R[p99_us]}" "${R[mean_us]:-}" "${R[errors]}" "${R[cpu_pct]}" \
		"${R[cpu_us_req]}" "${R[hwm_kb]}" "${R[rss_kb]}" "${R[other_pct]}" \
		"$note" >>"$TSV"
	printf '  %-6s %-10s %-12s c=%-3s %9s req/s  p50 %6s us  p99 %6s us  cpu %3s%%  %7s us/req  other %2s%%  %s\n' \
		"$name" "$phase" "$payload" "$conns" "${R[rps]}" "${R[p50_us]}" \
		"${R[p99_us]}" "${R[cpu_pct]}" "${R[cpu_us_req]}" "${R[other_pct]}" \
		"$note"
	if [ "${R[errors]}" != 0 ]; then
		echo "bench: $name answered with errors under load: $line" >&2
		tail -n 5 "$LOG" >&2
		exit 1
	fi
	# The server's per-request log lines are not kept.
	: >"$LOG"
}

# syscalls NAME PAYLOAD CONNS SECONDS: a keep-alive run (as load does, its
# row in results.tsv with phase "syscalls") with strace -f -c attached to
# the server in PID; appends to syscalls.tsv one row per system call:
# server, requests answered, call, count.  Counts, not times: strace slows
# the server, but the calls a request costs stay the same.
syscalls() {
	local name=$1 payload=$2 conns=$3 secs=$4 st
	rm -f "$OUT/strace-$name.out"
	strace -f -c -q -p "$PID" -o "$OUT/strace-$name.out" 2>/dev/null &
	st=$!
	sleep 0.5 # attached to every thread before the load starts
	load syscalls "$name" "$payload" "$conns" "$secs"
	kill -INT "$st" 2>/dev/null || true
	wait "$st" || true
	[ -s "$OUT/strace-$name.out" ] || {
		echo "bench: strace counted nothing on $name (is ptrace allowed here?)" >&2
		exit 1
	}
	# strace -c: "% time seconds usecs/call calls [errors] syscall".
	awk -v s="$name" -v n="${R[requests]}" \
		'$4 ~ /^[0-9]+$/ && $NF != "total" { printf "%s\t%s\t%s\t%s\n", s, n, $NF, $4 }' \
		"$OUT/strace-$name.out" >>"$SYSTSV"
	awk -v n="${R[requests]}" '$4 ~ /^[0-9]+$/ && $NF != "total" { t += $4 }
		END { printf "  %-6s %.2f system calls per request (%d requests)\n", s, t / n, n }' \
		s="$name" "$OUT/strace-$name.out"
}

# --- inputs ---------------------------------------------------------------

echo "== payloads and certificates"
"$PYTHON" "$HERE/payloads.py" --out "$PAY"
mkdir -p "$OUT/certs"
for key in ec rsa; do
	[ -s "$OUT/certs/$key.crt" ] && continue
	case $key in
	ec) newkey=(-newkey ec -pkeyopt ec_paramgen_curve:P-256) ;;
	rsa) newkey=(-newkey rsa:2048) ;;
	esac
	openssl req -x509 "${newkey[@]}" -nodes -days 3650 \
		-subj "/CN=vgpu-webhook.bench.svc" \
		-addext "subjectAltName=DNS:localhost,IP:127.0.0.1" \
		-keyout "$OUT/certs/$key.key" -out "$OUT/certs/$key.crt" 2>/dev/null
done
awk '{ printf "  %-14s %8d bytes  %3d containers\n", $1, $2, $3 }' "$PAY/index.tsv"

# --- 1. same answers ------------------------------------------------------

echo "== answers (checked with python3-jsonpatch)"
start ours ec; OURS_PID=$PID OURS_PORT=$PORT OURS_METRICS=$METRICS OURS_LOG=$LOG
start goref ec; GO_PID=$PID GO_PORT=$PORT GO_LOG=$LOG
: >"$OUT/check.txt"
for p in typical c40 big; do
	for s in ours goref; do
		port=$OURS_PORT
		[ $s = goref ] && port=$GO_PORT
		curl -skf -o "$OUT/answer-$s-$p.json" -H 'Content-Type: application/json' \
			--data-binary "@$PAY/$p.json" \
			"https://127.0.0.1:$port/mutate?timeout=10s" ||
			{ echo "bench: $s did not answer the $p review" >&2; exit 1; }
	done
	line=$("$PYTHON" "$HERE/check.py" "$PAY/$p.json" \
		"ours=$OUT/answer-ours-$p.json" "goref=$OUT/answer-goref-$p.json")
	echo "  $p: $line"
	printf '%s\t%s\n' "$p" "$line" >>"$OUT/check.txt"
done

use() {
	if [ "$1" = ours ]; then
		PID=$OURS_PID PORT=$OURS_PORT METRICS=$OURS_METRICS LOG=$OURS_LOG
	else
		PID=$GO_PID PORT=$GO_PORT METRICS= LOG=$GO_LOG
	fi
}

# --- 2. throughput against the reference ----------------------------------

echo "== typical pod, 16 connections: $ROUNDS alternating rounds of ${DUR}s"
for s in ours goref; do
	use $s
	load warmup $s typical 16 1
done
for r in $(seq "$ROUNDS"); do
	for s in ours goref; do
		use $s
		load compare $s typical 16 "$DUR"
	done
done
if [ "${BENCH_PROFILE:-0}" = 1 ]; then
	echo "== profile of vgpu-webhook, typical pod, 16 connections: $OUT/profile.txt"
	use ours
	perf record -q -e cpu-clock -p "$OURS_PID" -o "$OUT/perf.data" \
		-- sleep "$DUR" 2>/dev/null &
	perf_pid=$!
	load profile ours typical 16 "$DUR"
	wait "$perf_pid" || true
	perf report -i "$OUT/perf.data" --stdio --sort dso,sym \
		--percent-limit 0.5 2>/dev/null | grep -v '^#' |
		grep -v '^$' >"$OUT/profile.txt" || true
	head -n 40 "$OUT/profile.txt"
fi
echo "== minimal review (a ConfigMap, allowed unchanged), 16 connections: the floor"
for r in 1 2; do
	for s in ours goref; do
		use $s
		load floor $s minimal 16 "$DUR"
	done
done
echo "== ~1 MiB pod, 1 connection, 2 more runs for its latency target"
use ours
for r in 1 2; do
	load big1 ours big 1 "$DUR"
done
echo "== system calls per request (strace -f -c), typical pod, 16 connections, ${SYS_DUR}s"
for s in ours goref; do
	use $s
	syscalls $s typical 16 "$SYS_DUR"
done
stop "$OURS_PID"
stop "$GO_PID"

# --- 3. latency, throughput and memory per payload ------------------------

echo "== 1, 16 and 64 keep-alive connections per payload, ${DUR}s each (fresh server per payload)"
for s in ours goref; do
	for p in typical c40 big; do
		start $s ec
		curl -sk -o /dev/null --data-binary "@$PAY/typical.json" \
			"https://127.0.0.1:$PORT/mutate"
		printf 'idle\t%s\t%s\t0\t\t\t\t\t0\t\t\t%s\t%s\t\t\n' "$s" "$p" \
			"$(status_kb "$PID" VmHWM)" "$(status_kb "$PID" VmRSS)" >>"$TSV"
		for c in 1 16 64; do
			load grid $s $p $c "$DUR"
		done
		stop "$PID"
	done
done

# --- 4. new connections ---------------------------------------------------

echo "== new connection per request (full TLS handshake, no resumption), ${DUR}s each"
for key in ec rsa; do
	start ours $key; OURS_PID=$PID OURS_PORT=$PORT OURS_METRICS=$METRICS OURS_LOG=$LOG
	start goref $key; GO_PID=$PID GO_PORT=$PORT GO_LOG=$LOG
	for r in 1 2; do
		for s in ours goref; do
			use $s
			load "handshake-$key" $s typical 16 "$DUR" handshake
		done
	done
	stop "$OURS_PID"
	stop "$GO_PID"
done

# --- 5. cost against size -------------------------------------------------

echo "== cost against size: 1 connection, ${SERIES_DUR}s each"
start ours ec; OURS_PID=$PID OURS_PORT=$PORT OURS_METRICS=$METRICS OURS_LOG=$LOG
start goref ec; GO_PID=$PID GO_PORT=$PORT GO_LOG=$LOG
for p in $(awk '$1 ~ /^series-/ { print $1 }' "$PAY/index.tsv"); do
	for s in ours goref; do
		use $s
		load series $s "$p" 1 "$SERIES_DUR"
	done
done
stop "$OURS_PID"
stop "$GO_PID"

# --- 6. the admission core alone -----------------------------------------

echo "== admission core alone (review_handlen in a loop, no HTTP or TLS)"
taskset -c "$SCPU" "$CORE" -t 500 $(awk '{ printf "%s/%s.json ", p, $1 }' \
	p="$PAY" "$PAY/index.tsv") >"$OUT/core.out" ||
	{ cat "$OUT/core.out" >&2; exit 1; }
# Prints a row per CORE line of bench/core's output $1: row name $2 (the
# payload's when empty), and a note after it in the table.
core_rows() {
	while read -r tag rest; do
		[ "$tag" = CORE ] || continue
		local -A R=()
		for kv in $rest; do
			R[${kv%%=*}]=${kv#*=}
		done
		name=${2:-$(basename "${R[file]}" .json)}
		printf 'core\tcore\t%s\t0\t\t\t\t%s\t0\t100\t%s\t\t\t\tops=%s\n' \
			"$name" "${R[us_per_call]}" "${R[us_per_call]}" \
			"${R[ops]}" >>"$TSV"
		printf '  %-14s %9s us per review  %4s ops  %s%s\n' "$name" \
			"${R[us_per_call]}" "${R[ops]}" "${R[outcome]}" "${3:-}"
	done <"$1"
}
core_rows "$OUT/core.out"

# The typical pod under a config of 50 profiles that it matches only the
# last of (each of the others fails on its namespace or on a label): the
# cost of choosing a profile.
"$PYTHON" - "$OUT/profiles-50.json" <<'EOF_PROFILES'
import json, sys
profiles = [{"name": "team-%02d" % i, "namespaces": ["team-%02d-*" % i, "ml"]
             if i % 2 else ["team-%02d" % i],
             "podLabels": {"team": "t%02d" % i},
             "devices": [{"name": "nvidia", "defaultMemory": 1000 + i}]}
            for i in range(49)]
profiles.append({"name": "ml", "namespaces": ["serving-*", "ml"],
                 "devices": [{"name": "nvidia", "defaultMemory": 3000}]})
with open(sys.argv[1], "w") as f:
    json.dump({"profiles": profiles}, f)
EOF_PROFILES
taskset -c "$SCPU" "$CORE" -t 500 -c "$OUT/profiles-50.json" \
	"$PAY/typical.json" >"$OUT/core-profiles.out" ||
	{ cat "$OUT/core-profiles.out" >&2; exit 1; }
core_rows "$OUT/core-profiles.out" typical-50-profiles \
	" (50 profiles, the last matches)"

# --- 7. default on a manifest stream ---------------------------------------

echo "== default on a helm-template-like YAML stream (bench/manifests.py)"
taskset -c "$SCPU" "$PYTHON" "$HERE/manifests.py" "$BIN" --out "$OUT"

# --- report ---------------------------------------------------------------

elapsed=$(($(date +%s) - started_at))
"$PYTHON" "$HERE/report.py" --results "$TSV" --index "$PAY/index.tsv" \
	--check "$OUT/check.txt" --syscalls "$SYSTSV" --elapsed "$elapsed" \
	--server-cpu "$SCPU" --client-cpu "$CCPU" >"$OUT/results.md"
echo
cat "$OUT/results.md"
