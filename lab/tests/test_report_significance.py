"""The p column: a two-sided Mann-Whitney U test of each throughput
comparison's per-repetition samples, its floor, and the bench command's
dependence on scipy."""

import csv
import json
import sys
from math import comb

import pytest

from lab.molab import bench, cli, report
from lab.molab.errors import LabError
from lab.tests.report_builders import rec

# 3 rounds of 2 repetitions: 6 samples a side, none of them tied
VANILLA = [[1.00, 1.10], [0.90, 1.05], [1.02, 0.98]]
FLOOR_6 = 2 / comb(12, 6)           # 0.0022: every sample of one above the other's


def reps(cfg, values_by_round, kb=64, **kw):
    """One record per repetition, rounds in order."""
    variant = "vanilla" if cfg == "vanilla" else "patched"
    return [rec(variant, rnd, cfg, kb, v, **kw)
            for rnd, vs in enumerate(values_by_round) for v in vs]


def scaled(values_by_round, f):
    return [[v * f for v in vs] for vs in values_by_round]


def row(s, cfg, table="throughput"):
    [r] = [r for r in s[table] if r["config"] == cfg]
    return r


def table_line(s, cfg):
    [line] = [ln for ln in report.text_tables(s) if ln.startswith(f"{cfg:<10} {'64K':>6} ")]
    return line


def p_columns(s, cfg):
    """The two p columns of a text row (after each [min..max])."""
    fields = table_line(s, cfg).split()
    return fields[8], fields[11]


def test_clearly_different_samples_give_the_floor_in_every_format(tmp_path):
    recs = reps("vanilla", VANILLA) + reps("none", VANILLA) + \
        reps("mtcopy-2", scaled(VANILLA, 2.0))
    s = report.summarize(recs)
    r = row(s, "mtcopy-2")
    # two-sided, over the 6 repetitions of every round (per-round medians
    # would be 3 a side, floor 0.1; one-sided would halve it)
    assert r["ratio_p"] == pytest.approx(FLOOR_6) and r["vs_none_p"] == pytest.approx(FLOOR_6)
    assert p_columns(s, "mtcopy-2") == ("0.0022", "0.0022")
    assert report.mann_whitney_p([2, 3], [0, 1]) == report.mann_whitney_p([0, 1], [2, 3])
    md = "\n".join(report.markdown_tables(s))
    assert "| mtcopy-2 | 2.00 [2.00..2.00] p 0.0022 / 2.00 [2.00..2.00] p 0.0022 |" in md
    report.write_csv(s, tmp_path / "t.csv")
    [c] = [c for c in csv.DictReader((tmp_path / "t.csv").open()) if c["config"] == "mtcopy-2"]
    assert float(c["ratio_p"]) == pytest.approx(FLOOR_6)
    assert float(c["vs_none_p"]) == pytest.approx(FLOOR_6)
    # the legend says what p is and its floor for this run's n
    legend = [ln for ln in report.text_tables(s) if ln.startswith("p: ")]
    assert len(legend) == 1 and "two-sided Mann-Whitney U" in legend[0]
    assert legend[0].endswith("p has a floor: 0.0022 with 6 samples a side")
    assert any(ln.startswith("p: ") and ln.endswith("6 samples a side")
               for ln in report.markdown_tables(s))
    assert s["p_floors"]["throughput"] == [{"n": 6, "against_n": 6,
                                            "p_min": pytest.approx(FLOOR_6), "comparisons": 3}]


def test_identical_samples_give_p_1():
    recs = reps("vanilla", VANILLA) + reps("none", VANILLA) + reps("cpu", VANILLA)
    s = report.summarize(recs)
    assert row(s, "cpu")["ratio_p"] == 1.0 and row(s, "cpu")["vs_none_p"] == 1.0
    assert row(s, "none")["ratio_p"] == 1.0
    assert p_columns(s, "cpu") == ("1", "1")
    # the reference has no p against itself
    assert row(s, "vanilla")["ratio_p"] is None and row(s, "none")["vs_none_p"] is None
    # all of them tied: still 1, not an error
    assert report.mann_whitney_p([1.0, 1.0, 1.0], [1.0, 1.0, 1.0]) == 1.0


