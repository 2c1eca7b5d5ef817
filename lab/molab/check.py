"""'make check': checkpatch on every patch, a W=1 build of what the series touches, and
cross builds of it for arm64 and 32-bit x86."""

import re
import shutil
import subprocess
from pathlib import Path

from . import kconfig, kernel, tree
from .errors import LabError
from .util import BUILD, CONFIGS, OUT, ROOT, git, locked, rel, say


def checkpatch(src, patches):
    """Run checkpatch.pl --strict on each patch; returns a list of problem lines."""
    src = Path(src).resolve()
    script = src / "scripts/checkpatch.pl"
    if not script.exists():
        raise LabError(f"{script} not found", "check the kernel tree (KSRC)")
    problems = []
    for p in patches:
        r = subprocess.run(["perl", str(script), "--strict", "-q", "--color=never", str(p)],
                           cwd=src, capture_output=True, text=True)
        lines = (r.stdout + r.stderr).splitlines()
        hits = [l for l in lines if re.match(r"^(ERROR|WARNING|CHECK):", l)]
        if hits or r.returncode != 0:
            say(f"  checkpatch {p.name}: {len(hits)} problem(s)")
            for l in lines[:60]:
                say(f"    | {l}")
            if not hits:
                hits = [f"checkpatch exited {r.returncode}"]
            problems += [f"{p.name}: {h}" for h in hits]
        else:
            say(f"  checkpatch {p.name}: clean")
    return problems


