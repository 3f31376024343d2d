#!/usr/bin/python3
"""rootfs-hook.py - mmdebstrap's extract hook for image/rootfs.sh.

    IMAGE_DROP="PACKAGE..." image/rootfs-hook.py ROOT

mmdebstrap has extracted the .deb files in ROOT/var/cache/apt/archives/
into ROOT, without running any maintainer script.  This hook makes ROOT
hold exactly those packages' files, less their documentation, and a dpkg
database that says so:

- the documentation goes (/usr/share/doc, man, info, locale and lintian),
  except each package's copyright file;
- the packages of IMAGE_DROP go, but for the files that a kept package
  ships too: dependencies that only a maintainer script uses (base-files
  pre-depends on awk for its own), never needed where no script runs;
- every path that no package ships goes too: what mmdebstrap set up for
  itself (apt's configuration, lists and cache, /etc/hostname,
  /etc/resolv.conf...), except /dev, /proc, /sys, /run and /tmp, which
  mmdebstrap still uses and cleans;
- /var/lib/dpkg/status gets one entry per package ("install ok
  installed", the package's control fields), and /var/lib/dpkg/info/ its
  list of files (NAME.list, or NAME:ARCH.list for Multi-Arch: same), of
  the files that are left, and the "format" file that tells dpkg so.
  Image scanners read these; the SBOM is written from them.

Entries are sorted, and with SOURCE_DATE_EPOCH set every folder gets that
time (what mmdebstrap made and the hook removed would leave the time of
the build on some), so the same packages give the same files whichever
mmdebstrap mode made them.
"""

import os
import shutil
import subprocess
import sys

DOCS = ("/usr/share/doc", "/usr/share/man", "/usr/share/info",
        "/usr/share/locale", "/usr/share/lintian")
# mmdebstrap's own mount points and scratch folders: left to it.
LEFT = ("/dev", "/proc", "/sys", "/run", "/tmp")
DPKG = "/var/lib/dpkg"


def deb_control(deb):
    """The control paragraph of a .deb, as lines (continuations kept)."""
    out = subprocess.run(["dpkg-deb", "--field", deb], check=True,
                         capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if line.strip()]


def field(control, name):
    for line in control:
        key, sep, value = line.partition(":")
        if sep and key == name:
            return value.strip()
    return ""


def deb_paths(deb):
    """The paths a .deb ships, as dpkg lists them: "/." then "/usr"..."""
    out = subprocess.run(["dpkg-deb", "--fsys-tarfile", deb], check=True,
                         capture_output=True).stdout
    names = subprocess.run(["tar", "-t"], input=out, check=True,
                           capture_output=True).stdout.decode()
    paths = []
    for name in names.splitlines():
        name = name.rstrip("/")
        if name in (".", ""):
            paths.append("/.")
        elif name.startswith("./"):
            paths.append(name[1:])
    return paths


def exists(root, path):
    return os.path.lexists(root + path)


def under(path, tops):
    return any(path == t or path.startswith(t + "/") for t in tops)


def strip_docs(root):
    """Removes the documentation but the copyright files."""
    for top in DOCS:
        top_dir = root + top
        if not os.path.isdir(top_dir) or os.path.islink(top_dir):
            continue
        if top != "/usr/share/doc":
            shutil.rmtree(top_dir)
            continue
        for dirpath, dirnames, filenames in os.walk(top_dir, topdown=False):
            for name in filenames:
                if name != "copyright" or dirpath == top_dir:
                    os.unlink(os.path.join(dirpath, name))
            for name in dirnames:
                d = os.path.join(dirpath, name)
                if os.path.islink(d):
                    # A package's doc folder as a link to another's.
                    continue
                if not os.listdir(d):
                    os.rmdir(d)


def prune(root, owned):
    """Removes every path under root that no package owns (LEFT apart)."""
    keep = set(owned) | {DPKG + "/status", DPKG + "/info"}
    for dirpath, dirnames, filenames in os.walk(root, topdown=True):
        rel = dirpath[len(root):] or "/"
        for name in sorted(dirnames):
            path = (rel.rstrip("/") + "/" + name)
            if under(path, LEFT) or path == DPKG + "/info":
                dirnames.remove(name)
                continue
            if path not in keep:
                full = os.path.join(dirpath, name)
                if os.path.islink(full):
                    os.unlink(full)
                else:
                    shutil.rmtree(full)
                dirnames.remove(name)
        for name in filenames:
            path = rel.rstrip("/") + "/" + name
            if path not in keep:
                os.unlink(os.path.join(dirpath, name))


def main(argv):
    if len(argv) != 2:
        sys.stderr.write("usage: rootfs-hook.py ROOT\n")
        return 2
    root = argv[1].rstrip("/")
    archives = os.path.join(root, "var/cache/apt/archives")
    debs = sorted(os.path.join(archives, f) for f in os.listdir(archives)
                  if f.endswith(".deb"))
    if not debs:
        sys.stderr.write("rootfs-hook: no .deb in %s\n" % archives)
        return 1
    strip_docs(root)

    packages = []  # (name, listname, control, paths left)
    for deb in debs:
        control = deb_control(deb)
        name = field(control, "Package")
        arch = field(control, "Architecture")
        listname = name + (":" + arch if field(control, "Multi-Arch") == "same" else "")
        paths = [p for p in deb_paths(deb) if p == "/." or exists(root, p)]
        packages.append((name, listname, control, paths))
    packages.sort(key=lambda p: p[0])
    drop = set(os.environ.get("IMAGE_DROP", "").split())
    unknown = drop - {p[0] for p in packages}
    if unknown:
        sys.stderr.write("rootfs-hook: IMAGE_DROP names packages that were not "
                         "extracted: %s\n" % " ".join(sorted(unknown)))
        return 1
    packages = [p for p in packages if p[0] not in drop]

    owned = set()
    for _, _, _, paths in packages:
        owned.update(p for p in paths if p != "/.")
        # dpkg lists a folder's parents too; they must stay.
        for p in paths:
            while "/" in p.strip("/"):
                p = p.rsplit("/", 1)[0]
                owned.add(p)
    prune(root, owned)

    info = root + DPKG + "/info"
    os.makedirs(info, exist_ok=True)
    # Format 1: NAME:ARCH.list for the Multi-Arch: same packages.
    with open(os.path.join(info, "format"), "w", encoding="utf-8") as f:
        f.write("1\n")
    with open(root + DPKG + "/status", "w", encoding="utf-8") as status:
        for name, listname, control, paths in packages:
            status.write(control[0] + "\n")
            status.write("Status: install ok installed\n")
            for line in control[1:]:
                status.write(line + "\n")
            status.write("\n")
            with open(os.path.join(info, listname + ".list"), "w",
                      encoding="utf-8") as f:
                for p in paths:
                    f.write(p + "\n")

    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    if epoch:
        t = int(epoch)
        for dirpath, dirnames, _ in os.walk(root):
            os.utime(dirpath, (t, t), follow_symlinks=False)
            rel = dirpath[len(root):]
            dirnames[:] = [d for d in dirnames
                           if not os.path.islink(os.path.join(dirpath, d))
                           and not under(rel + "/" + d, LEFT)]
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
