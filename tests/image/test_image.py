#!/usr/bin/python3
"""Checks of the container image that `make image` writes: the OCI archive
build/image/vgpu-webhook-VERSION.oci.tar and its SBOM, read back with the
tools an operator uses (skopeo, umoci) and from the archive's own bytes.

Run by `make image-test` (part of `make test`) under pytest:

    make image-test
    /usr/bin/python3 -m pytest tests/image/test_image.py [-k NAME]

- the index names each platform of IMAGE_ARCHES, and `skopeo copy --all`
  copies all of them unchanged;
- each image's config: user 65532:65532, the binary as entrypoint, `serve`
  with the chart's certificate paths as default command, the OCI labels,
  which agree with what the binary says of itself;
- the layers: every file owned by root, nothing setuid, nothing writable
  by others but /tmp; no shell, interpreter or package manager, and
  nothing that could run one;
- the packages: exactly the dependency closure of image/packages, each
  file a package's or the webhook's own, the dpkg database telling the
  truth, and every library the binary needs there (and image/packages
  naming the packages of the libraries it links, no more);
- the SBOM: an SPDX 2.3 document listing exactly the packages of each
  image, with versions, architectures and purls;
- as root: the native image serves, run in a chroot as uid and gid 65532
  with its own libraries, an admission review that `vgpu-webhook check`
  (from the image too) accepts; each foreign image's binary runs under
  qemu-user and gives the same `version` and the same review bytes.

What cannot run (no archive, a missing tool, not root) is a skip with the
reason, which fails the suite unless ALLOW_SKIP=1.

Environment (set by image/image.mk): IMAGE_OCI, IMAGE_SBOM, IMAGE_ARCHES,
IMAGE_NAME, IMAGE_REVISION, IMAGE_CREATED, IMAGE_SOURCE, IMAGE_PACKAGES,
and IMAGE_UNAVAILABLE (why the image could not be built).
"""

import gzip
import hashlib
import http.client
import io
import json
import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import tarfile
import time
import urllib.parse

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _vgpu_version():
    with open(os.path.join(ROOT, "lib", "vgpu.h")) as f:
        return re.search(r'#define VGPU_VERSION "([^"]+)"', f.read()).group(1)


VERSION = _vgpu_version()
OCI = os.environ.get("IMAGE_OCI") or os.path.join(
    ROOT, "build", "image", "vgpu-webhook-%s.oci.tar" % VERSION)
SBOM = os.environ.get("IMAGE_SBOM") or OCI.replace(".oci.tar", ".spdx.json")
ARCHES = os.environ.get("IMAGE_ARCHES", "amd64 arm64").split()
NAME = os.environ.get("IMAGE_NAME", "docker.io/library/vgpu-webhook")
UNAVAILABLE = os.environ.get("IMAGE_UNAVAILABLE")
TRIPLET = {"amd64": "x86_64-linux-gnu", "arm64": "aarch64-linux-gnu"}
QEMU = {"amd64": "qemu-x86_64-static", "arm64": "qemu-aarch64-static"}
BINARY = "/usr/bin/vgpu-webhook"
UID = 65532
# The webhook's own files (the second layer) and the dpkg database.
LICENSE = "/usr/share/doc/vgpu-webhook/LICENSE"
OWN = {BINARY, LICENSE, "/etc/passwd", "/etc/group", "/etc/nsswitch.conf",
       "/var/lib/dpkg/status", "/var/lib/dpkg/info"}
SHELLS_AND_MANAGERS = re.compile(
    r"^(sh|bash|rbash|dash|ash|zsh|ksh|ksh93|mksh|csh|tcsh|fish|busybox|toybox|"
    r"perl[0-9.]*|python[0-9.]*|awk|mawk|gawk|nawk|lua[0-9.]*|tclsh[0-9.]*|ruby[0-9.]*|"
    r"node|nodejs|apt|apt-get|apt-cache|apt-key|aptitude|dpkg|dpkg-[a-z-]+|rpm|"
    r"ldconfig|su|sudo|login)$")
NO_SUCH_PACKAGES = {"dash", "bash", "busybox", "busybox-static", "perl-base", "perl",
                    "apt", "dpkg", "mawk", "gawk", "coreutils", "python3",
                    "util-linux", "login"}


def host_arch():
    p = subprocess.run(["dpkg", "--print-architecture"], capture_output=True, text=True)
    return p.stdout.strip()


def need_archive():
    if UNAVAILABLE:
        pytest.skip("no image: " + UNAVAILABLE)
    if not os.path.isfile(OCI):
        pytest.skip("no %s (make image)" % OCI)


