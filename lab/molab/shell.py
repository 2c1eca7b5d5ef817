"""make shell: a shell in the guest of the kernel built last, on this terminal.

The guest boots as make boot's does, on the same QEMU command line (three
NUMA nodes, the tiers; movablecore and CMA on debug kernels) with
mo.shell=1 and no suites: guest/init.sh starts a shell on the console and,
when it exits, prints "@@MO-SHELL-EXIT rc=<status>" and powers off. That
status is make shell's.

From a terminal, the terminal is raw and every key goes to the guest,
Ctrl-C too (Ctrl-A x stops QEMU). From a pipe (a script, CI), each input
line goes in after the guest's next prompt: a line sent earlier would be
lost (the console is not open before the shell starts) or read by the
command still running. When the input ends, "exit" ends the shell with
the last command's status. --timeout bounds the whole session. Files the
guest sends (mo-sendfile) are decoded into the session's files/.
"""

import gzip
import os
import re
import select
import shlex
import subprocess
import sys
import time
from collections import deque
from pathlib import Path

from . import console, initramfs, kernel, qemu, tree
from .errors import LabError
from .util import GUEST, RESULTS, fmt_secs, lock_is_free, rel, utc_stamp

# PS1 'mo-guest:\w# ' and PS2 'mo-guest:> ' (guest/init.sh), looked for
# anywhere in what came since the last line went in, not at its end:
# busybox follows the prompt with a cursor position query (ESC [6n), and
# a kernel message may follow that.
PROMPT = re.compile(r"mo-guest:[^\r\n#>]*[#>] ")
EXIT_MARK = re.compile(r"@@MO-SHELL-EXIT rc=(\d+)")
SHELL_MARK = b"@@MO-SHELL-EXIT"        # what an /init that offers the shell holds
PIPED_TIMEOUT = 3600.0                  # --timeout when stdin is not a terminal
AFTER_EXIT = 30.0                       # seconds poweroff may take once the shell ended


def init_of(initrd):
    """The bytes of /init in a gzip'd newc initramfs (None if it has none);
    reads only up to it (the lab's archives are sorted by name)."""
    with gzip.open(initrd, "rb") as f:
        while True:
            hdr = f.read(110)
            if len(hdr) < 110 or hdr[:6] != b"070701":
                return None
            namesize, filesize = int(hdr[94:102], 16), int(hdr[54:62], 16)
            name = f.read(namesize)[:-1].decode(errors="replace")
            f.read((-(110 + namesize)) % 4)
            if name == "TRAILER!!!":
                return None
            data = f.read(filesize)
            f.read((-filesize) % 4)
            if name == "init":
                return data


def find_build(variant, flavour, ksrc=None, build=False):
    """The KernelBuild make shell boots: make boot's, in kernel.out_dir(),
    holding the flavour its molab-build.json records, with an initramfs
    whose /init offers the shell. What is missing is refused, or with
    BUILD built; a directory holding the other flavour is always refused
    (make test builds builtin over debug: never rebuild under it)."""
    out = kernel.out_dir(variant, flavour)
    fix = f"make kernel initramfs VARIANT={variant} FLAVOUR={flavour}"
    held = kernel.recorded_flavour(out) if out.is_dir() else ""
    if held and held != flavour:
        raise LabError(f"{rel(out)} holds the {held} kernel now, not {flavour} (make test "
                       f"builds builtin there after debug)",
                       f"when no make test runs, rebuild it: {fix}")
    or_build = f"{fix} (or make shell BUILD=1)"
    if not held or not (out / "arch/x86/boot/bzImage").is_file():
        if not build:
            what = "has no complete build" if out.is_dir() else "does not exist"
            raise LabError(f"no {variant}-{flavour} kernel: {rel(out)} {what}",
                           f"build it: {or_build}")
        if not lock_is_free():
            raise LabError("a kernel build is running (make test?)",
                           "wait for it to end, then run make shell again")
        kb = kernel.ensure(variant, flavour, ksrc)
        initramfs.build(kb)
        return kb
    src = tree.source_for(variant, ksrc) if ksrc else None
    kb = kernel.KernelBuild.load(out, variant, flavour, src=src)
    why = ""
    if not kb.initramfs.is_file():
        why = f"{rel(kb.initramfs)} does not exist"
    elif SHELL_MARK not in (init_of(kb.initramfs) or b""):
        why = f"the /init of {rel(kb.initramfs)} predates make shell"
    if why:
        if not build:
            raise LabError(why, f"build it: make initramfs VARIANT={variant} FLAVOUR={flavour} "
                                f"(or make shell BUILD=1)")
        initramfs.build(kb)
    return kb