def changed_lines(src, rev_range="base..series"):
    """{file: set of line numbers added or changed by the series} (new side)."""
    r = subprocess.run(["git", "-C", str(src), "diff", "-U0", "--no-color", rev_range],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise LabError(f"git diff {rev_range} failed in {src}", "make tree first")
    out = {}
    cur = None
    for line in r.stdout.splitlines():
        if line.startswith("+++ "):
            path = line[4:]
            cur = path[2:] if path.startswith("b/") else None
            if cur:
                out.setdefault(cur, set())
        elif line.startswith("@@") and cur:
            m = re.search(r"\+(\d+)(?:,(\d+))?", line)
            if m:
                start, count = int(m.group(1)), int(m.group(2) or 1)
                out[cur].update(range(start, start + count))
    return out


def touched_dirs(files):
    """Directories to build with W=1: each directory holding a touched .c file."""
    dirs = sorted({str(Path(f).parent) for f in files if f.endswith(".c")})
    # tools/ (selftests) is not built by kbuild; it is compiled for the guest.
    return [d for d in dirs if d != "." and not d.startswith(("tools/", "Documentation/"))]


_WARN = re.compile(r"^(?P<file>[^\s:]+):(?P<line>\d+):(?:\d+:)? warning: (?P<msg>.*)$")


def new_warnings(log_text, changed, srcroot):
    """Compiler warnings that point at lines the series added, as (file, line, text)."""
    out = []
    seen = set()
    srcroot = str(srcroot).rstrip("/") + "/"
    for line in log_text.splitlines():
        line = re.sub(r"\x1b\[[0-9;]*[mK]", "", line)
        m = _WARN.match(line)
        if not m:
            continue
        f = m.group("file")
        if f.startswith(srcroot):
            f = f[len(srcroot):]
        while f.startswith("./"):
            f = f[2:]
        n = int(m.group("line"))
        if f in changed and n in changed[f] and (f, n, m.group("msg")) not in seen:
            seen.add((f, n, m.group("msg")))
            out.append((f, n, line.strip()))
    return out


FIXTURE_PATCHES = ROOT / "lab" / "tests" / "fixtures"


def fixtures_apply(src):
    """The breaking patches of lab/tests/fixtures must still apply to the
    series (make test BREAK=...), or the proof that the suites catch them
    silently rots."""
    out = []
    for p in sorted(FIXTURE_PATCHES.glob("*.patch")):
        r = subprocess.run(["git", "-C", str(src), "apply", "--check", str(p)],
                           capture_output=True, text=True)
        if r.returncode != 0:
            last = (r.stderr.strip().splitlines() or ["git apply --check failed"])[-1]
            out.append(f"fixture {p.name} no longer applies to the series: {last}")
    say(f"== fixture patches: {len(out)} of "
        f"{len(list(FIXTURE_PATCHES.glob('*.patch')))} do not apply")
    return out


# Cross builds: (ARCH, CROSS_COMPILE, fragment, directories, options the final
# .config must have: a value, or None for "not set").
CROSS = (
    ("arm64", "aarch64-linux-gnu-", "cross-arm64.config",
     ("mm/", "drivers/migrate_offload/", "drivers/dma/"),
     {"CONFIG_ARM64_MTE": "y", "CONFIG_MIGRATE_OFFLOAD": "y",
      "CONFIG_MIGRATE_OFFLOAD_DCBM": "y", "CONFIG_MIGRATE_OFFLOAD_MTCOPY": "y",
      "CONFIG_SWDMA": "y", "CONFIG_MIGRATE_OFFLOAD_KUNIT_TEST": "y"}),
    ("i386", "", "cross-i386.config", ("mm/", "drivers/dma/"),
     {"CONFIG_X86_32": "y", "CONFIG_HIGHMEM": "y", "CONFIG_MIGRATION": "y",
      "CONFIG_MIGRATE_OFFLOAD": None, "CONFIG_SWDMA": None,
      "CONFIG_MIGRATE_OFFLOAD_DCBM": None, "CONFIG_MIGRATE_OFFLOAD_MTCOPY": None}),
)


def cross_build(src, arch, cross, fragment, dirs, expect, changed):
    """Configure tinyconfig + fragment for ARCH and build DIRS with W=1; returns problems."""
    gcc = f"{cross}gcc"
    if not shutil.which(gcc):
        return [f"{arch}: {gcc} not found (run 'sh lab/setup.sh': it installs the cross compiler)"]
    out = OUT / f"cross-{arch}"
    out.mkdir(parents=True, exist_ok=True)
    log = out / "molab-check.log"
    env = kernel._env()
    mk = ["make", "-C", str(src), f"O={out}", f"ARCH={arch}", f"CC=ccache {gcc}"]
    if cross:
        mk.append(f"CROSS_COMPILE={cross}")
    frag = CONFIGS / fragment
    steps = [(locked([*mk, "-s", "tinyconfig"]), "make tinyconfig"),
             ([str(src / "scripts/kconfig/merge_config.sh"), "-m", "-O", str(out),
               str(out / ".config"), str(frag)], "merge_config.sh"),
             (locked([*mk, "-s", "olddefconfig"]), "make olddefconfig")]
    for i, (cmd, what) in enumerate(steps):
        if kernel._run_logged(cmd, log, {**env, "ARCH": arch}, mode="w" if i == 0 else "a"):
            return [f"{arch}: {what} failed (see {rel(log)})"]
    cfg = {k: v for k, v in kconfig.parse_file(out / ".config").items() if v != "n"}
    problems = [f"{arch}: {opt} is {cfg.get(opt) or 'not set'}, want {want or 'not set'} "
                f"(configs/{fragment})"
                for opt, want in expect.items() if cfg.get(opt) != want]
    for f in changed:
        if f.endswith(".c") and any(f.startswith(d) for d in dirs):
            obj = out / (f[:-2] + ".o")
            if obj.exists():
                obj.unlink()
    rc = kernel._run_logged(locked([*mk, "W=1", f"-j{kernel.nproc()}", *dirs]), log, env)
    text = Path(log).read_text(errors="replace")
    if rc != 0:
        cause, excerpt = kernel.build_failure(log)
        for l in excerpt:
            say(f"    | {l}")
        problems.append(f"{arch}: build of {' '.join(dirs)} failed: {cause}")
    warns = new_warnings(text, changed, src)
    for f, n, l in warns:
        say(f"    | {l}")
    problems += [f"{arch}: W=1 warning at {f}:{n}" for f, n, _ in warns]
    say(f"  {arch}: {'clean' if not problems else f'{len(problems)} problem(s)'} "
        f"({' '.join(dirs)}; log {rel(log)})")
    return problems


def run_check(ksrc=None, flavour="debug"):
    src = tree.check_ksrc(ksrc) if ksrc else tree.DEFAULT_TREE
    if not (src / ".git").exists():
        raise LabError(f"{rel(src)} is not a git tree", "run 'make tree' first")
    patches = tree.series_patches()
    problems = []
    say(f"== checkpatch ({len(patches)} patch(es) in series/series)")
    if patches:
        problems += checkpatch(src, patches)
    else:
        say("  no patches listed in series/series")
    problems += fixtures_apply(src)
    changed = changed_lines(src)
    dirs = touched_dirs(changed)
    say(f"== W=1 build of {', '.join(d + '/' for d in dirs) or 'nothing (no .c files touched)'}")
    if dirs:
        out = kernel.out_dir("patched", flavour)
        if not (out / ".config").exists() or kernel.recorded_flavour(out) not in ("", flavour):
            kernel.configure("patched", flavour, src, out)
        # Warnings are printed only when a file is compiled: drop the objects
        # of the touched directories so they are compiled (with W=1) every
        # time, those that #include a touched file too (kernel/sched's
        # build_policy.c). The debug kernels are built with W=1 as well, so
        # make test reuses these objects.
        for d in dirs:
            for obj in (out / d).glob("*.o"):
                obj.unlink()
        log = out / "molab-check.log"
        env = kernel._env()
        cmd = locked(["make", "-C", str(src), f"O={out}", "CC=ccache gcc", "W=1",
                      f"-j{kernel.nproc()}", *[d + "/" for d in dirs]])
        rc = kernel._run_logged(cmd, log, env, mode="w")
        text = Path(log).read_text(errors="replace")
        if rc != 0:
            cause, excerpt = kernel.build_failure(log)
            for l in excerpt:
                say(f"    | {l}")
            problems.append(f"W=1 build failed: {cause}")
        warns = new_warnings(text, changed, src)
        for f, n, l in warns:
            say(f"    | {l}")
        problems += [f"W=1 warning at {f}:{n}" for f, n, _ in warns]
        if not warns and rc == 0:
            say(f"  no warnings on lines the series touches (log {rel(log)})")
    say("== cross builds: " + ", ".join(f"{c[0]} ({' '.join(c[3])})" for c in CROSS))
    for arch, cross, fragment, cdirs, expect in CROSS:
        problems += cross_build(src, arch, cross, fragment, cdirs, expect, changed)
    if problems:
        say(f"check: {len(problems)} problem(s)")
        for p in problems[:30]:
            say(f"  {p}")
        return False
    say("check: clean")
    return True


def build_each(ksrc=None, flavour="perf"):
    """Build the kernel (bzImage + modules) at every patch of the series, in a
    worktree of its own (build/each) with its own output directory, so that
    a patch that only builds with a later one is found. Returns True if all
    built."""
    src = tree.check_ksrc(ksrc) if ksrc else tree.DEFAULT_TREE
    if not (src / ".git").exists():
        raise LabError(f"{rel(src)} is not a git tree", "run 'make tree' first")
    commits = git(src, "rev-list", "--reverse", "base..series").split()
    if not commits:
        raise LabError("no commits in base..series", "run 'make tree' first")
    wt = BUILD / "each"
    if not (wt / ".git").exists():
        git(src, "worktree", "add", "--detach", str(wt), "base")
    out = BUILD / "out" / f"each-{flavour}"
    failed = []
    for i, c in enumerate(commits, 1):
        subject = git(src, "log", "-1", "--format=%s", c)
        git(wt, "checkout", "-q", "--detach", c)
        # before the patch that adds an engine, its option cannot be set
        kernel.configure("patched", flavour, wt, out, not_yet_defined_ok=True)
        log = out / "molab-build.log"
        cmd = locked(kernel._make(wt, out, "bzImage", "modules",
                                  extra=[f"-j{kernel.nproc()}"]))
        rc = kernel._run_logged(cmd, log, kernel._env(), mode="w")
        if rc != 0:
            cause, excerpt = kernel.build_failure(log)
            for l in excerpt:
                say(f"    | {l}")
            failed.append(f"{i:02d} {subject}: {cause}")
            say(f"  {i:02d}/{len(commits)} FAIL  {subject}")
        else:
            say(f"  {i:02d}/{len(commits)} builds  {subject}")
    if failed:
        say(f"check --each: {len(failed)} patch(es) do not build on their own")
        for f in failed:
            say(f"  {f}")
        return False
    say(f"check --each: all {len(commits)} patches build on their own ({flavour} config)")
    return True
