"""Configuring, building and installing a kernel into build/out/<variant>-<flavour>."""

import json
import os
import re
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import kconfig, tree
from .errors import LabError
from .util import (CCACHE, CONFIGS, OUT, KBUILD_LOCK, FLAVOURS, VARIANTS, git, lock_is_free,
                   locked, nproc, rel, run, say, warn)

INFO = "molab-build.json"


@dataclass
class KernelBuild:
    """A kernel build directory and what the lab knows about it."""
    variant: str
    flavour: str
    src: Path
    out: Path
    release: str = ""
    base: str = ""
    commit: str = ""
    config_mismatches: list = field(default_factory=list)

    @property
    def bzimage(self):
        return self.out / "arch/x86/boot/bzImage"

    @property
    def modroot(self):
        return self.out / "modroot"

    @property
    def hdr(self):
        return self.out / "hdr"

    @property
    def initramfs(self):
        return self.out / "initramfs.cpio.gz"

    @property
    def name(self):
        return f"{self.variant}-{self.flavour}"

    def config(self):
        cfg = self.out / ".config"
        return kconfig.parse_file(cfg) if cfg.exists() else {}

    def save(self):
        data = {k: (str(v) if isinstance(v, Path) else v) for k, v in self.__dict__.items()}
        (self.out / INFO).write_text(json.dumps(data, indent=2) + "\n")

    @classmethod
    def load(cls, out, variant=None, flavour=None, src=None):
        """Describe an existing out dir (its recorded info, else what it shows)."""
        out = Path(out).resolve()
        info = {}
        try:
            info = json.loads((out / INFO).read_text())
        except (OSError, ValueError):
            pass
        name = out.name
        v, _, f = name.partition("-")
        kb = cls(variant=variant or info.get("variant") or (v if v in VARIANTS else "custom"),
                 flavour=flavour or info.get("flavour") or (f if f in FLAVOURS else "custom"),
                 src=Path(src or info.get("src") or _source_of(out) or tree.DEFAULT_TREE),
                 out=out, release=info.get("release", ""), base=info.get("base", ""),
                 commit=info.get("commit", ""),
                 config_mismatches=info.get("config_mismatches", []))
        if not kb.release and (out / "include/config/kernel.release").exists():
            kb.release = (out / "include/config/kernel.release").read_text().strip()
        return kb


def _source_of(out):
    link = Path(out) / "source"
    if link.is_symlink():
        return os.path.realpath(link)
    return None


# builtin differs from debug in a few options (the engines and swdma =y):
# built in debug's directory, kbuild recompiles only the files that read
# them, a minute or two instead of a cold build. make test boots debug,
# then builtin; the directory holds the last one built (molab-build.json
# says which, and the lab refuses to boot the other from it).
SHARED_OUT = {"builtin": "debug"}
# make check builds the series' directories with W=1 in debug's directory:
# the debug kernels are built with W=1 too, so make test reuses its objects.
W1_FLAVOURS = ("debug", "builtin")


def out_dir(variant, flavour):
    return OUT / f"{variant}-{SHARED_OUT.get(flavour, flavour)}"


def recorded_flavour(out):
    """The flavour molab-build.json says ``out`` holds ('' if unknown)."""
    try:
        return json.loads((Path(out) / INFO).read_text()).get("flavour", "")
    except (OSError, ValueError):
        return ""


def fragments(variant, flavour):
    # builtin is the debug flavour with the series' modules built in;
    # kasan the debug flavour with KASAN (kasan.config).
    like = "debug" if flavour in ("builtin", "kasan") else flavour
    frags = [CONFIGS / "base.config", CONFIGS / f"{like}.config"]
    if flavour == "kasan":
        frags.append(CONFIGS / "kasan.config")
    if variant in ("patched", "broken"):
        # Options that only exist with the series: all flavours, then this one.
        for extra in ("patched.config", f"patched-{like}.config", f"patched-{flavour}.config"):
            if (CONFIGS / extra).exists() and CONFIGS / extra not in frags:
                frags.append(CONFIGS / extra)
    elif flavour == "builtin":
        raise LabError("the builtin flavour needs the series", "use --variant patched")
    for f in frags:
        if not f.exists():
            raise LabError(f"config fragment {rel(f)} is missing", "restore it from git")
    return frags


