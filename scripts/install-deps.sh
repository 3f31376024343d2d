#!/bin/sh
# install-deps.sh - installs the Debian packages that vgpu-webhook builds,
# tests and benchmarks with, when any is missing.  Needs root (or sudo) only
# when something is missing; never reads standard input.
#
#   scripts/install-deps.sh [PACKAGE...]
#
# With arguments, installs those packages instead (image/image.mk passes
# the tools of `make image`).
set -eu

packages="build-essential pkg-config libmicrohttpd-dev libgnutls28-dev
libjansson-dev libssl-dev openssl libcmocka-dev clang-14 libclang-rt-14-dev
valgrind curl python3 python3-jsonpatch python3-yaml python3-pytest
python3-pytest-xdist golang-go golang-github-evanphx-json-patch-dev wrk strace
unzip libcurl4-gnutls-dev prometheus
libyaml-dev golang-gopkg-yaml.v2-dev xz-utils sslscan bash zsh groff-base"
[ $# -gt 0 ] && packages="$*"

missing=""
for p in $packages; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed"; then
		missing="$missing $p"
	fi
done
[ -z "$missing" ] && exit 0

echo "install-deps: installing:$missing"
if [ "$(id -u)" -eq 0 ]; then
	sudo=""
elif command -v sudo >/dev/null 2>&1; then
	sudo="sudo -n"
else
	echo "install-deps: missing packages:$missing (run as root to install them)" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get install -y --no-install-recommends $missing </dev/null ||
	{ $sudo apt-get update </dev/null && $sudo apt-get install -y --no-install-recommends $missing </dev/null; }
# prometheus is installed for promtool only (make alerts): no daemon.
case " $missing " in *" prometheus "*)
	{ $sudo systemctl disable --now prometheus || $sudo service prometheus stop; } \
		>/dev/null 2>&1 </dev/null || true ;;
esac
