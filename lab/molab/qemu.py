"""Booting a kernel + initramfs in QEMU with a 3-node NUMA topology.

The public API (also what a benchmark uses):

    spec = BootSpec(kernel=kb.bzimage, initrd=kb.initramfs, suites=["bench"],
                    args="--size 128M", accel="multi", label="bench-vanilla")
    res = boot(spec)             # -> BootResult
    res.summary.ok, res.summary.lines()
    res.block("bench").lines    # the suite's raw output lines
    res.files                   # {name: Path} files the guest sent back
    res.results_dir             # build/results/<label>-<UTC stamp>/

Topology: node0 = cpu0 + 1G, node1 = cpu1 + 1G, node2 = 1G memory only;
distances 0-1: 20, 0-2 and 1-2: 30. More CPUs (smp > 2) alternate between
node0 and node1. Every CPU is its own socket, so no cache is shared across nodes.
Machine pc (i440fx) with an ACPI HMAT (hmat=on) that describes node 2 as
slower memory (80 ns, 2 GB/s against 10-20 ns, 5-10 GB/s): a lower memory
tier. All 3G of RAM sit below 4G (node 2 at 2G-3G).
"""

import json
import os
import re
import select
import shlex
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import console, results
from .errors import LabError
from .util import BUILD, RESULTS, ROOT, fmt_secs, rel, say, utc_stamp

QEMU = "qemu-system-x86_64"
ACCELS = ("single", "multi", "kvm", "auto")
KNOWN_FAILURES = ROOT / "lab" / "known-failures"


@dataclass
class BootSpec:
    kernel: Path
    initrd: Path
    suites: list = field(default_factory=list)
    args: str = ""                     # mo.args for every suite
    accel: str = "single"              # single | multi (TCG threads) | kvm | auto
    smp: int = 2
    node_mem_mb: int = 1024            # per node (three nodes)
    # Back guest RAM with host pages up front, so that no guest write in a
    # measurement pays for a host page fault (bench boots set it).
    prealloc: bool = False
    timeout: float = 2400.0            # whole boot, seconds
    idle_timeout: float = 300.0        # no console output for that long = hang
    cmdline_extra: list = field(default_factory=list)
    label: str = "boot"
    results_dir: Path | None = None
    echo: str = "markers"              # markers | all | none
    qemu: str = QEMU
    qemu_extra: list = field(default_factory=list)
    known_failures: dict | None = None  # {suite: {test: KnownFailure}}; None = lab/known-failures
    kunit_suites: tuple = ()           # KUnit suites that must have run (when "kunit" is asked)
    require_debug: bool = False        # lockdep and kmemleak must still be on at the end
    vmlinux: Path | None = None        # for judging int3 oopses; None = next to the bzImage


@dataclass
class BootResult:
    spec: BootSpec
    accel: str
    results_dir: Path
    console_log: Path
    report: console.ConsoleReport
    summary: results.RunSummary
    qemu_rc: int | None
    seconds: float
    hang: str = ""
    files: dict = field(default_factory=dict)

    @property
    def ok(self):
        return self.summary.ok

    @property
    def label(self):
        return self.spec.label

    def block(self, name):
        return self.report.block(name)

    def suite(self, name):
        for s in self.summary.suites:
            if s.name == name:
                return s
        return None


def cmdline(spec):
    parts = ["console=ttyS0", "panic=-1", "loglevel=7"]
    run = ",".join(spec.suites)
    for s in spec.suites:
        if not s or any(c in s for c in ' ,"='):
            raise LabError(f"bad suite name {s!r}", "suite names are single words")
    parts.append(f"mo.run={run}")
    if spec.args:
        if '"' in spec.args or "\n" in spec.args:
            raise LabError("mo.args cannot contain double quotes or newlines",
                           "pass such inputs as a file (initramfs.overlay)")
        parts.append(f'mo.args="{spec.args}"' if " " in spec.args else f"mo.args={spec.args}")
    parts.extend(spec.cmdline_extra)
    return " ".join(parts)


def accel_args(accel):
    if accel == "single":
        return ["-accel", "tcg,thread=single"]
    if accel == "multi":
        return ["-accel", "tcg,thread=multi"]
    if accel == "kvm":
        return ["-accel", "kvm"]
    raise LabError(f"unknown accel '{accel}'", f"use one of {', '.join(ACCELS)}")


