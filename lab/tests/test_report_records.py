"""Loading the bench records and what the report says was measured."""

import json

from lab.molab import report
from lab.tests.report_builders import alias_recs, rec


def test_load_records_tags_and_skips_junk(tmp_path):
    p = tmp_path / "bench.jsonl"
    p.write_text(json.dumps({"mode": "tput", "gbps": 1}) + "\nnot json\n{broken\n")
    out = report.load_records(p, "patched", 2)
    assert out == [{"mode": "tput", "gbps": 1, "variant": "patched", "round": 2}]


def test_skipped_absent_and_corrupt_records():
    recs = [rec("vanilla", 0, "vanilla", 4, 1.0),
            rec("patched", 0, "dcbm-4", 4, None, skipped=True),
            {"mode": "config", "config": "dcbm-4", "absent": True, "variant": "patched",
             "round": 0},
            rec("patched", 0, "cpu", 4, 1.0, bad_bytes=3)]
    s = report.summarize(recs)
    assert [r["config"] for r in s["throughput"]] == ["cpu", "vanilla"]
    assert s["absent"] == [{"variant": "patched", "config": "dcbm-4", "rounds": [0],
                           "reason": ""}]
    assert s["records_with_bad_bytes"] == 1


def test_measurements_count_real_measurements_only():
    recs = [{"mode": "run", "variant": "patched", "round": 0},
            {"mode": "config", "config": "cpu", "absent": False, "variant": "patched",
             "round": 0},
            {"mode": "config", "config": "dcbm-4", "absent": True, "reason": "no swdma",
             "variant": "patched", "round": 0},
            {"mode": "part", "config": "cpu", "rc": 0, "variant": "patched", "round": 0},
            rec("patched", 0, "cpu", 2048, None, skipped=True, reason="no THP"),
            rec("patched", 0, "cpu", 4, 1.0), rec("vanilla", 0, "vanilla", 4, 1.0),
            {"mode": "latency", "config": "cpu", "pages": 8, "first_usable_us": 5.0,
             "variant": "patched", "round": 0},
            {"mode": "compaction", "config": "cpu", "wall_s": 1.0, "pgmigrate_success": 9,
             "variant": "patched", "round": 0},
            rec("patched", 0, "cpu", None, 2.0, mode="memcpy")] + alias_recs(1.0, boots=1)
    s = report.summarize(recs)
    assert s["measurements"] == 7
    assert s["skipped"] == 1
    text = "\n".join(report.text_tables(s))
    assert "measurements: 7 (tput 2, latency 1, memcpy 1, compaction 1, alias 2)" in text
    assert "1 skipped" in text
    assert "measurements: 7" in "\n".join(report.markdown_tables(s))


def test_absent_configurations_named_with_reason_everywhere():
    recs = [rec("vanilla", 0, "vanilla", 4, 1.0), rec("patched", 0, "cpu", 4, 1.0)]
    for rnd in (0, 1):
        recs.append({"mode": "config", "config": "dcbm-4", "absent": True,
                     "reason": "swdma: no channels", "variant": "patched", "round": rnd})
    s = report.summarize(recs)
    assert s["absent"] == [{"variant": "patched", "config": "dcbm-4", "rounds": [0, 1],
                            "reason": "swdma: no channels"}]
    want = "absent configurations (reported, not measured): dcbm-4 (patched, rounds 0,1: " \
        "swdma: no channels)"
    assert want in report.text_tables(s)
    assert any(want in line for line in report.markdown_tables(s))


def test_boots_with_findings_and_retries_are_listed():
    from lab.molab import cli
    f = {"kind": "emulator-fault", "line": 9, "text": "Oops: int3: 0000", "rip": "f+0x4/0x80",
         "excuse": "jump-label site"}
    boots = [{"label": "patched-r0", "status": "PASS", "ok": True, "console_log": "a.log",
              "findings": [], "problems": [],
              "retried": [{"label": "patched-r0", "status": "EMULATOR-FAULT", "ok": False,
                           "console_log": "b.log", "findings": [f], "problems": []}]},
             {"label": "vanilla-r0", "status": "FAIL", "ok": False, "console_log": "c.log",
              "findings": [{"kind": "warning", "line": 3, "text": "WARNING: x", "rip": "",
                            "excuse": ""}], "problems": [], "retried": []}]
    text = "\n".join(cli._boot_lines(boots))
    assert "2, 1 excluded from the tables for findings, 1 retried attempt(s)" in text
    assert "vanilla-r0: FAIL (excluded): warning: WARNING: x (c.log)" in text
    assert "patched-r0: EMULATOR-FAULT (retried): emulator-fault: Oops: int3: 0000 at f+0x4/0x80" in text
    assert "patched-r0: PASS (used) (a.log)" in text


def test_boots_with_different_workqueue_scopes_fail_the_run():
    from lab.molab import cli
    tput = {"mode": "tput", "folio_kb": 4, "to": 1, "gbps": 0.2, "rep": 0, "bytes": 1 << 26}
    recs = [{"mode": "run", "variant": "vanilla", "round": 0, "wq_scope": "system"},
            dict(tput, variant="vanilla", round=0, config="vanilla"),
            {"mode": "run", "variant": "patched", "round": 0, "wq_scope": "cache"},
            dict(tput, variant="patched", round=0, config="cpu")]
    s = report.summarize(recs)
    assert s["wq_scopes"] == ["cache", "system"]
    assert any("different workqueue affinity scopes (cache, system)" in f
               for f in cli._bench_failures({"records": recs}, s))
    for r in recs:
        if r["mode"] == "run":
            r["wq_scope"] = "system"
    s = report.summarize(recs)
    assert s["wq_scopes"] == ["system"]
    assert not any("workqueue" in f for f in cli._bench_failures({"records": recs}, s))
