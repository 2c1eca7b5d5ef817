"""auto against the best fixed configuration and none, under a hog on every
CPU, and what it chose."""

import json

from lab.molab import report
from lab.tests.report_builders import rec


def auto_recs(auto_vals, best=2.0, none=1.0, spread=0.1):
    """Two reps per config and round: values v*(1 -/+ spread/2), so that each
    fixed configuration's within-round spread is ``spread``."""
    recs = []
    for rnd, a in enumerate(auto_vals):
        for cfg, v in (("none", none), ("mtcopy-2", best), ("dcbm-4", best / 2), ("auto", a)):
            for f in (1 - spread / 2, 1 + spread / 2):
                recs.append(rec("patched", rnd, cfg, 64, v * f))
        recs.append(rec("vanilla", rnd, "vanilla", 64, none))
    return recs


def test_auto_against_best_fixed_and_none_per_round():
    # auto at 0.95x the best every round: within the 10% noise: met
    s = report.summarize(auto_recs([1.9, 1.9, 1.9]))
    [r] = s["auto"]
    assert r["best"] == ["mtcopy-2"] * 3 and abs(r["noise"] - 0.1) < 1e-9
    assert abs(r["vs_best_min"] - 0.95) < 1e-9 and r["verdict_best"] == "met"
    assert r["verdict_none"] == "met" and abs(r["vs_none_median"] - 1.9) < 1e-9
    goals = {g["goal"]: g["verdict"] for g in s["auto_goals"]}
    assert goals["auto >= the best fixed configuration within the noise, every cell"] == "met"
    assert goals["auto never below none, every cell"] == "met"
    # no compaction with a hog, and no split measured: never met
    assert goals["under a CPU hog on every CPU, auto never below none"] == "inconclusive"
    assert goals["a 2M batch split between the CPU and dcbm faster than either alone"] == "inconclusive"
    assert "auto/best 0.95" in "\n".join(report.text_tables(s))
    assert "| 64K to 1 | mtcopy-2 | 0.95 [0.95..0.95] | met |" in \
        "\n".join(report.markdown_tables(s))


def test_auto_verdicts_missed_and_inconclusive():
    # every round below 0.9 of the best: missed; above none though
    s = report.summarize(auto_recs([1.5, 1.6, 1.7]))
    [r] = s["auto"]
    assert r["verdict_best"] == "missed" and r["verdict_none"] == "met"
    # one round under, one over: inconclusive; one round only: inconclusive
    s = report.summarize(auto_recs([1.5, 2.0]))
    assert s["auto"][0]["verdict_best"] == "inconclusive"
    s = report.summarize(auto_recs([2.0]))
    assert s["auto"][0]["verdict_best"] == "inconclusive"
    # below none in every round: missed
    s = report.summarize(auto_recs([0.5, 0.6], none=1.0))
    assert s["auto"][0]["verdict_none"] == "missed"
    # no auto measured: no rows, no goals
    s = report.summarize([r for r in auto_recs([1.0, 1.0]) if r["config"] != "auto"])
    assert s["auto"] == [] and s["auto_goals"] == []


def test_auto_report_cannot_pass_what_it_did_not_see():
    # a round where auto moved nothing is 0x, not skipped: not met
    s = report.summarize(auto_recs([0.0, 1.9, 1.9]))
    assert s["auto"][0]["vs_best_min"] == 0 and s["auto"][0]["verdict_best"] != "met"
    # noise above the cap: no bar, inconclusive even at 0.5x
    s = report.summarize(auto_recs([1.0, 1.0, 1.0], spread=1.2))
    assert s["auto"][0]["verdict_best"] == "inconclusive"
    # a cell the fixed configurations measured and auto did not: inconclusive
    recs = auto_recs([1.9, 1.9]) + [rec("patched", rnd, "mtcopy-2", 64, 2.0, to=2)
                                     for rnd in (0, 1)]
    s = report.summarize(recs)
    cell = [r for r in s["auto"] if r["to"] == 2][0]
    assert cell["pairs"] == 0 and cell["verdict_best"] == "inconclusive"
    goals = {g["goal"]: g["verdict"] for g in s["auto_goals"]}
    assert goals["auto >= the best fixed configuration within the noise, every cell"] \
        == "inconclusive"
    # corrupted data under auto: missed, however fast
    recs = auto_recs([2.5, 2.5])
    recs[[i for i, r in enumerate(recs) if r["config"] == "auto"][0]]["bad_bytes"] = 3
    s = report.summarize(recs)
    assert s["auto"][0]["verdict_best"] == "missed" and s["auto"][0]["verdict_none"] == "missed"
    # auto asked for but absent: the goals say so, inconclusive
    recs = [r for r in auto_recs([1.0, 1.0]) if r["config"] != "auto"]
    recs.append({"mode": "config", "config": "auto", "absent": True, "reason": "no mtcopy",
                 "variant": "patched", "round": 0})
    s = report.summarize(recs)
    assert {g["verdict"] for g in s["auto_goals"]} == {"inconclusive"}
    assert "not measured: no mtcopy" in s["auto_goals"][0]["note"]