def shell_words(interactive, size=None):
    """The kernel command line words of the shell: mo.shell=1, and from a
    terminal its size (a serial console has none)."""
    words = ["mo.shell=1"]
    if interactive and size and size[0] > 0 and size[1] > 0:
        words.append(f"mo.tty={size[0]}x{size[1]}")
    return words


class Watch:
    """What the guest printed since the last line went in: its prompt, and
    the shell's exit status (kept from then on)."""

    def __init__(self):
        self.text = ""
        self.rc = None
        self.prompt = False

    def feed(self, data):
        self.text += data.decode("utf-8", errors="replace")
        m = EXIT_MARK.search(self.text)
        if m and self.rc is None:
            self.rc = int(m.group(1))
        self.prompt = self.prompt or bool(PROMPT.search(self.text))
        # A prompt or a mark split between two reads is whole in the
        # last 4 KiB.
        self.text = self.text[-4096:]

    def sent(self):
        self.text, self.prompt = "", False


def _write_all(fd, data):
    while data:
        n = os.write(fd, data)
        data = data[n:]


class Session:
    """One guest console: COMMAND's stdin and stdout, relayed from and to
    IN_FD and OUT_FD (and LOG). Returns (exit status, why it is not the
    shell's, or '')."""

    def __init__(self, command, in_fd, out_fd, log, interactive, timeout=None,
                 stderr=subprocess.DEVNULL):
        self.command, self.in_fd, self.out_fd, self.log = command, in_fd, out_fd, log
        self.interactive, self.timeout, self.stderr = interactive, timeout, stderr
        self.watch = Watch()
        self.lines = deque()
        self.partial = b""
        self.input_done = False
        self.sent_exit = False

    def run(self):
        try:
            proc = subprocess.Popen(self.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=self.stderr, start_new_session=True,
                                    preexec_fn=qemu._die_with_parent)
        except OSError as e:
            raise LabError(f"cannot run {self.command[0]}: {e.strerror}",
                           "install QEMU with 'sudo sh lab/setup.sh'") from e
        try:
            return self._relay(proc)
        finally:
            qemu._stop(proc)
            try:
                proc.stdin.close()
            except OSError:
                pass

    def _relay(self, proc):
        t0 = time.monotonic()
        out = proc.stdout.fileno()
        marked_at = None
        while True:
            now = time.monotonic()
            if self.timeout and now - t0 > self.timeout:
                return 1, f"still running after {fmt_secs(self.timeout)} (--timeout)"
            if marked_at is not None and now - marked_at > AFTER_EXIT:
                break               # the shell ended; poweroff did not end QEMU
            fds = [out] + ([self.in_fd] if not self.input_done else [])
            ready, _, _ = select.select(fds, [], [], 0.5)
            if out in ready:
                data = os.read(out, 65536)
                if not data:
                    break           # QEMU exited
                _write_all(self.out_fd, data)
                self.log.write(data)
                self.log.flush()
                self.watch.feed(data)
                if self.watch.rc is not None and marked_at is None:
                    marked_at = time.monotonic()
            if self.in_fd in ready:
                self._read_input(proc)
            if not self.interactive and not self._feed(proc):
                break
        if self.watch.rc is not None:
            return self.watch.rc, ""
        left = len(self.lines) + bool(self.partial)
        if not self.interactive and (left or not self.input_done):
            return 1, (f"the guest stopped before the input ended ({left} line(s) not sent)"
                       if left else "the guest stopped before the input ended")
        return 1, "the guest stopped without the shell's exit status (a poweroff, Ctrl-A x or a crash)"

    def _read_input(self, proc):
        data = os.read(self.in_fd, 65536)
        if self.interactive:
            if not data:
                self.input_done = True
            elif not self._send(proc, data):
                self.input_done = True
            return
        if not data:
            self.input_done = True
            if self.partial:
                self.lines.append(self.partial)
                self.partial = b""
            return
        *complete, self.partial = (self.partial + data).split(b"\n")
        self.lines.extend(l.rstrip(b"\r") for l in complete)

    def _feed(self, proc):
        """The next piped line once the guest prompts for it; 'exit' after
        the last. False if QEMU no longer takes input."""
        if not self.watch.prompt or self.sent_exit:
            return True
        if self.lines:
            line = self.lines.popleft()
        elif self.input_done:
            line, self.sent_exit = b"exit", True
        else:
            return True
        self.watch.sent()
        return self._send(proc, line + b"\n")

    def _send(self, proc, data):
        try:
            _write_all(proc.stdin.fileno(), data)
            return True
        except (BrokenPipeError, OSError):
            return False


