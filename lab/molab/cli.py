"""Command line of the lab: python3 -m lab.molab <command> [options]."""

import argparse
import os
import subprocess
import sys
from pathlib import Path

from . import check, initramfs, kernel, qemu, tree
from .errors import LabError
from .util import DEBUG_FLAVOURS, FLAVOURS, ROOT, VARIANTS, Timer, fmt_secs, rel, say, warn

EXIT_OK, EXIT_FAIL, EXIT_ERROR = 0, 1, 2
# What make test must run: a suite that is missing from the initramfs, or a
# KUnit suite absent from the boot log, fails the run instead of shrinking it.
# Two scopes (docs/testing.md): ci, make test on every submission, proves
# every kept code path once; full, make test-full, adds FULL_ONLY_SUITES and
# the rest of each suite (mo.scope=full: every engine per reason, longer
# storms, larger buffers).
SCOPES = ("ci", "full")
# In the order they run; "full": only in the full scope. The upstream
# migration selftest without an engine (migration_batched runs it with the
# batch path, in CI: the only suite that migrates hugetlb folios), the
# upstream mm selftests as a second opinion, and the real-machine runner
# (make host-bench) rehearsed in the guest. dcbm_late runs after the
# suites that need memory whole: the destinations of its lost DMA pairs
# stay allocated for good (the device may still write them), and one in
# a movable block memory_offline offlines, or in the CMA area reasons
# allocates, would hold that block or area.
SUITE_ORDER = (("kunit", "ci"), ("migration", "full"), ("dma_faults", "ci"),
               ("dcbm_chans", "ci"), ("engine_cycles", "ci"),
               ("engine_integrity", "ci"), ("engine_params", "ci"), ("kunit_under_load", "ci"),
               ("memory_offline", "ci"), ("migrate_offload", "ci"), ("migration_batched", "ci"),
               ("mtcopy_cpus", "ci"), ("poison", "ci"), ("tiering", "ci"), ("batch_trace", "ci"),
               ("reasons", "ci"), ("folios", "ci"), ("host_kit", "full"), ("auto", "ci"),
               ("dcbm_late", "ci"), ("mm_selftests", "full"))
TEST_SUITES = tuple(s for s, scope in SUITE_ORDER if scope == "ci")
FULL_ONLY_SUITES = tuple(s for s, scope in SUITE_ORDER if scope == "full")
KUNIT_SUITES = ("migrate_offload_copy", "migrate_offload_registry", "migrate_offload_auto")
# tools/testing/selftests/mm/migration.c runs its tests only with 3+ CPUs
# (one migrating thread, accessors on the others); with 2 it skips them all.
TEST_SMP = 3
# Debug boots get a movable zone (40% of RAM, spread over the nodes: the top
# block of a node holds its node data, so 2 of its blocks must be movable):
# the memory_offline suite offlines its blocks, which only a zone of
# movable pages guarantees to be possible. And a CMA area of 256 MiB in
# node 2 (physical 2G-3G), placed at its top (memblock allocates top down),
# so inside node 2's movable zone and more than half of it: movable
# allocations on node 2 then take CMA pages first, and the reasons suite
# fills the area with user pages and allocates it (reason contig_range).
# init_on_free=1: a freed frame is cleared, so a copy that was skipped shows
# zeros instead of the data a frame held before (the readers of tiering and
# reasons never change their pages, and a page moved twice can land on its
# old frame).
DEBUG_CMDLINE = ("movablecore=40%", "cma=256M@2G-3G", "init_on_free=1")
# What the builtin kernel runs: KUnit (whose engine listing then holds the
# built-in engines too), the integrity matrix of every engine, with
# swdma's channels set at boot, and mtcopy_cpus with CPU 2 isolated (the
# main boot runs it without isolation: each boot checks its own case).
BUILTIN_SUITES = ("kunit", "engine_integrity", "mtcopy_cpus")
# dcbm's own KUnit suite runs at boot only where dcbm is built in (as a
# module it would run at every load, in the middle of the suites).
BUILTIN_KUNIT_SUITES = (*KUNIT_SUITES, "dcbm_plan")
BUILTIN_CMDLINE = ["swdma.nr_chans=4", "isolcpus=2"]
# In the ci scope the builtin boot's engine_integrity runs the configurations
# whose code is built in there (cpu and auto are the core's, and the main
# boot ran every configuration); the full scope runs them all.
BUILTIN_CI_ARGS = "MO_INTEGRITY_CONFS=mtcopy-2,dcbm-4"


class Parser(argparse.ArgumentParser):
    """argparse that reports usage errors as one LabError line."""

    def error(self, message):
        raise LabError(message, f"see 'python3 -m lab.molab {self._cmd_hint()}--help'")

    def _cmd_hint(self):
        parts = self.prog.split()
        return f"{parts[-1]} " if len(parts) > 3 else ""


def _ksrc_default():
    return os.environ.get("KSRC") or None


def _add_kernel_opts(p, variant=True):
    if variant:
        p.add_argument("--variant", choices=VARIANTS, default="patched",
                       help="patched (build/linux) or vanilla (build/vanilla at tag base)")
    p.add_argument("--flavour", choices=FLAVOURS, default=os.environ.get("FLAVOUR") or "debug",
                   help="debug (lockdep, kmemleak, KUnit) or perf (-O2, no debug)")
    p.add_argument("--ksrc", default=_ksrc_default(),
                   help="use this kernel tree instead of build/linux (env KSRC)")