def test_too_few_samples_give_no_p_or_a_floor_that_says_so():
    # one repetition a side: p would be 1 whatever they are: none shown
    s = report.summarize(reps("vanilla", [[1.0]]) + reps("cpu", [[5.0]]))
    assert row(s, "cpu")["ratio_p"] is None
    assert p_columns(s, "cpu")[0] == "-"
    assert not any(ln.startswith("p: ") for ln in report.text_tables(s))
    assert s["p_floors"]["throughput"] == []
    assert "| cpu | 5.00 [5.00..5.00] |" in report.markdown_tables(s)
    # no reference measured in the cell: no p
    s = report.summarize(reps("vanilla", VANILLA, kb=4) + reps("cpu", VANILLA))
    assert row(s, "cpu")["ratio_p"] is None
    assert report.mann_whitney_p([], [1.0, 2.0]) is None
    # QUICK's 2 rounds of 2, and a cell where a repetition is missing: the
    # run's floor first
    s = report.summarize(reps("vanilla", [[1.0, 1.1], [0.9, 1.05]]) +
                         reps("cpu", [[2.0, 2.2], [1.8, 2.1]]) +
                         reps("dcbm-4", [[2.0, 2.2], [1.8, 2.1]]) +
                         reps("mtcopy-2", [[2.0, 2.2], [1.8]]))
    assert row(s, "cpu")["ratio_p"] == pytest.approx(2 / comb(8, 4))
    assert [ln for ln in report.text_tables(s) if ln.startswith("p: ")][0].endswith(
        "p has a floor: 0.029 with 4 samples a side; 0.057 with 3 and 4 samples")
    # one sample against two can be computed: its floor is 2/3
    assert report.mann_whitney_p([5.0], [1.0, 2.0]) == pytest.approx(2 / 3)
    assert report.p_floor(1, 2) == pytest.approx(2 / 3)


def test_count_sweep_rows_have_p_too():
    recs = reps("vanilla", VANILLA, kb=2048, mode="count", folios=8) + \
        reps("none", VANILLA, kb=2048, mode="count", folios=8) + \
        reps("mtcopy-2", scaled(VANILLA, 3.0), kb=2048, mode="count", folios=8)
    s = report.summarize(recs)
    r = row(s, "mtcopy-2", "count")
    assert r["ratio_p"] == pytest.approx(FLOOR_6) and r["vs_none_p"] == pytest.approx(FLOOR_6)
    text = report.text_tables(s)
    [line] = [ln for ln in text if ln.startswith("mtcopy-2      8 folios")]
    assert "3.00x [3.00..3.00] p 0.0022 vs none 3.00x [3.00..3.00] p 0.0022" in line
    i = text.index("== folio-count sweep at 2M: GB/s of the bytes that moved (mean +- sd), "
                   "ratio vs vanilla and vs none (median of per-round ratios [min..max]), "
                   "unmoved pages, lowest folio share")
    assert text[i + 1].startswith("p: ") and text[i + 1].endswith("6 samples a side")


@pytest.fixture
def no_scipy(monkeypatch):
    """scipy as if not installed: importing it fails."""
    monkeypatch.setitem(sys.modules, "scipy", None)
    monkeypatch.setitem(sys.modules, "scipy.stats", None)


def test_without_scipy_the_report_says_what_to_install(no_scipy):
    with pytest.raises(LabError) as e:
        report.require_scipy()
    assert "scipy" in e.value.cause and "sudo sh lab/setup.sh" in e.value.hint
    with pytest.raises(LabError):
        report.summarize(reps("vanilla", VANILLA) + reps("cpu", VANILLA))


def test_bench_checks_scipy_before_building_or_booting(monkeypatch, no_scipy, capsys):
    done = []
    monkeypatch.setattr(cli, "run_setup", lambda: done.append("setup"))
    monkeypatch.setattr(cli.tree, "ensure_tree", lambda ksrc, **kw: done.append("tree"))
    monkeypatch.setattr(bench, "prepare", lambda *a, **k: done.append("build") or {})
    monkeypatch.setattr(bench, "alternate", lambda *a, **k: done.append("boots") or [])
    assert cli.main(["bench", "--rounds", "1"]) == cli.EXIT_ERROR
    # setup may install scipy; nothing is built or booted without it
    assert done == ["setup"]
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("molab: error: python3 cannot import scipy")
    assert err[0].endswith("run 'sudo sh lab/setup.sh' (it installs python3-scipy)")


