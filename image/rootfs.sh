#!/bin/sh
# rootfs.sh - writes a tarball of Debian 12 packages for one architecture,
# extracted with mmdebstrap's "extract" variant: no maintainer script runs,
# so nothing needs a shell or emulation, and nothing but the packages (and
# their dependencies) lands in it.  image/image.mk makes from it the base
# layer of the image and the sysroot that the binary is built against.
#
#   image/rootfs.sh ARCH OUTPUT.tar PACKAGE... [-PACKAGE...]
#
# A package written -NAME is extracted as a dependency and then removed
# (see image/rootfs-hook.py): one that only a maintainer script needs.
# The packages come from the suites of IMAGE_SUITES (default: bookworm,
# bookworm-updates and bookworm-security), each on the mirror that this
# machine's own apt sources use for it (scripts/apt-mirror.sh).  The hook
# image/rootfs-hook.py strips the documentation and writes the dpkg
# database of exactly these packages; /dev's entries are left out of the
# tarball (the container runtime makes /dev).  With SOURCE_DATE_EPOCH set,
# the same packages give the same bytes.
#
# As root, mmdebstrap runs in its chrootless mode: it mounts nothing, so it
# needs no CAP_SYS_ADMIN (a container that is not privileged will do), and
# it gives the same bytes as its root mode.
# As another user it runs in its unshare mode (user namespaces, subuids).
# IMAGE_MMDEBSTRAP_MODE chooses another.  Never reads standard input.
set -eu

if [ $# -lt 3 ]; then
	echo "usage: image/rootfs.sh ARCH OUTPUT.tar PACKAGE... [-PACKAGE...]" >&2
	exit 2
fi
arch=$1
out=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd)
packages=""
IMAGE_DROP=""
for p in "$@"; do
	case $p in
	-*) IMAGE_DROP="$IMAGE_DROP ${p#-}" ;;
	*) packages="$packages${packages:+,}$p" ;;
	esac
done
export IMAGE_DROP
suites=${IMAGE_SUITES:-bookworm bookworm-updates bookworm-security}

# One "deb URI SUITE main" line a suite: the tree names no mirror.
set --
for s in $suites; do
	mirror=$("$here/../scripts/apt-mirror.sh" "$s") || {
		echo "rootfs: no apt source of this machine serves $s (set IMAGE_SUITES)" >&2
		exit 1
	}
	set -- "$@" "deb $mirror $s main"
done

mkdir -p "$(dirname "$out")"
rm -f "$out.raw" "$out.tmp"
# cleanup/apt and cleanup/mmdebstrap are the hook's: it removes apt's
# files itself, with everything else that no package ships.
mode=${IMAGE_MMDEBSTRAP_MODE:-$([ "$(id -u)" -eq 0 ] && echo chrootless || echo unshare)}
mmdebstrap --quiet --mode="$mode" --variant=extract \
	--architectures="$arch" --include="$packages" \
	--extract-hook="$here/rootfs-hook.py \"\$1\"" \
	--skip=cleanup/apt,cleanup/mmdebstrap \
	--format=tar bookworm "$out.raw" "$@" </dev/null
mmtarfilter --path-exclude='/dev/*' <"$out.raw" >"$out.tmp"
rm -f "$out.raw"
mv "$out.tmp" "$out"