def _add_boot_opts(p):
    p.add_argument("--out", help="kernel build dir to boot (default build/out/<variant>-<flavour>)")
    p.add_argument("--kernel", help="bzImage to boot (overrides --out)")
    p.add_argument("--initrd", help="initramfs to boot (overrides --out)")
    p.add_argument("--accel", choices=qemu.ACCELS, default=os.environ.get("ACCEL") or "single",
                   help="single/multi-threaded TCG, kvm (probed first) or auto")
    p.add_argument("--smp", type=int, default=os.environ.get("SMP") or None,
                   help="guest CPUs, alternating between node0 and node1 "
                   "(default 2; 'test' uses 3: the upstream migration selftest skips "
                   "everything with fewer than 3 CPUs)")
    p.add_argument("--timeout", type=float, default=4800, help="kill the guest after this many seconds (make test's debug boot ran 60+ min on 23 patches)")
    p.add_argument("--idle-timeout", type=float, default=300,
                   help="kill the guest after this many seconds without console output")
    p.add_argument("--append", action="append", default=[], help="extra kernel command line words")
    p.add_argument("--prealloc", action="store_true",
                   help="back all guest RAM with host memory before booting (bench does)")
    p.add_argument("-v", "--verbose", action="store_true", help="echo the whole console")
    p.add_argument("--label", help="results dir name prefix")


def build_parser():
    p = Parser(prog="python3 -m lab.molab",
               description="The migrate-offload lab: build, boot and test the kernel series.")
    sub = p.add_subparsers(dest="cmd", metavar="<command>", parser_class=Parser)

    s = sub.add_parser("tree", help="create/check the kernel git tree (build/linux)")
    s.add_argument("--ksrc", default=_ksrc_default(), help="use an existing 6.12 tree")
    s.add_argument("--reset", action="store_true",
                   help="re-apply series/ onto base (refused if the tree is dirty)")

    s = sub.add_parser("export", help="write base..series of the tree into series/")
    s.add_argument("--ksrc", default=_ksrc_default(), help="export from this tree")
    s.add_argument("--base-commit", default=os.environ.get("BASE_COMMIT") or None,
                   help="the upstream commit the series applies to, for the cover letter's "
                        "base-commit: (default: the tree's base, said to be the lab's import; "
                        "env BASE_COMMIT)")

    s = sub.add_parser("kernel", help="configure and build one kernel")
    _add_kernel_opts(s)
    s.add_argument("--config-only", action="store_true", help="configure, do not build")
    s.add_argument("--out", help="build dir (default build/out/<variant>-<flavour>); give "
                                 "another tree (--ksrc) its own, or both rebuild everything")

    s = sub.add_parser("initramfs", help="build <out>/initramfs.cpio.gz")
    _add_kernel_opts(s)
    s.add_argument("--out", help="kernel build dir (default build/out/<variant>-<flavour>)")
    s.add_argument("--no-guest", action="store_true", help="do not run make -C guest")

    for name, helptext in (("boot", "boot a kernel and run suites (--suites)"),
                           ("run", "boot a kernel and run one suite with arguments")):
        s = sub.add_parser(name, help=helptext)
        _add_kernel_opts(s)
        _add_boot_opts(s)
        if name == "boot":
            s.add_argument("--suites", default=os.environ.get("SUITES") or "",
                           help="comma-separated suites (kunit, migration, guest suites)")
            s.add_argument("--args", default="", help="mo.args passed to every suite")
        else:
            s.add_argument("suite", help="suite to run")
            s.add_argument("suite_args", nargs=argparse.REMAINDER, help="its arguments")

    s = sub.add_parser("shell", help="boot the kernel built last (as boot does) into a shell "
                                     "on this terminal; piped commands run one per prompt")
    _add_kernel_opts(s)
    s.add_argument("--accel", choices=qemu.ACCELS, default=os.environ.get("ACCEL") or "single",
                   help="single/multi-threaded TCG, kvm (probed first) or auto")
    s.add_argument("--smp", type=int, default=os.environ.get("SMP") or None,
                   help=f"guest CPUs (default {TEST_SMP}, as make test)")
    s.add_argument("--timeout", type=float, default=None,
                   help="stop the guest after this many seconds (default: none from a "
                        "terminal, 3600 with piped input)")
    s.add_argument("--append", action="append", default=[], help="extra kernel command line words")
    s.add_argument("--build", action="store_true",
                   help="build what is missing (the kernel, the initramfs) instead of refusing; "
                        "never over the other flavour")

    s = sub.add_parser("test", help="setup, unit tests, tree, build, initramfs, boot + suites")
    _add_kernel_opts(s, variant=False)
    _add_boot_opts(s)
    s.add_argument("--suites", default=os.environ.get("SUITES") or "",
                   help="restrict to these suites (default: the scope's, cli.SUITE_ORDER)")
    s.add_argument("--scope", choices=SCOPES, default="ci",
                   help="ci (make test: every kept path once) or full (make test-full: "
                        "every suite whole, the full reason x engine matrix)")
    s.add_argument("--skip-setup", action="store_true", help="do not run lab/setup.sh")
    s.add_argument("--skip-unit", action="store_true", help="do not run the host unit tests")
    s.add_argument("--break", dest="break_patch", metavar="PATCH",
                   default=os.environ.get("BREAK") or None,
                   help="test the series plus this patch instead (build/broken), to prove "
                        "that the suites catch it: the run must fail (env BREAK)")

    s = sub.add_parser("check", help="checkpatch + W=1 build of the touched directories")
    _add_kernel_opts(s, variant=False)
    s.add_argument("--skip-setup", action="store_true", help="do not run lab/setup.sh")
    s.add_argument("--each", action="store_true",
                   help="instead: build the kernel at every patch of the series (worktree "
                        "build/each; a full build per patch, tens of minutes)")

    s = sub.add_parser("report", help="judge a saved console log again")
    s.add_argument("path", help="a results dir (build/results/...) or a console.log")
    s.add_argument("--suites", default="", help="suites to judge (default: as recorded)")
    s.add_argument("--accel", choices=qemu.ACCELS, default=None,
                   help="QEMU mode the log came from (default: as recorded, else single)")

    s = sub.add_parser("bench", help="build vanilla + patched (perf), boot each alternately, "
                                     "run the bench suite, compare")
    s.add_argument("--ksrc", default=os.environ.get("KSRC") or None,
                   help="use this kernel tree instead of build/linux (env KSRC)")
    s.add_argument("--preset", default=None,
                   help="the settings: guest/bench/presets/<PRESET>, full (the default) or "
                        "quick (throughput to node 1 only, 2 rounds); "
                        "hardware is make host-bench's")
    # QUICK=0 must not mean quick: make passes its variables down as
    # environment, whatever their value
    s.add_argument("--quick", action="store_true",
                   default=os.environ.get("QUICK", "") in ("1", "yes", "y"),
                   help="the same as --preset quick (env QUICK=1)")
    s.add_argument("--rounds", type=int, default=None,
                   help="boots of each kernel, alternating (default: the preset's ROUNDS, "
                        "else 3)")
    s.add_argument("--args", default=os.environ.get("BENCH_ARGS", ""),
                   help="extra MO_*=value settings for the guest's bench suite, after the "
                        "preset's (which they override), e.g. 'MO_SIZE_MB=256 MO_REPS=5' "
                        "(see guest/bench/run_bench.sh)")
    s.add_argument("--smp", type=int, default=2, help="guest CPUs (default 2)")
    s.add_argument("--rerender", metavar="DIR",
                   help="no boots: rebuild the tables and plots of an earlier run from its "
                        "DIR/bench.json")

    s = sub.add_parser("host-bench", help="on a real NUMA/CXL machine, as root: the bench "
                                          "suite on this host, no VM (once per kernel)")
    s.add_argument("--out", default=None, help="results under this directory (default build/host)")
    s.add_argument("--preset", default="hardware",
                   help="the settings: guest/bench/presets/<PRESET> (default hardware), read "
                        "as make bench reads them, with this machine's nodes")
    s.add_argument("--args", default=os.environ.get("BENCH_ARGS", ""),
                   help="MO_*=value settings for the runner (guest/bench/host_bench.sh), "
                        "e.g. 'MO_REPS=5 MO_ENGINES=none,mtcopy-4,dcbm-4'")

    s = sub.add_parser("deb", help="the kernel as Debian packages, configured from Debian's "
                                   "linux-config-6.12 + configs/deb.config (build/deb/)")
    s.add_argument("--variant", choices=("patched", "vanilla"), default="patched")
    s.add_argument("--lsmod", default=os.environ.get("LSMOD") or None,
                   help="only the modules this lsmod output lists (+ the engines): "
                        "make localmodconfig (env LSMOD)")
    s.add_argument("--ksrc", default=os.environ.get("KSRC") or None,
                   help="use this kernel tree instead of build/linux (env KSRC)")

    s = sub.add_parser("kit-test", help="the kit for real machines, end to end: make deb "
                                        "(patched, trimmed to the lab's modules), boot the "
                                        "package's kernel and the vanilla one, run the host "
                                        "runner in each (suite host_kit), merge with "
                                        "host-report")
    s.add_argument("--skip-setup", action="store_true", help="do not run lab/setup.sh")
    s.add_argument("--no-deb", action="store_true",
                   help="use the packages already in build/deb/patched")

    s = sub.add_parser("host-report", help="merge host-bench results (vanilla + patched) "
                                           "into make bench's tables and plots")
    s.add_argument("runs", nargs="*", help="result directories (default: every one under "
                                           "build/host)")
    s.add_argument("--out", default=None,
                   help="write the report here (default build/host/report-<stamp>)")
    return p


