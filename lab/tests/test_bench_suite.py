"""The bench suite (guest/bench/run_bench.sh and its lib_*.sh) run whole on
the host under busybox sh, with mo_bench and the kernel stubbed: mo_bench
by fixtures/mo_bench_stub.py, sysfs, procfs and the modules by a fake root
(copies of the scripts have their /sys/, /proc/ and /lib/modules/ paths
moved under it; nothing is left pointing at the real machine) and shell
functions standing in for insmod, rmmod, modprobe, mount, dmesg, uname and
nproc (busybox runs its own applets before any program on PATH).

The suite runs from the checkout (as make host-bench runs it) and from the
layout guest/Makefile installs (suites/bench, bench/lib_*.sh), which is
what the guest runs."""

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from lab.molab import matrix
from lab.molab.util import GUEST

BUSYBOX = shutil.which("busybox")
STUB = Path(__file__).parent / "fixtures" / "mo_bench_stub.py"
pytestmark = pytest.mark.skipif(not BUSYBOX, reason="busybox not installed")

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


def fake_root(top, patched=True, tracing=True, split=True, dma=False, wq=True):
    """The files of a machine the suite reads and writes: three nodes, no
    DMA channel (unless dma), the workqueue scope "cache"; patched: the
    migrate_offload files, the engine modules, debugfs and tracefs."""
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
        w("sys/kernel/mm/migrate_offload/engine", "none\n")
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


def rewrite(text, f):
    """A script's text with the machine's paths moved under the fake root."""
    for a in ("/sys/", "/proc/", "/lib/modules/", "/tmp/mo-bench."):
        text = text.replace(a, f"{f}{a}")
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


SMALL = {"MO_FOLIO": "4,2048", "MO_REPS": "1", "MO_COUNT": "1,8", "MO_LAT_PAGES": "1",
         "MO_LAT_FOLIOS": "1"}
# The bench's configurations as the lab reads them (guest/lib/engines.list)
CONFIGS = matrix.BENCH_CONFIGS


@pytest.fixture(scope="module")
def whole_run(tmp_path_factory):
    """One run of every part with the default configurations."""
    top = tmp_path_factory.mktemp("whole")
    return top, run_suite(top, env=SMALL)


def test_every_part_runs_and_the_machine_is_put_back(whole_run):
    rc, out, err, recs, f = whole_run[1]
    assert rc == 0 and out.rstrip().endswith("ok 1 bench\n1..1"), out + err
    modes = {r["mode"] for r in recs}
    assert modes >= {"run", "config", "memcpy", "alias", "tput", "tiering", "count", "latency",
                     "compaction", "profile", "splits", "auto_choice", "auto_split_model",
                     "part"}, modes
    # the guest ran the configurations the lab reads as the bench's
    cfg = [(r["config"], r["absent"]) for r in recs if r["mode"] == "config"]
    assert cfg == [(c, False) for c in CONFIGS]
    [run] = [r for r in recs if r["mode"] == "run"]
    assert run["configs"] == ",".join(CONFIGS) and run["variant"] == "patched"
    assert {"none", "auto", "split"} <= set(CONFIGS)
    assert run["wq_scope"] == "system" and run["reasons"] == "all"
    # every configuration to both targets; under the hog: none, mtcopy-2, auto
    tput = {(r["config"], r["to"], r.get("hog", False)) for r in recs if r["mode"] == "tput"}
    assert {(c, t) for c, t, h in tput if not h} == {(c, t) for c in CONFIGS for t in (1, 2)}
    assert {c for c, t, h in tput if h} == {"none", "mtcopy-2", "auto"}
    assert {(r["config"], r["hog"]) for r in recs if r["mode"] == "tiering"} == \
        {(c, h) for c in CONFIGS for h in (False, True)}
    assert {(r["config"], r["hog"]) for r in recs if r["mode"] == "compaction"} == \
        {(c, h) for c in ("none", "cpu", "dcbm-4", "auto") for h in (False, True)}
    assert {(r["config"], r["folio_kb"]) for r in recs if r["mode"] == "profile"} == \
        {(c, kb) for c in CONFIGS for kb in (4, 2048)}
    # the summaries: per part, and the tables against the first configuration
    assert "# cpu tput 0->2 GB/s: 4K " in out and "# auto tput hog 0->1 GB/s:" in out
    assert "# none profile 4K: unmap 20% flush 10% copy 30% move 40%" in out
    assert "# summary (means over reps; ratios against none)" in out
    assert "@@MO-FILE-BEGIN bench.jsonl" in out
    # put back as found: engine, reasons, auto_split, workqueue scope; the
    # modules the run loaded unloaded
    assert (f / "sys/kernel/mm/migrate_offload/engine").read_text() == "none\n"
    assert (f / "sys/kernel/mm/migrate_offload/reasons").read_text() == "compaction demotion\n"
    assert (f / "sys/kernel/debug/migrate_offload/auto_split").read_text() == "1\n"
    assert (f / "sys/module/workqueue/parameters/default_affinity_scope").read_text() == "cache\n"
    assert (f / "proc/modules").read_text() == ""


def test_failed_measurements_fail_the_run(tmp_path):
    rc, out, _, recs, _ = run_suite(tmp_path, env={
        **SMALL, "MO_FOLIO": "4,256", "MO_REPS": "2", "MO_TO": "1", "STUB_FAIL": "1",
        "MO_ENGINES": "none,cpu,mtcopy-1,mtcopy-2,auto", "STUB_IGNORE_HOG": "mtcopy-2"})
    assert rc == 1 and "\nnot ok 1 bench\n" in out
    assert "# mtcopy-1 tput 0->1: data NOT verified" in out
    assert "# cpu compaction compact hog: mo_bench exited with 3" in out
    assert "# auto tiering hog: data NOT verified" in out
    assert '# tput hog: 4 record(s) without "hog":true' in out
    assert "# 4 part(s) failed or did not verify their data" in out


