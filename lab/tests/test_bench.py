"""bench.alternate and cli.cmd_bench without building or booting anything:
qemu.boot and the build steps are replaced by fakes that return what a boot
would (a status, console findings, the bench.jsonl the guest sent)."""

import json
from pathlib import Path
from types import SimpleNamespace

from lab.molab import bench, cli
from lab.molab.console import STATUS_EMULATOR, STATUS_OK, Finding


def fake_result(label, tmp_path, status="PASS", findings=(), records=()):
    """A BootResult-like object: what cmd_bench and alternate read of one."""
    d = tmp_path / label
    d.mkdir(parents=True, exist_ok=True)
    log = d / "console.log"
    log.write_text("")
    jsonl = d / "bench.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in records))
    console = STATUS_EMULATOR if status == STATUS_EMULATOR else \
        (STATUS_OK if not findings else "FAIL")
    ok = status == "PASS"
    summary = SimpleNamespace(
        ok=ok, status=status, console_status=console,
        lines=lambda: ([f"{'PASS' if ok else 'FAIL'}  bench  (1 test)", "1 passed, 0 failed"]))
    return SimpleNamespace(label=label, ok=ok, summary=summary,
                           report=SimpleNamespace(findings=list(findings)),
                           console_log=log, results_dir=d, files={"bench.jsonl": jsonl},
                           retried=[])


def int3(line):
    return Finding(kind="emulator-fault", line_no=line, text="Oops: int3: 0000 [#1] SMP",
                   rip="static_key_enable+0x5/0x20", excuse="jump-label site")


def test_alternate_keeps_every_retried_attempt(monkeypatch, tmp_path):
    plan = {"patched-r0": STATUS_EMULATOR, "patched-r0-retry1": "PASS",
            "vanilla-r1": STATUS_EMULATOR, "vanilla-r1-retry1": STATUS_EMULATOR}
    booted = []

    def boot(spec):
        booted.append(spec.label)
        st = plan.get(spec.label, "PASS")
        return fake_result(spec.label, tmp_path, st,
                           [int3(7)] if st == STATUS_EMULATOR else [])
    monkeypatch.setattr(bench, "RESULTS", tmp_path)
    monkeypatch.setattr(bench.qemu, "boot", boot)
    runs = bench.alternate({"vanilla": ("bz", "rd"), "patched": ("bz", "rd")}, "bench",
                           rounds=2, emulator_retries=1)
    assert booted == ["vanilla-r0", "patched-r0", "patched-r0-retry1", "patched-r1",
                      "vanilla-r1", "vanilla-r1-retry1"]
    assert [r.label for r in runs] == ["vanilla-r0", "patched-r0-retry1", "patched-r1",
                                       "vanilla-r1-retry1"]
    assert [[e.label for e in r.retried] for r in runs] == [[], ["patched-r0"], [],
                                                            ["vanilla-r1"]]
    # retries used up: the slot's result is the last attempt, still a fault
    assert runs[3].summary.status == STATUS_EMULATOR
    assert runs[1].retried[0].report.findings[0].line_no == 7


def _bench_args(*extra):
    return cli.build_parser().parse_args(["bench", *extra])