# --- commands -------------------------------------------------------------

def cmd_tree(a):
    tree.ensure_tree(a.ksrc, reset=a.reset)
    return EXIT_OK


def cmd_export(a):
    tree.export(a.ksrc, base_commit=a.base_commit)
    return EXIT_OK


def cmd_kernel(a):
    kernel.ensure(a.variant, a.flavour, a.ksrc, do_build=not a.config_only, out=a.out)
    return EXIT_OK


def _load_build(a):
    if getattr(a, "out", None):
        out = Path(a.out)
        if not out.is_dir():
            raise LabError(f"build dir {a.out} does not exist", "build the kernel first")
        return kernel.KernelBuild.load(out)
    out = kernel.out_dir(a.variant, a.flavour)
    if not out.is_dir():
        raise LabError(f"{rel(out)} does not exist",
                       f"build it: python3 -m lab.molab kernel --variant {a.variant} "
                       f"--flavour {a.flavour}")
    held = kernel.recorded_flavour(out)
    if held != a.flavour:
        what = (f"holds the {held} kernel now, not {a.flavour} (make test builds builtin "
                f"there after debug)" if held else
                f"has no complete {a.flavour} build (configured, or its build failed)")
        raise LabError(f"{rel(out)} {what}",
                       f"rebuild it: make kernel initramfs VARIANT={a.variant} FLAVOUR={a.flavour}")
    src = tree.source_for(a.variant, a.ksrc) if a.ksrc else None
    return kernel.KernelBuild.load(out, a.variant, a.flavour, src=src)


def cmd_initramfs(a):
    kb = _load_build(a)
    initramfs.build(kb, with_guest=not a.no_guest)
    return EXIT_OK


