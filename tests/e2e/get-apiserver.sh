#!/bin/sh
# get-apiserver.sh - prints the path of a kube-apiserver built from Debian's
# own `kubernetes` source package (upstream 1.20.2 with its vendor/ tree),
# building it first when the cache does not hold one for the source
# package's current version.  Progress goes to standard error; the path is
# the one line on standard output.
#
# The binary is cached outside the clone, so that a fresh clone on the same
# machine skips the build (about 6 minutes on 2 cores, 2 GB of memory, 1 GB
# of disk while it runs, 110 MB kept):
#
#   ${XDG_CACHE_HOME:-$HOME/.cache}/vgpu-webhook/kube-apiserver-VERSION/kube-apiserver
#
# How it is built, as upstream built 1.20 (GOPATH mode, `make WHAT=...`,
# CGO_ENABLED=0), with one change: the vendored modern-go/reflect2 1.0.1
# crashes under Go >= 1.18 the first time the API server encodes a map (a
# SIGSEGV in mapiterinit, on the first mutating webhook's answer), so
# vendor/github.com/modern-go/reflect2 and vendor/github.com/json-iterator/go
# are replaced with Debian's golang-github-modern-go-reflect2-dev (1.0.2) and
# golang-github-json-iterator-go-dev (1.1.12) first.
#
# Needs what tests/e2e/install-deps.sh installs: a deb-src line, dpkg-dev,
# golang-go, rsync, jq, make and those two Go packages.  Never reads
# standard input.
#
# usage: tests/e2e/get-apiserver.sh
set -eu

cache=${XDG_CACHE_HOME:-$HOME/.cache}/vgpu-webhook
gocode=/usr/share/gocode/src/github.com

say() {
	echo "e2e: $*" >&2
}

die() {
	echo "e2e: $*" >&2
	exit 1
}

source_version() {
	apt-cache showsrc --only-source kubernetes 2>/dev/null |
		sed -n 's/^Version: //p' | sort -V | tail -n 1
}

version=$(source_version)
if [ -z "$version" ] && [ "$(id -u)" -eq 0 ]; then
	# A deb-src line whose index was never fetched.
	apt-get -q -o DPkg::Lock::Timeout=600 update </dev/null >&2 || true
	version=$(source_version)
fi
if [ -z "$version" ]; then
	die "apt-cache knows no source package kubernetes (is there a deb-src line? run tests/e2e/install-deps.sh)"
fi
out=$cache/kube-apiserver-$version
bin=$out/kube-apiserver

runs() {
	[ -x "$bin" ] && "$bin" --version </dev/null >/dev/null 2>&1
}

if runs; then
	echo "$bin"
	exit 0
fi

for tool in apt-get dpkg-source go make rsync jq flock; do
	command -v "$tool" >/dev/null 2>&1 ||
		die "$tool is needed to build kube-apiserver (run tests/e2e/install-deps.sh)"
done
for dir in modern-go/reflect2 json-iterator/go; do
	[ -d "$gocode/$dir" ] ||
		die "$gocode/$dir is missing (run tests/e2e/install-deps.sh)"
done

mkdir -p "$cache"
# One build at a time: a second clone waits for the first one's binary.
exec 9>"$cache/.build.lock"
if ! flock -n 9; then
	say "another kube-apiserver build is running; waiting for it"
	flock 9
fi
if runs; then
	echo "$bin"
	exit 0
fi

work=$cache/build-$version
rm -rf "$work"
mkdir -p "$work"
ticker=""
cleanup() {
	[ -n "$ticker" ] && kill "$ticker" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

start=$(date +%s)
say "building kube-apiserver from Debian's kubernetes $version (once; about 6 minutes on 2 cores, needs 2 GB of memory and 1 GB of disk)"
say "fetching the source package with apt-get source"
(cd "$work" && apt-get -q -o APT::Sandbox::User=root source --download-only \
	"kubernetes=$version" </dev/null >"$work/fetch.log" 2>&1) ||
	{ cat "$work/fetch.log" >&2; die "apt-get source kubernetes=$version failed"; }
dsc=$(ls "$work"/kubernetes_*.dsc | head -n 1)
say "unpacking $(basename "$dsc")"
dpkg-source -q -x "$dsc" "$work/src" </dev/null >"$work/unpack.log" 2>&1 ||
	{ cat "$work/unpack.log" >&2; die "dpkg-source -x failed"; }
rm -f "$work"/kubernetes_*

src=$work/src
[ -d "$src/vendor/github.com/modern-go/reflect2" ] ||
	die "the source tree has no vendor/github.com/modern-go/reflect2"
say "replacing vendored modern-go/reflect2 and json-iterator/go with Debian's (Go >= 1.18 fix)"
for dir in modern-go/reflect2 json-iterator/go; do
	rm -rf "$src/vendor/github.com/$dir"
	cp -rL "$gocode/$dir" "$src/vendor/github.com/$dir"
done

# GOPATH mode, as upstream built 1.20: the tree at GOPATH/src/k8s.io/kubernetes.
gopath=$work/gopath
mkdir -p "$gopath/src/k8s.io"
ln -s "$src" "$gopath/src/k8s.io/kubernetes"
# No git here: give the build the version it would have read from the tag.
upstream=$(echo "$version" | sed -n 's/.*really\([0-9.]*\).*/\1/p')
[ -n "$upstream" ] || upstream=$(echo "$version" | sed 's/[-+~].*//')
cat >"$work/version.env" <<EOF
KUBE_GIT_VERSION='v$upstream'
KUBE_GIT_MAJOR='$(echo "$upstream" | cut -d. -f1)'
KUBE_GIT_MINOR='$(echo "$upstream" | cut -d. -f2)'
KUBE_GIT_TREE_STATE='clean'
KUBE_GIT_COMMIT=''
EOF

say "compiling (go build -v output in $work/build.log; a line every 30 s)"
(
	while sleep 30; do
		n=$(grep -c . "$work/build.log" 2>/dev/null || true)
		say "still compiling kube-apiserver: $(($(date +%s) - start)) s, ${n:-0} packages so far"
	done
) &
ticker=$!
status=0
(
	cd "$gopath/src/k8s.io/kubernetes" &&
		env GOPATH="$gopath" GO111MODULE=off GOFLAGS=-v CGO_ENABLED=0 \
			GOCACHE="$work/gocache" KUBE_GIT_VERSION_FILE="$work/version.env" \
			KUBE_BUILD_PLATFORMS=linux/$(go env GOARCH) \
			make WHAT=cmd/kube-apiserver </dev/null >"$work/build.log" 2>&1
) || status=$?
kill "$ticker" 2>/dev/null || true
ticker=""
if [ "$status" -ne 0 ]; then
	tail -n 40 "$work/build.log" >&2
	die "building kube-apiserver failed (exit $status)"
fi

built=$(find "$src/_output" -type f -name kube-apiserver -perm -u+x | head -n 1)
[ -n "$built" ] || die "the build made no kube-apiserver binary"
rm -rf "$out.tmp"
mkdir -p "$out.tmp"
cp "$built" "$out.tmp/kube-apiserver"
rm -rf "$out"
mv "$out.tmp" "$out"
runs || die "$bin does not run"
say "built $bin in $(($(date +%s) - start)) s ($("$bin" --version </dev/null))"
echo "$bin"
