# image/image.mk - `make image`: the container image, without Docker, from
# Debian 12 packages with Debian's own tools; `make image-test`, part of
# `make test`.  See "The container image" in README.md.
#
#   make image        build/image/vgpu-webhook-VERSION.oci.tar, an OCI
#                     image layout (skopeo's oci-archive:) whose index
#                     holds linux/amd64 and linux/arm64, and
#                     build/image/vgpu-webhook-VERSION.spdx.json, its SBOM
#   make image-test   tests/image/test_image.py on that archive
#
# For each architecture (build/image/ARCH/):
#   sysroot/    the -dev packages of IMAGE_BUILD_PACKAGES, extracted by
#               image/rootfs.sh; the binary is built against it with
#               ARCH's gcc (Debian's cross compiler for a foreign one), so
#               that the build machine needs no foreign architecture in
#               dpkg and no -dev package of it
#   base.tar    the first layer: image/packages and their dependencies,
#               extracted by image/rootfs.sh (no shell, no package manager)
#   app.tar     the second layer: the stripped binary, its LICENSE,
#               /etc/passwd, /etc/group and /etc/nsswitch.conf (image/etc/)
# then image/oci.sh writes the archive and image/sbom.py the SBOM.
#
# The tools (IMAGE_TOOLS) are installed by scripts/install-deps.sh when one
# is missing (as root, or with sudo -n).  As root, nothing else is needed:
# mmdebstrap's chrootless mode mounts nothing, so CAP_SYS_ADMIN is not
# needed (a container that is not privileged will do); as another user,
# mmdebstrap needs user namespaces and subuids (its unshare mode).
#
# The packages are those of the machine's own apt mirrors on the day
# base.tar and sysroot/ are made; they are kept until image/packages or
# the scripts change.  `make image-clean image` takes the newest packages
# (security updates) and rebuilds everything.
#
# Knobs: IMAGE_ARCHES (default amd64 arm64), IMAGE_NAME (the name that
# `kind load image-archive` gives the image, default
# docker.io/library/vgpu-webhook, which the chart's default image
# `vgpu-webhook` means), IMAGE_SOURCE (org.opencontainers.image.source,
# default the git remote "origin" without credentials), IMAGE_SUITES
# (image/rootfs.sh), and SOURCE_DATE_EPOCH or VGPU_REVISION and
# VGPU_BUILD_DATE (the Makefile), which fix every time in the output: two
# builds of one commit from the same packages give the same bytes.

IMAGE_DIR := build/image
IMAGE_ARCHES ?= amd64 arm64
IMAGE_NAME ?= docker.io/library/vgpu-webhook
IMAGE_SOURCE ?= $(shell git remote get-url origin 2>/dev/null | \
	sed 's|://[^/@]*@|://|')
IMAGE_OCI := $(IMAGE_DIR)/vgpu-webhook-$(VERSION).oci.tar
IMAGE_SBOM := $(IMAGE_DIR)/vgpu-webhook-$(VERSION).spdx.json
# The one list of runtime packages (comments dropped).  These and the
# other shell calls below are recursive: run only by the image's targets.
IMAGE_PACKAGES = $(shell sed 's/\#.*//' image/packages)
# libmicrohttpd is not among them: the binary links the patched static
# library that scripts/build-mhd.sh builds for each architecture.
IMAGE_BUILD_PACKAGES := libc6-dev libgnutls28-dev \
	libjansson-dev libcurl4-gnutls-dev libyaml-dev
IMAGE_TRIPLET_amd64 := x86_64-linux-gnu
IMAGE_TRIPLET_arm64 := aarch64-linux-gnu
IMAGE_HOST_ARCH = $(shell dpkg --print-architecture 2>/dev/null)
IMAGE_FOREIGN = $(filter-out $(IMAGE_HOST_ARCH),$(IMAGE_ARCHES))
# The native gcc answers to its triplet too; a foreign architecture needs
# Debian's cross compiler, and qemu-user-static for image-test.
IMAGE_TOOLS = mmdebstrap umoci skopeo jq python3 python3-pytest gcc binutils \
	pkg-config make curl xz-utils patch \
	$(foreach a,$(IMAGE_FOREIGN),gcc-$(subst _,-,$(IMAGE_TRIPLET_$a))) \
	$(if $(IMAGE_FOREIGN),qemu-user-static)