def _boot_spec(a, kb, suites, args, label, smp=2):
    smp = a.smp if a.smp is not None else smp
    if smp < 2:
        raise LabError(f"--smp {smp} is too small", "the NUMA topology needs 2 or more CPUs")
    kern = Path(a.kernel) if a.kernel else kb.bzimage
    initrd = Path(a.initrd) if a.initrd else kb.initramfs
    return qemu.BootSpec(kernel=kern, initrd=initrd, suites=suites, args=args, accel=a.accel,
                         smp=smp, timeout=a.timeout, idle_timeout=a.idle_timeout,
                         cmdline_extra=[*(DEBUG_CMDLINE if getattr(kb, "flavour", "") in DEBUG_FLAVOURS
                                          else ()), *a.append],
                         label=a.label or label,
                         prealloc=getattr(a, "prealloc", False),
                         echo="all" if a.verbose else "markers")


def _suites(text):
    return [s.strip() for s in text.split(",") if s.strip()]


def cmd_boot(a):
    kb = _load_build(a) if not (a.kernel and a.initrd) else None
    if a.cmd == "boot":
        suites, args = _suites(a.suites), a.args
    else:
        suites, args = [a.suite], " ".join(a.suite_args)
    res = qemu.boot(_boot_spec(a, kb, suites, args, a.cmd))
    qemu.print_summary(res)
    say(f"boot: {fmt_secs(res.seconds)}")
    return EXIT_OK if res.ok else EXIT_FAIL


def cmd_shell(a):
    """make shell: the guest of make boot, on the same QEMU command line
    as make test's boot, running a shell instead of suites (shell.py)."""
    from types import SimpleNamespace
    from . import shell
    kb = shell.find_build(a.variant, a.flavour, a.ksrc, build=a.build)
    boot = SimpleNamespace(kernel=None, initrd=None, accel=a.accel, smp=a.smp,
                           timeout=a.timeout or 0, idle_timeout=0, append=a.append,
                           label="shell", verbose=False)
    return shell.run(_boot_spec(boot, kb, [], "", "shell", smp=TEST_SMP), timeout=a.timeout)


def run_setup():
    """lab/setup.sh (installs the host packages; needs root, idempotent)."""
    say("== setup (lab/setup.sh)")
    if os.geteuid() != 0:
        warn("not root: skipping lab/setup.sh (packages must already be installed)")
        return
    r = subprocess.run(["sh", str(ROOT / "lab/setup.sh")], stdin=subprocess.DEVNULL)
    if r.returncode != 0:
        raise LabError(f"lab/setup.sh failed (exit {r.returncode})", "see its output above")


def _pytest_python():
    """This interpreter if it has pytest, else Debian's (python3-pytest)."""
    for py in (sys.executable, "/usr/bin/python3"):
        if subprocess.run([py, "-c", "import pytest"], capture_output=True).returncode == 0:
            return py
    raise LabError("pytest is not installed", "run 'sudo sh lab/setup.sh' (python3-pytest)")


def cmd_test(a):
    timer = Timer()
    if not a.skip_setup:
        with timer.step("setup"):
            run_setup()
    if not a.skip_unit:
        with timer.step("unit"):
            say("== host unit tests (python3 -m pytest -q lab/tests)")
            # make test needs busybox and a compiler (setup.sh installs
            # them): a test skipped for want of one fails (lab/tests/conftest.py)
            r = subprocess.run([_pytest_python(), "-m", "pytest", "-q", "-p", "no:cacheprovider",
                                "lab/tests"], cwd=ROOT, stdin=subprocess.DEVNULL,
                               env={**os.environ, "MOLAB_REQUIRE_TOOLS": "1"})
            if r.returncode != 0:
                say("FAIL  host-unit-tests  python3 -m pytest -q lab/tests failed")
                say("0 passed, 1 failed")
                return EXIT_FAIL
    with timer.step("tree"):
        say("== tree")
        tree.ensure_tree(a.ksrc, match_series=True)
    variant = "patched"
    if a.break_patch:
        variant = "broken"
        say(f"== broken tree (BREAK={a.break_patch}): this run must FAIL")
        tree.ensure_broken(tree.source_for("patched", a.ksrc), a.break_patch)
    with timer.step("build"):
        say(f"== kernel {variant}-{a.flavour}")
        kb = kernel.ensure(variant, a.flavour, a.ksrc)
    with timer.step("initramfs"):
        say("== initramfs")
        initramfs.build(kb)
    # "bench" is make bench's job: minutes of measurements, not a test. A
    # guest suite nobody listed yet still runs.
    listed = [s for s, scope in SUITE_ORDER if a.scope == "full" or scope == "ci"]
    suites = _suites(a.suites) or [*listed, *[s for s in initramfs.guest_suites(kb)
                                              if s != "bench" and s not in TEST_SUITES
                                              and s not in FULL_ONLY_SUITES]]
    with timer.step("boot+tests"):
        say(f"== boot + tests (scope {a.scope})")
        spec = _boot_spec(a, kb, suites, "", a.label or "test", smp=TEST_SMP)
        spec.cmdline_extra.append(f"mo.scope={a.scope}")
        spec.kunit_suites = BUILTIN_KUNIT_SUITES if a.flavour == "builtin" else KUNIT_SUITES
        spec.require_debug = a.flavour in DEBUG_FLAVOURS
        res = qemu.boot(spec)
    boots = [("engines as modules", res)]
    # The same series with the engines built in: code that only works as a
    # module (THIS_MODULE, module kobjects) fails here. Only for a whole
    # debug run: a run of chosen suites is someone iterating.
    if not a.suites and a.flavour == "debug":
        with timer.step("builtin build"):
            say(f"== kernel {variant}-builtin (engines and swdma built in)")
            kbb = kernel.ensure(variant, "builtin", a.ksrc)
            initramfs.build(kbb)
        with timer.step("builtin boot+tests"):
            say("== boot + tests, engines built in")
            spec = _boot_spec(a, kbb, list(BUILTIN_SUITES),
                              BUILTIN_CI_ARGS if a.scope == "ci" else "", "test", smp=TEST_SMP)
            spec.label = f"{a.label or 'test'}-builtin"
            spec.cmdline_extra += [*BUILTIN_CMDLINE, f"mo.scope={a.scope}"]
            spec.kunit_suites = BUILTIN_KUNIT_SUITES
            spec.require_debug = True
            boots.append(("engines built in", qemu.boot(spec)))
    say("== results")
    passed = failed = skipped = 0
    for what, r in boots:
        if len(boots) > 1:
            say(f"-- {what}")
        for line in r.summary.lines()[:-1]:
            say(line)
        say(f"kernel: {r.report.release or 'unknown (no Linux version line)'}; "
            f"console log: {rel(r.console_log)}")
        passed += r.summary.passed
        failed += r.summary.failed
        skipped += r.summary.skipped
    # The guest must have run the scope asked for: a full run reported as ci
    # would pass the ci matrix and cost the full time.
    wrong_scope = 0
    for what, r in boots:
        seen = r.report.scope
        if seen != a.scope:
            say(f"FAIL  scope  the guest ({what}) ran scope {seen or 'unknown'}, not {a.scope} "
                f"(mo.scope= lost between the lab and guest/init.sh?)")
            wrong_scope += 1
    failed += wrong_scope
    # The reason x engine view across suites; a whole run must fill it.
    gaps = _matrix(boots[0][1], whole=not a.suites, scope=a.scope)
    failed += bool(gaps)
    say(f"timings: {timer.report()}")
    say(f"slowest suites: {slowest_suites([r for _, r in boots])}")
    say(f"{passed} passed, {failed} failed" + (f", {skipped} skipped" if skipped else ""))
    return EXIT_OK if all(r.ok for _, r in boots) and not gaps and not wrong_scope else EXIT_FAIL