def _make(src, out, *targets, extra=()):
    env_cc = ["CC=ccache gcc"]
    return ["make", "-C", str(src), f"O={out}", *env_cc, *extra, *targets]


def _env():
    CCACHE.mkdir(parents=True, exist_ok=True)
    return {"CCACHE_DIR": str(CCACHE), "KBUILD_BUILD_USER": "molab",
            "KBUILD_BUILD_HOST": "molab"}


def _wait_note():
    if not lock_is_free():
        say(f"  waiting for {KBUILD_LOCK} (another kernel build is running)")


def undefined_symbols(src, names):
    """The CONFIG_ names none of whose Kconfig files in the tree at ``src``
    defines (a patch that adds them is not applied there yet)."""
    out = set()
    for n in names:
        sym = n[len("CONFIG_"):] if n.startswith("CONFIG_") else n
        r = subprocess.run(["git", "-C", str(src), "grep", "-q", "-E",
                            rf"^[[:space:]]*(menu)?config[[:space:]]+{sym}[[:space:]]*$", "--",
                            "*Kconfig*"], stdin=subprocess.DEVNULL)
        if r.returncode == 1:
            out.add(n)
    return out


def configure(variant, flavour, src, out=None, not_yet_defined_ok=False):
    """tinyconfig + fragments + olddefconfig; returns the KernelBuild.

    An option of a fragment that the final .config does not have as asked
    (a dependency missing, a renamed symbol) stops the build: a debug kernel
    that silently lost KUNIT, PROVE_LOCKING or KMEMLEAK would test less than
    it claims. With ``not_yet_defined_ok`` (building the series patch by
    patch), an option no Kconfig of the tree defines yet may be absent.
    """
    src = Path(src)
    out = Path(out or out_dir(variant, flavour))
    out.mkdir(parents=True, exist_ok=True)
    # A directory shared by two flavours (SHARED_OUT) that held the other
    # one: its record and initramfs describe that one until this flavour
    # is built and installed (record()); without them the lab refuses to
    # boot from it rather than mix the two.
    if recorded_flavour(out) != flavour:
        for stale in (out / INFO, out / "initramfs.cpio.gz"):
            stale.unlink(missing_ok=True)
    frags = fragments(variant, flavour)
    env = _env()
    say(f"  configure {rel(out)} (tinyconfig + {' + '.join(f.name for f in frags)})")
    _wait_note()
    log = out / "molab-config.log"
    with open(log, "w") as lf:
        def step(cmd, what):
            lf.write(f"$ {' '.join(cmd)}\n")
            lf.flush()
            rc = subprocess.run(cmd, stdout=lf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env={**os.environ, **env}).returncode
            if rc != 0:
                tail = _tail(log, 5)
                raise LabError(f"{what} failed (exit {rc}): {tail[-1] if tail else ''}",
                               f"see {rel(log)}")
        step(locked(_make(src, out, "tinyconfig", extra=["-s"])), "make tinyconfig")
        step([str(src / "scripts/kconfig/merge_config.sh"), "-m", "-O", str(out),
              str(out / ".config"), *map(str, frags)], "merge_config.sh")
        step(locked(_make(src, out, "olddefconfig", extra=["-s"])), "make olddefconfig")
    bad = kconfig.verify_files(frags, out / ".config")
    if bad and not_yet_defined_ok:
        names = {b.split(":", 1)[0] for b in bad}
        later = undefined_symbols(src, names)
        bad = [b for b in bad if b.split(":", 1)[0] not in later]
    if bad:
        raise LabError(f"config {rel(out)}: {len(bad)} option(s) not as the fragments ask: "
                       f"{'; '.join(bad[:3])}",
                       "fix the fragment in configs/ (a missing dependency or a renamed "
                       "option)")
    kb = KernelBuild(variant=variant, flavour=flavour, src=src.resolve(), out=out.resolve(),
                     config_mismatches=bad)
    return kb


def _tail(path, n):
    try:
        lines = Path(path).read_text(errors="replace").splitlines()
    except OSError:
        return []
    return [l for l in lines if l.strip()][-n:]


_ERR = re.compile(r"(\berror:|\bError \d+|undefined reference|\bfatal error\b|No rule to make target)")