def test_cmd_bench_leaves_boots_with_findings_out_and_lists_them(monkeypatch, tmp_path):
    def tput(variant, rnd, config, gbps):
        return {"mode": "tput", "config": config, "folio_kb": 4, "to": 1, "gbps": gbps,
                "pages": 16, "stayed_behind": 0}
    warn = Finding(kind="warning", line_no=40, text="WARNING: CPU: 1 PID: 7 at mm/migrate.c:1")
    retried = fake_result("patched-r0", tmp_path, STATUS_EMULATOR, [int3(9)])
    runs = [fake_result("vanilla-r0", tmp_path, records=[tput("vanilla", 0, "vanilla", 1.0)]),
            fake_result("patched-r0-retry1", tmp_path,
                        records=[tput("patched", 0, "cpu", 1.0)]),
            # a boot with a console finding: its records must not reach the tables
            fake_result("patched-r1-retry1", tmp_path, "FAIL", [warn],
                        records=[tput("patched", 1, "cpu", 100.0)]),
            fake_result("vanilla-r1", tmp_path, records=[tput("vanilla", 1, "vanilla", 1.0)])]
    runs[1].retried = [retried]
    runs[2].retried = [fake_result("patched-r1", tmp_path, STATUS_EMULATOR, [int3(5)])]
    monkeypatch.setattr(cli.os, "geteuid", lambda: 1000)      # no lab/setup.sh
    _patch_bench(monkeypatch, runs)

    assert cli.cmd_bench(_bench_args("--rounds", "2")) == cli.EXIT_FAIL
    run = json.loads((tmp_path / "bench.json").read_text())
    assert [r["gbps"] for r in run["records"] if r["config"] == "cpu"] == [1.0]
    assert run["summary"]["measurements"] == 3
    boots = {b["label"]: b for b in run["boots"]}
    bad = boots["patched-r1-retry1"]
    assert (bad["ok"], bad["status"]) == (False, "FAIL")
    assert bad["findings"][0]["text"].startswith("WARNING: CPU: 1") and \
        bad["findings"][0]["line"] == 40
    assert bad["console_log"].endswith("patched-r1-retry1/console.log")
    [r] = boots["patched-r0-retry1"]["retried"]
    assert (r["label"], r["status"], r["findings"][0]["kind"]) == \
        ("patched-r0", STATUS_EMULATOR, "emulator-fault")
    for name in ("report.txt", "report.md"):
        text = (tmp_path / name).read_text()
        assert "patched-r1-retry1: FAIL (excluded): warning: WARNING: CPU: 1 PID: 7" in text, \
            name
        assert str(Path("patched-r1-retry1") / "console.log") in text
        assert "patched-r0: EMULATOR-FAULT" in text and "Oops: int3" in text
        # each attempt once, even a slot that was both retried and excluded
        assert text.count("patched-r1-retry1: FAIL") == 1
        assert text.count("patched-r1: EMULATOR-FAULT") == 1


def test_rerender_of_an_old_bench_json(tmp_path):
    # A bench.json from before boots, moved bytes, folio shares and absent reasons.
    recs = [{"mode": "tput", "config": c, "folio_kb": 2048, "to": 1, "gbps": g, "variant": v,
             "round": r} for r in (0, 1)
            for c, g, v in (("vanilla", 1.0, "vanilla"), ("none", 1.0, "patched"),
                            ("mtcopy-2", 1.6, "patched"))]
    recs.append({"mode": "config", "config": "dcbm-4", "absent": True, "variant": "patched",
                 "round": 0})
    facts = {"kernels": {"vanilla": {"release": "6.12.117", "base": "x"}}, "qemu": ["QEMU x"],
             "host_cpu": "cpu", "host_cpus": 2, "git_commit": "0" * 40, "git_dirty": False}
    (tmp_path / "bench.json").write_text(json.dumps({"facts": facts, "args": "", "rounds": 2,
                                                     "records": recs, "problems": []}))
    assert cli.main(["bench", "--rerender", str(tmp_path)]) == cli.EXIT_OK
    text = (tmp_path / "report.txt").read_text()
    assert "measurements: 6 (tput 6), 0 skipped; 7 record lines" in text
    assert "dcbm-4 (patched, round 0)" in text
    assert "(goal >= 1.5x: met)" in text
    md = (tmp_path / "report.md").read_text()
    assert "| mtcopy-2 | 1.60 [1.60..1.60] p 0.19 / 1.60 [1.60..1.60] p 0.19 |" in md
    summary = json.loads((tmp_path / "bench.json").read_text())["summary"]
    assert summary["goals"][0]["verdict"] == "met"