IMAGE_EPOCH = $(shell date -u -d '$(VGPU_BUILD_DATE)' +%s)
IMAGE_SCRIPTS := image/rootfs.sh image/rootfs-hook.py image/image.mk
IMAGE_ETC := $(wildcard image/etc/*)

TEST_TARGETS += image-test

.PHONY: image image-deps image-test image-clean
image: $(IMAGE_OCI) $(IMAGE_SBOM)

image-deps:
	@./scripts/install-deps.sh $(IMAGE_TOOLS)

image-clean:
	rm -rf $(IMAGE_DIR)

# --- per architecture ----------------------------------------------------

$(IMAGE_DIR)/%/sysroot.tar: $(IMAGE_SCRIPTS) | image-deps
	SOURCE_DATE_EPOCH=$(IMAGE_EPOCH) image/rootfs.sh $* $@ $(IMAGE_BUILD_PACKAGES)

# Links that point to an absolute path are made relative, so that they
# resolve inside the sysroot (the linker follows them on this machine).
$(IMAGE_DIR)/%/sysroot/.done: $(IMAGE_DIR)/%/sysroot.tar
	rm -rf $(@D) && mkdir -p $(@D)
	tar -xf $< -C $(@D) --no-same-owner
	find $(@D) -type l -lname '/*' -exec sh -c 'for l; do \
		ln -sfn "$$(realpath -s -m --relative-to="$$(dirname "$$l")" \
		"$$0$$(readlink "$$l")")" "$$l"; done' $(abspath $(@D)) {} +
	@touch $@

$(IMAGE_DIR)/%/base.tar: image/packages $(IMAGE_SCRIPTS) | image-deps
	SOURCE_DATE_EPOCH=$(IMAGE_EPOCH) image/rootfs.sh $* $@ $(IMAGE_PACKAGES)

# The Makefile's own release build (its flags and version plumbing, never
# a sanitizer) in its own folder, against the sysroot; make decides there
# what to rebuild, and the binary's time changes only when it is relinked.
$(IMAGE_DIR)/%/build/vgpu-webhook: $(IMAGE_DIR)/%/sysroot/.done FORCE
	@sysroot=$(abspath $(IMAGE_DIR)/$*/sysroot); \
	triplet=$(IMAGE_TRIPLET_$*); \
	[ -n "$$triplet" ] || { echo "image: no triplet for $*" \
		"(IMAGE_TRIPLET_$* in image/image.mk)" >&2; exit 1; }; \
	PKG_CONFIG_PATH= PKG_CONFIG_SYSROOT_DIR=$$sysroot \
	PKG_CONFIG_LIBDIR=$$sysroot/usr/lib/$$triplet/pkgconfig:$$sysroot/usr/share/pkgconfig \
	$(MAKE) --no-print-directory BUILD=$(IMAGE_DIR)/$*/build SANITIZE=0 \
		MEMCHECK=0 CC="$$triplet-gcc --sysroot=$$sysroot" AR=$$triplet-ar \
		MHD_DIR=$(IMAGE_DIR)/$*/mhd $@

$(IMAGE_DIR)/%/app.tar: $(IMAGE_DIR)/%/build/vgpu-webhook $(IMAGE_ETC) LICENSE \
		image/image.mk
	rm -rf $(@D)/app && mkdir -p $(@D)/app/usr/bin $(@D)/app/etc \
		$(@D)/app/usr/share/doc/vgpu-webhook
	$(IMAGE_TRIPLET_$*)-strip --strip-unneeded -o $(@D)/app/usr/bin/vgpu-webhook $<
	chmod 755 $(@D)/app/usr/bin/vgpu-webhook
	install -m 644 $(IMAGE_ETC) $(@D)/app/etc/
	install -m 644 LICENSE $(@D)/app/usr/share/doc/vgpu-webhook/LICENSE
	tar --sort=name --format=posix \
		--pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime \
		--mtime=@$(IMAGE_EPOCH) --owner=0 --group=0 --numeric-owner \
		-C $(@D)/app -cf $@ ./usr/bin/vgpu-webhook \
		./usr/share/doc/vgpu-webhook/LICENSE \
		$(addprefix ./etc/,$(notdir $(IMAGE_ETC)))

