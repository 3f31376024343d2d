"""The command line as a user meets it: help, suggestions, completion, man page.

Every list of flags here comes from the binary's own help (made from its flag
table), so that the man page and the completion scripts are checked against
what the parser takes, not against a copy kept in this file.  bash and zsh
run the scripts the binary prints; zsh runs in a pseudo-terminal, completing
as a user's Tab does.  A missing shell or groff is a skip, which fails the
suite unless ALLOW_SKIP=1.
"""

import os
import pty
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from ptyio import read_pty  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ.get("VGPU_WEBHOOK", os.path.join(ROOT, "build", "vgpu-webhook")).split()
MAN = os.path.join(ROOT, "docs", "vgpu-webhook.1")

COMMANDS = ["serve", "review", "default", "check", "certs ensure", "certs cleanup",
            "config", "test", "version", "help", "completion"]


def run(*args, stdin=b""):
    p = subprocess.run(BIN + list(args), input=stdin, capture_output=True, timeout=30)
    return p.returncode, p.stdout.decode(), p.stderr.decode()


def help_flags(command):
    """The flags `help COMMAND` lists, as spelled ("--config", "-v")."""
    rc, out, _ = run("help", *command.split())
    assert rc == 0
    section = re.search(r"\nflags:\n(.*?)\n\n", out, re.S).group(1)
    got = [line.split()[0] for line in section.splitlines() if line.startswith("  -")]
    return [f for f in got if f != "-h,"]


# --- help -------------------------------------------------------------------

@pytest.mark.parametrize("command", COMMANDS)
def test_help_of_each_command(command):
    rc, out, err = run("help", *command.split())
    assert (rc, err) == (0, ""), err
    assert out.startswith("usage: vgpu-webhook %s" % command), out
    examples = re.search(r"\nexamples:\n((?:  .*\n)+)", out)
    assert examples, out
    assert any("vgpu-webhook " in line for line in examples.group(1).splitlines())
    exits = re.search(r"\nexit status:\n((?:  .*\n)+)", out)
    assert exits and re.match(r"  0  ", exits.group(1)), out
    # The same text from COMMAND --help and COMMAND -h.
    for flag in ("--help", "-h"):
        rc2, out2, _ = run(*command.split(), flag)
        assert (rc2, out2) == (0, out), (command, flag)


def test_help_of_every_command_lists_its_flags():
    assert help_flags("default")[-2:] == ["--namespace", "--check"]
    assert "--listen" in help_flags("serve")
    assert "--listen" not in help_flags("review")
    assert help_flags("version") == []
    assert help_flags("check") == ["--url", "--ca-file", "--server-name", "--cert-file",
                                   "--key-file", "--resource", "--timeout"]


def test_commands_are_the_binarys():
    """COMMANDS above are those of the usage: a new command is tested too."""
    rc, out, _ = run("help")
    usage = out.split("\n\n", 1)[0]
    got = [re.match(r"(?:usage:)?\s+vgpu-webhook ((?:certs )?[a-z]+)", line).group(1)
           for line in usage.splitlines()]
    assert sorted(got) == sorted(COMMANDS)


def test_help_of_certs():
    """certs alone: the help of both its commands."""
    rc, out, _ = run("help", "certs")
    assert rc == 0 and "usage: vgpu-webhook certs ensure" in out and \
        "usage: vgpu-webhook certs cleanup" in out
    for args in (["certs", "--help"], ["certs", "-h"], ["--help", "certs"]):
        assert run(*args) == (0, out, ""), args


def test_general_help():
    for args in (["help"], ["--help"], ["-h"]):
        rc, out, _ = run(*args)
        assert rc == 0 and "help [COMMAND]" in out and "completion bash|zsh" in out


# --- messages -----------------------------------------------------------------

@pytest.mark.parametrize("args,message", [
    (["defualt"], 'unknown command "defualt" (did you mean "default"?)'),
    (["sreve"], 'unknown command "sreve" (did you mean "serve"?)'),
    (["certs", "ensur"], 'certs: unknown command "ensur" (did you mean "ensure"?)'),
    (["help", "reveiw"], 'unknown command "reveiw" (did you mean "review"?)'),
    (["default", "--namspace", "x"], 'unknown flag "--namspace" (did you mean "--namespace"?)'),
    (["serve", "--lisen", ":1"], 'unknown flag "--lisen" (did you mean "--listen"?)'),
    (["default", "-config", "c.json"], 'unknown flag "-config" (did you mean "--config"?)'),
    (["check", "--ulr", "x"], 'unknown flag "--ulr" (did you mean "--url"?)'),
    # A flag of another command: where it belongs, not a guess.
    (["default", "--listen", ":1"], 'flag "--listen" belongs to serve, not to default'),
    (["review", "--namespace", "x"],
     'flag "--namespace" belongs to default, certs ensure and certs cleanup, not to review'),
    (["check", "--config", "c.json"],
     'flag "--config" belongs to serve, review, default and config, not to check'),
    (["review", "--url=x"], 'flag "--url" belongs to check, not to review'),
    # A flag without a value given one.
    (["default", "--check=true"], 'flag "--check" takes no value ("true")'),
    # An unknown flag, even last, is unknown: no value is looked for.
    (["default", "--bogus"], 'unknown flag "--bogus"\n'),
    (["review", "-", "--nope"], 'unknown flag "--nope"\n'),
    # A known flag last without its value.
    (["review", "-", "--default-mem"], 'flag "--default-mem" needs a value (MIB)'),
    (["completion", "fish"], 'unknown shell "fish" (bash or zsh)'),
])
def test_usage_errors(args, message):
    rc, out, err = run(*args)
    assert rc == 2 and out == "", (rc, out, err)
    assert err.startswith("vgpu-webhook: " + message), err


