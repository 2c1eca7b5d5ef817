"""make shell on the host: which build it boots or refuses, and the console
relay, driven by a fake guest (a process that prompts like busybox on a
serial console)."""

import fcntl
import io
import os
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from lab.molab import cli, cpio, kernel, qemu, shell
from lab.molab.errors import LabError
from lab.molab.util import ROOT

# A guest on a serial console: boot lines, then after FAKE_DELAY a shell.
# Input that came before the shell is lost, as on a console nobody has
# open yet. Busybox's prompt comes in pieces, with a cursor position query
# after it (and, with FAKE_QUERIES, a terminal size query before it); with
# FAKE_KMSG a kernel message follows the first prompt. A line that was
# already waiting when a command ended is reported as TYPEAHEAD (a real
# command reading its stdin would have eaten it).
FAKE_GUEST = r"""
import os, select, sys, time
argv = sys.argv[1:]
if os.environ.get("FAKE_ARGV"):
    open(os.environ["FAKE_ARGV"], "w").write("\n".join(argv))
def out(s):
    os.write(1, s.encode())
out("[    0.000000] Linux version 6.12.117-mo (fake)\r\n")
time.sleep(float(os.environ.get("FAKE_DELAY", "0.4")))
while select.select([0], [], [], 0)[0]:
    if not os.read(0, 4096):
        break
if os.environ.get("FAKE_DIE"):
    sys.exit(0)
out("molab shell: suites ... exit or Ctrl-D powers off\r\n")
queries = os.environ.get("FAKE_QUERIES")
kmsg = os.environ.get("FAKE_KMSG")
def prompt():
    global kmsg
    if queries:
        out("\x1b7\x1b[r\x1b[999;999H\x1b[6n\x1b8")
    out("mo-guest")
    time.sleep(0.05)
    out(":/root# ")
    time.sleep(0.05)
    out("\x1b[6n")
    if kmsg:
        out("\r\n[    5.123456] random: crng init done\r\n")
        kmsg = None
buf = b""
def line():
    global buf
    while b"\n" not in buf:
        data = os.read(0, 4096)
        if not data:
            return None
        buf += data
    l, buf = buf.split(b"\n", 1)
    return l.decode()
rc = 0
prompt()
while True:
    l = line()
    if l is None:
        break
    out(l + "\r\n")
    if l == "exit" or l.startswith("exit "):
        rc = int(l[5:]) if l[5:] else rc
        break
    if l.startswith("echo "):
        out(l[5:] + "\r\n"); rc = 0
    elif l.startswith("sleep "):
        time.sleep(float(l[6:])); rc = 0
    elif l.startswith("mo-sendfile "):      # mo-sendfile NAME TEXT, as /bin/mo-sendfile sends
        name, text = l.split(" ", 2)[1:]
        import base64, hashlib
        out("@@MO-FILE-BEGIN %s\r\n%s\r\n@@MO-FILE-END %s size=%d sha256=%s\r\n" % (
            name, base64.b64encode(text.encode()).decode(), name, len(text),
            hashlib.sha256(text.encode()).hexdigest())); rc = 0
    elif l in ("true", "false"):
        rc = 0 if l == "true" else 1
    else:
        out("sh: %s: not found\r\n" % l); rc = 127
    if buf or select.select([0], [], [], 0)[0]:
        out("TYPEAHEAD\r\n")
    prompt()
out("@@MO-SHELL-EXIT rc=%d\r\n" % rc)
if os.environ.get("FAKE_HANG"):        # a poweroff that never ends QEMU
    time.sleep(60)
out("[   9.000000] reboot: Power down\r\n")
"""


@pytest.fixture
def fake(tmp_path, monkeypatch):
    exe = tmp_path / "fake-guest"
    exe.write_text(f"#!{sys.executable}\n" + FAKE_GUEST)
    exe.chmod(0o755)
    monkeypatch.setenv("FAKE_ARGV", str(tmp_path / "argv"))
    for name in ("FAKE_DELAY", "FAKE_QUERIES", "FAKE_KMSG", "FAKE_DIE", "FAKE_HANG"):
        monkeypatch.delenv(name, raising=False)
    return exe


