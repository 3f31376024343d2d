#!/bin/sh
# get-cel-js.sh - puts the CEL evaluator @marcbachmann/cel-js 8.0.0 (plain
# JavaScript, no dependencies) in DEST (default build/tools/cel-js), so
# that the chart checks can evaluate the webhook's matchConditions
# expression on sample pods with node.  Does nothing when DEST already
# holds that version.  The tarball's SHA-512 is checked; nothing reads
# standard input.
#
# usage: tests/chart/get-cel-js.sh [DEST]
set -eu

PACKAGE=@marcbachmann/cel-js@8.0.0
TARBALL=marcbachmann-cel-js-8.0.0.tgz
SHA512=a1a4eb033886af7cc32c588cb7fc8b5379d9b9131ac325900795f56b423bb3d786cb7258cd7f65f195d71f231deb89f36de5456537b0b944a1c2c65074ae9408
VERSION=8.0.0

dest=${1:-build/tools/cel-js}

if [ -f "$dest/lib/index.js" ] &&
	grep -q "\"version\": \"$VERSION\"" "$dest/package.json" 2>/dev/null; then
	exit 0
fi
for tool in npm sha512sum tar; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "get-cel-js: $tool is needed" >&2
		exit 1
	fi
done

parent=$(dirname "$dest")
mkdir -p "$parent"
work=$(mktemp -d "$parent/.get-cel-js.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM

echo "get-cel-js: fetching $PACKAGE with npm pack" >&2
(cd "$work" && npm pack --silent --ignore-scripts "$PACKAGE" </dev/null >/dev/null)
got=$(sha512sum "$work/$TARBALL" | cut -d' ' -f1)
if [ "$got" != "$SHA512" ]; then
	echo "get-cel-js: $TARBALL: SHA-512 mismatch (got $got)" >&2
	exit 1
fi
tar -xzf "$work/$TARBALL" -C "$work"
rm -rf "$dest"
mv "$work/package" "$dest"
echo "get-cel-js: installed $dest ($VERSION)" >&2