# ACPI HMAT (-machine hmat=on): what each initiator (a node with CPUs) sees
# of each memory node, as (latency ns, bandwidth). Node 2 is slower memory,
# so the kernel puts it in a lower memory tier than nodes 0-1 (memory_tier4
# = 0-1, memory_tier180 = 2), demotes to it and promotes from it. The DRAM
# nodes must look alike from their own initiators: memory-tiers takes the
# first as the reference and drops HMAT-based tiers on a mismatch.
HMAT_LOCAL = (10, "10G")
HMAT_REMOTE = (20, "5G")
HMAT_SLOW = (80, "2G")
CPU_NODES = (0, 1)


def hmat_perf(initiator, target):
    if target not in CPU_NODES:
        return HMAT_SLOW
    return HMAT_LOCAL if initiator == target else HMAT_REMOTE


def numa_args(smp, node_mem_mb, prealloc=False):
    if smp < 2:
        raise LabError("the NUMA topology needs at least 2 CPUs", "use --smp 2 or more")
    args = []
    for n in range(3):
        args += ["-object", f"memory-backend-ram,id=mem{n},size={node_mem_mb}M"
                 + (",prealloc=on" if prealloc else "")]
        cpus = "".join(f",cpus={c}" for c in range(smp) if n < 2 and c % 2 == n)
        # HMAT wants an initiator for every node; node 2 has no CPU: node 0's.
        init = n if n in CPU_NODES else CPU_NODES[0]
        args += ["-numa", f"node,nodeid={n}{cpus},memdev=mem{n},initiator={init}"]
    for a, b, d in ((0, 1, 20), (0, 2, 30), (1, 2, 30)):
        args += ["-numa", f"dist,src={a},dst={b},val={d}"]
    for i in CPU_NODES:
        for t in range(3):
            lat, bw = hmat_perf(i, t)
            hl = f"hmat-lb,initiator={i},target={t},hierarchy=memory"
            args += ["-numa", f"{hl},data-type=access-latency,latency={lat}",
                     "-numa", f"{hl},data-type=access-bandwidth,bandwidth={bw}"]
    return args


def qemu_command(spec, accel=None):
    accel = accel or spec.accel
    cpu = "host" if accel == "kvm" else "max"
    # One socket per CPU: a package (and its LLC) never spans two NUMA nodes,
    # which the kernel would WARN about (topology_sane).
    smp = f"{spec.smp},sockets={spec.smp},cores=1,threads=1"
    # hmat=on: the ACPI HMAT that places node 2 in a lower memory tier. Not
    # q35: it maps RAM beyond 2G above 4G, so nodes 0-1 would hold only
    # DMA32 memory and movablecore= would give only node 2 a movable zone
    # (memory_offline offlines node 1's blocks).
    return [spec.qemu, "-machine", "pc,hmat=on", *accel_args(accel), "-cpu", cpu, "-smp", smp,
            "-m", f"{3 * spec.node_mem_mb}M", *numa_args(spec.smp, spec.node_mem_mb, spec.prealloc),
            "-nographic", "-no-reboot", "-nic", "none",
            "-kernel", str(spec.kernel), "-initrd", str(spec.initrd),
            "-append", cmdline(spec), *spec.qemu_extra]


_kvm_probe_cache = {}


def probe_kvm(kernel, initrd, timeout=45):
    """True if a guest really boots under KVM here (it hangs on some hosts)."""
    key = (str(kernel), str(initrd))
    if key in _kvm_probe_cache:
        return _kvm_probe_cache[key]
    ok = False
    if os.access("/dev/kvm", os.R_OK | os.W_OK):
        spec = BootSpec(kernel=kernel, initrd=initrd, suites=[], accel="kvm",
                        timeout=timeout, idle_timeout=timeout, echo="none", label="kvm-probe",
                        results_dir=BUILD / "kvm-probe")
        try:
            res = _boot(spec, "kvm", quiet=True)
            ok = res.report.done
        except LabError:
            ok = False
    _kvm_probe_cache[key] = ok
    return ok


def resolve_accel(spec):
    if spec.accel == "auto":
        if probe_kvm(spec.kernel, spec.initrd):
            say("  KVM probe: a guest booted, using KVM")
            return "kvm"
        say("  KVM probe: no guest boot under KVM here, using single-threaded TCG")
        return "single"
    if spec.accel == "kvm" and not probe_kvm(spec.kernel, spec.initrd):
        raise LabError("KVM does not boot a guest on this host (probe timed out or failed)",
                       "use ACCEL=single or ACCEL=multi (TCG)")
    return spec.accel


QEMU_MIN = 10
_qemu_checked = {}


