"""Throughput, the folio-count sweep and compaction: per-round ratios against
vanilla and against none, moved bytes, folio shares, memcpy, the tables."""

from lab.molab import report
from lab.tests.report_builders import rec


def test_ratio_pairs_rounds_and_takes_the_median():
    recs = []
    # vanilla drifts between rounds; patched is always 2x its own round's vanilla
    for rnd, base in enumerate([1.0, 2.0, 4.0]):
        recs += [rec("vanilla", rnd, "vanilla", 2048, base),
                 rec("patched", rnd, "none", 2048, base),
                 rec("patched", rnd, "mtcopy-2", 2048, 2 * base),
                 rec("patched", rnd, "cpu", 2048, base * (0.9 if rnd == 0 else 1.0))]
    s = report.summarize(recs)
    rows = {r["config"]: r for r in s["throughput"]}
    assert rows["mtcopy-2"]["ratio_median"] == 2.0
    assert rows["mtcopy-2"]["ratio_pairs"] == 3
    assert abs(rows["cpu"]["ratio_min"] - 0.9) < 1e-9 and rows["cpu"]["ratio_median"] == 1.0
    assert rows["vanilla"]["ratio_median"] is None
    text = "\n".join(report.goals(s))
    assert ("mtcopy-2 at 2.00x vanilla [2.00..2.00] over 3 round(s); 2.00x none in the same "
            "boot [2.00..2.00] over 3 round(s) (goal >= 1.5x: met)") in text
    # cpu 0.90x in round 0: the range straddles 0.97
    assert "built-in cpu: worst cell 1.00x" in text and "everywhere: inconclusive" in text


def test_memcpy_fraction_and_text(tmp_path):
    recs = [rec("vanilla", 0, "vanilla", 4, 1.0), rec("vanilla", 0, "vanilla", 4, 4.0,
                                                      mode="memcpy"),
            rec("patched", 0, "none", 4, 1.0), rec("patched", 0, "none", 4, 2.0, mode="memcpy")]
    s = report.summarize(recs)
    rows = {r["config"]: r for r in s["throughput"]}
    assert rows["vanilla"]["memcpy_fraction"] == 0.25
    assert rows["none"]["memcpy_fraction"] == 0.5
    assert any("== throughput" in line for line in report.text_tables(s))
    report.write_csv(s, tmp_path / "t.csv")
    assert (tmp_path / "t.csv").read_text().startswith("config,")


def test_per_round_median_and_same_boot_ratio_against_none():
    recs = []
    for rnd, base in enumerate([1.0, 3.0]):
        recs.append(rec("vanilla", rnd, "vanilla", 2048, base))
        # one slow phase per boot: the median ignores it, a mean would not
        for g in (base, base, base / 10):
            recs.append(rec("patched", rnd, "none", 2048, g))
        for g in (1.5 * base, 1.5 * base, base / 10):
            recs.append(rec("patched", rnd, "mtcopy-2", 2048, g))
    rows = {r["config"]: r for r in report.summarize(recs)["throughput"]}
    assert rows["none"]["ratio_median"] == 1.0
    assert rows["none"]["vs_none_median"] is None
    assert rows["mtcopy-2"]["ratio_median"] == 1.5
    assert rows["mtcopy-2"]["vs_none_median"] == 1.5
    assert rows["mtcopy-2"]["vs_none_min"] == 1.5 and rows["mtcopy-2"]["vs_none_max"] == 1.5
    assert "1.50x none in the same boot" in \
        "\n".join(report.goals({"throughput": list(rows.values())}))


def test_markdown_tables():
    recs = []
    for rnd, base in enumerate([1.0, 2.0]):
        recs += [rec("vanilla", rnd, "vanilla", 4, base), rec("vanilla", rnd, "vanilla", 2048, base),
                 rec("patched", rnd, "none", 4, base), rec("patched", rnd, "none", 2048, base),
                 rec("patched", rnd, "mtcopy-2", 2048, 3 * base)]
    md = report.markdown_tables(report.summarize(recs))
    assert "| config | 4K | 2048K |" in md
    assert "| vanilla | 1.500 +- 0.707 | 1.500 +- 0.707 |" in md
    assert "| mtcopy-2 | - | 3.00 [3.00..3.00] p 0.33 / 3.00 [3.00..3.00] p 0.33 |" in md
    assert "| none | 1.00 [1.00..1.00] p 1 | 1.00 [1.00..1.00] p 1 |" in md
    assert md[-1].startswith("- ") and "goal >= 0.97x" not in md[-1]


def test_gbps_counts_moved_bytes_only():
    recs = [rec("vanilla", 0, "vanilla", 4, 2.0, pages=100, stayed_behind=0),
            rec("patched", 0, "cpu", 4, 2.0, pages=100, stayed_behind=50),
            rec("patched", 0, "none", 4, 2.0, pages=100, stayed_behind=0)]
    s = report.summarize(recs)
    rows = {r["config"]: r for r in s["throughput"]}
    assert rows["cpu"]["gbps"] == 1.0 and rows["cpu"]["gbps_recorded"] == 2.0
    assert rows["cpu"]["not_moved_share"] == 0.5
    assert rows["cpu"]["ratio_median"] == 0.5 and rows["cpu"]["vs_none_median"] == 0.5
    assert rows["vanilla"]["not_moved_share"] == 0.0
    text = report.text_tables(s)
    [line] = [ln for ln in text if ln.startswith("cpu ")]
    assert " 50.0%" in line
    # the count sweep is measured the same way
    c = [rec("patched", 0, "cpu", 2048, 4.0, mode="count", folios=8, pages=4096,
             stayed_behind=1024)]
    assert report.summarize(c)["count"][0]["gbps"] == 3.0
    # one page in 4096 did not move: shown, not rounded away
    c[0]["stayed_behind"] = 1
    assert "unmoved <0.1%" in "\n".join(report.text_tables(report.summarize(c)))


