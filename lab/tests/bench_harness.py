"""Running guest/bench's shell on the host under busybox sh, the kernel
stubbed (lab/tests/test_bench_suite.py, test_bench_presets.py): mo_bench by
fixtures/mo_bench_stub.py, sysfs, procfs and the modules by a fake root
(copies of the scripts have their /sys/, /proc/ and /lib/modules/ paths
moved under it; a copy left pointing at the real machine is refused) and
shell functions standing in for insmod, rmmod, modprobe, mount, dmesg,
uname, nproc, id, hostname and date (busybox runs its own applets before
any program on PATH, so they are defined in the shell that sources the
script)."""

import json
import re
import shutil
import subprocess
from pathlib import Path

from lab.molab.util import GUEST

BUSYBOX = shutil.which("busybox")
STUB = Path(__file__).parent / "fixtures" / "mo_bench_stub.py"

# Stand-ins for the commands that touch the kernel. The engine file of
# sysfs reads back "[selected] others"; the fake one holds what was
# written last, so the one sed that reads it reads it whole.
STUBS = r'''
insmod() { _n=$(basename "$1" .ko); shift; _stub_load "$_n" "$@"; }
modprobe() {
	case " $STUB_MODS " in *" $1 "*) _stub_load "$@" ;;
	*) echo "modprobe: module $1 not found in modules.dep" >&2; return 1 ;; esac
}
_stub_load() {
	mkdir -p "$FAKE/sys/module/$1/parameters"
	case $1 in
	mtcopy) echo 4 > "$FAKE/sys/module/mtcopy/parameters/threads" ;;
	dcbm) echo 1 > "$FAKE/sys/module/dcbm/parameters/nr_chan" ;;
	esac
	echo "$1 16384 0 - Live 0x0" >> "$FAKE/proc/modules"
	echo "stub: loaded $*" >> "$FAKE/log"
}
rmmod() {
	rm -rf "$FAKE/sys/module/$1"
	grep -v "^$1 " "$FAKE/proc/modules" > "$FAKE/proc/modules.new"
	mv "$FAKE/proc/modules.new" "$FAKE/proc/modules"
	echo "stub: unloaded $1" >> "$FAKE/log"
}
dmesg() { echo "[    1.000000] dcbm: not using swdma: a reason"; }
mount() { echo "stub: mount $*" >> "$FAKE/log"; return 1; }
uname() { [ "$1" = -r ] && echo 6.12.0-mo-stub || echo Linux; }
nproc() { echo 2; }
sed() {
	if [ $# = 3 ] && [ "$3" = "$FAKE/sys/kernel/mm/migrate_offload/engine" ]; then
		cat "$3"; return
	fi
	command sed "$@"
}
'''

TRACE = ("# entries-in-buffer/entries-written: 4/4   #P:2\n"
         " mo_bench-42 [000] ..... 1.0: tracing_mark_write: mo_bench: move begin\n"
         " mo_bench-42 [000] ..... 1.1: mm_migrate_batch_copy: reason=x engine=cpu folios=256 "
         "pages=16384 engine_pages=0 cpu_pages=16384 lost=0 poisoned=0 ns=3000000 engine_ns=0\n"
         " mo_bench-42 [000] ..... 1.2: mm_migrate_batch_phases: reason=x folios=256 pages=16384 "
         "unmap_ns=2000000 flush_ns=1000000 copy_ns=3000000 move_ns=4000000\n"
         " mo_bench-42 [000] ..... 1.3: tracing_mark_write: mo_bench: move end\n")

AUTO_MODEL = ("# engine size_kb batch_ns folio_ns mb_per_s samples chosen not_ready\n"
              "cpu 4 100 7000 585 1 3 0\nmtcopy 4 4000 4200 975 30 29 7\n"
              "split dcbm 140 5 6 480\n")