def slowest_suites(boots, n=5):
    """The @n slowest suites of these boots, 'name 5m10s, ...' (the builtin
    boot's marked)."""
    times = []
    for i, r in enumerate(boots):
        for s in getattr(r.summary, "suites", ()):
            if s.seconds is not None:
                times.append((s.seconds, s.name + (" (builtin)" if i else "")))
    times.sort(reverse=True)
    return ", ".join(f"{name} {fmt_secs(t)}" for t, name in times[:n]) or "none timed"


def _matrix(res, whole, scope="full"):
    """Print the boot's reason x engine matrix for the engines of @scope
    and write matrix.md next to its console log; with @whole (every suite
    ran), return its gaps."""
    from . import matrix
    engines = matrix.SCOPES[scope]
    cells = matrix.collect(res.report.blocks, getattr(res.report, "files", ()))
    if not cells:
        if whole:
            say("FAIL  matrix  no suite reported a reason x engine row")
            return ["empty"]
        return []
    out = res.console_log.parent / "matrix.md"
    out.write_text(matrix.markdown(cells, engines))
    say(f"-- reason x engine, scope {scope} (pages; every suite's windows; {rel(out)})")
    for line in matrix.text(cells, engines):
        say("  " + line)
    gaps = matrix.problems(cells, engines=engines,
                           whole=scope in matrix.WHOLE_MATRIX) if whole else []
    for g in gaps:
        say(f"FAIL  matrix  {g}")
    return gaps


def cmd_check(a):
    if not a.skip_setup:
        run_setup()
    say("== tree")
    tree.ensure_tree(a.ksrc, match_series=True)
    if a.each:
        return EXIT_OK if check.build_each(a.ksrc, a.flavour) else EXIT_FAIL
    return EXIT_OK if check.run_check(a.ksrc, a.flavour) else EXIT_FAIL


def cmd_report(a):
    import json
    from . import console, results
    p = Path(a.path)
    log = p / "console.log" if p.is_dir() else p
    if not log.is_file():
        raise LabError(f"{a.path}: no console log there", "give a results dir or a console.log")
    meta = {}
    try:
        meta = json.loads((log.parent / "result.json").read_text())
    except (OSError, ValueError):
        pass
    accel = a.accel or meta.get("accel") or "single"
    suites = _suites(a.suites) or meta.get("suites_requested") or []
    rep = console.scan_text(log.read_text(errors="replace"), accel)
    if any(f.kind == "int3" for f in rep.findings):
        vml = qemu.vmlinux_of(meta["kernel"]) if meta.get("kernel") else None
        console.excuse_int3(rep, qemu.patch_sites(vml))
    summ = results.summarize(rep, suites, known=results.load_known_failures(qemu.KNOWN_FAILURES),
                             kunit_suites=meta.get("kunit_suites") or (),
                             require_debug=bool(meta.get("require_debug")))
    for line in summ.lines()[:-1]:
        say(line)
    from . import matrix
    cells = matrix.collect(rep.blocks, rep.files)
    if cells:
        scope = rep.scope or "full"
        say(f"-- reason x engine, scope {scope} (pages)")
        for line in matrix.text(cells, matrix.SCOPES.get(scope, matrix.ENGINES)):
            say("  " + line)
    say(f"console log: {rel(log)}")
    say(summ.lines()[-1])
    return EXIT_OK if summ.ok else EXIT_FAIL


def _host_facts(builds):
    """What a result must record to be read later: kernel, QEMU, CPU, commit."""
    def out(cmd):
        try:
            return subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT).stdout.strip()
        except OSError:
            return ""
    cpu = ""
    for line in Path("/proc/cpuinfo").read_text(errors="replace").splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    return {"kernels": {v: {"release": kb.release, "base": kb.base, "commit": kb.commit}
                        for v, kb in builds.items()},
            "qemu": out([qemu.QEMU, "--version"]).splitlines()[0:1],
            "host_cpu": cpu, "host_cpus": os.cpu_count(),
            "git_commit": out(["git", "rev-parse", "HEAD"]),
            "git_dirty": bool(out(["git", "status", "--porcelain", "--untracked-files=no"]))}