def test_no_suggestion_far_from_every_name():
    rc, _, err = run("frobnicate")
    assert rc == 2 and "did you mean" not in err and 'unknown command "frobnicate"' in err
    rc, _, err = run("serve", "-x")
    assert rc == 2 and "did you mean" not in err, err
    # Only the command's own flags are suggested: --lisen given to default
    # is near serve's --listen, which default does not take.
    rc, _, err = run("default", "--lisen", "x")
    assert rc == 2 and "did you mean" not in err, err


def test_check_flag_still_works():
    pod = b'{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"n"},' \
          b'"spec":{"containers":[{"name":"c","image":"i"}]}}'
    rc, out, err = run("default", "--check", "-", stdin=pod)
    assert rc == 0, err


# --- completion ---------------------------------------------------------------

def need(tool):
    path = shutil.which(tool)
    if not path:
        pytest.skip("no %s on PATH: apt-get install %s" % (tool, tool))
    return path


def bash_complete(words):
    """COMPREPLY for the words typed so far (the last one being completed)."""
    script = subprocess.run(BIN + ["completion", "bash"], capture_output=True,
                            check=True).stdout.decode()
    words_q = " ".join(shlex.quote(w) for w in words)
    prog = script + "\n" + (
        "complete -p vgpu-webhook\n"
        "COMP_WORDS=(%s); COMP_CWORD=%d; COMPREPLY=()\n"
        "_vgpu_webhook\n"
        "printf '%%s\\n' \"${COMPREPLY[@]}\"\n" % (words_q, len(words) - 1))
    p = subprocess.run([need("bash"), "--norc", "--noprofile", "-c", prog],
                       capture_output=True, text=True, timeout=30, cwd=ROOT)
    assert p.returncode == 0, p.stderr
    first, *rest = p.stdout.splitlines()
    assert first == "complete -o filenames -F _vgpu_webhook vgpu-webhook", first
    return sorted(x for x in rest if x)


def test_bash_completes_commands():
    assert bash_complete(["vgpu-webhook", "de"]) == ["default"]
    assert bash_complete(["vgpu-webhook", "c"]) == ["certs", "check", "completion", "config"]
    assert bash_complete(["vgpu-webhook", "certs", "c"]) == ["cleanup"]
    assert bash_complete(["vgpu-webhook", "completion", ""]) == ["bash", "zsh"]


@pytest.mark.parametrize("command", [c for c in COMMANDS if c not in ("help", "completion")])
def test_bash_completes_every_flag_of_the_command(command):
    want = sorted(help_flags(command) + ["--help"])
    got = bash_complete(["vgpu-webhook", *command.split(), "-"])
    assert got == want


def test_bash_completes_values():
    assert bash_complete(["vgpu-webhook", "serve", "--log-format", "j"]) == ["json"]
    assert bash_complete(["vgpu-webhook", "default", "--config", "docs/vgpu-webhook."]) == \
        ["docs/vgpu-webhook.1"]
    assert bash_complete(["vgpu-webhook", "default", "docs/vgpu-webhook."]) == \
        ["docs/vgpu-webhook.1"]
    # A value that is no file is not completed as one.
    assert bash_complete(["vgpu-webhook", "serve", "--listen", "doc"]) == []
    assert bash_complete(["vgpu-webhook", "default", "--namesp"]) == ["--namespace"]


