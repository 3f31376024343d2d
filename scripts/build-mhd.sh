#!/bin/sh
# build-mhd.sh - builds libmicrohttpd 0.9.75, with the patches of
# patches/libmicrohttpd/, as a static library for vgpu-webhook to link.
#
#   scripts/build-mhd.sh OUT
#
# Writes OUT/lib/libmicrohttpd.a and OUT/include/microhttpd.h.  The source
# is the upstream tarball that Debian 12's libmicrohttpd source package is
# made from, checked against its SHA-256 below; it is fetched once from the
# Debian archive this machine's apt uses (scripts/apt-mirror.sh) into
# ${XDG_CACHE_HOME:-~/.cache}/vgpu-webhook/, or taken from $MHD_TARBALL.
# CC (and pkg-config's variables) choose the compiler and the libraries,
# as for the webhook itself: `make image` builds it for each architecture.
# Only what the webhook uses is built: HTTP and HTTPS (GnuTLS) with epoll;
# no post processor, authentication, upgrade, examples or documentation.
# README "HTTP framing" says why the library is patched.
set -eu

[ $# -eq 1 ] || { echo "usage: scripts/build-mhd.sh OUT" >&2; exit 2; }
out=$1
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
name=libmicrohttpd_0.9.75.orig.tar.xz
sha256=796e7e217a4802679fcac667a4e98501c53185dcf50ca0583870e84192620131
cache=${XDG_CACHE_HOME:-$HOME/.cache}/vgpu-webhook
tarball=${MHD_TARBALL:-$cache/$name}

die() { echo "build-mhd: $*" >&2; exit 1; }

if [ ! -f "$tarball" ]; then
	[ -z "${MHD_TARBALL:-}" ] || die "no file \"$tarball\" (MHD_TARBALL)"
	mirror=$("$here/apt-mirror.sh" bookworm) ||
		die "no Debian archive in this machine's apt sources; set MHD_TARBALL to a copy of $name"
	mkdir -p "$cache"
	tmp="$tarball.$$"
	echo "build-mhd: fetching $name from the Debian archive"
	curl -fsSL --retry 3 -o "$tmp" \
		"$mirror/pool/main/libm/libmicrohttpd/$name" ||
		{ rm -f "$tmp"; die "cannot fetch $name from $mirror"; }
	mv -f "$tmp" "$tarball"
fi
echo "$sha256  $tarball" | sha256sum -c --status ||
	die "\"$tarball\" is not the expected $name (SHA-256 differs)"

rm -rf "$out"
mkdir -p "$out/src" "$out/lib" "$out/include"
out=$(cd "$out" && pwd)
tar -C "$out/src" --strip-components=1 -xJf "$tarball"
for p in "$root"/patches/libmicrohttpd/*.patch; do
	patch -d "$out/src" -p1 --batch --quiet <"$p" ||
		die "patch \"$p\" does not apply"
done

cd "$out/src"
# A CC that builds for another machine (the image's cross compiler, with
# its --sysroot) is a cross build: configure is told the host so that it
# runs no test program.
host=
if [ -n "${CC:-}" ]; then
	target=$($CC -dumpmachine) || die "\"$CC\" does not run"
	[ "$target" = "$(cc -dumpmachine)" ] || host="--host=$target"
fi
# Hardened like Debian's own build; PIC because the webhook is a PIE.
./configure --quiet $host --disable-shared --enable-static --with-pic \
	--disable-doc --disable-examples --disable-curl --disable-nls \
	--disable-postprocessor --disable-bauth --disable-dauth \
	--disable-httpupgrade --enable-https --enable-epoll \
	CFLAGS="-O2 -g -fstack-protector-strong -fstack-clash-protection" \
	CPPFLAGS="-D_FORTIFY_SOURCE=2" >configure.log 2>&1 ||
	{ tail -n 20 configure.log >&2; die "configure failed (see $out/src/configure.log)"; }
grep -q '^#define HTTPS_SUPPORT 1' MHD_config.h ||
	die "configure found no GnuTLS (libgnutls28-dev): HTTPS would be missing"
make -j"${MHD_JOBS:-2}" -C src/microhttpd >make.log 2>&1 ||
	{ tail -n 20 make.log >&2; die "make failed (see $out/src/make.log)"; }
cp src/microhttpd/.libs/libmicrohttpd.a "$out/lib/"
cp src/include/microhttpd.h "$out/include/"
echo "build-mhd: built $out/lib/libmicrohttpd.a (0.9.75, patched)"