def need_tools(*tools):
    missing = [t for t in tools if not shutil.which(t)]
    if missing:
        pytest.skip("missing %s (make image-test installs them)" % " ".join(missing))


def need_root(why):
    if os.geteuid() != 0:
        pytest.skip("needs root: " + why)


def run(cmd, **kw):
    kw.setdefault("capture_output", True)
    kw.setdefault("stdin", subprocess.DEVNULL)
    kw.setdefault("timeout", 120)
    return subprocess.run(cmd, **kw)


# --- the archive, read from its own bytes ---------------------------------

class Archive:
    """The OCI image layout inside the archive: index.json and blobs."""

    def __init__(self, path):
        self.tar = tarfile.open(path)
        self.names = set(self.tar.getnames())

    def read(self, name):
        return self.tar.extractfile(name).read()

    def blob(self, digest):
        algo, hexd = digest.split(":", 1)
        data = self.read("blobs/%s/%s" % (algo, hexd))
        assert hashlib.sha256(data).hexdigest() == hexd, "blob %s: wrong digest" % digest
        return data

    def top(self):
        return json.loads(self.read("index.json"))

    def index(self):
        return json.loads(self.blob(self.top()["manifests"][0]["digest"]))

    def manifest_desc(self, arch):
        for m in self.index()["manifests"]:
            if m["platform"] == {"architecture": arch, "os": "linux"}:
                return m
        raise AssertionError("no linux/%s image in the index" % arch)

    def manifest(self, arch):
        return json.loads(self.blob(self.manifest_desc(arch)["digest"]))

    def config(self, arch):
        return json.loads(self.blob(self.manifest(arch)["config"]["digest"]))

    def layers(self, arch):
        """[(TarFile, uncompressed bytes)] of arch's layers, bottom first;
        each layer's uncompressed digest is checked against the diff_ids."""
        out = []
        diff_ids = self.config(arch)["rootfs"]["diff_ids"]
        layers = self.manifest(arch)["layers"]
        assert len(diff_ids) == len(layers)
        for desc, diff_id in zip(layers, diff_ids):
            assert desc["mediaType"] == "application/vnd.oci.image.layer.v1.tar+gzip"
            data = gzip.decompress(self.blob(desc["digest"]))
            assert "sha256:" + hashlib.sha256(data).hexdigest() == diff_id, \
                "layer %s: diff_id" % desc["digest"]
            out.append(tarfile.open(fileobj=io.BytesIO(data)))
        return out


def norm(name):
    """A tar member's name as an absolute path ("./usr/bin" -> "/usr/bin")."""
    name = name[1:] if name.startswith(".") else name
    return "/" + name.strip("/") if name.strip("/") else "/"


def merged(layers):
    """{path: (TarInfo, TarFile)}: the image's files, upper layers winning."""
    files = {}
    for tar in layers:
        for info in tar.getmembers():
            base = os.path.basename(info.name)
            assert not base.startswith(".wh."), "whiteout %s: not expected" % info.name
            files[norm(info.name)] = (info, tar)
    return files


def read_file(files, path):
    info, tar = files[path]
    return tar.extractfile(info).read()


class Dpkg:
    """The image's dpkg database, read by dpkg-query itself (--admindir),
    not by a parser of ours: what a scanner or dpkg would make of it."""

    FIELDS = ("binary:Package", "Package", "Version", "Architecture",
              "db:Status-Abbrev", "Pre-Depends", "Depends")

    def __init__(self, files, folder):
        need_tools("dpkg-query")
        self.admin = str(folder)
        os.makedirs(os.path.join(self.admin, "info"), exist_ok=True)
        for path in files:
            if path == "/var/lib/dpkg/status" or path.startswith("/var/lib/dpkg/info/"):
                with open(os.path.join(self.admin, path[len("/var/lib/dpkg/"):]), "wb") as f:
                    f.write(read_file(files, path))
        p = self.query("-W", "-f=" + "\\t".join("${%s}" % k for k in self.FIELDS) + "\\n")
        self.packages = {}
        for line in p.splitlines():
            entry = dict(zip(self.FIELDS, line.split("\t")))
            self.packages[entry["Package"]] = entry

    def query(self, *args):
        p = run(["dpkg-query", "--admindir=" + self.admin] + list(args), text=True)
        assert p.returncode == 0 and not p.stderr, "dpkg-query %s: %s" % (args, p.stderr)
        return p.stdout

    def files(self, name):
        """The paths dpkg lists for a package."""
        return self.query("-L", self.packages[name]["binary:Package"]).splitlines()