def test_vanilla_runs_one_configuration(tmp_path):
    rc, out, _, recs, _ = run_suite(tmp_path, env=SMALL, patched=False)
    assert rc == 0, out
    assert {r["config"] for r in recs if "config" in r} == {"vanilla"}
    assert not [r for r in recs if r["mode"] == "profile"]


def test_the_guest_layout_finds_its_libs(tmp_path):
    """guest/Makefile's bench-kit (what make initramfs installs of the bench,
    nothing compiled): the suite as suites/bench runs from it."""
    out_dir = tmp_path / "OUT"
    subprocess.run(["make", "-s", "-C", str(GUEST), f"OUT={out_dir}", "bench-kit"], check=True,
                   capture_output=True)
    sourced = re.search(r"^for _l in (.*); do$", (GUEST / "bench/run_bench.sh").read_text(),
                        re.M).group(1).split()
    assert sourced and all((out_dir / "bench" / n).is_file() for n in sourced)
    rc, out, err, recs, _ = run_suite(tmp_path / "run", env={**SMALL, "MO_BENCH": "quick"},
                                      src=out_dir)
    assert rc == 0 and "ok 1 bench" in out, out + err
    assert {r["to"] for r in recs if r["mode"] == "tput"} == {1}


def test_a_missing_lib_is_one_tap_failure(tmp_path):
    src = tmp_path / "guest"
    shutil.copytree(GUEST / "bench", src / "bench")
    shutil.copytree(GUEST / "lib", src / "lib")
    (src / "bench" / "lib_parts.sh").unlink()
    rc, out, _, _, _ = run_suite(tmp_path / "run", env=SMALL, src=src)
    assert rc == 1
    assert out.splitlines()[-3:] == [f"# bench: lib_parts.sh not found in "
                                     f"{tmp_path}/run/kit/bench/../bench (guest/Makefile "
                                     "installs it)", "not ok 1 bench", "1..1"]


def test_summary_of_a_saved_file_from_either_layout(tmp_path, whole_run):
    """run_bench.sh --summary FILE [BASE]: the host-runnable path, the same
    from the checkout and from the guest's layout."""
    saved = whole_run[0] / "out" / "bench.jsonl"
    out_dir = tmp_path / "OUT"
    subprocess.run(["make", "-s", "-C", str(GUEST), f"OUT={out_dir}", "bench-kit"], check=True,
                   capture_output=True)
    outs = [subprocess.run([BUSYBOX, "sh", str(s), "--summary", str(saved), "cpu"],
                           capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"})
            for s in (GUEST / "bench/run_bench.sh", out_dir / "suites/bench")]
    assert outs[0].returncode == 0 and outs[0].stdout == outs[1].stdout, outs[0].stderr
    text = outs[0].stdout
    assert "# summary (means over reps; ratios against cpu)" in text
    for line in ("# none memcpy GB/s:", "# none alias: word copy 2m_apart",
                 "# split-1 tput 0->2 GB/s:", "# auto tput hog 0->1 GB/s:",
                 "# dcbm-4 compaction: ", "# cpu tiering: ", "# mtcopy-1 latency first usable us:",
                 "# none count GB/s:"):
        assert line in text, line
    r = subprocess.run([BUSYBOX, "sh", str(GUEST / "bench/run_bench.sh"), "--summary",
                        str(tmp_path / "nothing")], capture_output=True, text=True)
    assert r.returncode == 2 and "nothing: no such file" in r.stderr


def _with_engine_list(tmp_path, text):
    src = tmp_path / "guest"
    shutil.copytree(GUEST / "bench", src / "bench")
    (src / "lib").mkdir()
    (src / "lib" / "engines.list").write_text(text)
    return src


QUICK = {**SMALL, "MO_BENCH": "quick", "MO_TIER": "0", "MO_PROFILE": "0", "MO_HOG": "0"}


@pytest.mark.parametrize("text", [
    "ci: mtcopy\nbench: cpu mtcopy-2\n",
    "# bench: none\nbench:\tcpu  dcbm-4   # the two that matter\nfull: none cpu\n",
    "bench: auto split-1 \n",
])
def test_the_guest_and_the_lab_read_the_bench_line_alike(tmp_path, text):
    src = _with_engine_list(tmp_path, text)
    want = matrix.scope_engines(src / "lib" / "engines.list")["bench"]
    rc, out, err, recs, _ = run_suite(tmp_path / "run", env=QUICK, src=src)
    assert rc == 0, out + err
    [run] = [r for r in recs if r["mode"] == "run"]
    assert tuple(run["configs"].split(",")) == want
    assert tuple(r["config"] for r in recs if r["mode"] == "config") == want
    # MO_ENGINES still chooses
    rc, out, _, recs, _ = run_suite(tmp_path / "run2", env={**QUICK, "MO_ENGINES": "none,cpu"},
                                    src=src)
    assert [r["configs"] for r in recs if r["mode"] == "run"] == ["none,cpu"]


def test_no_bench_line_fails_the_run(tmp_path):
    src = _with_engine_list(tmp_path, "ci: mtcopy dcbm\n")
    rc, out, _, recs, _ = run_suite(tmp_path / "run", env=QUICK, src=src)
    assert rc == 1 and "\nnot ok 1 bench\n" in out
    assert ('# bench: no configuration: MO_ENGINES unset and no "bench:" line in '
            f"{tmp_path}/run/kit/bench/../lib/engines.list") in out