def check_qemu_version(binary=QEMU):
    """Refuse a QEMU older than QEMU_MIN: 7.2 crashes guests that patch text."""
    if binary in _qemu_checked:
        return _qemu_checked[binary]
    try:
        out = subprocess.run([binary, "--version"], capture_output=True, text=True,
                             stdin=subprocess.DEVNULL).stdout
    except OSError as e:
        raise LabError(f"cannot run {binary}", "install QEMU with 'sudo sh lab/setup.sh'") from e
    first = out.splitlines()[0] if out else ""
    m = re.search(r"version (\d+)\.", first)
    if not m or int(m.group(1)) < QEMU_MIN:
        raise LabError(f"{binary} is '{first or 'unknown version'}'; the lab needs QEMU "
                       f"{QEMU_MIN} or newer",
                       "run 'sudo sh lab/setup.sh' (qemu-system-x86 from bookworm-backports)")
    _qemu_checked[binary] = first
    return first


def boot(spec):
    """Boot, run the suites, scan the console; returns a BootResult."""
    for p, what in ((spec.kernel, "kernel"), (spec.initrd, "initramfs")):
        if not Path(p).exists():
            raise LabError(f"{what} {rel(p)} not found",
                           "build it first (make kernel / python3 -m lab.molab initramfs)")
    if Path(spec.qemu).name == "qemu-system-x86_64":   # tests boot a fake
        check_qemu_version(spec.qemu)
    accel = resolve_accel(spec)
    return _boot(spec, accel)


def _echo(spec, t0, text):
    if spec.echo != "none":
        say(f"  [{time.monotonic() - t0:7.1f}s] {text}")


def _boot(spec, accel, quiet=False):
    rdir = Path(spec.results_dir or RESULTS / f"{spec.label}-{utc_stamp()}")
    if rdir.exists() and spec.results_dir is None:
        rdir = Path(f"{rdir}-{os.getpid()}")
    rdir.mkdir(parents=True, exist_ok=True)
    log_path = rdir / "console.log"
    cmd = qemu_command(spec, accel)
    (rdir / "qemu.cmd").write_text(shlex.join(cmd) + "\n")
    scanner = console.ConsoleScanner(accel)
    t0 = time.monotonic()
    if not quiet:
        say(f"  booting {rel(spec.kernel)} ({results.MODE_NAMES.get(accel, accel)}, "
            f"{spec.smp} cpus, 3 NUMA nodes) suites: {','.join(spec.suites) or '-'}")
        say(f"  console: {rel(log_path)}")
    hang = ""
    stderr_f = open(rdir / "qemu.stderr", "w")
    try:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=stderr_f, start_new_session=True,
                                preexec_fn=_die_with_parent)
    except FileNotFoundError as e:
        stderr_f.close()
        raise LabError(f"cannot run {spec.qemu}", "install QEMU with 'sudo sh lab/setup.sh'") from e
    fd = proc.stdout.fileno()
    buf = b""
    last_output = time.monotonic()
    done_at = None
    with open(log_path, "w", errors="replace") as log:
        def handle(raw):
            text = raw.decode("utf-8", errors="replace")
            log.write(text + "\n")
            for kind, payload in scanner.feed(text):
                if quiet or spec.echo == "none":
                    continue
                if kind == "begin":
                    _echo(spec, t0, f"BEGIN {payload.name}")
                elif kind == "end":
                    t = f" in {payload.seconds:.1f}s" if payload.seconds is not None else ""
                    _echo(spec, t0, f"END   {payload.name} rc={payload.rc}{t}")
                elif kind == "finding":
                    _echo(spec, t0, f"!! {payload.kind}: {payload.text}")
                elif kind == "file":
                    _echo(spec, t0, f"file  {payload.name} ({len(payload.data or b'')} bytes)"
                          + (f" ERROR {payload.error}" if payload.error else ""))
                elif kind == "done":
                    _echo(spec, t0, "DONE")
            if spec.echo == "all" and not quiet:
                say(text)
        try:
            while True:
                now = time.monotonic()
                if now - t0 > spec.timeout:
                    hang = f"hang: still running after {fmt_secs(spec.timeout)} (--timeout)"
                    break
                if now - last_output > spec.idle_timeout:
                    last = scanner.line_no
                    hang = (f"hang: no console output for {fmt_secs(spec.idle_timeout)} "
                            f"(--idle-timeout) after line {last}")
                    break
                if done_at is not None and now - done_at > 30:
                    break   # poweroff did not end QEMU; the run itself is complete
                r, _, _ = select.select([fd], [], [], 1.0)
                if not r:
                    if proc.poll() is not None:
                        break
                    continue
                chunk = os.read(fd, 65536)
                if not chunk:
                    break
                last_output = time.monotonic()
                buf += chunk
                *lines, buf = buf.split(b"\n")
                for raw in lines:
                    handle(raw.rstrip(b"\r"))
                log.flush()
                if scanner.done and done_at is None:
                    done_at = time.monotonic()
        finally:
            if buf:
                handle(buf.rstrip(b"\r"))
            _stop(proc)
            stderr_f.close()
    report = scanner.finish()
    seconds = time.monotonic() - t0
    qrc = proc.returncode
    boot_problem = hang
    if not boot_problem and not report.done:
        err = (rdir / "qemu.stderr").read_text(errors="replace").strip().splitlines()
        why = f": {err[-1]}" if err else ""
        boot_problem = (f"the guest stopped before @@MO-DONE (QEMU exit {qrc}{why})"
                        if report.line_count else f"QEMU printed nothing (exit {qrc}{why})")
    known = spec.known_failures
    if known is None:
        known = results.load_known_failures(KNOWN_FAILURES)
    if any(f.kind == "int3" for f in report.findings):
        console.excuse_int3(report, patch_sites(spec.vmlinux or vmlinux_of(spec.kernel)))
    summ = results.summarize(report, spec.suites, boot_problem=boot_problem, known=known,
                             kunit_suites=spec.kunit_suites, require_debug=spec.require_debug)
    res = BootResult(spec=spec, accel=accel, results_dir=rdir, console_log=log_path,
                     report=report, summary=summ, qemu_rc=qrc, seconds=seconds, hang=hang)
    _save(res)
    return res