def listed_packages():
    """(names, dropped) of image/packages, or of IMAGE_PACKAGES."""
    words = os.environ.get("IMAGE_PACKAGES")
    if words is None:
        with open(os.path.join(ROOT, "image", "packages")) as f:
            words = " ".join(line.split("#")[0] for line in f)
    words = words.split()
    return ({w for w in words if not w.startswith("-")},
            {w[1:] for w in words if w.startswith("-")})


@pytest.fixture(scope="module")
def archive():
    need_archive()
    return Archive(OCI)


@pytest.fixture(scope="module")
def image_files(archive):
    """{arch: merged files}."""
    return {a: merged(archive.layers(a)) for a in ARCHES}


@pytest.fixture(scope="module")
def dpkg(image_files, tmp_path_factory):
    """{arch: Dpkg}."""
    return {a: Dpkg(image_files[a], tmp_path_factory.mktemp("dpkg-" + a)) for a in ARCHES}


# --- the index and the configs --------------------------------------------

def test_index_holds_every_platform(archive, tmp_path):
    top = archive.top()
    ref = "%s:%s" % (NAME, VERSION)
    assert archive.read("oci-layout") and json.loads(archive.read("oci-layout")) == \
        {"imageLayoutVersion": "1.0.0"}
    assert len(top["manifests"]) == 1, top
    desc = top["manifests"][0]
    assert desc["mediaType"] == "application/vnd.oci.image.index.v1+json"
    assert desc["annotations"] == {"io.containerd.image.name": ref,
                                   "org.opencontainers.image.ref.name": ref}
    index = archive.index()
    assert index["mediaType"] == "application/vnd.oci.image.index.v1+json"
    assert sorted((m["platform"]["os"], m["platform"]["architecture"])
                  for m in index["manifests"]) == sorted(("linux", a) for a in ARCHES)
    # Every blob of the archive is referenced: nothing left over.
    used = {desc["digest"]}
    for m in index["manifests"]:
        man = json.loads(archive.blob(m["digest"]))
        used |= {m["digest"], man["config"]["digest"]} | {l["digest"] for l in man["layers"]}
    blobs = {"sha256:" + n.rsplit("/", 1)[1] for n in archive.names
             if n.startswith("blobs/sha256/") and n.count("/") == 2}
    assert blobs == used

    # What an operator runs: skopeo reads the archive, and copies every
    # platform unchanged (to a local layout here, to a registry in README).
    need_tools("skopeo")
    p = run(["skopeo", "inspect", "--raw", "oci-archive:" + OCI])
    assert p.returncode == 0, p.stderr.decode()
    assert "sha256:" + hashlib.sha256(p.stdout).hexdigest() == desc["digest"]
    dest = "oci:%s:%s" % (tmp_path / "copy", VERSION)
    p = run(["skopeo", "copy", "--quiet", "--all", "oci-archive:" + OCI, dest])
    assert p.returncode == 0, p.stderr.decode()
    p = run(["skopeo", "inspect", "--raw", dest])
    assert "sha256:" + hashlib.sha256(p.stdout).hexdigest() == desc["digest"]


