#!/bin/sh
# post-render.sh - what the vgpu-webhook Helm plugin runs (plugin.yaml):
# `vgpu-webhook default ARGS -` on the manifests helm rendered, ARGS being
# those of --post-renderer-args (--config=FILE, --namespace=NS, ...).
#
# Helm 4.1 keeps a post-renderer's stderr to itself and reports only
# `plugin "vgpu-webhook" exited with error`.  So a failure (a denial,
# exit 1; a bad argument or input, exit 2) is written on stdout as one
# YAML document that is a string: helm refuses it ("expected MappingNode
# but got ScalarNode") and prints it, the reason with it, on its stderr,
# and exits non-zero.  Warnings go to the terminal when there is one, and
# as comments at the head of the first document, which `helm template`
# prints and a release keeps in its manifest.
set -u

dir=$(mktemp -d "${TMPDIR:-/tmp}/vgpu-webhook-helm.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
trap 'exit 1' HUP INT TERM

status=0
vgpu-webhook default "$@" - >"$dir/out" 2>"$dir/err" || status=$?

if [ "$status" -ne 0 ]; then
	args=
	for a in "$@"; do args="$args $a"; done
	printf -- '--- |\n  vgpu-webhook default%s -: exit status %d\n' "$args" \
		"$status"
	if [ -s "$dir/err" ]; then
		sed 's/^/  /' "$dir/err"
	else
		printf '  (no message)\n'
	fi
	exit 0
fi
if [ -s "$dir/err" ]; then
	{ cat "$dir/err" >/dev/tty; } 2>/dev/null || :
	sed 's/^/# vgpu-webhook: /' "$dir/err"
fi
cat "$dir/out"
