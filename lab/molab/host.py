"""The kit for real machines: the bench suite on the host, then one report.

On a NUMA or CXL machine, from a checkout, as root:

    make host-bench            # booted into the vanilla kernel
    (reboot into the patched kernel: make deb, dpkg -i, reboot)
    make host-bench            # booted into the patched kernel
    make host-report           # merge build/host/*/ into one report

host-bench builds mo_bench for this machine (gcc, libnuma-dev) and runs
guest/bench/host_bench.sh (the same runner the lab's host_kit suite runs in
its guest), which writes build/host/<host>-<variant>-<release>-<stamp>/.
host-report reads such directories (vanilla and patched, and as many of
each as were run: the k-th of each variant pair up as round k, so run them
alternately) and writes make bench's tables, JSON, CSV and plots.
"""

import json
import os
import shutil
import subprocess
from pathlib import Path

from .errors import LabError
from .util import BUILD, GUEST, ROOT, rel, run, say

HOST_DIR = BUILD / "host"
HOST_BENCH = GUEST / "bench" / "host_bench.sh"
FACT_FILES = ("facts.json", "bench.jsonl")


def _have_libnuma():
    return any(Path(d, "numaif.h").exists() for d in ("/usr/include", "/usr/local/include"))


def build_mo_bench(outdir):
    """mo_bench for this machine (dynamically linked); returns its path."""
    if not shutil.which("cc") or not _have_libnuma():
        if shutil.which("apt-get") and os.geteuid() == 0:
            say("== installing gcc and libnuma-dev (apt-get)")
            run(["apt-get", "install", "-y", "-qq", "gcc", "libc6-dev", "libnuma-dev"],
                capture=True, what="apt-get install gcc libnuma-dev",
                hint="install a C compiler and libnuma's headers, then run again")
        else:
            raise LabError("no C compiler or no libnuma headers (numaif.h)",
                           "install gcc and libnuma-dev (or your distribution's "
                           "numactl-devel), then run again")
    outdir.mkdir(parents=True, exist_ok=True)
    exe = outdir / "mo_bench"
    srcs = [*sorted((GUEST / "mo_bench").glob("*.c")), GUEST / "lib" / "mo_state.c"]
    run(["cc", "-O2", "-Wall", "-o", str(exe), *map(str, srcs),
         "-lnuma", "-lpthread", "-lm"], cwd=GUEST, what="building mo_bench",
        hint="see the compiler's message above")
    return exe


def host_bench(outdir=None, args="", preset=None):
    """Run the bench suite on this machine with guest/bench/presets/<preset>
    (host_bench.sh's default: hardware); returns host_bench.sh's exit status."""
    if os.geteuid() != 0:
        raise LabError("make host-bench needs root (it changes and restores sysfs "
                       "settings, loads the engine modules)", "run it as root")
    out = Path(outdir) if outdir else HOST_DIR
    exe = build_mo_bench(BUILD / "host-bin")
    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                            cwd=ROOT).stdout.strip()
    env = dict(os.environ, MO_BENCH_BIN=str(exe), MO_KIT_COMMIT=commit)
    say(f"== host bench on {os.uname().nodename} ({os.uname().release}): results under "
        f"{rel(out)}")
    cmd = ["sh", str(HOST_BENCH), str(out), *(["--preset", preset] if preset else []),
           *args.split()]
    return subprocess.run(cmd, env=env, cwd=ROOT).returncode


def _read_run(d):
    """(facts, path of bench.jsonl) of one host_bench.sh result directory."""
    d = Path(d)
    missing = [f for f in FACT_FILES if not (d / f).is_file()]
    if missing:
        raise LabError(f"{rel(d)}: not a host-bench result (no {', '.join(missing)})",
                       "give directories written by 'make host-bench' (build/host/*/)")
    try:
        facts = json.loads((d / "facts.json").read_text())
    except ValueError as e:
        raise LabError(f"{rel(d / 'facts.json')}: not JSON ({e})",
                       "the run was cut short: run make host-bench again")
    if facts.get("variant") not in ("vanilla", "patched"):
        raise LabError(f"{rel(d / 'facts.json')}: variant {facts.get('variant')!r} is not "
                       "vanilla or patched", "give directories written by make host-bench")
    return facts, d / "bench.jsonl"


def find_runs(top=None):
    """The result directories under ``top`` (build/host), oldest first."""
    top = Path(top) if top else HOST_DIR
    return sorted((d for d in top.glob("*/") if (d / "facts.json").is_file()),
                  key=lambda d: json.loads((d / "facts.json").read_text()).get("started", ""))


def merge(dirs):
    """A bench run (as make bench's bench.json holds it) from host runs.

    The k-th vanilla and the k-th patched run (in the order they started)
    are round k; records of a variant without a partner in its round stay
    in the tables but give no ratio.
    """
    from . import report
    dirs = list(dict.fromkeys(Path(d).resolve() for d in dirs))   # each once
    runs = [(_read_run(d), Path(d)) for d in dirs]
    runs.sort(key=lambda x: x[0][0].get("started", ""))
    variants = {f["variant"] for (f, _), _ in runs}
    if variants != {"vanilla", "patched"}:
        have = ", ".join(sorted(variants)) or "none"
        raise LabError(f"host-report needs a vanilla and a patched run; have: {have}",
                       "run make host-bench once booted into each kernel, then host-report "
                       "with both directories")
    machines = {(f.get("hostname"), f.get("cpu_model"), f.get("cpus")) for (f, _), _ in runs}
    if len(machines) > 1:
        raise LabError(f"the runs come from {len(machines)} different machines: "
                       + "; ".join(f"{h} ({c}, {n} CPUs)" for h, c, n in sorted(machines, key=str)),
                       "only runs of one machine compare; give that machine's directories")
    # One experiment: the same settings in every run, else the ratios
    # would compare different buffers, windows or targets.
    settings = {(f.get("args"), f.get("targets")) for (f, _), _ in runs}
    if len(settings) > 1:
        raise LabError("the runs were made with different settings: "
                       + "; ".join(f"{a} (targets {t})" for a, t in sorted(settings, key=str)),
                       "compare runs made with the same BENCH_ARGS; give those directories")
    seen = {"vanilla": 0, "patched": 0}
    records, problems, host_runs = [], [], []
    for (facts, jsonl), d in runs:
        v = facts["variant"]
        rnd = seen[v]
        seen[v] += 1
        recs = report.load_records(jsonl, v, rnd)
        lines = [l for l in jsonl.read_text(errors="replace").splitlines()
                 if l.strip().startswith("{")]
        if len(lines) != len(recs):
            problems.append(f"{d.name}: {len(lines) - len(recs)} line(s) of bench.jsonl are "
                            "not JSON (cut short?)")
        if facts.get("not_put_back"):
            problems.append(f"{d.name}: settings not put back after the run: "
                            f"{facts['not_put_back']}")
        if facts.get("rc") != 0:
            problems.append(f"{d.name}: run_bench.sh exited {facts.get('rc')} "
                            f"(see {rel(d / 'bench.log')})")
        records += recs
        host_runs.append({"dir": rel(d), "round": rnd, **facts})
    return {"facts": {"host_runs": host_runs}, "args": "", "rounds": max(seen.values()),
            "records": records, "problems": problems, "boots": []}