def test_rerender_fails_a_run_that_had_boots_with_findings(tmp_path):
    recs = [{"mode": "tput", "config": "vanilla", "folio_kb": 4, "to": 1, "gbps": 1.0,
             "variant": "vanilla", "round": 0}]
    facts = {"kernels": {}, "qemu": [], "host_cpu": "", "host_cpus": 2, "git_commit": "",
             "git_dirty": False}
    boot = {"label": "patched-r0", "status": "FAIL", "ok": False, "console_log": "c.log",
            "findings": [], "problems": ["FAIL  bench  exit code 1"], "retried": []}
    (tmp_path / "bench.json").write_text(json.dumps({"facts": facts, "records": recs,
                                                     "boots": [boot]}))
    assert cli.main(["bench", "--rerender", str(tmp_path)]) == cli.EXIT_FAIL
    assert "patched-r0: FAIL (excluded): FAIL  bench  exit code 1 (c.log)" in \
        (tmp_path / "report.txt").read_text()


def _patch_bench(monkeypatch, runs):
    monkeypatch.setattr(cli, "run_setup", lambda: None)
    monkeypatch.setattr(cli.tree, "ensure_tree", lambda ksrc, **kw: None)
    monkeypatch.setattr(bench, "prepare", lambda *a, **k: {})
    monkeypatch.setattr(bench, "alternate", lambda *a, **k: runs)
    monkeypatch.setattr(cli, "_host_facts", lambda builds: {
        "kernels": {}, "qemu": ["QEMU x"], "host_cpu": "cpu", "host_cpus": 2,
        "git_commit": "0" * 40, "git_dirty": False})


def test_cmd_bench_that_measured_nothing_fails(monkeypatch, tmp_path):
    # Clean boots whose every record is bookkeeping, absent or skipped: no figure at all.
    recs = [{"mode": "run", "kernel": "6.12.117"},
            {"mode": "config", "config": "dcbm-4", "absent": True, "reason": "no channels"},
            {"mode": "tput", "config": "cpu", "folio_kb": 2048, "to": 1, "skipped": True,
             "reason": "no THP"}]
    runs = [fake_result("vanilla-r0", tmp_path, records=recs),
            fake_result("patched-r0", tmp_path, records=recs)]
    _patch_bench(monkeypatch, runs)
    assert cli.cmd_bench(_bench_args("--rounds", "1")) == cli.EXIT_FAIL
    assert "run FAILED: nothing was measured" in (tmp_path / "report.txt").read_text()
    assert cli.main(["bench", "--rerender", str(tmp_path)]) == cli.EXIT_FAIL


def test_cmd_bench_names_a_boot_that_sent_no_data_in_the_report(monkeypatch, tmp_path):
    tput = {"mode": "tput", "config": "vanilla", "folio_kb": 4, "to": 1, "gbps": 1.0}
    runs = [fake_result("vanilla-r0", tmp_path, records=[tput]),
            fake_result("patched-r0", tmp_path)]
    del runs[1].files["bench.jsonl"]
    _patch_bench(monkeypatch, runs)
    assert cli.cmd_bench(_bench_args("--rounds", "1")) == cli.EXIT_FAIL
    for name in ("report.txt", "report.md"):
        text = (tmp_path / name).read_text()
        assert "run FAILED: patched-r0: no bench.jsonl came back" in text, name
    assert cli.main(["bench", "--rerender", str(tmp_path)]) == cli.EXIT_FAIL


def test_rerender_of_an_old_run_with_problems_fails_and_reports_them(tmp_path):
    # Before boots were recorded, a boot with findings was only a "problems" line
    # (and its records stayed in): the rerendered report must say so and fail.
    recs = [{"mode": "tput", "config": "vanilla", "folio_kb": 4, "to": 1, "gbps": 1.0,
             "variant": "vanilla", "round": 0}]
    facts = {"kernels": {}, "qemu": [], "host_cpu": "", "host_cpus": 2, "git_commit": "",
             "git_dirty": False}
    problem = "patched-r1: FAIL (build/results/bench-x/patched-r1/console.log)"
    (tmp_path / "bench.json").write_text(json.dumps({"facts": facts, "records": recs,
                                                     "problems": [problem]}))
    assert cli.main(["bench", "--rerender", str(tmp_path)]) == cli.EXIT_FAIL
    assert f"run FAILED: {problem}" in (tmp_path / "report.txt").read_text()


