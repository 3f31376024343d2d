#!/bin/sh
# install-deps.sh - installs the Debian packages that the end-to-end suite
# needs, when any is missing: etcd, the Go toolchain and the pieces that
# build kube-apiserver from Debian's `kubernetes` source package, and a
# deb-src line for bookworm, on the mirror the machine's own apt sources
# use (scripts/apt-mirror.sh), so that `apt-get source` finds it.  Runs as root
# (or with sudo -n) only when something is missing; never reads standard
# input.
#
# The packaged etcd is not used: the suite runs its own on a free port with
# its own data folder.  Where installing etcd-server starts the system
# service (a machine booted with systemd), it is stopped and disabled, so
# that nothing is left listening on 2379.
set -eu

packages="etcd-server golang-go dpkg-dev rsync jq make
golang-github-modern-go-reflect2-dev golang-github-json-iterator-go-dev
python3 python3-yaml python3-jsonpatch openssl npm unzip"
# npm ships with Node.js where Node.js comes from elsewhere; Debian's npm
# package then conflicts with it.
if command -v npm >/dev/null 2>&1; then
	packages=$(echo "$packages" | sed 's/ npm / /')
fi

SRC_LIST=/etc/apt/sources.list.d/vgpu-webhook-e2e-src.sources

have_deb_src() {
	grep -rqsE '^[[:space:]]*(deb-src[[:space:]].*[[:space:]]bookworm[[:space:]]|Types:.*deb-src)' \
		/etc/apt/sources.list /etc/apt/sources.list.d/ 2>/dev/null
}

missing=""
for p in $packages; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed"; then
		missing="$missing $p"
	fi
done
need_src=0
have_deb_src || need_src=1
etcd_on=0
if command -v systemctl >/dev/null 2>&1 &&
	systemctl is-enabled --quiet etcd.service 2>/dev/null; then
	etcd_on=1
fi
[ -z "$missing" ] && [ "$need_src" -eq 0 ] && [ "$etcd_on" -eq 0 ] && exit 0

if [ "$(id -u)" -eq 0 ]; then
	sudo=""
elif command -v sudo >/dev/null 2>&1; then
	sudo="sudo -n"
else
	[ -n "$missing" ] && echo "e2e: missing packages:$missing" >&2
	[ "$need_src" -eq 1 ] && echo "e2e: no deb-src line for bookworm" >&2
	if [ -n "$missing" ] || [ "$need_src" -eq 1 ]; then
		echo "e2e: run as root to install them" >&2
		exit 1
	fi
	echo "e2e: the packaged etcd.service is enabled; the suite does not use it" >&2
	exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt="$sudo apt-get -o DPkg::Lock::Timeout=600 -q"

updated=0
if [ "$need_src" -eq 1 ]; then
	# The machine's own mirror: the tree names none.
	mirror=$("$(dirname "$0")/../../scripts/apt-mirror.sh" bookworm)
	echo "e2e: adding a deb-src line for bookworm from $mirror ($SRC_LIST)"
	printf '%s\n' 'Types: deb-src' "URIs: $mirror" \
		'Suites: bookworm bookworm-updates' 'Components: main' \
		'Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg' |
		$sudo tee "$SRC_LIST" >/dev/null
	$apt update </dev/null
	updated=1
fi

if [ -n "$missing" ]; then
	echo "e2e: installing:$missing"
	if ! $apt install -y --no-install-recommends $missing </dev/null; then
		[ "$updated" -eq 1 ] && exit 1
		$apt update </dev/null
		$apt install -y --no-install-recommends $missing </dev/null
	fi
fi

# The suite's etcd is its own: the packaged service must not hold 2379, now
# or after a reboot.  Disabling works with or without a running systemd.
if command -v systemctl >/dev/null 2>&1 &&
	systemctl is-enabled --quiet etcd.service 2>/dev/null; then
	echo "e2e: disabling the packaged etcd.service (the suite runs its own)"
	$sudo systemctl disable etcd.service </dev/null >/dev/null 2>&1 || true
fi
if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1 &&
	systemctl is-active --quiet etcd.service 2>/dev/null; then
	echo "e2e: stopping the packaged etcd.service"
	$sudo systemctl stop etcd.service </dev/null || true
fi
exit 0