def cmd_bench(a):
    from . import bench, report
    if a.rerender:
        return _bench_rerender(a)
    # the preset first: a bad one stops the bench before anything is built
    preset = a.preset or ("quick" if a.quick else bench.DEFAULT_PRESET)
    if a.quick and preset != "quick":
        raise LabError(f"QUICK=1 is PRESET=quick, and PRESET={preset} was given too",
                       "give one of them")
    settings, preset_rounds = bench.vm_preset(preset)
    rounds = a.rounds if a.rounds is not None else (preset_rounds or bench.DEFAULT_ROUNDS)
    if rounds < 1:
        raise LabError(f"--rounds {rounds} is too small", "give 1 or more")
    # the guest's suite exports them in order: BENCH_ARGS win
    args = " ".join(x for x in (*settings, a.args) if x)
    timer = Timer()
    with timer.step("setup"):
        run_setup()      # a failed setup stops the bench with its reason
    # The report's p column needs scipy: say so now, not after an hour of boots.
    report.require_scipy()
    with timer.step("tree"):
        tree.ensure_tree(a.ksrc, match_series=True)
    with timer.step("build"):
        say("== kernels vanilla-perf and patched-perf")
        builds = bench.prepare(["vanilla", "patched"], "perf", a.ksrc)
    # The facts as they were when the guest programs were built, not after
    # the boots (the checkout may change meanwhile).
    facts = _host_facts(builds)
    with timer.step("boots"):
        say(f"== {rounds} round(s) of alternating boots (multi-threaded TCG), suite bench: {args}")
        runs = bench.alternate(builds, "bench", args=args, rounds=rounds, accel="multi",
                               smp=a.smp)
    records, problems, boots = [], [], []
    for res in runs:
        variant, rnd = res.label.split("-r")[0], int(res.label.split("-r")[1].split("-")[0])
        f = res.files.get("bench.jsonl")
        boots.append(_boot_record(res))
        if not res.ok:
            # A boot with findings measured a kernel in trouble: its figures
            # stay out of the tables; "boots" lists it and fails the run.
            continue
        if f is None:
            problems.append(f"{res.label}: no bench.jsonl came back ({rel(res.console_log)})")
            continue
        records += report.load_records(Path(f), variant, rnd)
    top = runs[0].results_dir.parent
    run = {"facts": facts, "preset": preset, "args": args, "rounds": rounds,
           "records": records, "problems": problems, "boots": boots}
    summary = _bench_outputs(top, run)
    say(f"timings: {timer.report()}")
    return EXIT_FAIL if _bench_failures(run, summary) else EXIT_OK


def _boot_record(res):
    """One boot of a bench, with its findings and every retried attempt."""
    def one(r):
        return {"label": r.label, "status": r.summary.status, "ok": r.ok,
                "console_log": rel(r.console_log),
                "findings": [{"kind": f.kind, "line": f.line_no, "text": f.text,
                              "rip": f.rip, "excuse": f.excuse} for f in r.report.findings],
                "problems": [l for l in r.summary.lines()[:-1] if not l.startswith("PASS")]}
    return {**one(res), "retried": [one(r) for r in getattr(res, "retried", [])]}


def _boot_lines(boots, md=False):
    """The boots of a run: which were excluded for findings, which were retried."""
    if not boots:
        return []
    bad = [b for b in boots if not b["ok"]]
    out = ["", ("### Boots" if md else "== boots") +
           f": {len(boots)}, {len(bad)} excluded from the tables for findings, "
           f"{sum(len(b['retried']) for b in boots)} retried attempt(s)"]
    for b in boots:      # in boot order, each attempt once (a slot can be both)
        for a in [*b["retried"], b] if b["retried"] or not b["ok"] else []:
            what = "; ".join(f"{f['kind']}: {f['text']}" + (f" at {f['rip']}" if f["rip"] else "")
                             + (f" [{f['excuse']}]" if f["excuse"] else "")
                             for f in a["findings"][:4]) or "; ".join(a["problems"][:2])
            role = "used" if a is b and a["ok"] else "retried" if a is not b else "excluded"
            out.append(f"{'- ' if md else '  '}{a['label']}: {a['status']} ({role})"
                       f"{': ' + what if what else ''} ({a['console_log']})")
    return out


def _bench_failures(run, summary):
    """Why a bench run fails, one line each (none: it passed). The run and
    --rerender of its bench.json give the same verdict: a boot with findings
    (excluded from the tables), a problem such as a boot that sent no data
    (or, in a bench.json older than "boots", a boot with findings), corrupted
    bytes, or no measurement at all (bookkeeping, absent and skipped only)."""
    bad = [b["label"] for b in run.get("boots") or [] if not b.get("ok", True)]
    out = [f"{len(bad)} boot(s) with findings, excluded from the tables (listed under "
           f"boots): {', '.join(bad)}"] if bad else []
    out += run.get("problems") or []
    if summary["records_with_bad_bytes"]:
        out.append(f"{summary['records_with_bad_bytes']} measurement(s) found corrupted bytes")
    if not summary["measurements"]:
        out.append("nothing was measured")
    scopes = summary.get("wq_scopes") or []
    if len(scopes) > 1:
        out.append(f"boots ran with different workqueue affinity scopes ({', '.join(scopes)}): "
                   "their figures are not comparable; run the bench again")
    idle = summary.get("tiering_idle") or []
    if idle:
        out.append(f"{len(idle)} tiering measurement(s) saw no demotion or no promotion in "
                   "their window (the scenario did not run): "
                   + ", ".join(f"{i['variant']}-r{i['round']} {i['config']}"
                               f"{' hog' if i['hog'] else ''}" for i in idle[:6]))
    miss = summary.get("tiering_missing") or []
    if miss:
        out.append(f"tiering was asked for but not measured {len(miss)} time(s): "
                   + "; ".join(f"{m['variant']}-r{m['round']}"
                               f"{' ' + m['config'] if m['config'] else ''}: {m['reason']}"
                               for m in miss[:3]))
    return out