def fake_root(top, patched=True, tracing=True, split=True, dma=False, wq=True, engine="none"):
    """The files of a machine the suite reads and writes: three nodes, no
    DMA channel (unless dma), the workqueue scope "cache"; patched: the
    migrate_offload files (the engine selected: engine), the engine
    modules, debugfs and tracefs."""
    f = top / "fake"

    def w(p, text):
        p = f / p
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    w("proc/uptime", "100.00 50.00\n")
    w("proc/modules", "")
    w("log", "")
    (f / "tmp").mkdir()
    for n in (0, 1, 2):
        w(f"sys/devices/system/node/node{n}/hugepages/hugepages-2048kB/nr_hugepages", "0\n")
    if wq:
        w("sys/module/workqueue/parameters/default_affinity_scope", "cache\n")
    (f / "sys/class/dma").mkdir(parents=True)
    if dma:
        (f / "sys/class/dma/dma0chan0").mkdir()
    if patched:
        w("sys/kernel/mm/migrate_offload/engine", engine + "\n")
        w("sys/kernel/mm/migrate_offload/reasons", "compaction demotion\n")
        for m in ("mtcopy", "dcbm"):
            w(f"lib/modules/6.12.0-mo-stub/kernel/drivers/migrate_offload/{m}.ko", "")
        w("lib/modules/6.12.0-mo-stub/kernel/drivers/dma/swdma.ko", "")
        if split:
            w("sys/kernel/debug/migrate_offload/auto_split", "1\n")
        w("sys/kernel/debug/migrate_offload/auto_model", AUTO_MODEL)
        if tracing:
            for ev in ("mm_migrate_batch_phases", "mm_migrate_folio_copy",
                       "mm_migrate_batch_copy"):
                w(f"sys/kernel/tracing/events/migrate/{ev}/enable", "0\n")
            w("sys/kernel/tracing/buffer_size_kb", "7 (expanded: 1408)\n")
            w("sys/kernel/tracing/tracing_on", "0\n")
            w("sys/kernel/tracing/trace", "")
            w("sys/kernel/tracing/trace.in", TRACE)
    return f


# a path of the machine: not inside another path or word
MACHINE_PATH = re.compile(r"(?<![\w./-])/(?:sys/|proc/|lib/modules/|tmp/mo-bench\.)")


def rewrite(text, f):
    """A script's text with the machine's paths moved under the fake root."""
    text = MACHINE_PATH.sub(lambda m: f"{f}{m.group(0)}", text)
    left = re.findall(r"(?<![\w./-])/(?:sys|proc)/\S*", text)
    assert not left, f"paths of the real machine left: {left}"
    return text


def kit(src, dest, f):
    """A copy of a bench layout, scripts rewritten: src is guest/ (the
    checkout: bench/run_bench.sh) or an OUT of guest/Makefile (suites/bench);
    returns the script to run."""
    for sub in ("bench", "lib", "suites"):
        for p in sorted((src / sub).rglob("*")) if (src / sub).is_dir() else ():
            if not p.is_file() or (sub == "suites" and p.name != "bench"):
                continue
            q = dest / p.relative_to(src)
            q.parent.mkdir(parents=True, exist_ok=True)
            text = p.read_text()
            q.write_text(rewrite(text, f) if sub != "lib" else text)
    script = dest / "suites" / "bench"
    return script if script.exists() else dest / "bench" / "run_bench.sh"


def run_suite(tmp_path, args=(), env=None, src=GUEST, **fake):
    """(exit status, stdout, stderr, records, fake root) of one run."""
    f = fake_root(tmp_path, **fake)
    script = kit(Path(src), tmp_path / "kit", f)
    (tmp_path / "stubs.sh").write_text(STUBS)
    mb = tmp_path / "mo_bench"
    mb.write_text(f'#!/bin/sh\nexec python3 {STUB} "$@"\n')
    mb.chmod(0o755)
    e = {"PATH": "/usr/bin:/bin", "FAKE": str(f), "STUB_MODS": "",
         "STUB_TRACE": str(f / "sys/kernel/tracing/trace"), "MO_BENCH_BIN": str(mb),
         "MO_JSONL": str(tmp_path / "out" / "bench.jsonl"), "STUBS": str(tmp_path / "stubs.sh"),
         **(env or {})}
    # sourced into the shell that has the stand-in functions; $0 is the suite
    r = subprocess.run([BUSYBOX, "sh", "-c", '. "$STUBS"; . "$0"', str(script), *args],
                       env=e, capture_output=True, text=True, timeout=300)
    j = tmp_path / "out" / "bench.jsonl"
    recs = [json.loads(x) for x in j.read_text().splitlines()] if j.exists() else []
    return r.returncode, r.stdout, r.stderr, recs, f