@pytest.mark.parametrize("arch", ARCHES)
def test_config(archive, arch):
    need_tools("skopeo")
    p = run(["skopeo", "inspect", "--config", "--override-os", "linux",
             "--override-arch", arch, "oci-archive:" + OCI])
    assert p.returncode == 0, p.stderr.decode()
    config = json.loads(p.stdout)
    assert config == archive.config(arch), "skopeo reads another config"
    assert (config["os"], config["architecture"]) == ("linux", arch)
    c = config["config"]
    assert c["User"] == "%d:%d" % (UID, UID)
    assert c["Entrypoint"] == [BINARY]
    cmd = c["Cmd"]
    assert cmd[0] == "serve", cmd
    flags = dict(zip(cmd[1::2], cmd[2::2]))
    assert flags["--tls-cert-file"] == "/certs/tls.crt", cmd
    assert flags["--tls-private-key-file"] == "/certs/tls.key", cmd
    assert {"9443/tcp", "9090/tcp"} <= set(c["ExposedPorts"])
    labels = c["Labels"]
    want = {"org.opencontainers.image.version": VERSION,
            "org.opencontainers.image.licenses": "Apache-2.0",
            "org.opencontainers.image.title": "vgpu-webhook"}
    for k in ("REVISION", "CREATED"):
        if os.environ.get("IMAGE_" + k):
            want["org.opencontainers.image." + k.lower()] = os.environ["IMAGE_" + k]
    if "IMAGE_SOURCE" in os.environ:
        if os.environ["IMAGE_SOURCE"]:
            want["org.opencontainers.image.source"] = os.environ["IMAGE_SOURCE"]
        else:
            assert "org.opencontainers.image.source" not in labels
    for k, v in want.items():
        assert labels.get(k) == v, (k, labels.get(k), v)
    assert re.fullmatch(r"[0-9a-f]{12}(-dirty)?|unknown",
                        labels["org.opencontainers.image.revision"]), labels
    created = labels["org.opencontainers.image.created"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", created), created
    # Every time in the image is the build date: reproducible.
    assert config["created"] == created
    assert {h["created"] for h in config["history"]} == {created}
    assert archive.manifest(arch)["annotations"] == labels


@pytest.mark.parametrize("arch", ARCHES)
def test_files_are_owned_by_root_and_not_writable(image_files, arch):
    """Root owns everything (Debian's own groups kept: /var/local is
    root:staff 2775); the runtime user can write nowhere but the sticky
    folders; no program is setuid or setgid; no device node."""
    files = image_files[arch]
    bad = []
    for path, (info, _) in sorted(files.items()):
        mode = info.mode
        if info.uid != 0:
            bad.append("%s: owner %d" % (path, info.uid))
        if UID in (info.uid, info.gid):
            bad.append("%s: owned by the runtime user's id %d" % (path, UID))
        if not (info.isreg() or info.isdir() or info.issym() or info.islnk()):
            bad.append("%s: type %r (devices come from the runtime)" % (path, info.type))
        if not info.isdir() and mode & (stat.S_ISUID | stat.S_ISGID):
            bad.append("%s: setuid or setgid (mode %o)" % (path, mode))
        if mode & stat.S_IWOTH and not info.issym() and \
                not (info.isdir() and mode & stat.S_ISVTX):
            bad.append("%s: writable by others (mode %o)" % (path, mode))
    assert not bad, "\n".join(bad)
    # The webhook's own files: root's, read-only to everyone else.
    for path in sorted(OWN - {"/var/lib/dpkg/info"}):
        info, _ = files[path]
        assert info.isreg() and (info.uid, info.gid) == (0, 0), path
        assert info.mode & 0o7777 == (0o755 if path == BINARY else 0o644), \
            "%s: mode %o" % (path, info.mode)
    with open(os.path.join(ROOT, "LICENSE"), "rb") as f:
        assert read_file(files, LICENSE) == f.read(), "the image's LICENSE"
    # The runtime user exists, with no shell and no home of its own.
    passwd = read_file(files, "/etc/passwd").decode()
    group = read_file(files, "/etc/group").decode()
    assert "nonroot:x:%d:%d:" % (UID, UID) in passwd
    assert "nonroot:x:%d:" % UID in group.splitlines()
    assert all(line.endswith(":/usr/sbin/nologin") for line in passwd.splitlines())


@pytest.mark.parametrize("arch", ARCHES)
def test_no_shell_interpreter_or_package_manager(image_files, dpkg, arch):
    files = image_files[arch]
    found = [p for p, (info, _) in files.items()
             if not info.isdir() and SHELLS_AND_MANAGERS.match(os.path.basename(p))]
    assert not found, "in the image: %s" % found
    assert "/etc/shells" not in files
    bins = sorted(p for p in files if os.path.dirname(p) in
                  ("/bin", "/sbin", "/usr/bin", "/usr/sbin", "/usr/local/bin",
                   "/usr/local/sbin"))
    assert bins == [BINARY], bins
    # Executable files: the binary, the libraries and the loader, and
    # scripts whose interpreter is not in the image.
    odd = []
    for path, (info, tar) in sorted(files.items()):
        if not info.isreg() or not info.mode & 0o111 or path == BINARY:
            continue
        head = tar.extractfile(info).read(256)
        if head.startswith(b"\x7fELF"):
            if not path.startswith(("/lib/", "/lib64/", "/usr/lib/")):
                odd.append("%s: a program outside the library folders" % path)
        elif head.startswith(b"#!"):
            interp = head[2:].split(b"\n")[0].split()[0].decode()
            if interp in files:
                odd.append("%s: its interpreter %s is in the image" % (path, interp))
        else:
            odd.append("%s: executable, neither ELF nor a script" % path)
    assert not odd, "\n".join(odd)
    status = dpkg[arch].packages
    assert not NO_SUCH_PACKAGES & set(status), NO_SUCH_PACKAGES & set(status)


# The library the binary loads itself, the first of CURLLOAD_SONAMES
# (webhook/curlload.h): Debian 12's libcurl3-gnutls.
LOADED = "libcurl-gnutls.so.4"


def needed(elf_bytes, tmp_path):
    """The DT_NEEDED sonames of an ELF file, read by readelf."""
    path = tmp_path / ("elf-%s" % hashlib.sha256(elf_bytes).hexdigest()[:16])
    path.write_bytes(elf_bytes)
    p = run(["readelf", "-d", str(path)], text=True)
    assert p.returncode == 0, p.stderr
    return re.findall(r"\(NEEDED\)\s+Shared library: \[(.*?)\]", p.stdout)


def resolve(files, path, depth=0):
    """path with its links followed inside the image, or None."""
    assert depth < 40, "link loop at %s" % path
    parts = path.strip("/").split("/")
    cur = ""
    for i, part in enumerate(parts):
        cur = cur + "/" + part
        if cur not in files:
            return None
        info, _ = files[cur]
        if info.issym():
            target = info.linkname if info.linkname.startswith("/") else \
                os.path.normpath(os.path.join(os.path.dirname(cur), info.linkname))
            rest = "/".join(parts[i + 1:])
            return resolve(files, os.path.join(target, rest) if rest else target, depth + 1)
    return cur


@pytest.mark.parametrize("arch", ARCHES)
def test_packages_are_exactly_what_the_binary_needs(image_files, dpkg, arch, tmp_path):
    need_tools("readelf")
    files = image_files[arch]
    status = dpkg[arch].packages
    names, dropped = listed_packages()
    for entry in status.values():
        assert entry["db:Status-Abbrev"].strip() == "ii", entry
        assert entry["Architecture"] in (arch, "all"), entry["Package"]

    # Exactly the dependency closure of image/packages, less the dropped.
    assert names <= set(status), "not in the image: %s" % (names - set(status))
    assert not dropped & set(status)
    closure, todo = set(), list(names)
    while todo:
        name = todo.pop()
        if name in closure:
            continue
        closure.add(name)
        deps = ", ".join(status[name][k] for k in ("Pre-Depends", "Depends"))
        for group in deps.split(","):
            for alt in group.split("|"):
                dep = alt.split("(")[0].split(":")[0].strip()
                if dep in status:
                    todo.append(dep)
    assert set(status) == closure, "not needed: %s" % sorted(set(status) - closure)

    # The dpkg database tells the truth: each listed path is there, and
    # every file is a package's or the webhook's own.
    owner = {}
    for name in status:
        for p in dpkg[arch].files(name):
            if p != "/.":
                assert p in files, "%s lists %s, which is not in the image" % (name, p)
            owner.setdefault(p, name)
    strays = [p for p, (info, _) in files.items()
              if not info.isdir() and p not in owner and p not in OWN
              and not p.startswith("/var/lib/dpkg/info/")]
    assert not strays, "files of no package: %s" % sorted(strays)

    # Every library the binary needs, and those they need, is in the image.
    libdirs = ["/lib/" + TRIPLET[arch], "/usr/lib/" + TRIPLET[arch], "/lib", "/usr/lib"]
    binary = read_file(files, BINARY)
    # libcurl is loaded with dlopen(3) by the commands that use it
    # (webhook/curlload.c): its soname is a string in the binary, not a
    # DT_NEEDED entry, and the image must hold it all the same.
    assert LOADED.encode() + b"\0" in binary, "the binary no longer loads %s" % LOADED
    assert LOADED not in needed(binary, tmp_path), "%s is linked again" % LOADED
    direct = needed(binary, tmp_path) + [LOADED]
    missing, seen, todo = [], {}, [(BINARY, direct)]
    while todo:
        who, sonames = todo.pop()
        for so in sonames:
            if so in seen:
                continue
            path = next((r for r in (resolve(files, d + "/" + so) for d in libdirs) if r), None)
            seen[so] = path
            if path is None:
                missing.append("%s (for %s)" % (so, who))
            else:
                todo.append((path, needed(read_file(files, path), tmp_path)))
    assert not missing, "libraries not in the image: %s" % missing

    # image/packages names the package of each library the binary links,
    # and no library package that it does not link.
    linked_from = set()
    for so in direct:
        pkg = next((owner[p] for p in (d + "/" + so for d in libdirs) if p in owner), None)
        assert pkg, "no package owns %s" % so
        linked_from.add(pkg)
    libs_named = {n for n in names if n != "base-files"}
    assert linked_from <= names, "linked, not in image/packages: %s" % (linked_from - names)
    assert libs_named <= linked_from, \
        "in image/packages, not linked: %s" % (libs_named - linked_from)


# --- the SBOM ---------------------------------------------------------------

# SPDX 2.3 (spdx-schema.json): the fields a package may have.
SPDX_PACKAGE_FIELDS = {
    "SPDXID", "annotations", "attributionTexts", "builtDate", "checksums", "comment",
    "copyrightText", "description", "downloadLocation", "externalRefs", "filesAnalyzed",
    "hasFiles", "homepage", "licenseComments", "licenseConcluded", "licenseDeclared",
    "licenseInfoFromFiles", "name", "originator", "packageFileName",
    "packageVerificationCode", "primaryPackagePurpose", "releaseDate", "sourceInfo",
    "summary", "supplier", "validUntilDate", "versionInfo"}
SPDX_DOC_FIELDS = {
    "$schema", "SPDXID", "annotations", "comment", "creationInfo", "dataLicense",
    "externalDocumentRefs", "hasExtractedLicensingInfos", "name", "revieweds",
    "spdxVersion", "documentNamespace", "documentDescribes", "packages", "files",
    "snippets", "relationships"}
SPDX_PURPOSES = {"OTHER", "INSTALL", "ARCHIVE", "FIRMWARE", "APPLICATION", "FRAMEWORK",
                 "LIBRARY", "CONTAINER", "SOURCE", "DEVICE", "OPERATING_SYSTEM", "FILE"}
SPDX_ID = re.compile(r"^SPDXRef-[A-Za-z0-9.-]+$")
DATE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")


def check_spdx_structure(doc):
    """The required fields and forms of an SPDX 2.3 JSON document."""
    errors = []
    for k in ("SPDXID", "creationInfo", "dataLicense", "name", "spdxVersion",
              "documentNamespace"):
        if k not in doc:
            errors.append("document: no %s" % k)
    errors += ["document: unknown field %s" % k for k in set(doc) - SPDX_DOC_FIELDS]
    if doc.get("spdxVersion") != "SPDX-2.3":
        errors.append("spdxVersion %r" % doc.get("spdxVersion"))
    if doc.get("dataLicense") != "CC0-1.0":
        errors.append("dataLicense %r" % doc.get("dataLicense"))
    if doc.get("SPDXID") != "SPDXRef-DOCUMENT":
        errors.append("document SPDXID %r" % doc.get("SPDXID"))
    ns = urllib.parse.urlsplit(doc.get("documentNamespace", ""))
    if not ns.scheme or not ns.netloc or ns.fragment or "#" in doc["documentNamespace"]:
        errors.append("documentNamespace %r: not an absolute URI without #"
                      % doc.get("documentNamespace"))
    ci = doc.get("creationInfo", {})
    if not DATE.match(ci.get("created", "")):
        errors.append("creationInfo.created %r" % ci.get("created"))
    creators = ci.get("creators") or []
    if not creators or not all(re.match(r"^(Tool|Organization|Person): \S", c)
                               for c in creators):
        errors.append("creationInfo.creators %r" % creators)
    ids = {"SPDXRef-DOCUMENT"}
    for p in doc.get("packages", []):
        pid = p.get("SPDXID", "?")
        for k in ("SPDXID", "name", "downloadLocation"):
            if not p.get(k):
                errors.append("%s: no %s" % (pid, k))
        errors += ["%s: unknown field %s" % (pid, k) for k in set(p) - SPDX_PACKAGE_FIELDS]
        if not SPDX_ID.match(pid):
            errors.append("%s: not an SPDX identifier" % pid)
        if pid in ids:
            errors.append("%s: twice" % pid)
        ids.add(pid)
        if p.get("filesAnalyzed", True) and "packageVerificationCode" not in p:
            errors.append("%s: filesAnalyzed without packageVerificationCode" % pid)
        if p.get("primaryPackagePurpose", "OTHER") not in SPDX_PURPOSES:
            errors.append("%s: primaryPackagePurpose %r" % (pid, p["primaryPackagePurpose"]))
        for c in p.get("checksums", []):
            if c.get("algorithm") != "SHA256" or not re.fullmatch(r"[0-9a-f]{64}",
                                                                  c.get("checksumValue", "")):
                errors.append("%s: checksum %r" % (pid, c))
        for r in p.get("externalRefs", []):
            if set(r) - {"comment"} != {"referenceCategory", "referenceType",
                                        "referenceLocator"} or " " in r["referenceLocator"]:
                errors.append("%s: externalRef %r" % (pid, r))
    for r in doc.get("relationships", []):
        if set(r) - {"comment"} != {"spdxElementId", "relationshipType",
                                    "relatedSpdxElement"}:
            errors.append("relationship %r" % r)
        elif r["spdxElementId"] not in ids or r["relatedSpdxElement"] not in ids:
            errors.append("relationship %r: unknown element" % r)
    if not any(r.get("spdxElementId") == "SPDXRef-DOCUMENT" and
               r.get("relationshipType") == "DESCRIBES" for r in doc.get("relationships", [])):
        errors.append("the document DESCRIBES nothing")
    return errors


def purl(p):
    refs = [r["referenceLocator"] for r in p.get("externalRefs", [])
            if r["referenceType"] == "purl"]
    assert len(refs) == 1, p
    return refs[0]


def test_sbom(archive, image_files, dpkg):
    if not os.path.isfile(SBOM):
        pytest.skip("no %s (make image)" % SBOM)
    with open(SBOM) as f:
        doc = json.load(f)
    errors = check_spdx_structure(doc)
    assert not errors, "\n".join(errors)

    pkgs = {p["SPDXID"]: p for p in doc["packages"]}
    contains = {}
    for r in doc["relationships"]:
        if r["relationshipType"] == "CONTAINS":
            contains.setdefault(r["spdxElementId"], []).append(pkgs[r["relatedSpdxElement"]])
    described = [pkgs[r["relatedSpdxElement"]] for r in doc["relationships"]
                 if r["relationshipType"] == "DESCRIBES"]
    assert len(described) == 1
    index = described[0]
    top = archive.top()["manifests"][0]["digest"]
    assert index["checksums"] == [{"algorithm": "SHA256", "checksumValue": top.split(":")[1]}]
    assert index["versionInfo"] == VERSION
    images = contains[index["SPDXID"]]
    assert len(images) == len(ARCHES)

    for arch in ARCHES:
        files = image_files[arch]
        digest = archive.manifest_desc(arch)["digest"]
        image = [i for i in images if i["checksums"][0]["checksumValue"] == digest.split(":")[1]]
        assert len(image) == 1, "no package for the %s image" % arch
        content = contains[image[0]["SPDXID"]]
        debs, apps = {}, []
        for p in content:
            ref = purl(p)
            m = re.fullmatch(r"pkg:deb/debian/([^@?]+)@([^?]+)\?arch=([a-z0-9]+)", ref)
            if m:
                name, version, parch = (urllib.parse.unquote(g) for g in m.groups())
                assert "+" not in ref and (name, version) == (p["name"], p["versionInfo"]), ref
                assert name not in debs
                debs[name] = (version, parch)
            else:
                apps.append(p)
        assert debs == {n: (e["Version"], e["Architecture"])
                        for n, e in dpkg[arch].packages.items()}
        assert len(apps) == 1 and apps[0]["name"] == "vgpu-webhook", apps
        assert apps[0]["versionInfo"] == VERSION
        assert apps[0]["licenseDeclared"] == "Apache-2.0"
        assert apps[0]["checksums"] == [{
            "algorithm": "SHA256",
            "checksumValue": hashlib.sha256(read_file(files, BINARY)).hexdigest()}]


# --- running it -------------------------------------------------------------

@pytest.fixture(scope="module")
def rootfs(archive, tmp_path_factory):
    """{arch: folder}: each image unpacked the way a runtime would, with
    skopeo (one platform of the archive) and umoci."""
    need_tools("skopeo", "umoci")
    need_root("the images are unpacked with their owners and run in a chroot "
              "as uid %d" % UID)
    base = tmp_path_factory.mktemp("rootfs")
    out = {}
    for arch in ARCHES:
        layout = "%s:%s" % (base / "layout", arch)
        p = run(["skopeo", "copy", "--quiet", "--override-os", "linux", "--override-arch",
                 arch, "oci-archive:" + OCI, "oci:" + layout])
        assert p.returncode == 0, p.stderr.decode()
        bundle = base / arch
        p = run(["umoci", "unpack", "--image", layout, str(bundle)])
        assert p.returncode == 0, p.stderr.decode()
        out[arch] = str(bundle / "rootfs")
    return out


def as_runtime_user(rootfs_dir, args):
    """args run in the image's root as uid and gid 65532, environment empty."""
    need_tools("chroot")
    return [shutil.which("chroot"), "--userspec=%d:%d" % (UID, UID), "--groups=%d" % UID,
            rootfs_dir] + args


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def sample_review():
    path = os.path.join(ROOT, "tests", "fixtures", "cases", "001-gpu-only-default-memory",
                        "review.json")
    with open(path, "rb") as f:
        return f.read()


def test_native_image_serves_a_review_that_check_accepts(rootfs, tmp_path):
    arch = host_arch()
    if arch not in rootfs:
        pytest.skip("no %s image (IMAGE_ARCHES)" % arch)
    need_tools("openssl")
    root = rootfs[arch]
    certs = tmp_path / "certs"
    p = run([os.path.join(ROOT, "certs", "gen-certs.sh"), "--out", str(certs)], text=True)
    assert p.returncode == 0, p.stderr
    # As the chart mounts them: readable by the pod's group, not writable.
    dest = os.path.join(root, "certs")
    os.mkdir(dest)
    for name, mode in (("tls.crt", 0o644), ("tls.key", 0o640), ("ca.crt", 0o644)):
        shutil.copy(certs / name, os.path.join(dest, name))
        os.chown(os.path.join(dest, name), 0, UID)
        os.chmod(os.path.join(dest, name), mode)
    port, metrics = free_port(), free_port()
    log = open(tmp_path / "serve.log", "wb")
    proc = subprocess.Popen(
        as_runtime_user(root, [BINARY, "serve", "--listen", "127.0.0.1:%d" % port,
                               "--tls-cert-file", "/certs/tls.crt",
                               "--tls-private-key-file", "/certs/tls.key",
                               "--metrics-listen", "127.0.0.1:%d" % metrics]),
        env={}, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 15
        while True:
            try:
                c = http.client.HTTPConnection("127.0.0.1", metrics, timeout=2)
                c.request("GET", "/healthz")
                if c.getresponse().status == 200:
                    break
            except OSError:
                pass
            assert proc.poll() is None, "serve exited %s: %s" % (
                proc.returncode, (tmp_path / "serve.log").read_text())
            assert time.monotonic() < deadline, "serve not healthy after 15 s"
            time.sleep(0.1)

        # The process: uid and gid 65532 and no other group, in the image's
        # root, with the image's libraries only.
        with open("/proc/%d/status" % proc.pid) as f:
            st = dict(line.split(":", 1) for line in f if ":" in line)
        assert st["Uid"].split() == [str(UID)] * 4, st["Uid"]
        assert st["Gid"].split() == [str(UID)] * 4, st["Gid"]
        assert st["Groups"].split() in ([], [str(UID)]), st["Groups"]
        assert os.path.realpath("/proc/%d/root" % proc.pid) == os.path.realpath(root)
        with open("/proc/%d/maps" % proc.pid) as f:
            mapped = {line.split()[5] for line in f if len(line.split()) > 5
                      and line.split()[5].startswith("/")}
        real_root = os.path.realpath(root) + "/"
        assert mapped and all(m.startswith(real_root) for m in mapped), \
            "mapped from outside the image: %s" % sorted(m for m in mapped
                                                         if not m.startswith(real_root))

        # vgpu-webhook check, from the image too, accepts the answer.
        p = run(as_runtime_user(root, [BINARY, "check", "--url",
                                       "https://127.0.0.1:%d/mutate" % port,
                                       "--ca-file", "/certs/ca.crt"]), env={}, text=True)
        assert p.returncode == 0, p.stdout + p.stderr
        assert p.stdout.startswith("ok: https://127.0.0.1:%d/mutate: " % port), p.stdout
        assert "allowed" in p.stdout
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            rc = proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            rc = proc.wait()
        log.close()
    assert rc == 0, "serve exited %d after SIGTERM" % rc


def test_every_image_runs_the_same_binary(rootfs):
    """The native image in a chroot, each foreign one under qemu-user: the
    same `version` (which the labels name) and the same review bytes."""
    native = host_arch()
    if native not in rootfs:
        pytest.skip("no %s image to compare with (IMAGE_ARCHES)" % native)
    review = sample_review()
    base = {}
    for cmd in (["version"], ["review", "-"]):
        p = run(as_runtime_user(rootfs[native], [BINARY] + cmd), env={},
                input=review, stdin=None)
        assert p.returncode == 0, p.stderr.decode()
        base[cmd[0]] = p.stdout
    lines = base["version"].decode().splitlines()
    assert lines[0] == "vgpu-webhook " + VERSION
    revision = lines[1].partition("revision: ")[2]
    built = lines[2].partition("build date: ")[2]
    need_tools("skopeo")
    labels = json.loads(run(["skopeo", "inspect", "--config", "--override-arch", native,
                             "oci-archive:" + OCI]).stdout)["config"]["Labels"]
    assert labels["org.opencontainers.image.revision"] == revision
    assert labels["org.opencontainers.image.created"] == built
    assert json.loads(base["review"])["response"]["allowed"] is True

    foreign = [a for a in ARCHES if a != native]
    if not foreign:
        return
    for arch in foreign:
        qemu = QEMU.get(arch)
        need_tools(qemu or "qemu-%s-static" % arch)
        root = rootfs[arch]
        # qemu-user, static, in the image's root (a copy unpacked for the
        # test), where the binary finds its loader and libraries.
        shutil.copy(shutil.which(qemu), os.path.join(root, qemu))
        for cmd in (["version"], ["review", "-"]):
            p = run(as_runtime_user(root, ["/" + qemu, BINARY] + cmd), env={},
                    input=review, stdin=None)
            assert p.returncode == 0, "%s %s: %s" % (arch, cmd, p.stderr.decode())
            assert p.stdout == base[cmd[0]], "%s %s differs from %s" % (arch, cmd, native)
        os.unlink(os.path.join(root, qemu))