def test_bench_json_is_written_before_the_report_is_rendered(tmp_path, no_scipy):
    recs = reps("vanilla", VANILLA) + reps("cpu", VANILLA)
    run = {"facts": {"kernels": {}, "qemu": ["QEMU x"], "host_cpu": "cpu", "host_cpus": 2,
                     "git_commit": "0" * 40, "git_dirty": False},
           "args": "", "rounds": 3, "records": recs, "problems": [], "boots": []}
    with pytest.raises(LabError):
        cli._bench_outputs(tmp_path, run)
    saved = json.loads((tmp_path / "bench.json").read_text())
    assert saved["records"] == recs and "summary" not in saved
    assert not (tmp_path / "report.txt").exists()


def test_each_p_is_against_its_own_reference(tmp_path):
    # none measured apart from vanilla (1.9x it), mtcopy-2 at 2x vanilla:
    # against vanilla every sample is above (the floor), against none they
    # overlap; a p taken against the wrong reference, or shown in the
    # other's column, shows here (vanilla and none are alike elsewhere)
    none, mine = scaled(VANILLA, 1.9), scaled(VANILLA, 2.0)
    p_none = report.mann_whitney_p(sum(mine, []), sum(none, []))
    assert p_none == pytest.approx(0.18, abs=0.005)

    def run(**kw):
        return report.summarize(reps("vanilla", VANILLA, **kw) + reps("none", none, **kw) +
                                reps("mtcopy-2", mine, **kw))
    s, count = run(), run(kb=2048, mode="count", folios=8)
    for summary, table in ((s, "throughput"), (count, "count")):
        r = row(summary, "mtcopy-2", table)
        assert r["ratio_p"] == pytest.approx(FLOOR_6), table
        assert r["vs_none_p"] == pytest.approx(p_none), table
        assert row(summary, "none", table)["ratio_p"] == pytest.approx(FLOOR_6), table
    assert p_columns(s, "mtcopy-2") == ("0.0022", "0.18")
    md = "\n".join(report.markdown_tables(s))
    assert "| mtcopy-2 | 2.00 [2.00..2.00] p 0.0022 / 1.05 [1.05..1.05] p 0.18 |" in md
    report.write_csv(s, tmp_path / "t.csv")
    [c] = [c for c in csv.DictReader((tmp_path / "t.csv").open()) if c["config"] == "mtcopy-2"]
    assert (float(c["ratio_p"]), float(c["vs_none_p"])) == \
        (pytest.approx(FLOOR_6), pytest.approx(p_none))
    [line] = [ln for ln in report.text_tables(count) if ln.startswith("mtcopy-2      8 folios")]
    assert "2.00x [2.00..2.00] p 0.0022 vs none 1.05x [1.05..1.05] p 0.18" in line


def test_a_record_without_gb_s_is_no_sample():
    # mo_bench writes "gbps": null for a move it could not time: no
    # sample, so neither in n nor in the floor the legend states for p
    recs = reps("vanilla", VANILLA) + reps("cpu", scaled(VANILLA, 2.0)) + \
        [rec("patched", 2, "cpu", 64, None)]
    s = report.summarize(recs)
    r = row(s, "cpu")
    assert r["n"] == 6 and r["ratio_p"] == pytest.approx(FLOOR_6)
    assert s["p_floors"]["throughput"] == [{"n": 6, "against_n": 6,
                                            "p_min": pytest.approx(FLOOR_6), "comparisons": 1}]
    count = report.summarize(
        reps("vanilla", VANILLA, kb=2048, mode="count", folios=8) +
        reps("cpu", scaled(VANILLA, 2.0), kb=2048, mode="count", folios=8) +
        [rec("patched", 2, "cpu", 2048, None, mode="count", folios=8)])
    assert row(count, "cpu", "count")["n"] == 6
    assert count["p_floors"]["count"][0]["n"] == 6