def build_failure(log):
    """(cause, excerpt lines) for a failed kernel build log."""
    try:
        lines = Path(log).read_text(errors="replace").splitlines()
    except OSError:
        return "kernel build failed", []
    lines = [re.sub(r"\x1b\[[0-9;]*[mK]", "", l) for l in lines]
    # W=1 runs kernel-doc, whose "error: Cannot parse ..." fails nothing.
    lines = [l for l in lines if "error: Cannot parse" not in l]
    first = None
    for i, l in enumerate(lines):
        if re.search(r"\berror:|undefined reference|fatal error", l):
            first = i
            break
    if first is None:
        for i, l in enumerate(lines):
            if _ERR.search(l):
                first = i
                break
    if first is None:
        return "kernel build failed", lines[-20:]
    start = max(0, first - 5)
    excerpt = lines[start:start + 20]
    return lines[first].strip(), excerpt


def _run_logged(cmd, log, env, mode="a"):
    with open(log, mode) as lf:
        lf.write(f"$ {' '.join(map(str, cmd))}\n")
        lf.flush()
        return subprocess.run([str(c) for c in cmd], stdout=lf, stderr=subprocess.STDOUT,
                              stdin=subprocess.DEVNULL, env={**os.environ, **env}).returncode


def build(kb, jobs=None):
    """Build bzImage and modules, install modules and headers, record the release."""
    env = _env()
    jobs = jobs or nproc()
    log = kb.out / "molab-build.log"
    say(f"  build {rel(kb.out)} ({kb.flavour}: make -j{jobs} bzImage modules; log {rel(log)})")
    _wait_note()
    t0 = time.monotonic()
    w1 = ["W=1"] if kb.flavour in W1_FLAVOURS else []
    rc = _run_logged(locked(_make(kb.src, kb.out, "bzImage", "modules", extra=[f"-j{jobs}", *w1])),
                     log, env, mode="w")
    if rc != 0:
        cause, excerpt = build_failure(log)
        for l in excerpt:
            say(f"    | {l}")
        raise LabError(f"kernel build of {kb.name} failed: {cause}", f"see {rel(log)}")
    say(f"  built in {time.monotonic() - t0:.0f}s")
    install(kb, env=env, log=log)
    return kb


def install(kb, env=None, log=None):
    """modules_install into <out>/modroot and headers_install into <out>/hdr."""
    env = env or _env()
    log = log or (kb.out / "molab-build.log")
    import shutil
    if kb.modroot.exists():
        shutil.rmtree(kb.modroot)
    kb.modroot.mkdir(parents=True)
    cfg = kb.config()
    if cfg.get("CONFIG_MODULES") == "y":
        rc = _run_logged(locked(_make(kb.src, kb.out, "modules_install", extra=[
            f"INSTALL_MOD_PATH={kb.modroot}", "INSTALL_MOD_STRIP=1"])), log, env)
        if rc != 0:
            raise LabError("make modules_install failed", f"see {rel(log)}")
    rc = _run_logged(locked(_make(kb.src, kb.out, "headers_install", extra=[
        f"INSTALL_HDR_PATH={kb.hdr}"])), log, env)
    if rc != 0:
        raise LabError("make headers_install failed", f"see {rel(log)}")
    record(kb)


def record(kb):
    relfile = kb.out / "include/config/kernel.release"
    if relfile.exists():
        kb.release = relfile.read_text().strip()
    else:
        rel_out = run(["make", "-s", "-C", kb.src, f"O={kb.out}", "kernelrelease"],
                      capture=True, what="make kernelrelease").strip().splitlines()
        kb.release = rel_out[-1] if rel_out else ""
    kb.base = tree.base_version(kb.src)
    if (kb.src / ".git").exists():
        kb.commit = git(kb.src, "rev-parse", "--short=12", "HEAD", check=False)
    kb.save()
    say(f"  kernel {kb.release} (base {kb.base or '?'}, {kb.commit or 'no git'}) in {rel(kb.out)}")


def ensure(variant, flavour, ksrc=None, do_build=True, out=None):
    """Configure and (optionally) build one kernel; returns its KernelBuild."""
    if variant not in VARIANTS:
        raise LabError(f"unknown variant '{variant}'", f"use one of {', '.join(VARIANTS)}")
    if flavour not in FLAVOURS:
        raise LabError(f"unknown flavour '{flavour}'", f"use one of {', '.join(FLAVOURS)}")
    src = tree.source_for(variant, ksrc)
    kb = configure(variant, flavour, src, out)
    if do_build:
        build(kb)
    return kb