def vmlinux_of(kernel):
    """The vmlinux of a build dir's arch/x86/boot/bzImage, or None."""
    p = Path(kernel)
    if len(p.parts) >= 4 and p.parts[-3:] == ("x86", "boot", "bzImage"):
        cand = p.parents[3] / "vmlinux"
        if cand.is_file():
            return cand
    return None


def patch_sites(vmlinux):
    """console.PatchSites of a vmlinux, or None if there is none to read."""
    if vmlinux is None:
        return None
    try:
        return console.PatchSites.from_vmlinux(vmlinux)
    except (OSError, ValueError, IndexError):
        return None


def _die_with_parent():
    """In the child: get SIGKILL if the lab dies, so no guest is left running."""
    try:
        import ctypes
        import signal
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGKILL))   # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _stop(proc):
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    else:
        proc.wait()
    try:
        proc.stdout.close()
    except OSError:
        pass


def _save(res):
    """Write suite outputs, decoded files and a JSON summary into the results dir."""
    rdir = res.results_dir
    sdir = rdir / "suites"
    for b in res.report.blocks:
        sdir.mkdir(exist_ok=True)
        (sdir / f"{console.safe_name(b.name)}.log").write_text("\n".join(b.lines) + "\n")
    kl = results.kunit_lines(res.report.boot_lines)
    if kl:
        sdir.mkdir(exist_ok=True)
        (sdir / "kunit.log").write_text("\n".join(kl) + "\n")
    for xf in res.report.files:
        if xf.data is None:
            continue
        dest = rdir / "files" / xf.name
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(xf.data)
        res.files[xf.name] = dest
    data = {
        "label": res.spec.label, "kernel": str(res.spec.kernel), "initrd": str(res.spec.initrd),
        "accel": res.accel, "smp": res.spec.smp, "suites_requested": res.spec.suites,
        "args": res.spec.args, "seconds": round(res.seconds, 2), "qemu_rc": res.qemu_rc,
        "kunit_suites": list(res.spec.kunit_suites), "require_debug": res.spec.require_debug,
        "done": res.report.done, "hang": res.hang, "status": res.summary.status,
        "console_status": res.summary.console_status,
        "release": res.report.release, "states": res.report.states,
        "health": res.summary.health,
        "findings": [f.__dict__ for f in res.report.findings],
        "suites": [s.__dict__ for s in res.summary.suites],
        "files": {k: str(v) for k, v in res.files.items()},
        "protocol_errors": res.report.protocol_errors,
    }
    (rdir / "result.json").write_text(json.dumps(data, indent=2) + "\n")
    (rdir / "summary.txt").write_text("\n".join(res.summary.lines()) + "\n")


def print_summary(res):
    for line in res.summary.lines():
        say(line)
    say(f"console log: {rel(res.console_log)}")