# Reached through pattern rules only: kept, not removed as intermediates.
.SECONDARY: $(foreach a,$(IMAGE_ARCHES),$(IMAGE_DIR)/$a/sysroot.tar \
	$(IMAGE_DIR)/$a/sysroot/.done $(IMAGE_DIR)/$a/build/vgpu-webhook)

# --- the archive and its SBOM ----------------------------------------------

# What names and labels the image, outside the layers: rewritten only when
# it changes, so that a change rebuilds the archive.
IMAGE_ID = $(IMAGE_NAME) $(IMAGE_SOURCE) $(VGPU_REVISION) $(VGPU_BUILD_DATE) \
	$(IMAGE_ARCHES)
$(IMAGE_DIR)/image.stamp: FORCE
	@mkdir -p $(@D)
	@[ "$$(cat $@ 2>/dev/null)" = "$(IMAGE_ID)" ] || echo "$(IMAGE_ID)" >$@

IMAGE_LAYERS := $(foreach a,$(IMAGE_ARCHES),$(IMAGE_DIR)/$a/base.tar \
	$(IMAGE_DIR)/$a/app.tar)
IMAGE_ENV = IMAGE_NAME='$(IMAGE_NAME)' IMAGE_VERSION='$(VERSION)' \
	IMAGE_REVISION='$(VGPU_REVISION)' IMAGE_CREATED='$(VGPU_BUILD_DATE)' \
	IMAGE_EPOCH='$(IMAGE_EPOCH)' IMAGE_SOURCE='$(IMAGE_SOURCE)'

$(IMAGE_OCI): $(IMAGE_LAYERS) image/oci.sh $(IMAGE_DIR)/image.stamp
	$(IMAGE_ENV) image/oci.sh $@ $(IMAGE_DIR)/oci \
		$(foreach a,$(IMAGE_ARCHES),$a:$(IMAGE_DIR)/$a/base.tar:$(IMAGE_DIR)/$a/app.tar)
	@echo "image: $@ ($$(du -k $@ | cut -f1) KiB)"

$(IMAGE_SBOM): $(IMAGE_OCI) image/sbom.py
	$(IMAGE_ENV) $(PYTHON) image/sbom.py $(IMAGE_DIR)/oci \
		$(foreach a,$(IMAGE_ARCHES),$a:$(IMAGE_DIR)/$a/base.tar:$(IMAGE_DIR)/$a/app.tar) \
		>$@.tmp && mv $@.tmp $@

# --- image-test ------------------------------------------------------------

# The tests need root (chroot, a uid of 65532) and the tools; when the
# tools cannot be installed, each test says SKIP with the reason (and the
# suite fails unless ALLOW_SKIP=1).  A failing build fails.
image-test:
	@if ./scripts/install-deps.sh $(IMAGE_TOOLS); then \
		$(MAKE) --no-print-directory image || exit 1; \
	else \
		export IMAGE_UNAVAILABLE="the image tools ($(IMAGE_TOOLS)) are missing and could not be installed"; \
	fi; \
	IMAGE_OCI=$(IMAGE_OCI) IMAGE_SBOM=$(IMAGE_SBOM) IMAGE_ARCHES='$(IMAGE_ARCHES)' \
	IMAGE_DIR=$(IMAGE_DIR) $(IMAGE_ENV) IMAGE_PACKAGES='$(IMAGE_PACKAGES)' \
	$(PYTEST) tests/image/test_image.py
