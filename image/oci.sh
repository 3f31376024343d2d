#!/bin/sh
# oci.sh - assembles the image: an OCI image layout, written as a tar
# archive (what skopeo calls oci-archive:), whose index.json holds one image
# index with one image a platform.  Each image has two layers: the Debian
# packages (image/rootfs.sh) and the webhook's own files.
#
#   image/oci.sh OUTPUT.tar LAYOUT-DIR ARCH:BASE.tar:APP.tar...
#
# The environment gives the image's identity:
#   IMAGE_NAME      the image's name, written as io.containerd.image.name
#                   and org.opencontainers.image.ref.name on index.json's
#                   descriptor (what `kind load image-archive` and
#                   `podman load` name the image)
#   IMAGE_VERSION, IMAGE_REVISION, IMAGE_CREATED (RFC 3339),
#   IMAGE_EPOCH (the same instant in seconds), IMAGE_SOURCE (may be empty)
# They become the OCI labels of each image's config and the annotations
# of its manifest and of the index.  Every time in the output is
# IMAGE_CREATED, so that the same inputs give the same archive.
#
# The image runs as 65532:65532, its entrypoint is /usr/bin/vgpu-webhook
# and its default command serves with the chart's certificate paths.
set -eu

if [ $# -lt 3 ]; then
	echo "usage: image/oci.sh OUTPUT.tar LAYOUT-DIR ARCH:BASE.tar:APP.tar..." >&2
	exit 2
fi
out=$1
layout=$2
shift 2
specs=$*
: "${IMAGE_NAME:?}" "${IMAGE_VERSION:?}" "${IMAGE_REVISION:?}" \
	"${IMAGE_CREATED:?}" "${IMAGE_EPOCH:?}"
source_url=${IMAGE_SOURCE:-}

# The labels, one "key=value" a line.
labels="org.opencontainers.image.title=vgpu-webhook
org.opencontainers.image.description=Mutating admission webhook for HAMi-style vGPU sharing
org.opencontainers.image.version=$IMAGE_VERSION
org.opencontainers.image.revision=$IMAGE_REVISION
org.opencontainers.image.created=$IMAGE_CREATED
org.opencontainers.image.licenses=Apache-2.0${source_url:+
org.opencontainers.image.source=$source_url}"

rm -rf "$layout"
umoci init --layout "$layout"
for spec in $specs; do
	arch=${spec%%:*}
	rest=${spec#*:}
	base=${rest%%:*}
	app=${rest#*:}
	img="$layout:$arch"
	umoci new --image "$img"
	umoci raw add-layer --image "$img" --history.created "$IMAGE_CREATED" \
		--history.created_by "image/rootfs.sh: the Debian 12 packages of image/packages" \
		"$base"
	umoci raw add-layer --image "$img" --history.created "$IMAGE_CREATED" \
		--history.created_by "vgpu-webhook $IMAGE_VERSION ($IMAGE_REVISION): /usr/bin/vgpu-webhook, its LICENSE, /etc/passwd, /etc/group, /etc/nsswitch.conf" \
		"$app"
	set -- --image "$img" --no-history --created "$IMAGE_CREATED" \
		--os linux --architecture "$arch" \
		--config.user 65532:65532 \
		--config.entrypoint /usr/bin/vgpu-webhook \
		--config.workingdir / \
		--config.env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		--config.exposedports 9443/tcp --config.exposedports 9090/tcp
	# 9443: HTTPS admission reviews; 9090: /metrics, /healthz, /readyz.
	for word in serve --listen 0.0.0.0:9443 \
		--tls-cert-file /certs/tls.crt --tls-private-key-file /certs/tls.key \
		--metrics-listen 0.0.0.0:9090 --log-format json; do
		set -- "$@" --config.cmd "$word"
	done
	while IFS= read -r kv; do
		set -- "$@" --config.label "$kv" --manifest.annotation "$kv"
	done <<EOF
$labels
EOF
	umoci config "$@"
done
umoci gc --layout "$layout"

# The image index: each image's manifest with its platform, read back
# from its config; index.json then names that index alone.
blob() { echo "$layout/blobs/sha256/${1#sha256:}"; }
annotations=$(printf '%s\n' "$labels" |
	jq -R 'capture("^(?<key>[^=]+)=(?<value>.*)$")' | jq -s -c 'from_entries')
manifests=$(jq -c '.manifests[]' "$layout/index.json" | while IFS= read -r d; do
	config=$(jq -r '.config.digest' "$(blob "$(echo "$d" | jq -r .digest)")")
	jq -c --argjson d "$d" '{mediaType: $d.mediaType, digest: $d.digest,
		size: $d.size, platform: {architecture: .architecture, os: .os}}' \
		"$(blob "$config")"
done | jq -s -c 'sort_by(.platform.architecture)')
index=$(jq -n -c --argjson m "$manifests" --argjson a "$annotations" \
	'{schemaVersion: 2, mediaType: "application/vnd.oci.image.index.v1+json",
	  manifests: $m, annotations: $a}')
digest=$(printf '%s' "$index" | sha256sum | cut -d' ' -f1)
printf '%s' "$index" >"$layout/blobs/sha256/$digest"
size=$(printf '%s' "$index" | wc -c)
ref="$IMAGE_NAME:$IMAGE_VERSION"
jq -n -c --arg d "sha256:$digest" --argjson s "$size" --arg ref "$ref" \
	'{schemaVersion: 2, mediaType: "application/vnd.oci.image.index.v1+json",
	  manifests: [{mediaType: "application/vnd.oci.image.index.v1+json",
	    digest: $d, size: $s,
	    annotations: {"io.containerd.image.name": $ref,
	      "org.opencontainers.image.ref.name": $ref}}]}' \
	>"$layout/index.json.tmp"
mv "$layout/index.json.tmp" "$layout/index.json"

# The archive: sorted names, one owner, one time.
mkdir -p "$(dirname "$out")"
tar --sort=name --format=posix \
	--pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime \
	--mtime="@$IMAGE_EPOCH" --owner=0 --group=0 --numeric-owner \
	--mode=u=rwX,go=rX -C "$layout" -cf "$out.tmp" oci-layout index.json blobs
mv "$out.tmp" "$out"