def session(fake, tmp_path, text, timeout=20, **env):
    """Run the fake guest with TEXT piped in; (status, why, console output)."""
    for k, v in env.items():
        os.environ[k] = v
    try:
        inp = tmp_path / "in"
        inp.write_bytes(text.encode())
        with open(inp, "rb") as i, open(tmp_path / "out", "wb") as o:
            log = io.BytesIO()
            rc, why = shell.Session([str(fake)], i.fileno(), o.fileno(), log,
                                    interactive=False, timeout=timeout).run()
        out = (tmp_path / "out").read_bytes().decode()
        assert log.getvalue().decode() == out
        return rc, why, out
    finally:
        for k in env:
            del os.environ[k]


# --- piped input ------------------------------------------------------------

def test_the_fake_guest_loses_input_sent_before_its_prompt(fake):
    # What the relay guards against: written at once, the first lines are gone.
    p = subprocess.run([str(fake)], input=b"echo first\necho second\n", capture_output=True,
                       timeout=20)
    assert b"first" not in p.stdout and b"@@MO-SHELL-EXIT rc=0" in p.stdout


def test_piped_commands_wait_for_the_prompt_and_give_the_last_status(fake, tmp_path):
    rc, why, out = session(fake, tmp_path, "echo first\necho second\nfalse\n")
    assert (rc, why) == (1, "")
    assert "mo-guest:/root# \x1b[6necho first\r\nfirst\r\n" in out
    assert "second\r\n" in out and "TYPEAHEAD" not in out
    assert out.count("# \x1b[6nexit\r\n") == 1 and "@@MO-SHELL-EXIT rc=1" in out


@pytest.mark.parametrize("text,status", [("true\nexit 3\necho never\n", 3),
                                         ("echo no newline at the end", 0),
                                         ("", 0), ("nosuchcmd\n", 127)])
def test_exit_status(fake, tmp_path, text, status):
    rc, why, out = session(fake, tmp_path, text)
    assert (rc, why) == (status, "")
    assert "never" not in out
    if text.startswith("echo no"):
        assert "\r\nno newline at the end\r\n" in out


def test_terminal_queries_and_kernel_messages_do_not_hide_the_prompt(fake, tmp_path):
    rc, why, out = session(fake, tmp_path, "echo one\necho two\n",
                           FAKE_QUERIES="1", FAKE_KMSG="1")
    assert (rc, why) == (0, "")
    assert "\x1b[999;999H\x1b[6n" in out and "crng init done" in out
    assert "one\r\n" in out and "two\r\n" in out


def test_one_line_per_prompt_no_typeahead(fake, tmp_path):
    rc, why, out = session(fake, tmp_path, "sleep 0.3\nsleep 0.3\necho done\n")
    assert (rc, why) == (0, "") and "done\r\n" in out
    assert "TYPEAHEAD" not in out


def test_the_timeout_bounds_the_session(fake, tmp_path):
    t0 = time.monotonic()
    rc, why, out = session(fake, tmp_path, "echo x\n", timeout=1.5, FAKE_DELAY="30")
    assert rc == 1 and why == "still running after 1.5s (--timeout)"
    assert time.monotonic() - t0 < 10


def test_a_guest_that_stops_early_fails(fake, tmp_path):
    rc, why, out = session(fake, tmp_path, "echo x\necho y\n", FAKE_DIE="1")
    assert rc == 1 and why == "the guest stopped before the input ended (2 line(s) not sent)"


def test_the_shells_status_stands_when_poweroff_hangs(fake, tmp_path, monkeypatch):
    # QEMU still running once the shell reported its end: the relay waits
    # AFTER_EXIT for it, then stops it and gives the shell's status
    monkeypatch.setattr(shell, "AFTER_EXIT", 1.0)
    t0 = time.monotonic()
    rc, why, out = session(fake, tmp_path, "exit 6\n", FAKE_HANG="1")
    assert (rc, why) == (6, "") and "@@MO-SHELL-EXIT rc=6" in out
    assert "Power down" not in out and time.monotonic() - t0 < 10