def test_folio_share_min_per_cell_flagged_below_90_percent():
    recs = [rec("vanilla", 0, "vanilla", 2048, 1.0, folio_share=100.0),
            rec("patched", 0, "cpu", 2048, 1.0, folio_share=100.0),
            rec("patched", 0, "cpu", 2048, 1.0, folio_share=45.0)]
    s = report.summarize(recs)
    rows = {r["config"]: r for r in s["throughput"]}
    assert rows["cpu"]["folio_share_min"] == 45.0 and rows["cpu"]["folio_share_low"]
    assert rows["vanilla"]["folio_share_min"] == 100.0 and not rows["vanilla"]["folio_share_low"]
    [line] = [ln for ln in report.text_tables(s) if ln.startswith("cpu ")]
    assert "45%!" in line
    md = report.markdown_tables(s)
    assert any("| cpu |" in ln and "folios 45%!" in ln for ln in md)
    assert any("| vanilla |" in ln and "folios" not in ln for ln in md)


def test_vs_none_in_every_table_with_vs_vanilla():
    recs = []
    for rnd, base in enumerate([1.0, 2.0]):
        for cfg, f in (("vanilla", 1.0), ("none", 1.0), ("mtcopy-2", 2.0)):
            var = "vanilla" if cfg == "vanilla" else "patched"
            recs.append(rec(var, rnd, cfg, 2048, f * base, mode="count", folios=8))
            recs.append({"mode": "compaction", "config": cfg, "variant": var, "round": rnd,
                         "wall_s": 1.0, "pgmigrate_success": 1000 * f * base, "hog": False})
        recs.append(rec("vanilla", rnd, "vanilla", 4, base))
        recs.append(rec("patched", rnd, "none", 4, base))
        recs.append(rec("patched", rnd, "cpu", 4, base * (1.0 if rnd else 0.5)))
    s = report.summarize(recs)
    cnt = {r["config"]: r for r in s["count"]}
    assert (cnt["mtcopy-2"]["vs_none_median"], cnt["mtcopy-2"]["vs_none_min"]) == (2.0, 2.0)
    assert (cnt["mtcopy-2"]["ratio_min"], cnt["mtcopy-2"]["ratio_max"]) == (2.0, 2.0)
    comp = {r["config"]: r for r in s["compaction"]}
    assert comp["mtcopy-2"]["vs_none_median"] == 2.0
    assert comp["none"]["vs_none_median"] is None
    text = "\n".join(report.text_tables(s))
    assert "mtcopy-2      8 folios" in text and "2.00x [2.00..2.00] vs none 2.00x [2.00..2.00]" \
        in text
    assert "vs none 2.00x [2.00..2.00]" in [ln for ln in report.text_tables(s)
                                             if ln.startswith("mtcopy-2   hog=no")][0]
    md = report.markdown_tables(s)
    assert "| cpu | 0.75 [0.50..1.00] p 1 / 0.75 [0.50..1.00] p 1 |" in md
    assert any(ln.startswith("| config | hog | n | wall s |") and "vs none" in ln for ln in md)
    assert any(ln.startswith("| mtcopy-2 | no |") and "2.00 [2.00..2.00] | 2.00 [2.00..2.00]"
               in ln for ln in md)


def test_compaction_rate_and_ratio():
    def comp(variant, rnd, config, wall, migrated, hog=False):
        return {"mode": "compaction", "config": config, "variant": variant, "round": rnd,
                "wall_s": wall, "pgmigrate_success": migrated, "hog": hog,
                "huge_obtained": 250, "huge_target": 259, "user_s": 0, "sys_s": wall,
                "idle_s": wall, "sys_pct": 50, "hog_per_s": None, "hog_base_per_s": None}
    recs = [comp("vanilla", 0, "vanilla", 2.0, 60000), comp("patched", 0, "cpu", 1.0, 30000),
            comp("vanilla", 1, "vanilla", 1.0, 60000), comp("patched", 1, "cpu", 1.0, 120000),
            comp("patched", 1, "none", 0.0, 100)]          # no wall time: no rate
    rows = {(r["config"], r["hog"]): r for r in report.summarize(recs)["compaction"]}
    assert rows[("vanilla", False)]["migrated_per_s"] == 45000
    cpu = rows[("cpu", False)]
    assert (cpu["ratio_min"], cpu["ratio_max"]) == (1.0, 2.0)
    assert rows[("none", False)]["migrated_per_s"] is None
    assert any("compaction of a fragmented node" in line
               for line in report.text_tables(report.summarize(recs)))
