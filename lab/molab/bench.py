"""Building blocks of 'molab bench' (cli.cmd_bench): build, then boot alternately.

A benchmark compares kernels booted alternately in the same session:

    from lab.molab import bench
    builds = bench.prepare(["vanilla", "patched"], flavour="perf")
    runs = bench.alternate(builds, suite="bench_move_pages", args="--size 128M --folio 2M",
                           rounds=3, accel="multi")
    for r in runs:                      # BootResult, see qemu.py
        r.label, r.summary.ok, r.files  # files the guest sent back (mo-sendfile / MO_OUTDIR)
        r.retried                       # earlier attempts of that slot (emulator fault)

Boots alternate A B / B A / A B ... so that drift over time does not favour
one kernel. Under multi-threaded TCG a boot that ends in the known emulator
fault (an int3 oops while patching text) is retried, and reported if it keeps
failing; the attempts it replaced stay on the result (``.retried``) so that
the report can list them with their findings.
"""

import subprocess
import time
from pathlib import Path

from . import initramfs, kernel, qemu
from .console import STATUS_EMULATOR
from .errors import LabError
from .util import GUEST, RESULTS, say, utc_stamp

# make bench's presets (PRESET=name): guest/bench/presets/<name>, read by
# guest/bench/preset.sh alone, which make host-bench's runner runs too.
PRESET_READER = GUEST / "bench" / "preset.sh"
DEFAULT_PRESET = "full"
DEFAULT_ROUNDS = 3


def read_preset(name):
    """(MO_*=value settings in the file's order, ROUNDS or None) of a preset;
    LabError (one line: what preset.sh said) for an unknown name or a bad
    file."""
    r = subprocess.run(["sh", str(PRESET_READER), name], capture_output=True, text=True)
    if r.returncode != 0:
        raise LabError(r.stderr.strip() or f"{PRESET_READER.name} {name} exited with "
                       f"{r.returncode}", "a preset is a file of guest/bench/presets/")
    settings, rounds = [], None
    for line in r.stdout.split():
        if line.startswith("ROUNDS="):
            rounds = int(line[len("ROUNDS="):])
        else:
            settings.append(line)
    return settings, rounds


def vm_preset(name):
    """read_preset for make bench, which refuses a preset for a real machine
    (a value host_bench.sh fills from the machine: @targets, @cpu0)."""
    settings, rounds = read_preset(name)
    machine = [s for s in settings if s.partition("=")[2].startswith("@")]
    if machine:
        raise LabError(f"preset {name} is for a real machine ({', '.join(machine)}: "
                       "host_bench.sh fills them from the machine's nodes)",
                       f"run 'make host-bench PRESET={name}' on that machine")
    return settings, rounds


def prepare(variants=("vanilla", "patched"), flavour="perf", ksrc=None):
    """Build each variant's kernel and initramfs; returns {variant: KernelBuild}."""
    out = {}
    for v in variants:
        kb = kernel.ensure(v, flavour, ksrc)
        initramfs.build(kb)
        out[v] = kb
    return out


def alternate(builds, suite, args="", rounds=3, accel="multi", smp=2, files=None,
              label="bench", timeout=3600, idle_timeout=600, emulator_retries=2):
    """Boot every build ``rounds`` times, alternating, running one suite.

    ``builds`` maps a name to a KernelBuild (or to a (bzImage, initrd) pair);
    ``files`` ({guest path: bytes|str|Path}) are added to every boot's
    initramfs. Returns the BootResults in boot order, each with ``.label``
    set to "<name>-r<round>" and ``.retried`` listing the earlier attempts of
    that slot that ended in the excused emulator fault (kept, never hidden).
    """
    top = RESULTS / f"{label}-{utc_stamp()}"
    top.mkdir(parents=True, exist_ok=True)
    images = {}
    for name, b in builds.items():
        kern, initrd = (b.bzimage, b.initramfs) if hasattr(b, "bzimage") else map(Path, b)
        if files:
            initrd = initramfs.overlay(initrd, files, top / f"initrd-{name}.cpio")
        images[name] = (kern, initrd)
    names = list(images)
    results = []
    for r in range(rounds):
        order = names if r % 2 == 0 else names[::-1]
        for name in order:
            kern, initrd = images[name]
            earlier = []
            for attempt in range(emulator_retries + 1):
                run_label = f"{name}-r{r}" + (f"-retry{attempt}" if attempt else "")
                spec = qemu.BootSpec(kernel=kern, initrd=initrd, suites=[suite], args=args,
                                     accel=accel, smp=smp, timeout=timeout,
                                     idle_timeout=idle_timeout, label=run_label, prealloc=True,
                                     results_dir=top / run_label)
                t0 = time.monotonic()
                res = qemu.boot(spec)
                say(f"  {run_label}: {res.summary.status} in {time.monotonic() - t0:.0f}s")
                if res.summary.console_status != STATUS_EMULATOR:
                    break
                earlier.append(res)
            res.retried = earlier[:-1] if earlier and earlier[-1] is res else earlier
            results.append(res)
    return results