def test_watch_sees_a_prompt_split_by_escapes():
    w = shell.Watch()
    for piece in (b"\x1b[6nmo-gu", b"est:/r", b"oot#"):
        w.feed(piece)
        assert not w.prompt
    w.feed(b" \x1b")
    assert w.prompt
    w.sent()
    w.feed(b"echo mo-guest:\r\n")          # the echo of a line is no prompt
    assert not w.prompt
    w.feed(b"mo-guest:> ")                 # PS2
    assert w.prompt and w.rc is None
    w.feed(b"@@MO-SHELL-EXIT rc=$?\r\n@@MO-SHELL-EX")
    assert w.rc is None
    w.feed(b"IT rc=42\r\n")
    assert w.rc == 42


# --- the whole run: QEMU's command line, terminal or pipe -------------------

def fake_spec(fake, tmp_path, **kw):
    (tmp_path / "bzImage").write_bytes(b"k")
    (tmp_path / "initrd").write_bytes(b"i")
    return qemu.BootSpec(kernel=tmp_path / "bzImage", initrd=tmp_path / "initrd",
                         qemu=str(fake), results_dir=tmp_path / "results", label="shell",
                         smp=3, **kw)


def append_words(tmp_path):
    argv = (tmp_path / "argv").read_text().split("\n")
    return argv[argv.index("-append") + 1].split()


def test_run_piped(fake, tmp_path, capsys):
    spec = fake_spec(fake, tmp_path, cmdline_extra=["movablecore=40%"])
    inp, outp = tmp_path / "in", tmp_path / "out"
    inp.write_text("echo hi\nexit 5\n")
    with open(inp) as i, open(outp, "w") as o:
        assert shell.run(spec, stdin=i, stdout=o) == 5
    words = append_words(tmp_path)
    assert "mo.run=" in words and "mo.shell=1" in words and "movablecore=40%" in words
    assert not any(w.startswith("mo.tty=") for w in words)
    log = (tmp_path / "results" / "console.log").read_bytes().decode()
    assert "hi\r\n" in log and log == outp.read_bytes().decode()
    assert "piped input, each line after a prompt, up to 60m00s" in capsys.readouterr().err


def test_files_the_guest_sends_land_in_the_results(fake, tmp_path, capsys):
    # the shell's banner offers mo-sendfile, which says the lab decodes the
    # file into files/NAME of the run's results directory
    spec = fake_spec(fake, tmp_path)
    inp, outp = tmp_path / "in", tmp_path / "out"
    inp.write_text("mo-sendfile trace.txt two words\nmo-sendfile ../up.txt x\n")
    with open(inp) as i, open(outp, "w") as o:
        assert shell.run(spec, stdin=i, stdout=o) == 0
    files = tmp_path / "results" / "files"
    assert sorted(p.name for p in files.iterdir()) == ["trace.txt", "up.txt"]
    assert (files / "trace.txt").read_text() == "two words"
    assert "2 file(s) from the guest in " in capsys.readouterr().err
    # one cut off by the end of the session is named, not saved
    log = tmp_path / "r2" / "console.log"
    log.parent.mkdir()
    log.write_text("@@MO-FILE-BEGIN big.bin\r\nAAAA\r\nmo-guest:/root# ")
    assert shell.save_files(log.parent) == ["file big.bin: transfer cut short (no @@MO-FILE-END)"]
    assert not (log.parent / "files").exists()


