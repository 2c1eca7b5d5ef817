"""The bench suite (guest/bench/run_bench.sh and its lib_*.sh) run whole on
the host under busybox sh, with mo_bench and the kernel stubbed: mo_bench
by fixtures/mo_bench_stub.py, sysfs, procfs and the modules by a fake root
(copies of the scripts have their /sys/, /proc/ and /lib/modules/ paths
moved under it; nothing is left pointing at the real machine) and shell
functions standing in for insmod, rmmod, modprobe, mount, dmesg, uname and
nproc (lab/tests/bench_harness.py).

The suite runs from the checkout (as make host-bench runs it) and from the
layout guest/Makefile installs (suites/bench, bench/lib_*.sh), which is
what the guest runs."""

import re
import shutil
import subprocess

import pytest

from lab.molab import matrix
from lab.molab.util import GUEST
from lab.tests.bench_harness import BUSYBOX, run_suite

pytestmark = pytest.mark.skipif(not BUSYBOX, reason="busybox not installed")

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


def test_an_interrupted_run_puts_the_machine_back(tmp_path):
    # SIGTERM (a suite's timeout) in the tiering part, on a machine whose
    # engine was cpu: the trap puts every setting back, the engine too
    # (the whole run above starts from none, which it writes anyway)
    rc, out, _, recs, f = run_suite(tmp_path, env={**SMALL, "STUB_KILL_AT": "tiering"},
                                    engine="cpu")
    assert rc == 130 and "ok 1 bench" not in out
    assert {r["mode"] for r in recs} >= {"tput", "config"} and \
        not [r for r in recs if r["mode"] in ("tiering", "count")]
    assert (f / "sys/kernel/mm/migrate_offload/engine").read_text() == "cpu\n"
    assert (f / "sys/kernel/mm/migrate_offload/reasons").read_text() == "compaction demotion\n"
    assert (f / "sys/kernel/debug/migrate_offload/auto_split").read_text() == "1\n"
    assert (f / "sys/module/workqueue/parameters/default_affinity_scope").read_text() == "cache\n"


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


@pytest.mark.parametrize("text,want", [
    ("ci: mtcopy\nbench: cpu mtcopy-2\n", "cpu mtcopy-2"),
    ("# bench: none\nbench:\tcpu  dcbm-4   # the two that matter\nfull: none cpu\n",
     "cpu dcbm-4"),
    ("bench: auto split-1 \n", "auto split-1"),
    # the guest's sed: a name at the start of a line, its lines joined
    ("bench: none mtcopy-2\n  bench: cpu\nbench : dcbm-1\n", "none mtcopy-2"),
    ("bench: cpu\nbench: dcbm-4\n", "cpu dcbm-4"),
])
def test_the_guest_and_the_lab_read_the_bench_line_alike(tmp_path, text, want):
    src = _with_engine_list(tmp_path, text)
    want = tuple(want.split())
    assert matrix.scope_engines(src / "lib" / "engines.list")["bench"] == want
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
