#!/usr/bin/python3
"""sbom.py - writes the SPDX 2.3 JSON SBOM of the image on stdout.

    image/sbom.py LAYOUT-DIR ARCH:BASE.tar:APP.tar...

LAYOUT-DIR is the OCI image layout that image/oci.sh wrote (its index.json
names one image index); BASE.tar and APP.tar are the two layers of ARCH's
image.  The environment gives IMAGE_NAME, IMAGE_VERSION, IMAGE_REVISION,
IMAGE_CREATED and IMAGE_SOURCE (as for image/oci.sh).

The document describes the image index; the index contains one image a
platform; each image contains every Debian package of its first layer,
read from the dpkg database there (/var/lib/dpkg/status, which
image/rootfs-hook.py writes for exactly the packages extracted), with
its version, architecture and purl (pkg:deb/debian/NAME@VERSION?arch=ARCH),
and the vgpu-webhook binary of its second layer, with its SHA-256.  Every
field comes from the inputs, so the same image gives the same bytes.
"""

import hashlib
import json
import os
import re
import sys
import tarfile
import urllib.parse
import uuid

STATUS = "./var/lib/dpkg/status"
BINARY = "./usr/bin/vgpu-webhook"


def purl_part(s):
    """A purl component: percent-encoded but for the unreserved characters
    and ":" (the purl specification; "+" becomes %2B)."""
    return urllib.parse.quote(s, safe=":")


def spdx_id(*parts):
    """SPDXRef-<parts>, with every character outside [A-Za-z0-9.-] as "-"."""
    return "SPDXRef-" + "-".join(re.sub(r"[^A-Za-z0-9.-]", "-", p) for p in parts)


def read_member(tar_path, name):
    with tarfile.open(tar_path) as tar:
        f = tar.extractfile(name)
        if f is None:
            raise SystemExit("sbom: %s: no file %s" % (tar_path, name))
        return f.read()


def dpkg_status(text):
    """[{field: value}] of a dpkg status file (continuation lines joined)."""
    entries = []
    for para in text.split("\n\n"):
        entry, key = {}, None
        for line in para.splitlines():
            if line[:1] in (" ", "\t") and key:
                entry[key] += "\n" + line.strip()
            elif ":" in line:
                key, _, value = line.partition(":")
                entry[key] = value.strip()
        if entry:
            entries.append(entry)
    return entries


def blob(layout, digest):
    with open(os.path.join(layout, "blobs", *digest.split(":", 1)), "rb") as f:
        return f.read()


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def package(spdxid, name, version, purl, purpose=None, sha=None,
            download="NOASSERTION", license="NOASSERTION", **extra):
    """An SPDX package: its files not analysed, located by its purl."""
    p = {"SPDXID": spdxid, "name": name, "versionInfo": version}
    if purpose:
        p["primaryPackagePurpose"] = purpose
    p["downloadLocation"] = download
    p["filesAnalyzed"] = False
    if sha:
        p["checksums"] = [{"algorithm": "SHA256", "checksumValue": sha}]
    p["externalRefs"] = [{"referenceCategory": "PACKAGE-MANAGER",
                          "referenceType": "purl", "referenceLocator": purl}]
    p["licenseConcluded"] = license
    p["licenseDeclared"] = license
    p["copyrightText"] = "NOASSERTION"
    p.update(extra)
    return p


def relation(a, kind, b):
    return {"spdxElementId": a, "relationshipType": kind, "relatedSpdxElement": b}


def main(argv):
    if len(argv) < 3:
        sys.stderr.write("usage: sbom.py LAYOUT-DIR ARCH:BASE.tar:APP.tar...\n")
        return 2
    layout = argv[1]
    env = {k: os.environ.get("IMAGE_" + k, "") for k in
           ("NAME", "VERSION", "REVISION", "CREATED", "SOURCE")}
    for k in ("NAME", "VERSION", "REVISION", "CREATED"):
        if not env[k]:
            sys.stderr.write("sbom: IMAGE_%s is not set\n" % k)
            return 2
    with open(os.path.join(layout, "index.json"), "rb") as f:
        top = json.load(f)["manifests"][0]
    index = json.loads(blob(layout, top["digest"]))
    by_arch = {m["platform"]["architecture"]: m for m in index["manifests"]}
    version, revision = env["VERSION"], env["REVISION"]
    source = env["SOURCE"] or "NOASSERTION"
    index_digest = top["digest"]
    short = env["NAME"].rsplit("/", 1)[-1]

    doc_id = "SPDXRef-DOCUMENT"
    index_id = spdx_id("image", "index")
    packages = [package(index_id, short, version, "pkg:oci/%s@%s" % (
        purl_part(short), index_digest), purpose="CONTAINER",
        sha=index_digest.split(":", 1)[1],
        comment="the OCI image index %s (%s:%s), revision %s" % (
            index_digest, env["NAME"], version, revision))]
    rels = [relation(doc_id, "DESCRIBES", index_id)]

    for spec in argv[2:]:
        arch, base, app = spec.split(":", 2)
        if arch not in by_arch:
            sys.stderr.write("sbom: the index has no image for %s\n" % arch)
            return 1
        digest = by_arch[arch]["digest"]
        image_id = spdx_id("image", arch)
        packages.append(package(
            image_id, "%s linux/%s" % (short, arch), version,
            "pkg:oci/%s@%s?arch=%s&os=linux" % (purl_part(short), digest, arch),
            purpose="CONTAINER", sha=digest.split(":", 1)[1]))
        rels.append(relation(index_id, "CONTAINS", image_id))

        app_id = spdx_id("vgpu-webhook", arch)
        packages.append(package(
            app_id, "vgpu-webhook", version,
            "pkg:generic/vgpu-webhook@%s?arch=%s" % (purl_part(version), arch),
            purpose="APPLICATION", sha=sha256(read_member(app, BINARY)),
            download=source, license="Apache-2.0",
            sourceInfo="built from revision %s; /usr/bin/vgpu-webhook in the image"
            % revision))
        rels.append(relation(image_id, "CONTAINS", app_id))

        status = dpkg_status(read_member(base, STATUS).decode("utf-8"))
        for entry in sorted(status, key=lambda e: e["Package"]):
            name, ver = entry["Package"], entry["Version"]
            pkg_id = spdx_id("deb", arch, name)
            extra = {"supplier": "Organization: Debian",
                     "sourceInfo": "Debian source package %s; the copyright file is "
                                   "/usr/share/doc/%s/copyright in the image"
                                   % (entry.get("Source", name), name)}
            if entry.get("Homepage"):
                extra["homepage"] = entry["Homepage"]
            packages.append(package(
                pkg_id, name, ver, "pkg:deb/debian/%s@%s?arch=%s" % (
                    purl_part(name), purl_part(ver), entry["Architecture"]),
                purpose="LIBRARY" if entry.get("Section") == "libs" else None,
                **extra))
            rels.append(relation(image_id, "CONTAINS", pkg_id))

    doc = {
        "spdxVersion": "SPDX-2.3",
        "dataLicense": "CC0-1.0",
        "SPDXID": doc_id,
        "name": "%s-%s" % (short, version),
        "documentNamespace": "https://spdx.org/spdxdocs/%s-%s-%s" % (
            short, version, uuid.uuid5(uuid.NAMESPACE_URL,
                                       "%s@%s" % (env["NAME"], index_digest))),
        "creationInfo": {
            "created": env["CREATED"],
            "creators": ["Tool: vgpu-webhook-image-sbom-%s" % version],
        },
        "packages": packages,
        "relationships": rels,
    }
    json.dump(doc, sys.stdout, indent=2, sort_keys=False)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