# --- the guest's phase profile (guest/bench/run_bench.sh profile_one) -------

import re as _re
import shutil as _shutil
import subprocess as _subprocess

import pytest as _pytest


_BB = _shutil.which("busybox")


def _bench_sources():
    """run_bench.sh and the lib_*.sh it sources, as one text."""
    bench = Path(__file__).resolve().parents[2] / "guest/bench"
    return "".join(p.read_text() for p in sorted(bench.glob("*.sh")))


def _profile(tmp_path, trace, tput, workqueue=False):
    """Run profile_one from run_bench.sh under busybox sh against a stub
    tracefs whose trace file is ``trace`` and a stub mo_bench printing
    ``tput``; returns (FAILED, the profile line, the human lines)."""
    from pathlib import Path
    src = _bench_sources()
    jv = _re.search(r"^AWK_JV='[^']*'", src, _re.M).group(0)
    fn = _re.search(r"^profile_one\(\) \{.*?^\}", src, _re.S | _re.M).group(0)
    tr = tmp_path / "tr"
    for ev in ("mm_migrate_batch_phases", "mm_migrate_folio_copy", "mm_migrate_batch_copy"):
        (tr / "events/migrate" / ev).mkdir(parents=True)
        (tr / "events/migrate" / ev / "enable").write_text("0")
    if workqueue:   # mtcopy loaded: the function filters can be set
        for ev in ("workqueue_queue_work", "workqueue_execute_start"):
            (tr / "events/workqueue" / ev).mkdir(parents=True)
            for f in ("enable", "filter"):
                (tr / "events/workqueue" / ev / f).write_text("0")
    (tmp_path / "mb").write_text(f"#!/bin/sh\ncp {tmp_path}/trace.in {tr}/trace\necho '{tput}'\n")
    (tmp_path / "mb").chmod(0o755)
    (tmp_path / "trace.in").write_text(trace)
    work = tmp_path / "w"
    work.mkdir()
    script = (f"{jv}\nTR={tr}\nPEVS='mm_migrate_batch_phases mm_migrate_folio_copy "
              f"mm_migrate_batch_copy'\nMB={tmp_path}/mb\nWORK={work}\nJ={work}/bench.jsonl\n"
              f"SIZE=1\nTO1=1\nREPS=2\nENGINE=cpu\nFAILED=0\nNMEAS=0\n{fn}\n"
              f"profile_one cpu 4\necho FAILED=$FAILED\n")
    # profile_one empties the trace first: the stub mo_bench writes it.
    out = _subprocess.run([_BB, "sh", "-c", script], capture_output=True, text=True,
                          cwd=tmp_path).stdout
    failed = int(_re.search(r"FAILED=(\d+)", out).group(1))
    line = (work / "bench.jsonl").read_text().strip()
    return failed, json.loads(line), [x for x in out.splitlines() if x.startswith("#")]


_HDR = "# entries-in-buffer/entries-written: 9/9   #P:2\n"
_TPUT = ('{"mode":"tput","config":"cpu","pages":256,"stayed_behind":0,"seconds":0.01,'
         '"gbps":0.1,"verified":true}')


def _ev(name, body):
    return f" mo_bench-42 [000] ..... 1.000000: {name}: {body}\n"


def _good_trace(extra=""):
    return (_HDR
            + _ev("mm_migrate_batch_phases", "reason=syscall_or_cpuset mode=MIGRATE_SYNC folios=1 "
                  "pages=1 unmap_ns=5 flush_ns=5 copy_ns=5 move_ns=5")   # placement: not counted
            + _ev("tracing_mark_write", "mo_bench: move begin")
            + _ev("mm_migrate_batch_copy", "reason=syscall_or_cpuset mode=MIGRATE_SYNC engine=cpu "
                  "folios=256 pages=256 engine_pages=0 cpu_pages=256 lost=0 poisoned=0 ns=3000000 "
                  "engine_ns=0")
            + _ev("mm_migrate_batch_phases", "reason=syscall_or_cpuset mode=MIGRATE_SYNC folios=256 "
                  "pages=256 unmap_ns=2000000 flush_ns=1000000 copy_ns=3000000 move_ns=4000000")
            + extra
            + _ev("tracing_mark_write", "mo_bench: move end"))