def zsh_complete(line, timeout=5.0):
    """What zsh shows after `line` and a Tab, in an interactive shell."""
    zsh = need("zsh")
    with tempfile.TemporaryDirectory() as home:
        with open(os.path.join(home, "_vgpu-webhook"), "wb") as f:
            f.write(subprocess.run(BIN + ["completion", "zsh"], capture_output=True,
                                   check=True).stdout)
        bindir = os.path.join(home, "bin")
        os.mkdir(bindir)
        with open(os.path.join(bindir, "vgpu-webhook"), "w") as f:
            f.write("#!/bin/sh\nexec %s \"$@\"\n" % " ".join(shlex.quote(b) for b in BIN))
        os.chmod(os.path.join(bindir, "vgpu-webhook"), 0o755)
        pid, fd = pty.fork()
        if pid == 0:
            os.chdir(ROOT)
            env = dict(os.environ, HOME=home, TERM="dumb",
                       PATH=bindir + ":" + os.environ.get("PATH", ""))
            os.execve(zsh, [zsh, "-f", "-i"], env)

        def read(until, limit):
            return read_pty(fd, until, limit)
        try:
            os.write(fd, ("PS1='%%%% '; fpath=(%s $fpath); autoload -U compinit; "
                          "compinit -u -D; zstyle ':completion:*' list-prompt ''; "
                          "print -r -- READY=${_comps[vgpu-webhook]}\n" % home).encode())
            ready = read(b"READY=_vgpu-webhook", timeout)
            assert b"READY=_vgpu-webhook" in ready, ready[-300:]
            read(b"% ", 1.0)
            os.write(fd, line.encode() + b"\t")
            out = read(b"\x00", 1.5)
            os.write(fd, b"\x15exit\n")
            read(b"\x00", 0.5)
        finally:
            os.waitpid(pid, 0)
    return out.decode(errors="replace")


def test_zsh_completes():
    assert "vgpu-webhook default --namespace" in zsh_complete("vgpu-webhook default --namesp")
    assert "vgpu-webhook serve --log-format json" in \
        zsh_complete("vgpu-webhook serve --log-format j")
    listing = zsh_complete("vgpu-webhook certs ensure --kube-")
    for flag in ("--kube-ca", "--kube-server", "--kube-token-file"):
        assert flag in listing, listing
    assert "--kube-ca          -- its CA" in listing, listing
    assert "vgpu-webhook completion zsh" in zsh_complete("vgpu-webhook completion z")


def test_zsh_script_has_every_flag():
    need("zsh")
    script = subprocess.run(BIN + ["completion", "zsh"], capture_output=True,
                            check=True).stdout.decode()
    p = subprocess.run(["zsh", "-n", "-c", script], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    for command in COMMANDS:
        if command in ("help", "completion"):
            continue
        block = re.search(r"\t'%s'\) _arguments(.*?);;" % command, script, re.S).group(1)
        got = sorted(re.findall(r"'\*?(-[-a-z]+?)[=\[]", block))
        assert got == sorted(help_flags(command)), command


# --- man page -------------------------------------------------------------------

def man_sections():
    """{subsection title: [flags of its .TP items]} of the man page's FLAGS."""
    with open(MAN, encoding="utf-8") as f:
        text = f.read()
    flags_part = text.split("\n.SH FLAGS\n", 1)[1].split("\n.SH ", 1)[0]
    out = {}
    for block in ("\n" + flags_part).split("\n.SS ")[1:]:
        title, body = block.split("\n", 1)
        items = re.findall(r"^\.TP\n\.B[IR]? (.*)$", body, re.M)
        out[title] = [re.sub(r"[\"\s].*", "", i.replace("\\-", "-")) for i in items]
    return text, out


def test_man_page_flags_are_the_binarys():
    text, sections = man_sections()
    for command in COMMANDS:
        if command in ("help", "completion"):
            continue
        got = []
        for title, flags in sections.items():
            names = re.sub(r"^Flags of ", "", title)
            names = re.split(r", | and ", names)
            if command in names or names == ["every command"]:
                got += flags
        want = help_flags(command) + ["-h"]
        assert sorted(got) == sorted(want), command
    for command in COMMANDS:
        assert "\n.SS %s\n" % command in text, command


def test_man_page_version_is_the_binarys():
    rc, out, _ = run("version")
    version = out.split()[1]
    with open(MAN, encoding="utf-8") as f:
        assert '"vgpu-webhook %s"' % version in f.read()


def test_man_page_is_clean_under_groff():
    groff = need("groff")
    p = subprocess.run([groff, "-man", "-ww", "-z", MAN], capture_output=True, text=True)
    assert p.returncode == 0 and p.stderr == "", p.stderr


def test_make_install_puts_the_man_page():
    with tempfile.TemporaryDirectory() as dest:
        p = subprocess.run(["make", "--no-print-directory", "-s", "install",
                            "DESTDIR=" + dest, "PREFIX=/usr"], cwd=ROOT,
                           capture_output=True, text=True, timeout=600)
        assert p.returncode == 0, p.stderr
        man = os.path.join(dest, "usr", "share", "man", "man1", "vgpu-webhook.1")
        with open(man, "rb") as f, open(MAN, "rb") as g:
            assert f.read() == g.read()
        bash = os.path.join(dest, "usr", "share", "bash-completion", "completions",
                            "vgpu-webhook")
        zsh = os.path.join(dest, "usr", "share", "zsh", "vendor-completions",
                           "_vgpu-webhook")
        assert open(bash).read() == run("completion", "bash")[1]
        assert open(zsh).read() == run("completion", "zsh")[1]
