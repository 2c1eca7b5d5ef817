"""Paths and process helpers shared by the lab's steps."""

import fcntl
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

from .errors import LabError

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "build"
DEFAULT_TREE = BUILD / "linux"
VANILLA_TREE = BUILD / "vanilla"
BROKEN_TREE = BUILD / "broken"     # the series plus a fixture patch (make test BREAK=)
OUT = BUILD / "out"
RESULTS = BUILD / "results"
CCACHE = BUILD / "ccache"
CONFIGS = ROOT / "configs"
SERIES = ROOT / "series"
GUEST = ROOT / "guest"
KBUILD_LOCK = Path("/tmp/mo-kbuild.lock")

VARIANTS = ("patched", "vanilla", "broken")
FLAVOURS = ("debug", "perf", "builtin", "kasan")
# builtin: the debug kernel with the engines and swdma built in, not modules.
DEBUG_FLAVOURS = ("debug", "builtin", "kasan")


def say(msg=""):
    """Print a progress line (flushed, so it interleaves well with children)."""
    print(msg, flush=True)


def warn(msg):
    print(f"molab: warning: {msg}", file=sys.stderr, flush=True)


def rel(path):
    """A path shown relative to the repository root when it is inside it."""
    p = Path(path)
    try:
        return str(p.resolve().relative_to(ROOT))
    except ValueError:
        return str(p)


def run(cmd, *, cwd=None, env=None, check=True, capture=False, what=None,
        hint="see the output above", stdin=subprocess.DEVNULL):
    """Run a command; on failure raise LabError naming ``what``.

    With ``capture`` the combined stdout+stderr is returned as text.
    """
    full_env = None
    if env:
        full_env = dict(os.environ)
        full_env.update(env)
    try:
        res = subprocess.run(
            [str(c) for c in cmd], cwd=cwd, env=full_env, stdin=stdin,
            stdout=subprocess.PIPE if capture else None,
            stderr=subprocess.STDOUT if capture else None,
            text=True if capture else None,
            errors="replace" if capture else None)
    except FileNotFoundError as e:
        raise LabError(f"cannot run {cmd[0]}: {e.strerror}",
                       "install it with 'sudo sh lab/setup.sh'") from e
    if check and res.returncode != 0:
        name = what or " ".join(shlex.quote(str(c)) for c in cmd[:3])
        if capture:
            tail = [l for l in (res.stdout or "").splitlines() if l.strip()][-1:]
            detail = f": {tail[0].strip()}" if tail else ""
        else:
            detail = ""
        raise LabError(f"{name} failed (exit {res.returncode}){detail}", hint)
    return res.stdout if capture else res.returncode


def git(tree, *args, check=True, capture=True, what=None, hint="see the output above"):
    out = run(["git", "-C", tree, *args], check=check, capture=capture,
              what=what or f"git {args[0]}", hint=hint)
    return out.strip() if isinstance(out, str) else out


def lock_is_free(path=KBUILD_LOCK):
    """True if nobody holds the kernel build lock right now."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    except OSError:
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        fcntl.flock(fd, fcntl.LOCK_UN)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def locked(cmd):
    """Wrap a kernel build command in the machine-wide build lock."""
    return ["flock", str(KBUILD_LOCK), *[str(c) for c in cmd]]


def utc_stamp():
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())


def nproc():
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def read_makefile_version(tree):
    """(VERSION, PATCHLEVEL, SUBLEVEL) from a kernel tree's top Makefile, or None."""
    mk = Path(tree) / "Makefile"
    vals = {}
    try:
        with open(mk, errors="replace") as f:
            for _ in range(20):
                line = f.readline()
                if not line:
                    break
                if "=" in line:
                    k, _, v = line.partition("=")
                    vals[k.strip()] = v.strip()
    except OSError:
        return None
    try:
        return int(vals["VERSION"]), int(vals["PATCHLEVEL"]), int(vals.get("SUBLEVEL") or 0)
    except (KeyError, ValueError):
        return None


class Timer:
    """Collects named step durations for the final report."""

    def __init__(self):
        self.steps = []

    def step(self, name):
        timer = self

        class _Ctx:
            def __enter__(self):
                self.t0 = time.monotonic()
                return self

            def __exit__(self, *exc):
                timer.steps.append((name, time.monotonic() - self.t0))
                return False
        return _Ctx()

    def report(self):
        return "  ".join(f"{n} {fmt_secs(s)}" for n, s in self.steps)


def fmt_secs(s):
    s = float(s)
    if s < 60:
        return f"{s:.1f}s"
    m, sec = divmod(int(round(s)), 60)
    return f"{m}m{sec:02d}s"
