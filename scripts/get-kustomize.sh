#!/bin/sh
# get-kustomize.sh - puts kustomize 5.6.0 at DEST/kustomize (default DEST:
# build/tools), for the KRM function tests (tests/manifests/test_krm_tools.py).
# Does nothing when it is there and reports that version.
#
# Debian 12 does not package kustomize; Debian 13 (trixie) does, as a
# static Go binary that runs on Debian 12.  apt-get downloads the package
# from trixie, from the Debian archive this machine's apt sources already
# use (scripts/apt-mirror.sh, for bookworm), with a private configuration
# under DEST (the system's sources and lists are not touched); its SHA-256
# is checked against the value below, and only usr/bin/kustomize is
# unpacked.  Nothing here reads
# standard input, and DEST is meant to be git-ignored.
#
# usage: scripts/get-kustomize.sh [DEST]
set -eu

PACKAGE=kustomize=5.6.0+ds-1+b2
DEB=kustomize_5.6.0+ds-1+b2_amd64.deb
SHA256=552bbe5563b522685b10f75a9a226bfbee9778fc313b205d595fdbb7e9c70e33
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg

dest=${1:-build/tools}
kustomize=$dest/kustomize

if [ -x "$kustomize" ] && "$kustomize" version </dev/null >/dev/null 2>&1 &&
	[ "$(cat "$kustomize.version" 2>/dev/null)" = "$PACKAGE" ]; then
	exit 0
fi

for tool in apt-get dpkg-deb sha256sum; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "get-kustomize: $tool is needed to fetch kustomize" >&2
		exit 1
	fi
done
if [ ! -f "$KEYRING" ]; then
	echo "get-kustomize: $KEYRING is needed (Debian package debian-archive-keyring)" >&2
	exit 1
fi

mirror=$("$(dirname "$0")/apt-mirror.sh" bookworm) || {
	echo "get-kustomize: no Debian mirror in this machine's apt sources" >&2
	exit 1
}

mkdir -p "$dest"
work=$(mktemp -d "$dest/.get-kustomize.XXXXXX")
work=$(cd "$work" && pwd)
trap 'rm -rf "$work"' EXIT INT TERM
mkdir -p "$work/sources" "$work/lists/partial" "$work/cache/archives/partial"
cat >"$work/sources/trixie.sources" <<SOURCES
Types: deb
URIs: $mirror
Suites: trixie
Components: main
Architectures: amd64
Signed-By: $KEYRING
SOURCES
apt() {
	apt-get -q -o Dir::Etc::sourcelist=/dev/null \
		-o Dir::Etc::sourceparts="$work/sources" \
		-o Dir::State::Lists="$work/lists" -o Dir::Cache="$work/cache" \
		-o APT::Sandbox::User=root "$@" </dev/null
}

echo "get-kustomize: fetching $PACKAGE from Debian trixie with apt-get" >&2
apt update >/dev/null
(cd "$work" && apt download "$PACKAGE" >/dev/null)
got=$(sha256sum "$work/$DEB" | cut -d' ' -f1)
if [ "$got" != "$SHA256" ]; then
	echo "get-kustomize: $DEB has SHA-256 $got, expected $SHA256" >&2
	exit 1
fi
dpkg-deb -x "$work/$DEB" "$work/root"
mv "$work/root/usr/bin/kustomize" "$kustomize"
echo "$PACKAGE" >"$kustomize.version"
"$kustomize" version </dev/null >/dev/null
echo "get-kustomize: $kustomize" >&2