@_pytest.mark.skipif(not _BB, reason="busybox not installed")
def test_profile_sums_the_timed_move_only(tmp_path):
    failed, rec, lines = _profile(tmp_path, _good_trace(), _TPUT)
    assert failed == 0, lines
    assert rec["pages"] == 256 and rec["batches"] == 1 and rec["markers"] == 2
    assert rec["unmap_ns"] == 2000000 and rec["copy_ns"] == 3000000
    assert rec["batch_copy_pages"] == 256 and rec["lost_events"] == 0
    assert any("unmap 20% flush 10% copy 30% move 40%" in x for x in lines), lines
    assert rec["dcbm_batches"] == 0 and rec["dcbm_folios"] == 0


@_pytest.mark.skipif(not _BB, reason="busybox not installed")
def test_profile_sums_dcbms_own_steps_inside_the_move(tmp_path):
    db = ("folios=128 bytes=524288 runs=4 descriptors=128 plan_ns=1000 submit_ns=20000 "
          "wait_ns=900000 teardown_ns=3000")
    trace = _good_trace(_ev("dcbm_batch", db)).replace(
        _ev("tracing_mark_write", "mo_bench: move begin"),
        _ev("dcbm_batch", db) + _ev("tracing_mark_write", "mo_bench: move begin"))
    failed, rec, lines = _profile(tmp_path, trace, _TPUT)
    assert failed == 0, lines
    # the one before the begin marker (the placement move) is not counted
    assert rec["dcbm_batches"] == 1 and rec["dcbm_folios"] == 128
    assert rec["dcbm_descriptors"] == 128 and rec["dcbm_plan_ns"] == 1000
    assert rec["dcbm_submit_ns"] == 20000 and rec["dcbm_wait_ns"] == 900000
    assert rec["dcbm_teardown_ns"] == 3000


@_pytest.mark.skipif(not _BB, reason="busybox not installed")
def test_profile_counts_mtcopys_helpers_queued_and_ran(tmp_path):
    def q(p):
        return _ev("workqueue_queue_work", f"work struct={p} function=mtcopy_work_fn "
                   "workqueue=mtcopy req_cpu=1 cpu=1")

    def ran(p, fn="mtcopy_work_fn"):
        return (f" kworker/1:1H-77 [001] ..... 1.000000: workqueue_execute_start: work struct "
                f"{p}: function {fn}\n")
    # two queued in the move, one ran; one queued before the begin marker;
    # another task's helper (not queued by mo_bench) and other work ran too
    trace = _good_trace(q("00a1") + q("00a2") + ran("00a1") + ran("00ff")
                        + ran("00a2", "vmstat_update")).replace(
        _ev("tracing_mark_write", "mo_bench: move begin"),
        q("00a0") + _ev("tracing_mark_write", "mo_bench: move begin"))
    failed, rec, lines = _profile(tmp_path, trace, _TPUT, workqueue=True)
    assert failed == 0, lines
    assert rec["helpers_queued"] == 2 and rec["helpers_ran"] == 1
    # without the workqueue events (mtcopy not loaded): not traced, not 0
    failed, rec, lines = _profile(tmp_path / "no", trace, _TPUT)
    assert rec["helpers_queued"] is None and rec["helpers_ran"] is None


