"""guest/init.sh's shell (mo.shell=1, make shell) under busybox sh on the
host: setsid, cttyhack and stty are stand-ins, the shell is busybox's."""

import os
import re
import shutil
import signal
import subprocess

import pytest

from lab.molab import shell
from lab.molab.util import ROOT

INIT = ROOT / "guest" / "init.sh"
BUSYBOX = shutil.which("busybox")
pytestmark = pytest.mark.skipif(not BUSYBOX, reason="busybox not installed")


def function(name):
    m = re.search(rf"^{name}\(\) {{.*?^}}\n", INIT.read_text(), re.S | re.M)
    assert m, name
    return m.group(0)


def run_sh(script, commands="", env=None, timeout=20):
    """busybox sh -c SCRIPT in a session of its own, killed whole on a
    timeout (a shell left behind would hold on to its terminal)."""
    p = subprocess.Popen([BUSYBOX, "sh", "-c", script], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                         start_new_session=True)
    try:
        out, err = p.communicate(commands, timeout=timeout)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    return subprocess.CompletedProcess(p.args, p.returncode, out, err)


# Busybox runs its own applets before anything on PATH: the commands that
# would take the host's console (setsid, cttyhack) or its power (poweroff)
# are replaced in the text itself, and the test checks they were there.
STAND_INS = """
fake_setsid() { echo "setsid $*" >> "$CALLS"; "$@"; }
fake_cttyhack() { echo "cttyhack $*" >> "$CALLS"; "$@" -i; }   # -i: a console's prompts
fake_stty() { echo "stty $*" >> "$CALLS"; }
"""


def stand_ins(text, *pairs):
    for old, new in pairs:
        assert old in text, old
        text = text.replace(old, new)
    return text


@pytest.fixture
def guest(tmp_path):
    calls = tmp_path / "calls"
    out = tmp_path / "mo-out"

    def run(cmdline, commands):
        (tmp_path / "cmdline").write_text(cmdline + "\n")
        body = stand_ins(function("mo_shell"), ("/tmp/mo-out", str(out)),
                         ("\tsetsid cttyhack sh\n", "\tfake_setsid fake_cttyhack sh\n"),
                         (") stty cols", ") fake_stty cols"))
        r = run_sh(function("param") + STAND_INS + body + "mo_shell\n", commands,
                   env={"PATH": f"{os.path.dirname(BUSYBOX)}:/usr/bin:/bin",
                        "CALLS": str(calls), "HOME": str(tmp_path),
                        "MO_CMDLINE": str(tmp_path / "cmdline")})
        r.calls = calls.read_text().splitlines() if calls.exists() else []
        if calls.exists():
            calls.unlink()
        return r
    run.out = out
    return run


def exit_status(r):
    """The status the shell's end reported (after its last prompt)."""
    m = re.search(r"@@MO-SHELL-EXIT rc=(\d+)\n\Z", r.stdout)
    assert m, r.stdout + r.stderr
    return int(m.group(1))


def test_the_shell_has_the_lab_on_path_and_reports_its_status(guest):
    r = guest("console=ttyS0 mo.run= mo.shell=1",
              'echo "PATH=$PATH"\necho "OUT=$MO_OUTDIR"\nfalse\n')
    lines = r.stdout.splitlines()
    banner = [l for l in lines if l.startswith("molab shell: ")]
    assert len(banner) == 1
    assert "/opt/mo/suites" in banner[0] and "exit or Ctrl-D powers off" in banner[0]
    path = next(l for l in lines if "PATH=" in l).split("PATH=")[1].split(":")
    assert path[:3] == ["/opt/mo", "/opt/mo/suites", "/opt/mo/selftests"]
    assert f"OUT={guest.out}/shell" in r.stdout and (guest.out / "shell").is_dir()
    assert r.calls == ["setsid fake_cttyhack sh", "cttyhack sh"]   # no stty: no size given
    assert exit_status(r) == 1
    # the prompts busybox printed (PS1, here after the banner) are what the
    # lab waits for, and the banner is none
    assert len(shell.PROMPT.findall(r.stdout)) == 4 and not shell.PROMPT.search(banner[0])
    assert exit_status(guest("mo.shell=1", "exit 7\n")) == 7


def test_a_continuation_prompt_is_seen_too(guest):
    r = guest("mo.shell=1", "if true\nthen echo yes\nfi\n")
    assert "mo-guest:> mo-guest:> yes\n" in r.stdout
    assert shell.PROMPT.search("mo-guest:> ")
    assert exit_status(r) == 0


@pytest.mark.parametrize("tty,stty", [("132x40", ["stty cols 132 rows 40"]),
                                      ("x", []), ("132", []), ("", [])])
def test_the_terminal_size_from_the_command_line(guest, tty, stty):
    r = guest(f"mo.shell=1 mo.tty={tty}" if tty else "mo.shell=1", "true\n")
    assert [c for c in r.calls if c.startswith("stty")] == stty
    assert exit_status(r) == 0


@pytest.mark.parametrize("cmdline,want", [
    ("mo.shell=1", ["SHELL", "POWEROFF"]),                # make shell: no suites at all
    ("mo.run= mo.shell=1", ["SHELL", "POWEROFF"]),
    ("mo.run=poison mo.shell=1", ["SUITES poison"]),      # the suites first, then the shell
    ("mo.run=poison", ["SUITES poison"]),
])
def test_init_offers_the_shell_instead_of_the_suites(tmp_path, cmdline, want):
    text = INIT.read_text()
    start = text.index("MO_RUN=$(param 'mo\\.run')")
    end = text.index("state start\n")
    segment = stand_ins(text[start:end], ("\tmo_shell\n\tsync\n\tpoweroff -f\n",
                                          "\techo SHELL\n\techo POWEROFF\n\texit 0\n"))
    script = function("param") + segment + 'echo "SUITES $MO_RUN"\n'
    (tmp_path / "cmdline").write_text(cmdline + "\n")
    r = run_sh(script, env={"MO_CMDLINE": str(tmp_path / "cmdline"),
                            "PATH": f"{os.path.dirname(BUSYBOX)}:/usr/bin:/bin"})
    assert [l for l in r.stdout.splitlines() if not l.startswith("molab guest:")] == want, \
        r.stdout + r.stderr
    # after the suites, mo.shell=1 still gives the shell before powering off
    assert re.search(r'echo "@@MO-DONE"\nif \[ "\$MO_SHELL" = 1 \]; then\n\tmo_shell\nfi\n'
                     r'sync\npoweroff -f\n$', text)