def test_auto_hog_goal_is_not_judged_from_compaction_with_one_hog():
    # the compaction runs' hog is one busy loop on the compacting CPU, not a
    # hog on every CPU: never the goal's evidence
    def comp(rnd, cfg, rate):
        return {"mode": "compaction", "config": cfg, "variant": "patched", "round": rnd,
                "hog": True, "wall_s": 1.0, "pgmigrate_success": rate}
    s = report.summarize(auto_recs([1.9, 1.9]) + [comp(r, c, v) for r in (0, 1)
                                                   for c, v in (("none", 100), ("auto", 120))])
    goal = [g for g in s["auto_goals"] if "hog" in g["goal"]][0]
    assert goal["verdict"] == "inconclusive" and "not measured" in goal["note"]


def _hog_recs(auto_vals, none=1.0, mtcopy=0.7, spread=0.1, bad=0, mt_spread=None, **kw):
    """tput --hog records as run_bench writes them (mode tput, hog true, a
    hog on each of 2 CPUs that ran), two reps a round of none, mtcopy-2 and
    auto, 4K to node 1; kw overrides fields of every record."""
    out = []
    for rnd, av in enumerate(auto_vals):
        for cfg, v in (("none", none), ("mtcopy-2", mtcopy), ("auto", av)):
            sp = mt_spread if cfg == "mtcopy-2" and mt_spread is not None else spread
            for f in (1 - sp / 2, 1 + sp / 2):
                r = {"mode": "tput", "config": cfg, "folio_kb": 4, "to": 1, "gbps": v * f,
                     "hog": True, "hogs": 2, "cpus_online": 2, "hog_per_s": 1e9,
                     "bad_bytes": bad if cfg == "auto" else 0}
                r.update(kw)
                out.append(json.dumps({k: v for k, v in r.items() if v is not None}))
    return out


def _load(tmp_path, lines_by_round):
    recs = []
    for rnd, lines in enumerate(lines_by_round):
        p = tmp_path / f"b{rnd}.jsonl"
        p.write_text("\n".join(lines) + "\n")
        recs += report.load_records(p, "patched", rnd)
    return recs


def test_hog_tput_is_its_own_measurement_and_judges_the_hog_goal(tmp_path):
    base = auto_recs([1.9, 1.9])
    # auto at none's speed under the hog, every round: met; never a tput cell
    lines = _hog_recs([1.0, 1.0])
    hog = _load(tmp_path, [lines[:6], lines[6:]])
    assert {r["mode"] for r in hog} == {"tput_hog"}
    s = report.summarize(base + hog)
    assert [(r["folio_kb"], r["to"]) for r in s["auto"]] == [(64, 1)]
    [h] = s["hog"]
    assert h["pairs"] == 2 and abs(h["median"] - 1.0) < 1e-9 and h["verdict"] == "met"
    assert abs(h["others"]["mtcopy-2"] - 0.7) < 1e-9
    goal = [g for g in s["auto_goals"] if "hog" in g["goal"]][0]
    assert goal["verdict"] == "met" and "4K 1.00x none" in goal["note"]
    assert "mtcopy-2/none 0.70" in "\n".join(report.text_tables(s))

    def hog(lines):
        s = report.summarize(base + _load(tmp_path, [lines[:6], lines[6:]]))
        return s["hog"][0]
    # a hog not verified: none started, fewer than the CPUs, not running
    # during the move, or fields missing (an older mo_bench): never met
    for kw in ({"hogs": 0}, {"hogs": 1}, {"hog_per_s": 0}, {"hogs": None},
               {"cpus_online": None}, {"hog_per_s": None}):
        h = hog(_hog_recs([1.0, 1.0], **kw))
        assert h["verdict"] == "inconclusive" and "not verified" in h["why"], kw
    # the noise is none's and auto's: a noisy mtcopy-2 does not loosen the
    # bar (auto 0.87x none with none and auto 2% apart: missed)
    h = hog(_hog_recs([0.87, 0.87], spread=0.02, mt_spread=0.3))
    assert abs(h["noise"] - 0.02) < 1e-9 and h["verdict"] == "missed"
    # a round none ran and auto did not: inconclusive, not dropped
    lines = [ln for i, ln in enumerate(_hog_recs([1.0, 1.0, 1.0]))
             if not (i >= 12 and '"auto"' in ln)]
    s = report.summarize(base + _load(tmp_path, [lines[:6], lines[6:12], lines[12:]]))
    assert s["hog"][0]["verdict"] == "inconclusive" and "without auto" in s["hog"][0]["why"]
    # a skipped hog cell stays a cell, inconclusive
    lines = _hog_recs([1.0, 1.0]) + [json.dumps({"mode": "tput", "config": "auto",
                                                 "folio_kb": 64, "to": 1, "hog": True,
                                                 "skipped": True, "reason": "no room"})]
    s = report.summarize(base + _load(tmp_path, [lines[:6], lines[6:]]))
    cells = {r["folio_kb"]: r for r in s["hog"]}
    assert cells[4]["verdict"] == "met" and cells[64]["verdict"] == "inconclusive"
    assert [g for g in s["auto_goals"] if "hog" in g["goal"]][0]["verdict"] == "inconclusive"
    # a buffer not in folios of the size: inconclusive
    assert hog(_hog_recs([1.0, 1.0], folio_share=40))["verdict"] == "inconclusive"
    # below none by more than the noise in every round: missed
    lines = _hog_recs([0.7, 0.75])
    s = report.summarize(base + _load(tmp_path, [lines[:6], lines[6:]]))
    assert s["hog"][0]["verdict"] == "missed"
    assert [g for g in s["auto_goals"] if "hog" in g["goal"]][0]["verdict"] == "missed"
    # one round only, or corrupted bytes under auto
    s = report.summarize(base + _load(tmp_path, [_hog_recs([1.2])]))
    assert s["hog"][0]["verdict"] == "inconclusive"
    lines = _hog_recs([1.2, 1.2], bad=1)
    s = report.summarize(base + _load(tmp_path, [lines[:6], lines[6:]]))
    assert s["hog"][0]["verdict"] == "missed"
    # no auto under the hog: no rows, the hog goal not measured
    lines = [ln for ln in _hog_recs([1.0, 1.0]) if '"auto"' not in ln]
    s = report.summarize(base + _load(tmp_path, [lines[:4], lines[4:]]))
    assert s["hog"] == []
    assert [g for g in s["auto_goals"] if "hog" in g["goal"]][0]["verdict"] == "inconclusive"


