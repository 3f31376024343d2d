#!/bin/sh
# run.sh - `make run`: the webhook on this machine, for trying it out.
#
#   scripts/run.sh [BIN]          (BIN defaults to build/vgpu-webhook)
#
# 1. makes a development CA and a serving certificate for localhost and
#    vgpu-webhook.vgpu-system.svc in certs/dev/ (certs/gen-certs.sh; kept
#    while they stay valid for a day, so a restart keeps the same CA);
# 2. serves HTTPS on 127.0.0.1:8443, metrics on 127.0.0.1:9090 (or the
#    next free port up to 9099);
# 3. sends scripts/sample-review.json the way the API server does (TLS
#    verified against the CA for the Service name, ?timeout=10s) and prints
#    the answer with its patch decoded;
# 4. keeps serving in the foreground until Ctrl-C (the server drains and
#    exits 0).
#
# Environment: VGPU_LISTEN (default 127.0.0.1:8443), VGPU_ARGS (more flags
# for serve, such as "--config examples/config.json -v 1").
set -eu

bin=${1:-build/vgpu-webhook}
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
dir=$root/certs/dev
listen=${VGPU_LISTEN:-127.0.0.1:8443}
service=vgpu-webhook.vgpu-system.svc
port=${listen##*:}

say() {
	echo "run: $*" >&2
}

[ -x "$bin" ] || { say "$bin is not built (run make)"; exit 2; }
for tool in curl openssl python3; do
	command -v "$tool" >/dev/null 2>&1 || { say "$tool is needed"; exit 2; }
done

# 1. Certificates: made once, made again when missing or about to expire.
if [ -f "$dir/ca.crt" ] && [ -f "$dir/tls.crt" ] && [ -f "$dir/tls.key" ] &&
	openssl x509 -checkend 86400 -noout -in "$dir/tls.crt" >/dev/null 2>&1; then
	say "using the development certificates in certs/dev"
else
	sh "$root/certs/gen-certs.sh" --out "$dir" --force >/dev/null
fi

# 2. A free metrics port: curl exits 7 when nothing listens.
metrics_port=9090
while :; do
	rc=0
	curl -s -o /dev/null --connect-timeout 1 \
		"http://127.0.0.1:$metrics_port/" || rc=$?
	[ "$rc" -eq 7 ] && break
	metrics_port=$((metrics_port + 1))
	[ "$metrics_port" -le 9099 ] || {
		say "no free port in 127.0.0.1:9090-9099 for metrics"
		exit 1
	}
done
metrics=127.0.0.1:$metrics_port

# shellcheck disable=SC2086 # VGPU_ARGS is a list of flags
"$bin" serve --listen "$listen" --metrics-listen "$metrics" \
	--tls-cert-file "$dir/tls.crt" --tls-private-key-file "$dir/tls.key" \
	${VGPU_ARGS:-} &
pid=$!
# Ctrl-C reaches the server through the terminal, and through this trap
# when the script alone is signalled; the server drains and exits once.
trap 'kill -TERM "$pid" 2>/dev/null || true' INT TERM

ready=0
for _ in $(seq 1 100); do
	if ! kill -0 "$pid" 2>/dev/null; then
		break
	fi
	if curl -sf -o /dev/null "http://$metrics/readyz"; then
		ready=1
		break
	fi
	sleep 0.05
done
if [ "$ready" -ne 1 ]; then
	rc=0
	wait "$pid" || rc=$?
	say "the server did not start (exit status $rc)"
	exit 1
fi

# 3. One review, as the API server sends it.
say "POST https://$service:$port/mutate?timeout=10s (scripts/sample-review.json)"
answer=$(curl -sS --cacert "$dir/ca.crt" \
	--resolve "$service:$port:127.0.0.1" \
	-H 'Content-Type: application/json' \
	--data-binary @"$here/sample-review.json" \
	"https://$service:$port/mutate?timeout=10s") || {
	say "the sample review failed"
	kill -TERM "$pid" 2>/dev/null || true
	wait "$pid" || true
	exit 1
}
printf '%s' "$answer" | python3 -c '
import base64, json, sys
answer = json.load(sys.stdin)
resp = answer.get("response", {})
if "patch" in resp:
    resp["patch"] = json.loads(base64.b64decode(resp["patch"]))
    resp["patch (decoded from base64)"] = resp.pop("patch")
print(json.dumps(answer, indent=2))
'

cat >&2 <<EOF

run: serving https://127.0.0.1:$port (certificate for localhost and $service)
run:   curl --cacert certs/dev/ca.crt --data-binary @scripts/sample-review.json \\
run:        https://localhost:$port/mutate
run:   curl http://$metrics/metrics
run: Ctrl-C to stop
EOF

# 4. The foreground until the server exits.
rc=0
wait "$pid" || rc=$?
# wait returns early when a trapped signal arrives: wait for the exit itself.
if kill -0 "$pid" 2>/dev/null; then
	rc=0
	wait "$pid" || rc=$?
fi
exit "$rc"