# ------------------------------------------------- host_bench.sh (make host-bench)

HOST_STUBS = r'''
id() { echo 0; }
hostname() { echo box; }
date() { case $1 in -u) echo 20261129T000000Z ;; *) echo 1000 ;; esac; }
uname() { case $1 in -r) echo 6.12.0-mo-patched ;; *) echo "Linux box 6.12.0-mo-patched" ;; esac; }
nproc() { echo 4; }
'''

# run_bench.sh's stand-in: what host_bench.sh gave it, and a result
RUN_BENCH_STUB = '''#!/bin/sh
echo "$*" > "$MO_JSONL.args"
echo '{"mode":"run"}' > "$MO_JSONL"
echo "# run_bench stub"
echo "ok 1 bench"
'''


def fake_machine(top):
    """A patched NUMA machine: nodes 0 and 1 with CPUs in one memory tier,
    node 2 (memory only) in a lower one."""
    f = top / "fake"

    def w(p, text):
        p = f / p
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    for n, cpus in ((0, "0-1"), (1, "2-3"), (2, "")):
        w(f"sys/devices/system/node/node{n}/meminfo", f"Node {n} MemTotal:  16777216 kB\n")
        w(f"sys/devices/system/node/node{n}/cpulist", cpus + "\n")
    w("sys/devices/system/node/node0/distance", "10 20 30\n")
    w("sys/devices/virtual/memory_tiering/memory_tier4/nodelist", "0-1\n")
    w("sys/devices/virtual/memory_tiering/memory_tier22/nodelist", "2\n")
    w("sys/kernel/mm/migrate_offload/reasons", "all\n")
    w("sys/kernel/mm/migrate_offload/engine", "[none] cpu\n")
    (f / "sys/class/dma").mkdir(parents=True)
    w("proc/sys/kernel/numa_balancing", "0\n")
    for name, text in (("cpuinfo", "model name\t: A CPU\n"), ("cmdline", "ro\n"),
                       ("meminfo", "SwapTotal: 0 kB\n"), ("sys/vm/min_free_kbytes", "67584\n")):
        w(f"proc/{name}", text)
    return f


def run_host_bench(tmp_path, args=()):
    """host_bench.sh (with its preset reader and presets) on the fake
    machine, run_bench.sh stubbed: (exit status, stdout, stderr, facts.json
    or None, the arguments run_bench.sh got or None)."""
    f = fake_machine(tmp_path)
    bench = tmp_path / "kit" / "bench"
    shutil.copytree(GUEST / "bench" / "presets", bench / "presets")
    shutil.copy(GUEST / "bench" / "preset.sh", bench / "preset.sh")
    (bench / "host_bench.sh").write_text(rewrite((GUEST / "bench/host_bench.sh").read_text(), f))
    (bench / "run_bench.sh").write_text(RUN_BENCH_STUB)
    (tmp_path / "stubs.sh").write_text(STUBS + HOST_STUBS)
    out = tmp_path / "out"
    r = subprocess.run([BUSYBOX, "sh", "-c", '. "$STUBS"; . "$0"', str(bench / "host_bench.sh"),
                        str(out), *args],
                       env={"PATH": "/usr/bin:/bin", "FAKE": str(f),
                            "STUBS": str(tmp_path / "stubs.sh")},
                       capture_output=True, text=True, timeout=60)
    facts = got = None
    for d in out.glob("*/") if out.is_dir() else ():
        facts = json.loads((d / "facts.json").read_text())
        got = (d / "bench.jsonl.args").read_text().strip()
    return r.returncode, r.stdout, r.stderr, facts, got