@_pytest.mark.skipif(not _BB, reason="busybox not installed")
@_pytest.mark.parametrize("trace,tput,why", [
    (_HDR, _TPUT, "markers 0"),                                  # nothing traced
    (_good_trace().replace("pages=256 unmap", "pages=128 unmap"), _TPUT, "cover 128 of 256"),
    (_good_trace().replace("cpu_pages=256", "cpu_pages=100"), _TPUT, "pages copied of"),
    (_good_trace(), _TPUT.replace('"seconds":0.01', '"seconds":0.001'), "phases"),
    (_good_trace(_ev("mm_migrate_folio_copy", "pages=1 rc=0 ns=9000000")), _TPUT,
     "longer than the move phase"),
    (_good_trace().replace("9/9", "7/9"), _TPUT, "trace events lost"),
    (_good_trace(), _TPUT.replace('"verified":true', '"verified":false'), "NOT verified"),
])
def test_profile_fails_what_it_cannot_vouch_for(tmp_path, trace, tput, why):
    failed, _, lines = _profile(tmp_path, trace, tput)
    assert failed >= 1 and any(why in x for x in lines), lines


def _auto_choices(tmp_path, model, rep=""):
    """auto_choices from run_bench.sh under busybox sh against a stub
    debugfs auto_model; returns the JSON records it printed."""
    from pathlib import Path
    src = _bench_sources()
    fn = _re.search(r"^auto_choices\(\) \{.*?^\}", src, _re.S | _re.M).group(0)
    js = _re.search(r"^json_str\(\) \{.*?^\}", src, _re.S | _re.M).group(0)
    (tmp_path / "auto_model").write_text(model)
    script = f"{js}\n{fn}\nMODBG={tmp_path}\n_IREP={rep}\nauto_choices 'tput 0->1'\n"
    out = _subprocess.run([_BB, "sh", "-c", script], capture_output=True, text=True).stdout
    return [json.loads(x) for x in out.splitlines()]


_MODEL = ("# auto selected\n"
          "# engine size_kb batch_ns folio_ns mb_per_s samples chosen not_ready\n"
          "cpu 4 100 7000 585 1 3 0\n"
          "cpu 16 0 28000 585 1 0 0\n"
          "mtcopy 4 4000 4200 975 30 29 7\n"
          "mtcopy 16 9000 16000 1024 1 0 7\n"
          "split 4 1 2 3 4 5 6\n"
          "split dcbm 140 5 6 480\n")


@_pytest.mark.skipif(not _BB, reason="busybox not installed")
def test_auto_choices_reads_auto_model_by_shape(tmp_path):
    recs = _auto_choices(tmp_path, _MODEL, rep=2)
    rows = {(r["engine"], r["size_kb"]): r for r in recs if r["mode"] == "auto_choice"}
    # calibrated rows (samples) and chosen rows; an engine named split is an engine
    assert set(rows) == {("cpu", 4), ("cpu", 16), ("mtcopy", 4), ("mtcopy", 16), ("split", 4)}
    assert rows[("mtcopy", 4)]["chosen"] == 29 and rows[("mtcopy", 4)]["not_ready"] == 7
    assert rows[("mtcopy", 4)]["folio_ns"] == 4200 and rows[("mtcopy", 4)]["rep"] == 2
    [sp] = [r for r in recs if r["mode"] == "auto_split_model"]
    assert sp == {"mode": "auto_split_model", "config": "auto", "part": "tput 0->1", "rep": 2,
                  "engine": "dcbm", "ratio_pct": 140, "samples": 5, "chosen": 6,
                  "cut_permille": 480}
    assert not [r for r in recs if r["mode"] == "auto_model_unparsed"]


@_pytest.mark.skipif(not _BB, reason="busybox not installed")
def test_auto_choices_says_what_it_could_not_read(tmp_path):
    # another layout (7 columns, a 5-field split line): counted, not guessed
    recs = _auto_choices(tmp_path, "cpu 4 100 7000 585 1 3\nsplit dcbm 140 5 6\n")
    assert [r["mode"] for r in recs] == ["auto_model_unparsed"]
    assert recs[0]["lines"] == 2 and recs[0]["part"] == "tput 0->1"
    # outside an interleaved part the repetition is null
    assert _auto_choices(tmp_path, _MODEL)[0]["rep"] is None