def save_files(rdir):
    """The files the guest sent (mo-sendfile) decoded from rdir/console.log
    into rdir/files/, as make boot does; returns the notes to print."""
    rep = console.scan_text((rdir / "console.log").read_text(errors="replace"))
    saved, notes = 0, []
    for xf in rep.files:
        if xf.error or xf.data is None:
            notes.append(f"file {xf.name}: {xf.error or 'not decoded'}")
        if xf.data is None:
            continue
        dest = rdir / "files" / xf.name
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(xf.data)
        saved += 1
    if saved:
        notes.append(f"{saved} file(s) from the guest in {rel(rdir / 'files')}")
    return notes


def _raw_terminal(fd):
    """Put the terminal at FD in raw mode; returns what restores it."""
    import termios
    import tty
    old = termios.tcgetattr(fd)
    tty.setraw(fd)
    return lambda: termios.tcsetattr(fd, termios.TCSADRAIN, old)


def run(spec, timeout=None, stdin=None, stdout=None):
    """Boot SPEC (no suites) with the shell and relay this process's
    terminal or pipe to it; returns the exit status."""
    stdin = stdin or sys.stdin or open(os.devnull, "rb")     # CI may give no stdin at all
    in_fd = stdin.fileno()
    out_fd = (stdout or sys.stdout).fileno()
    interactive = os.isatty(in_fd)
    size = None
    if interactive:
        try:
            size = tuple(os.get_terminal_size(in_fd))
        except OSError:
            size = None
    spec.suites = []
    spec.cmdline_extra = [*spec.cmdline_extra, *shell_words(interactive, size)]
    for p, what in ((spec.kernel, "kernel"), (spec.initrd, "initramfs")):
        if not Path(p).is_file():
            raise LabError(f"{what} {rel(p)} not found", "build it first (make kernel initramfs)")
    if Path(spec.qemu).name == qemu.QEMU:
        qemu.check_qemu_version(spec.qemu)
    accel = qemu.resolve_accel(spec)
    cmd = qemu.qemu_command(spec, accel)
    if timeout is None and not interactive:
        timeout = PIPED_TIMEOUT
    rdir = Path(spec.results_dir or RESULTS / f"shell-{utc_stamp()}")
    rdir.mkdir(parents=True, exist_ok=True)
    (rdir / "qemu.cmd").write_text(shlex.join(cmd) + "\n")
    note = (f"molab: shell on {rel(spec.kernel)} ({spec.smp} cpus, 3 NUMA nodes, "
            f"{accel}); console log {rel(rdir / 'console.log')}"
            + ("; Ctrl-A x stops QEMU" if interactive else
               f"; piped input, each line after a prompt, up to {fmt_secs(timeout)}"))
    print(note, file=sys.stderr, flush=True)
    restore = _raw_terminal(in_fd) if interactive else None
    try:
        with open(rdir / "console.log", "wb") as log, open(rdir / "qemu.stderr", "w") as err:
            rc, why = Session(cmd, in_fd, out_fd, log, interactive, timeout, err).run()
    finally:
        if restore:
            restore()
    for note in save_files(rdir):
        print(f"molab: shell: {note}", file=sys.stderr, flush=True)
    if why:
        print(f"\nmolab: shell: {why}; console log {rel(rdir / 'console.log')}",
              file=sys.stderr, flush=True)
    return rc