def test_run_from_a_terminal(fake, tmp_path):
    """Raw terminal, keys go in at once, its size goes to the guest, and
    the terminal is as it was afterwards."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 132, 0, 0))
    before = termios.tcgetattr(slave)
    outp = tmp_path / "out"
    spec = fake_spec(fake, tmp_path)
    result = {}

    def typist():
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and "mo-guest:" not in (
                outp.read_bytes().decode() if outp.exists() else ""):
            time.sleep(0.05)
        result["raw"] = not (termios.tcgetattr(slave)[3] & termios.ICANON)
        os.write(master, b"echo typed\n")
        time.sleep(0.3)
        os.write(master, b"exit 4\n")
    import threading
    t = threading.Thread(target=typist)
    with open(outp, "w") as o:
        t.start()
        rc = shell.run(spec, stdin=os.fdopen(slave, "rb", closefd=False), stdout=o)
    t.join()
    assert rc == 4
    assert result["raw"]
    assert termios.tcgetattr(slave) == before
    assert "mo.tty=132x40" in append_words(tmp_path)
    assert "typed\r\n" in outp.read_bytes().decode()
    os.close(master)
    os.close(slave)


def test_the_shell_boots_what_make_test_boots(monkeypatch, tmp_path):
    kb = SimpleNamespace(variant="patched", flavour="debug", bzimage=tmp_path / "bzImage",
                         initramfs=tmp_path / "initrd")
    got = {}
    monkeypatch.setattr(shell, "find_build", lambda v, f, k, build: kb)
    monkeypatch.setattr(shell, "run", lambda spec, timeout: got.setdefault("spec", spec) and 0)
    assert cli.main(["shell", "--append", "loglevel=4"]) == 0
    test_args = cli.build_parser().parse_args(["test"])
    test_spec = cli._boot_spec(test_args, kb, list(cli.TEST_SUITES), "", "test",
                               smp=cli.TEST_SMP)
    mine, theirs = qemu.qemu_command(got["spec"]), qemu.qemu_command(test_spec)
    i = mine.index("-append")
    assert mine[:i] == theirs[:i] and mine[i + 2:] == theirs[i + 2:]
    words = mine[i + 1].split()
    assert set(theirs[i + 1].split()) - set(words) == {f"mo.run={','.join(cli.TEST_SUITES)}"}
    assert set(words) - set(theirs[i + 1].split()) == {"mo.run=", "loglevel=4"}
    assert "cma=256M@2G-3G" in words and "-smp" in mine


def test_the_shell_boots_the_build_and_timeout_it_is_given(monkeypatch, tmp_path):
    kb = SimpleNamespace(variant="vanilla", flavour="perf", bzimage=tmp_path / "bzImage",
                         initramfs=tmp_path / "initrd")
    asked, got = [], {}
    monkeypatch.setattr(shell, "find_build", lambda *a, **k: asked.append((a, k)) or kb)
    monkeypatch.setattr(shell, "run", lambda spec, timeout: got.update(spec=spec, t=timeout) or 3)
    assert cli.main(["shell", "--variant", "vanilla", "--flavour", "perf", "--build",
                     "--timeout", "90", "--smp", "2"]) == 3
    assert asked == [(("vanilla", "perf", None), {"build": True})]
    assert got["t"] == 90 and got["spec"].smp == 2 and got["spec"].suites == []
    asked.clear()
    assert cli.main(["shell"]) == 3
    assert asked == [(("patched", "debug", None), {"build": False})] and got["t"] is None


# --- which build: the same rules as make boot -------------------------------

@pytest.fixture
def outdir(tmp_path, monkeypatch):
    monkeypatch.setattr(kernel, "OUT", tmp_path / "out")
    calls = []
    monkeypatch.setattr(kernel, "ensure", lambda v, f, k=None: calls.append(("kernel", v, f))
                        or kernel.KernelBuild(variant=v, flavour=f, src=tmp_path, out=tmp_path))
    monkeypatch.setattr(shell.initramfs, "build", lambda kb: calls.append(("initramfs",)))
    monkeypatch.setattr(shell, "lock_is_free", lambda: True)
    d = tmp_path / "out" / "patched-debug"

    def make(flavour=None, bzimage=True, init=None):
        d.mkdir(parents=True, exist_ok=True)
        if flavour:
            (d / kernel.INFO).write_text(f'{{"flavour": "{flavour}", "variant": "patched"}}')
        if bzimage:
            (d / "arch/x86/boot").mkdir(parents=True, exist_ok=True)
            (d / "arch/x86/boot/bzImage").write_bytes(b"k")
        if init is not None:
            arc = cpio.Archive()
            arc.add_dir("bin")
            arc.add_file("bin/busybox", b"\0" * 5000, 0o755)
            arc.add_file("init", init, 0o755)
            arc.add_file("opt/mo/x", b"x")
            arc.write_gz(d / "initramfs.cpio.gz")
    make.dir, make.calls = d, calls
    return make


def refusal(**kw):
    with pytest.raises(LabError) as e:
        shell.find_build("patched", kw.pop("flavour", "debug"), None, **kw)
    return e.value.line()


def test_no_build_is_refused_with_the_command_that_makes_it(outdir):
    line = refusal()
    assert "no patched-debug kernel: " in line and "does not exist" in line
    assert line.endswith("build it: make kernel initramfs VARIANT=patched FLAVOUR=debug "
                         "(or make shell BUILD=1)")
    outdir(flavour=None)                           # configured, never completed
    assert "has no complete build" in refusal()
    assert outdir.calls == []


def test_the_other_flavour_is_refused_even_with_build(outdir):
    outdir(flavour="builtin", init=(ROOT / "guest/init.sh").read_bytes())
    for build in (False, True):
        line = refusal(build=build)
        assert "holds the builtin kernel now, not debug" in line
        assert "when no make test runs, rebuild it: make kernel initramfs" in line
    assert outdir.calls == []
    # make boot refuses the same directory
    a = SimpleNamespace(out=None, variant="patched", flavour="debug", ksrc=None)
    with pytest.raises(LabError, match="holds the builtin kernel now"):
        cli._load_build(a)


def test_build_makes_only_what_is_missing(outdir, monkeypatch):
    kb = shell.find_build("patched", "debug", None, build=True)      # nothing there
    assert outdir.calls == [("kernel", "patched", "debug"), ("initramfs",)]
    outdir.calls.clear()
    outdir(flavour="debug")                                          # no initramfs
    assert "initramfs.cpio.gz does not exist; build it: make initramfs VARIANT=patched " \
           "FLAVOUR=debug (or make shell BUILD=1)" in refusal()
    shell.find_build("patched", "debug", None, build=True)
    assert outdir.calls == [("initramfs",)]
    outdir.calls.clear()
    outdir(flavour="debug", init=b"#!/bin/sh\nsetsid cttyhack sh\n")  # an older /init
    assert "predates make shell" in refusal()
    shell.find_build("patched", "debug", None, build=True)
    assert outdir.calls == [("initramfs",)]
    outdir.calls.clear()
    outdir(flavour="debug", init=(ROOT / "guest/init.sh").read_bytes())
    kb = shell.find_build("patched", "debug", None, build=True)
    assert outdir.calls == [] and kb.initramfs == outdir.dir / "initramfs.cpio.gz"
    # a kernel build under way (make test): no second one
    outdir.calls.clear()
    (outdir.dir / kernel.INFO).unlink()
    monkeypatch.setattr(shell, "lock_is_free", lambda: False)
    assert "a kernel build is running" in refusal(build=True)
    assert outdir.calls == []


def test_init_of_reads_the_archive(tmp_path):
    arc = cpio.Archive()
    arc.add_file("etc/x", b"e")
    arc.add_file("init", b"#!/bin/sh\n")
    arc.write_gz(tmp_path / "a.gz")
    assert shell.init_of(tmp_path / "a.gz") == b"#!/bin/sh\n"
    arc = cpio.Archive()
    arc.add_file("etc/x", b"e")
    arc.write_gz(tmp_path / "b.gz")
    assert shell.init_of(tmp_path / "b.gz") is None


def test_make_shell_passes_its_variables():
    r = subprocess.run(["make", "-n", "shell", "BUILD=1", "TIMEOUT=90", "FLAVOUR=perf",
                        "SMP=2", "ACCEL=multi"], cwd=ROOT, capture_output=True, text=True)
    cmd = " ".join(r.stdout.split())
    assert "-m lab.molab shell" in cmd and "--build" in cmd and "--timeout '90'" in cmd
    assert "--flavour 'perf'" in cmd and "--smp '2'" in cmd and "--accel 'multi'" in cmd
    r = subprocess.run(["make", "-n", "shell", "BUILD=0"], cwd=ROOT, capture_output=True,
                       text=True)
    assert "--build" not in r.stdout
    r = subprocess.run(["make", "-s", "help"], cwd=ROOT, capture_output=True, text=True)
    assert "make shell" in r.stdout