def test_auto_choices_sum_the_parts_and_say_what_the_model_held():
    def ch(rnd, part, kb, eng, chosen, folio_ns, batch_ns=0, not_ready=0, samples=3):
        return {"mode": "auto_choice", "config": "auto", "part": part, "rep": 0,
                "engine": eng, "size_kb": kb, "batch_ns": batch_ns, "folio_ns": folio_ns,
                "samples": samples, "chosen": chosen, "not_ready": not_ready,
                "variant": "patched", "round": rnd}
    recs = auto_recs([1.9, 1.9]) + [
        ch(0, "tput 0->1", 4, "cpu", 2, 16000), ch(0, "tput 0->1", 4, "mtcopy", 30, 9000, 40000),
        ch(1, "tput 0->1", 4, "cpu", 6, 18000), ch(1, "tput 0->1", 4, "mtcopy", 26, 11000,
                                                   60000, not_ready=5),
        # calibrated, never chosen: listed at 0%; no samples: no model
        ch(0, "tput 0->1", 4, "dcbm", 0, 130000), ch(1, "tput 0->1", 4, "dcbm", 0, 0, samples=0),
        ch(0, "tput hog 0->1", 4, "cpu", 32, 30000),
        # auto_model prints an engine's one not_ready count on every class row
        ch(1, "tput 0->1", 16, "mtcopy", 0, 9000, not_ready=5)]
    recs += [{"mode": "auto_split_model", "config": "auto", "part": "tput 0->1", "rep": 0,
              "engine": "dcbm", "ratio_pct": pct, "samples": 4, "chosen": n,
              "variant": "patched", "round": rnd} for rnd, (pct, n) in enumerate(((120, 3), (140, 2)))]
    s = report.summarize(recs)
    assert s["auto_splits"] == [{"part": "tput 0->1", "engine": "dcbm", "chosen": 5,
                                 "ratio_pct": 130}]
    assert "split between the CPU and dcbm: 5, learnt ratio 130%" in \
        "\n".join(report.text_tables(s))
    c = {(r["part"], r["folio_kb"]): r for r in s["auto_choices"]}
    r = c[("tput 0->1", 4)]
    assert r["batches"] == 64
    assert abs(r["engines"]["mtcopy"]["share"] - 56 / 64) < 1e-9
    assert r["engines"]["mtcopy"]["folio_ns"] == 10000
    assert r["engines"]["dcbm"]["share"] == 0 and r["engines"]["dcbm"]["folio_ns"] == 130000
    assert c[("tput hog 0->1", 4)]["engines"]["cpu"]["share"] == 1
    text = "\n".join(report.text_tables(s))
    assert "mtcopy 88% [10.0+50]" in text and "mtcopy not ready 5 times" in text
    assert "What auto chose" in "\n".join(report.markdown_tables(s))