def _bench_outputs(top, run):
    """Summarize a run's records into top/: bench.json, throughput.csv,
    report.txt, report.md, plots; print the tables. Returns the summary."""
    import json
    from . import report
    # The records first: a failure while summarizing or rendering loses
    # nothing ('bench --rerender DIR' redoes the rest from them).
    (top / "bench.json").write_text(json.dumps({k: v for k, v in run.items() if k != "summary"},
                                               indent=1) + "\n")
    summary = report.summarize(run["records"])
    run = {**run, "summary": summary}
    (top / "bench.json").write_text(json.dumps(run, indent=1) + "\n")
    report.write_csv(summary, top / "throughput.csv")
    pngs = report.plots(summary, top)
    # The verdict goes into the reports too: a report alone must not read as a pass.
    failures = _bench_failures(run, summary)
    verdict = [f"run FAILED: {f}" for f in failures] or ["run passed"]
    lines = report.text_tables(summary) + _boot_lines(run.get("boots"))
    where = _facts_lines(run["facts"])
    (top / "report.txt").write_text("\n".join(lines + ["", *where, "", *verdict]) + "\n")
    (top / "report.md").write_text("\n".join(report.markdown_tables(summary)
                                             + _boot_lines(run.get("boots"), md=True)
                                             + ["", *(f"- {w}" for w in where)]
                                             + ["", *(f"- {v}" for v in verdict)]) + "\n")
    say("")
    for line in lines:
        say(line)
    say("")
    for line in _facts_lines(run["facts"]):
        say(line)
    say(f"results: {rel(top)} (bench.json, throughput.csv, report.txt, report.md"
        f"{', ' + ', '.join(p.name for p in pngs) if pngs else ''})")
    for f in failures:
        say(f"FAIL  {f}")
    return summary


def _facts_lines(facts):
    """What was measured where: the lab's kernels and QEMU, or the host runs."""
    if "host_runs" in facts:
        out = []
        for h in facts["host_runs"]:
            nodes = ", ".join(f"node {n['node']} {n['mem_mb']} MiB tier {n['tier']}"
                              f" cpus {n['cpus'] or '-'}" for n in h.get("nodes") or [])
            drivers = sorted({c.get("driver") for c in h.get("dma_channels") or []})
            out.append(f"{h['variant']} round {h['round']}: {h.get('release')} on "
                       f"{h.get('hostname')} ({h.get('cpu_model')}, {h.get('cpus')} CPUs; "
                       f"{nodes}; DMA channels {len(h.get('dma_channels') or [])}"
                       f"{' (' + ', '.join(drivers) + ')' if drivers else ''}); {h['dir']}")
        return out
    k = facts["kernels"]
    return [f"kernels: " + ", ".join(f"{v} {d['release']} (base {d['base']})"
                                     for v, d in k.items()),
            f"QEMU: {' '.join(facts['qemu'])}; host: {facts['host_cpu']} x{facts['host_cpus']}; "
            f"commit {facts['git_commit'][:12]}{' (dirty)' if facts['git_dirty'] else ''}"]


def _bench_rerender(a):
    import json
    top = Path(a.rerender)
    hint = "give the directory of a 'make bench' run (build/results/bench-*)"
    try:
        run = json.loads((top / "bench.json").read_text())
    except (OSError, ValueError) as e:
        raise LabError(f"{top / 'bench.json'}: not a bench result ({e})", hint)
    if not isinstance(run, dict) or not isinstance(run.get("records"), list) \
            or not isinstance(run.get("facts"), dict):
        raise LabError(f"{top / 'bench.json'}: not a bench result (no records or facts)", hint)
    summary = _bench_outputs(top, run)
    return EXIT_FAIL if _bench_failures(run, summary) else EXIT_OK


def cmd_host_bench(a):
    from . import bench, host
    bench.read_preset(a.preset)      # an unknown preset stops it before mo_bench is built
    rc = host.host_bench(a.out, a.args, a.preset)
    # 2: host_bench.sh could not run here and said why in one line
    return EXIT_OK if rc == 0 else EXIT_ERROR if rc == 2 else EXIT_FAIL


def cmd_deb(a):
    from . import deb
    deb.build(a.variant, a.lsmod, a.ksrc)
    return EXIT_OK


# The modules the lab's guest needs from a distribution kernel (make
# kit-test): none but the engines and DMA providers make deb always keeps;
# the rest of Debian's 4,000 are left out to keep the build short.
KIT_LSMOD = "Module                  Size  Used by\n"


