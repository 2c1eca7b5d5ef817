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
    monkeypatch.setattr(cli, "run_setup", lambda: None, raising=False)
    monkeypatch.setattr(cli.tree, "ensure_tree", lambda ksrc, **kw: None)
    monkeypatch.setattr(bench, "prepare", lambda *a, **k: {})
    monkeypatch.setattr(bench, "alternate", lambda *a, **k: runs)
    monkeypatch.setattr(cli, "_host_facts", lambda builds: {
        "kernels": {}, "qemu": ["QEMU x"], "host_cpu": "cpu", "host_cpus": 2,
        "git_commit": "0" * 40, "git_dirty": False})

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
    assert "| mtcopy-2 | 1.60 [1.60..1.60] / 1.60 [1.60..1.60] |" in md
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