def cmd_kit_test(a):
    """make deb -> boot its kernel (and the lab's vanilla one) -> host_kit ->
    host-report: the real-machine kit exercised end to end in the lab."""
    import json
    import shutil
    from . import bench, deb, host
    from .util import RESULTS, utc_stamp
    timer = Timer()
    if not a.skip_setup:
        with timer.step("setup"):
            run_setup()
    top = RESULTS / f"kit-{utc_stamp()}"
    top.mkdir(parents=True)
    with timer.step("deb"):
        if not a.no_deb:
            lsmod = top / "lsmod"
            lsmod.write_text(KIT_LSMOD)
            deb.build("patched", lsmod=lsmod)
        image = deb.image_deb("patched")
        vmlinuz, release, root = deb.extract(image, deb.DEB_DIR / "patched" / "root")
        want = f"{deb.kernel_version(tree.DEFAULT_TREE)}-mo-patched"
        if release != want:
            raise LabError(f"{image.name} holds kernel {release}, not {want}",
                           "make deb names the release <version>-mo-<variant>: see "
                           "lab/molab/deb.py")
    with timer.step("initramfs"):
        # The package's kernel and modules; the guest programs built against
        # the same tree (uapi headers installed from it).
        obj = deb.DEB_DIR / "patched" / "obj"
        kb = kernel.KernelBuild(variant="patched", flavour="deb", src=tree.DEFAULT_TREE.resolve(),
                                out=obj.resolve(), release=release)
        if kb.modroot.exists():
            shutil.rmtree(kb.modroot)
        moddir = next(d for d in (root / "lib/modules", root / "usr/lib/modules") if d.is_dir())
        shutil.copytree(moddir, kb.modroot / "lib/modules", symlinks=True)
        if not kb.hdr.is_dir():
            kernel._run_logged(["make", "-C", kb.src, f"O={obj}", "headers_install",
                                f"INSTALL_HDR_PATH={kb.hdr}"], obj / "molab-hdr.log", {})
        initramfs.build(kb)
        builds = {"patched": (vmlinuz, kb.initramfs)}
        builds.update(bench.prepare(["vanilla"], "perf"))
    runs = {}
    with timer.step("boots"):
        for name, b in builds.items():
            kern, initrd = b if isinstance(b, tuple) else (b.bzimage, b.initramfs)
            spec = qemu.BootSpec(kernel=kern, initrd=initrd, suites=["host_kit"], smp=2,
                                 accel="single", timeout=3600, label=f"kit-{name}",
                                 results_dir=top / name)
            res = qemu.boot(spec)
            qemu.print_summary(res)
            runs[name] = res
    problems = [f"{n}: boot {r.summary.status}" for n, r in runs.items() if not r.ok]
    dirs = []
    for n, r in runs.items():
        d = top / "runs" / n
        d.mkdir(parents=True)
        for src, dst in (("host-bench.jsonl", "bench.jsonl"), ("host-facts.json", "facts.json"),
                         ("host-bench.log", "bench.log")):
            f = r.files.get(f"host_kit/{src}")
            if f is None:
                problems.append(f"{n}: host_kit sent no {src}")
            else:
                shutil.copy(f, d / dst)
        dirs.append(d)
    if not problems:
        if json.loads((top / "runs/patched/facts.json").read_text()).get("release") != release:
            problems.append(f"the patched boot did not run the package's kernel {release}")
        merged = host.merge(dirs)
        (top / "report").mkdir()
        summary = _bench_outputs(top / "report", merged)
        problems += _bench_failures(merged, summary)
        cfgs = {(r["config"], r["hog"]) for r in summary["tiering"]}
        want = {(c, h) for c in ("vanilla", "none", "cpu", "mtcopy-1", "mtcopy-2", "dcbm-1",
                                 "dcbm-4") for h in (False, True)}
        if cfgs != want:
            problems.append(f"tiering table rows {sorted(cfgs)}, want {sorted(want)}")
        tput = {r["config"] for r in summary["throughput"]}
        if tput != {c for c, _ in want}:
            problems.append(f"throughput table configurations {sorted(tput)}")
    say(f"timings: {timer.report()}")
    for p in problems:
        say(f"FAIL  {p}")
    say(f"kit test {'FAILED' if problems else 'passed'}: {rel(top)}")
    return EXIT_FAIL if problems else EXIT_OK


def cmd_host_report(a):
    from . import host
    from .util import utc_stamp
    dirs = [Path(d) for d in a.runs] or host.find_runs()
    if not dirs:
        raise LabError(f"no host-bench results under {rel(host.HOST_DIR)}",
                       "run 'make host-bench' on the machine (once per kernel), or give "
                       "the result directories")
    run = host.merge(dirs)
    top = Path(a.out) if a.out else host.HOST_DIR / f"report-{utc_stamp()}"
    top.mkdir(parents=True, exist_ok=True)
    summary = _bench_outputs(top, run)
    return EXIT_FAIL if _bench_failures(run, summary) else EXIT_OK


COMMANDS = {"tree": cmd_tree, "export": cmd_export, "kernel": cmd_kernel,
            "initramfs": cmd_initramfs, "boot": cmd_boot, "run": cmd_boot, "test": cmd_test,
            "check": cmd_check, "report": cmd_report, "bench": cmd_bench, "shell": cmd_shell,
            "host-bench": cmd_host_bench, "host-report": cmd_host_report, "deb": cmd_deb,
            "kit-test": cmd_kit_test}


def main(argv=None):
    try:
        a = build_parser().parse_args(argv)
        if not a.cmd:
            raise LabError("no command given", "see 'python3 -m lab.molab --help'")
        return COMMANDS[a.cmd](a)
    except LabError as e:
        print(e.line(), file=sys.stderr, flush=True)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("molab: error: interrupted; run the command again", file=sys.stderr)
        return EXIT_ERROR
    except SystemExit as e:   # --help
        return e.code if isinstance(e.code, int) else EXIT_ERROR
    except Exception as e:  # noqa: BLE001 - one line, never a traceback
        where = ""
        tb = e.__traceback__
        while tb is not None and tb.tb_next is not None:
            tb = tb.tb_next
        if tb is not None:
            where = f" at {Path(tb.tb_frame.f_code.co_filename).name}:{tb.tb_lineno}"
        print(f"molab: error: internal error {type(e).__name__}: {e}{where}; "
              f"please report it (rerun with MOLAB_DEBUG=1 for a traceback)", file=sys.stderr)
        if os.environ.get("MOLAB_DEBUG"):
            raise
        return EXIT_ERROR
