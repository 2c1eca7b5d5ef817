import json

import pytest

from lab.molab import bench_report as br


def rec(variant, rnd, config, kb, gbps, mode="tput", to=1, **kw):
    r = {"mode": mode, "config": config, "folio_kb": kb, "to": to, "gbps": gbps,
         "variant": variant, "round": rnd}
    r.update(kw)
    return r


def test_ratio_pairs_rounds_and_takes_the_median():
    recs = []
    # vanilla drifts between rounds; patched is always 2x its own round's vanilla
    for rnd, base in enumerate([1.0, 2.0, 4.0]):
        recs += [rec("vanilla", rnd, "vanilla", 2048, base),
                 rec("patched", rnd, "none", 2048, base),
                 rec("patched", rnd, "mtcopy-2", 2048, 2 * base),
                 rec("patched", rnd, "cpu", 2048, base * (0.9 if rnd == 0 else 1.0))]
    s = br.summarize(recs)
    rows = {r["config"]: r for r in s["throughput"]}
    assert rows["mtcopy-2"]["ratio_median"] == 2.0
    assert rows["mtcopy-2"]["ratio_pairs"] == 3
    assert abs(rows["cpu"]["ratio_min"] - 0.9) < 1e-9 and rows["cpu"]["ratio_median"] == 1.0
    assert rows["vanilla"]["ratio_median"] is None
    text = "\n".join(br.goals(s))
    assert ("mtcopy-2 at 2.00x vanilla [2.00..2.00] over 3 round(s); 2.00x none in the same "
            "boot [2.00..2.00] over 3 round(s) (goal >= 1.5x: met)") in text
    # cpu 0.90x in round 0: the range straddles 0.97
    assert "built-in cpu: worst cell 1.00x" in text and "everywhere: inconclusive" in text


def test_skipped_absent_and_corrupt_records():
    recs = [rec("vanilla", 0, "vanilla", 4, 1.0),
            rec("patched", 0, "dcbm-4", 4, None, skipped=True),
            {"mode": "config", "config": "dcbm-4", "absent": True, "variant": "patched",
             "round": 0},
            rec("patched", 0, "cpu", 4, 1.0, bad_bytes=3)]
    s = br.summarize(recs)
    assert [r["config"] for r in s["throughput"]] == ["cpu", "vanilla"]
    assert s["absent"] == [{"variant": "patched", "config": "dcbm-4", "rounds": [0],
                           "reason": ""}]
    assert s["records_with_bad_bytes"] == 1


def test_memcpy_fraction_and_text(tmp_path):
    recs = [rec("vanilla", 0, "vanilla", 4, 1.0), rec("vanilla", 0, "vanilla", 4, 4.0,
                                                      mode="memcpy"),
            rec("patched", 0, "none", 4, 1.0), rec("patched", 0, "none", 4, 2.0, mode="memcpy")]
    s = br.summarize(recs)
    rows = {r["config"]: r for r in s["throughput"]}
    assert rows["vanilla"]["memcpy_fraction"] == 0.25
    assert rows["none"]["memcpy_fraction"] == 0.5
    assert any("== throughput" in line for line in br.text_tables(s))
    br.write_csv(s, tmp_path / "t.csv")
    assert (tmp_path / "t.csv").read_text().startswith("config,")


def test_load_records_tags_and_skips_junk(tmp_path):
    p = tmp_path / "bench.jsonl"
    p.write_text(json.dumps({"mode": "tput", "gbps": 1}) + "\nnot json\n{broken\n")
    out = br.load_records(p, "patched", 2)
    assert out == [{"mode": "tput", "gbps": 1, "variant": "patched", "round": 2}]


def test_plots_written(tmp_path):
    recs = [{"mode": "count", "config": "none", "folios": n, "gbps": 1.0 * n,
             "variant": "patched", "round": 0} for n in (1, 8)]
    recs += [{"mode": "latency", "config": "none", "pages": n, "first_usable_us": 10.0 * n,
              "max_stall_us": 5, "variant": "patched", "round": 0} for n in (1, 8)]
    recs += [rec("patched", 0, "none", 4, 1.0)]
    names = sorted(p.name for p in br.plots(br.summarize(recs), tmp_path))
    assert names == ["latency_vs_batch.png", "throughput_to1.png", "throughput_vs_count.png"]
    assert all((tmp_path / n).stat().st_size > 0 for n in names)


def test_per_round_median_and_same_boot_ratio_against_none():
    recs = []
    for rnd, base in enumerate([1.0, 3.0]):
        recs.append(rec("vanilla", rnd, "vanilla", 2048, base))
        # one slow phase per boot: the median ignores it, a mean would not
        for g in (base, base, base / 10):
            recs.append(rec("patched", rnd, "none", 2048, g))
        for g in (1.5 * base, 1.5 * base, base / 10):
            recs.append(rec("patched", rnd, "mtcopy-2", 2048, g))
    rows = {r["config"]: r for r in br.summarize(recs)["throughput"]}
    assert rows["none"]["ratio_median"] == 1.0
    assert rows["none"]["vs_none_median"] is None
    assert rows["mtcopy-2"]["ratio_median"] == 1.5
    assert rows["mtcopy-2"]["vs_none_median"] == 1.5
    assert rows["mtcopy-2"]["vs_none_min"] == 1.5 and rows["mtcopy-2"]["vs_none_max"] == 1.5
    assert "1.50x none in the same boot" in "\n".join(br.goals({"throughput": list(rows.values())}))


def test_compaction_rate_and_ratio():
    def comp(variant, rnd, config, wall, migrated, hog=False):
        return {"mode": "compaction", "config": config, "variant": variant, "round": rnd,
                "wall_s": wall, "pgmigrate_success": migrated, "hog": hog,
                "huge_obtained": 250, "huge_target": 259, "user_s": 0, "sys_s": wall,
                "idle_s": wall, "sys_pct": 50, "hog_per_s": None, "hog_base_per_s": None}
    recs = [comp("vanilla", 0, "vanilla", 2.0, 60000), comp("patched", 0, "cpu", 1.0, 30000),
            comp("vanilla", 1, "vanilla", 1.0, 60000), comp("patched", 1, "cpu", 1.0, 120000),
            comp("patched", 1, "none", 0.0, 100)]          # no wall time: no rate
    rows = {(r["config"], r["hog"]): r for r in br.summarize(recs)["compaction"]}
    assert rows[("vanilla", False)]["migrated_per_s"] == 45000
    cpu = rows[("cpu", False)]
    assert (cpu["ratio_min"], cpu["ratio_max"]) == (1.0, 2.0)
    assert rows[("none", False)]["migrated_per_s"] is None
    assert any("compaction of a fragmented node" in line
               for line in br.text_tables(br.summarize(recs)))


def test_markdown_tables():
    recs = []
    for rnd, base in enumerate([1.0, 2.0]):
        recs += [rec("vanilla", rnd, "vanilla", 4, base), rec("vanilla", rnd, "vanilla", 2048, base),
                 rec("patched", rnd, "none", 4, base), rec("patched", rnd, "none", 2048, base),
                 rec("patched", rnd, "mtcopy-2", 2048, 3 * base)]
    md = br.markdown_tables(br.summarize(recs))
    assert "| config | 4K | 2048K |" in md
    assert "| vanilla | 1.500 +- 0.707 | 1.500 +- 0.707 |" in md
    assert "| mtcopy-2 | - | 3.00 [3.00..3.00] / 3.00 [3.00..3.00] |" in md
    assert "| none | 1.00 [1.00..1.00] | 1.00 [1.00..1.00] |" in md
    assert md[-1].startswith("- ") and "goal >= 0.97x" not in md[-1]


def test_alias_penalty_per_boot():
    def al(variant, rnd, layout, ns):
        return {"mode": "alias", "layout": layout, "ns_per_word": ns, "variant": variant,
                "round": rnd}
    recs = [al("vanilla", 0, "2m_apart", 60), al("vanilla", 0, "shifted", 6),
            al("vanilla", 0, "2m_apart", 50), al("vanilla", 0, "shifted", 5),
            al("patched", 0, "2m_apart", 10), al("patched", 0, "shifted", 5),
            al("patched", 1, "shifted", 5)]          # no pair: not counted
    s = br.summarize(recs)
    assert s["alias"] == {"median": 6.0, "min": 2.0, "max": 10.0, "boots": 2}
    assert any(line.startswith("emulator check: a word copy between buffers 2M apart took 6.0x")
               for line in br.text_tables(s))
    assert br.summarize([])["alias"] is None


def test_alias_two_cpus_per_boot_and_kernel():
    def al(variant, rnd, layout, threads, sec, halves=None):
        r = {"mode": "alias", "layout": layout, "threads": threads, "seconds": sec,
             "ns_per_word": sec * 1e9 / 2**20, "variant": variant, "round": rnd}
        if halves:
            r["first_seconds"], r["second_seconds"] = halves
        return r
    recs = [al("patched", 0, "2m_apart", 1, 0.8), al("patched", 0, "2m_apart", 2, 0.8,
                                                       (0.8, 0.08)),  # gain 1.0, halves 10
            al("patched", 0, "shifted", 1, 0.1), al("patched", 0, "shifted", 2, 0.05),  # 2.0
            al("patched", 1, "2m_apart", 1, 0.6), al("patched", 1, "2m_apart", 1, 0.4),
            al("patched", 1, "2m_apart", 2, 0.2, (0.2, 0.1)),   # median 0.5 / 0.2: 2.5
            al("patched", 1, "shifted", 1, 0.1), al("patched", 1, "shifted", 2, 0.1),  # 1.0
            al("patched", 2, "2m_apart", 2, 0.3),               # no one-CPU copy: no boot
            # vanilla: its own figures, never pooled with the patched boots'
            al("vanilla", 0, "2m_apart", 1, 0.3), al("vanilla", 0, "2m_apart", 2, 0.15),
            al("vanilla", 0, "shifted", 1, 0.1), al("vanilla", 0, "shifted", 2, 0.05)]
    s = br.summarize(recs)
    p, v = s["alias_two"]["patched"], s["alias_two"]["vanilla"]
    assert p["boots"] == 2 and p["2m_apart"] == {"median": 1.75, "min": 1.0, "max": 2.5}
    assert p["shifted"] == {"median": 1.5, "min": 1.0, "max": 2.0}
    # per boot, shifted gain / 2M-apart gain: 2.0 and 0.4; slower half / faster: 10 and 2
    assert p["penalty"] == {"median": 1.2, "min": 0.4, "max": 2.0}
    assert p["halves"] == {"median": 6.0, "min": 2.0, "max": 10.0}
    assert v["boots"] == 1 and v["penalty"]["median"] == 1.0 and v["halves"] is None
    # the one-CPU penalty ignores the two-CPU records (patched 8.0x and 5.0x, vanilla 3.0x)
    assert s["alias"] == {"median": 5.0, "min": 3.0, "max": 8.0, "boots": 3}
    assert not br.two_aliased(s)
    text = br.text_tables(s)
    assert any(t.startswith("emulator check, two CPUs (patched, 2 boot(s)): copying the two "
                            "halves of every 2M period at once was 1.75x as fast as one CPU 2M "
                            "apart [1.00..2.50], 1.50x 37 pages off [1.00..2.00]; 2M apart the "
                            "slower CPU's half took 6.0x the faster's [2.0..10.0]") for t in text)
    assert any(t.startswith("emulator check, two CPUs (vanilla, 1 boot(s))") for t in text)
    assert not any("shows the emulator's artefact" in t for t in text)
    # older runs (no two-CPU records): no figure
    assert br.summarize([r for r in recs if r["threads"] == 1])["alias_two"] is None


def _row(cfg, kb, to, rmed, rmin, rmax, nmed, nmin, nmax):
    return {"config": cfg, "folio_kb": kb, "to": to, "ratio_median": rmed, "ratio_min": rmin,
            "ratio_max": rmax, "ratio_pairs": 3, "vs_none_pairs": 3, "vs_none_median": nmed,
            "vs_none_min": nmin,
            "vs_none_max": nmax}


def test_goal_is_met_only_when_the_whole_spread_clears_it():
    # the second run of 2026-11-22: 1.52x [0.11..1.69] vanilla, 0.80x none -> printed "met"
    s = {"throughput": [_row("mtcopy-2", 2048, 1, 1.52, 0.11, 1.69, 0.80, 0.70, 0.90)]}
    assert "(goal >= 1.5x: inconclusive)" in "\n".join(br.goals(s))
    s = {"throughput": [_row("mtcopy-2", 2048, 1, 2.0, 1.6, 2.4, 1.8, 1.55, 2.0)]}
    assert "(goal >= 1.5x: met)" in "\n".join(br.goals(s))
    s = {"throughput": [_row("mtcopy-2", 2048, 1, 1.0, 0.9, 1.2, 1.1, 1.0, 1.4)]}
    assert "(goal >= 1.5x: missed)" in "\n".join(br.goals(s))
    # no vs-none figure: cannot be met
    s = {"throughput": [_row("mtcopy-2", 2048, 1, 2.0, 1.6, 2.4, None, None, None)]}
    assert "(goal >= 1.5x: inconclusive)" in "\n".join(br.goals(s))


def test_goal_at_2m_is_inconclusive_when_the_emulator_aliases():
    s = {"throughput": [_row("mtcopy-2", 2048, 1, 2.0, 1.6, 2.4, 1.8, 1.55, 2.0),
                        _row("cpu", 2048, 1, 0.5, 0.4, 0.6, 0.5, 0.4, 0.6),
                        _row("cpu", 4, 1, 0.5, 0.4, 0.6, 0.5, 0.4, 0.6)],
         "alias": {"median": 10.7, "min": 4.2, "max": 13.3, "boots": 6}}
    text = "\n".join(br.goals(s))
    assert "(goal >= 1.5x: inconclusive: emulator)" in text
    # cpu: the 4K cell decides (missed); the 2M cell is never judged under aliasing
    assert "(goal >= 0.97x everywhere: missed; 1 2M cell(s) not judged: emulator; " \
        "not measured: 16K to node 1, 64K to node 1, 256K to node 1, 1024K to node 1)" in text
    assert "at 4K" in text


def test_two_cpu_artefact_is_a_flag_never_a_verdict():
    rows = [_row("mtcopy-2", 2048, 1, 0.8, 0.6, 0.9, 0.8, 0.6, 0.9),
            _row("cpu", 2048, 1, 0.5, 0.4, 0.6, 0.5, 0.4, 0.6)]
    pen = {"median": 9.6, "min": 9.6, "max": 9.6}
    s = {"throughput": rows, "alias": {"median": 1.0, "min": 1.0, "max": 1.0, "boots": 2},
         "alias_two": {"patched": {"boots": 2, "2m_apart": {"median": 0.2, "min": 0.2,
                                                            "max": 0.2},
                                   "penalty": pen}}}
    assert br.two_aliased(s)
    # mtcopy-2 slower than vanilla at 2M stays missed: a kernel bug would look alike
    g = {x["goal"]: x for x in br.goal_verdicts(s)}
    assert g["mtcopy-2 >= 1.5x at 2M to node 1"]["verdict"] == "missed"
    # only the patched boots decide the flag
    s["alias_two"] = {"vanilla": s["alias_two"]["patched"]}
    assert not br.two_aliased(s)


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


# ---- goals: met only if the whole range clears it, vs vanilla and vs none

def _rounds(cfg, kb, to, van, none, eng, **kw):
    """Records of len(van) rounds: vanilla, none and one engine per round."""
    out = []
    for rnd, (v, n, e) in enumerate(zip(van, none, eng)):
        out += [rec("vanilla", rnd, "vanilla", kb, v, to=to, **kw),
                rec("patched", rnd, "none", kb, n, to=to, **kw),
                rec("patched", rnd, cfg, kb, e, to=to, **kw)]
    return out


def _alias(penalty, boots=2):
    out = []
    for rnd in range(boots):
        out += [{"mode": "alias", "layout": "2m_apart", "ns_per_word": 5.0 * penalty,
                 "variant": "patched", "round": rnd},
                {"mode": "alias", "layout": "shifted", "ns_per_word": 5.0,
                 "variant": "patched", "round": rnd}]
    return out


def test_goal_second_run_of_2026_11_22_is_inconclusive():
    # The row printed as "met" that day: 1.52x [0.11..1.69] vanilla, 0.80x none.
    row = {"config": "mtcopy-2", "folio_kb": 2048, "to": 1, "ratio_median": 1.52,
           "ratio_min": 0.11, "ratio_max": 1.69, "ratio_pairs": 3, "vs_none_pairs": 3,
           "vs_none_median": 0.80,
           "vs_none_min": 0.39, "vs_none_max": 1.08}
    text = "\n".join(br.goals({"throughput": [row]}))
    assert "(goal >= 1.5x: inconclusive" in text
    assert "met)" not in text and ": met" not in text


def test_goal_met_missed_inconclusive_by_whole_ranges():
    def verdict(van, none, eng):
        s = br.summarize(_rounds("mtcopy-2", 2048, 1, van, none, eng))
        [g] = [g for g in br.goal_verdicts(s) if g["config"] == "mtcopy-2"]
        return g["verdict"]
    # every round 2x vanilla and 2x none: met
    assert verdict([1, 1, 1], [1, 1, 1], [2, 2, 2]) == "met"
    # 2x vanilla every round, but one round only 1.2x none: not met
    assert verdict([1, 1, 1], [1, 1, 5 / 3], [2, 2, 2]) == "inconclusive"
    # whole ranges below against both: missed
    assert verdict([1, 1, 1], [1, 1, 1], [1.2, 1.4, 1.0]) == "missed"
    # below vanilla everywhere, above none everywhere: the two disagree
    assert verdict([2, 2, 2], [0.5, 0.5, 0.5], [1.0, 1.0, 1.0]) == "inconclusive"
    # one round is no range
    assert verdict([1], [1], [2]) == "inconclusive"
    # no none in the same boot: no same-boot comparison, no verdict
    s = br.summarize([r for r in _rounds("mtcopy-2", 2048, 1, [1, 1], [1, 1], [2, 2])
                      if r["config"] != "none"])
    assert [g["verdict"] for g in br.goal_verdicts(s) if g["config"] == "mtcopy-2"] == \
        ["inconclusive"]


def test_goal_at_2m_under_the_emulator_artefact_is_never_met_or_missed():
    recs = _rounds("mtcopy-2", 2048, 1, [1, 1], [1, 1], [2, 2]) + \
        _rounds("mtcopy-2", 2048, 2, [1, 1], [1, 1], [1, 1])
    def mt(s):
        return [g["verdict"] for g in br.goal_verdicts(s) if g["config"] == "mtcopy-2"]
    assert set(mt(br.summarize(recs))) == {"met", "missed"}
    s = br.summarize(recs + _alias(11.0))
    assert mt(s) == ["inconclusive: emulator"] * 2
    text = "\n".join(br.goals(s))
    assert text.count("(goal >= 1.5x: inconclusive: emulator)") == 2
    # about 1x, as on hardware: the ranges decide
    s = br.summarize(recs + _alias(1.0))
    assert set(mt(s)) == {"met", "missed"}


def test_cpu_goal_at_every_size_and_node():
    ok = [r for kb in br.GOAL_SIZES if kb != 2048
          for r in _rounds("cpu", kb, 1, [1, 1], [1, 1], [1, 1]) +
          _rounds("cpu", kb, 2, [1, 1], [1, 1], [1.1, 1.0])]
    full = ok + _rounds("cpu", 2048, 1, [1, 1], [1, 1], [1, 1]) + \
        _rounds("cpu", 2048, 2, [1, 1], [1, 1], [1, 1])
    [g] = [g for g in br.goal_verdicts(br.summarize(full)) if g["config"] == "cpu"]
    assert g["verdict"] == "met"
    # a run that measured only some sizes (QUICK) cannot meet "every size"
    [g] = [g for g in br.goal_verdicts(br.summarize(_rounds("cpu", 4, 1, [1, 1], [1, 1],
                                                             [1, 1]))) if g["config"] == "cpu"]
    assert g["verdict"] == "inconclusive" and "64K to node 1" in g["not_measured"]
    # one cell whose range straddles 0.97x: the goal is not met
    straddle = [r for r in full if (r["folio_kb"], r["to"]) != (64, 1)] + \
        _rounds("cpu", 64, 1, [1, 1], [1, 1], [1.0, 0.9])
    [g] = [g for g in br.goal_verdicts(br.summarize(straddle)) if g["config"] == "cpu"]
    assert g["verdict"] == "inconclusive"
    # one cell wholly below: missed, whatever the others say
    below = [r for r in straddle if (r["folio_kb"], r["to"]) != (16, 2)] + \
        _rounds("cpu", 16, 2, [1, 1], [1, 1], [0.8, 0.9])
    s = br.summarize(below)
    [g] = [g for g in br.goal_verdicts(s) if g["config"] == "cpu"]
    assert g["verdict"] == "missed"
    assert "worst cell 0.85x vanilla at 16K to node 2" in "\n".join(br.goals(s))
    # 2M cells under the emulator artefact: inconclusive: emulator, never met
    art = full + _alias(8.0)
    s = br.summarize(art)
    [g] = [g for g in br.goal_verdicts(s) if g["config"] == "cpu"]
    assert g["verdict"] == "inconclusive: emulator"
    assert "(goal >= 0.97x everywhere: inconclusive: emulator; 2 2M cell(s) not judged: " \
        "emulator)" in "\n".join(br.goals(s))


# ---- what was measured, honestly

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
            rec("patched", 0, "cpu", None, 2.0, mode="memcpy")] + _alias(1.0, boots=1)
    s = br.summarize(recs)
    assert s["measurements"] == 7
    assert s["skipped"] == 1
    text = "\n".join(br.text_tables(s))
    assert "measurements: 7 (tput 2, latency 1, memcpy 1, compaction 1, alias 2)" in text
    assert "1 skipped" in text
    assert "measurements: 7" in "\n".join(br.markdown_tables(s))


def test_absent_configurations_named_with_reason_everywhere():
    recs = [rec("vanilla", 0, "vanilla", 4, 1.0), rec("patched", 0, "cpu", 4, 1.0)]
    for rnd in (0, 1):
        recs.append({"mode": "config", "config": "dcbm-4", "absent": True,
                     "reason": "swdma: no channels", "variant": "patched", "round": rnd})
    s = br.summarize(recs)
    assert s["absent"] == [{"variant": "patched", "config": "dcbm-4", "rounds": [0, 1],
                            "reason": "swdma: no channels"}]
    want = "absent configurations (reported, not measured): dcbm-4 (patched, rounds 0,1: " \
        "swdma: no channels)"
    assert want in br.text_tables(s)
    assert any(want in line for line in br.markdown_tables(s))


def test_gbps_counts_moved_bytes_only():
    recs = [rec("vanilla", 0, "vanilla", 4, 2.0, pages=100, stayed_behind=0),
            rec("patched", 0, "cpu", 4, 2.0, pages=100, stayed_behind=50),
            rec("patched", 0, "none", 4, 2.0, pages=100, stayed_behind=0)]
    s = br.summarize(recs)
    rows = {r["config"]: r for r in s["throughput"]}
    assert rows["cpu"]["gbps"] == 1.0 and rows["cpu"]["gbps_recorded"] == 2.0
    assert rows["cpu"]["not_moved_share"] == 0.5
    assert rows["cpu"]["ratio_median"] == 0.5 and rows["cpu"]["vs_none_median"] == 0.5
    assert rows["vanilla"]["not_moved_share"] == 0.0
    text = br.text_tables(s)
    [line] = [ln for ln in text if ln.startswith("cpu ")]
    assert " 50.0%" in line
    # the count sweep is measured the same way
    c = [rec("patched", 0, "cpu", 2048, 4.0, mode="count", folios=8, pages=4096,
             stayed_behind=1024)]
    assert br.summarize(c)["count"][0]["gbps"] == 3.0
    # one page in 4096 did not move: shown, not rounded away
    c[0]["stayed_behind"] = 1
    assert "unmoved <0.1%" in "\n".join(br.text_tables(br.summarize(c)))


def test_folio_share_min_per_cell_flagged_below_90_percent():
    recs = [rec("vanilla", 0, "vanilla", 2048, 1.0, folio_share=100.0),
            rec("patched", 0, "cpu", 2048, 1.0, folio_share=100.0),
            rec("patched", 0, "cpu", 2048, 1.0, folio_share=45.0)]
    s = br.summarize(recs)
    rows = {r["config"]: r for r in s["throughput"]}
    assert rows["cpu"]["folio_share_min"] == 45.0 and rows["cpu"]["folio_share_low"]
    assert rows["vanilla"]["folio_share_min"] == 100.0 and not rows["vanilla"]["folio_share_low"]
    [line] = [ln for ln in br.text_tables(s) if ln.startswith("cpu ")]
    assert "45%!" in line
    md = br.markdown_tables(s)
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
    s = br.summarize(recs)
    cnt = {r["config"]: r for r in s["count"]}
    assert (cnt["mtcopy-2"]["vs_none_median"], cnt["mtcopy-2"]["vs_none_min"]) == (2.0, 2.0)
    assert (cnt["mtcopy-2"]["ratio_min"], cnt["mtcopy-2"]["ratio_max"]) == (2.0, 2.0)
    comp = {r["config"]: r for r in s["compaction"]}
    assert comp["mtcopy-2"]["vs_none_median"] == 2.0
    assert comp["none"]["vs_none_median"] is None
    text = "\n".join(br.text_tables(s))
    assert "mtcopy-2      8 folios" in text and "2.00x [2.00..2.00] vs none 2.00x [2.00..2.00]" \
        in text
    assert "vs none 2.00x [2.00..2.00]" in [ln for ln in br.text_tables(s)
                                             if ln.startswith("mtcopy-2   hog=no")][0]
    md = br.markdown_tables(s)
    assert "| cpu | 0.75 [0.50..1.00] / 0.75 [0.50..1.00] |" in md
    assert any(ln.startswith("| config | hog | n | wall s |") and "vs none" in ln for ln in md)
    assert any(ln.startswith("| mtcopy-2 | no |") and "2.00 [2.00..2.00] | 2.00 [2.00..2.00]"
               in ln for ln in md)


def test_goal_needs_two_rounds_against_none_too():
    # 2x vanilla in 3 rounds, but none was measured in one patched boot only:
    # against none that is one point, not a range, so not "met".
    recs = [r for r in _rounds("mtcopy-2", 2048, 1, [1, 1, 1], [1, 1, 1], [2, 2, 2])
            if r["config"] != "none" or r["round"] == 0]
    s = br.summarize(recs)
    [row] = [r for r in s["throughput"] if r["config"] == "mtcopy-2"]
    assert (row["ratio_pairs"], row["vs_none_pairs"]) == (3, 1)
    assert [g["verdict"] for g in br.goal_verdicts(s) if g["config"] == "mtcopy-2"] == \
        ["inconclusive"]
    assert "2.00x none in the same boot [2.00..2.00] over 1 round(s)" in "\n".join(br.goals(s))


def test_goal_with_too_few_folios_of_the_size_or_an_absent_config_is_inconclusive():
    # 2x everywhere, but only 40% of the buffer was in 2M folios: not met
    recs = _rounds("mtcopy-2", 2048, 1, [1, 1], [1, 1], [2, 2], folio_share=40.0)
    s = br.summarize(recs)
    assert [g["verdict"] for g in br.goal_verdicts(s) if g["config"] == "mtcopy-2"] == \
        ["inconclusive"]
    # mtcopy-2 absent from the run: the goal is still named, inconclusive
    s = br.summarize(_rounds("cpu", 4, 1, [1, 1], [1, 1], [1, 1]))
    text = "\n".join(br.goals(s))
    assert "mtcopy-2 >= 1.5x at 2M to node 1: not measured in this run (mtcopy-2 at 2M): " \
        "inconclusive" in text


def prof(rnd, config, kb, **kw):
    r = {"mode": "profile", "config": config, "folio_kb": kb, "variant": "patched",
         "round": rnd, "batches": 2, "pages": 1000, "unmap_ns": 2e6, "flush_ns": 1e6,
         "copy_ns": 0, "move_ns": 7e6, "folio_copy_pages": 1000, "folio_copy_ns": 4e6,
         "batch_copy_pages": 0, "batch_copy_ns": 0, "engine_ns": 0, "lost_events": 0,
         "traced_gbps": 0.3, "verified": True, "markers": 2}
    r.update(kw)
    return r


def test_profile_shares_copy_rate_and_bound_from_summed_rounds():
    recs = [rec("patched", 0, "none", 4, 1.0, mode="memcpy", threads=1),
            rec("patched", 0, "none", 4, 3.0, mode="memcpy", threads=2),
            # none: 4 of 10 ms are the per-folio copies inside the move phase
            prof(0, "none", 4), prof(1, "none", 4),
            # dcbm: a 5 ms batch copy step, 4 of it the engine; no per-folio copy
            prof(0, "dcbm-4", 4, copy_ns=5e6, move_ns=2e6, folio_copy_pages=0,
                 folio_copy_ns=0, batch_copy_pages=1000, batch_copy_ns=4e6, engine_ns=3e6),
            prof(0, "vanilla", 4, variant="vanilla")]
    s = br.summarize(recs)
    rows = {r["config"]: r for r in s["profile"]}
    assert set(rows) == {"none", "dcbm-4"}          # vanilla has no tracepoint
    n = rows["none"]
    assert n["n"] == 2 and n["pages"] == 2000
    assert abs(n["copy_share"] - 0.4) < 1e-9 and abs(n["move_share"] - 0.3) < 1e-9
    assert abs(n["unmap_share"] - 0.2) < 1e-9 and abs(n["flush_share"] - 0.1) < 1e-9
    # 2000 pages x 4096 bytes in 8 ms of copying
    assert abs(n["copy_gbps"] - 2000 * 4096 / 8e6) < 1e-9
    assert abs(n["free_copy_bound"] - 10 / 6) < 1e-9
    # the ceiling is one thread's memcpy, not the two-thread run
    assert abs(n["copy_vs_memcpy"] - n["copy_gbps"] / 1.0) < 1e-9
    d = rows["dcbm-4"]
    # the engine's share is of the batch copy event's time, not the phase's
    assert abs(d["copy_share"] - 0.5) < 1e-9 and abs(d["engine_share_of_batch_copy"] - 0.75) < 1e-9
    assert d["consistent"] and n["consistent"]
    assert s["memcpy"]["patched"]["gbps"] == 1.0
    assert s["memcpy"]["patched"]["by_threads"] == {1: 1.0, 2: 3.0}
    text = "\n".join(br.text_tables(s))
    assert "== where the time goes" in text and "2: 3.000 GB/s (3.00x)" in text
    assert "| none | 4K | 20% | 10% | 40% | 30% |" in "\n".join(br.markdown_tables(s))


@pytest.mark.parametrize("kw", [{"lost_events": 3}, {"lost_events": None}, {"verified": False},
                                {"pages": 0}, {"folio_copy_ns": 8e6},
                                {"unmap_ns": 0, "flush_ns": 0, "move_ns": 0}])
def test_profile_flags_what_does_not_add_up(kw):
    s = br.summarize([prof(0, "cpu", 4, **kw)])
    assert "NOT VERIFIED, EVENTS LOST OR INCONSISTENT" in "\n".join(br.text_tables(s))


def test_profile_copy_rate_counts_copied_pages_not_unmapped_ones():
    # a retried folio unmapped twice (pages 1200) but copied once (1000)
    s = br.summarize([prof(0, "none", 4, pages=1200)])
    assert abs(s["profile"][0]["copy_gbps"] - 1000 * 4096 / 4e6) < 1e-9


def copy_prof(rnd, config, kb, copy_ms, **kw):
    """A profile whose copy phase moved 1000 pages in copy_ms (per-folio)."""
    return prof(rnd, config, kb, folio_copy_ns=copy_ms * 1e6, **kw)


def copy_goal(s, config):
    [g] = [g for g in s["goals"] if g.get("copy_phase") and g["config"] == config]
    return g


def test_copy_phase_goals_pair_boots_and_judge_whole_ranges():
    recs = []
    for rnd in (0, 1):
        for kb in (4, 16, 64, 256, 1024):
            # 2 threads copy 2x as fast at 4K, 1.5x at 16K in one boot only
            two = {4: 2.0, 16: 1.5 if rnd == 0 else 2.0}.get(kb, 1.0)
            # boot 1 copies 3x slower for both: only same-boot pairs give 2.0
            slow = 3 if rnd == 1 else 1
            recs += [copy_prof(rnd, "mtcopy-1", kb, 4 * slow),
                     copy_prof(rnd, "mtcopy-2", kb, 4 * slow / two)]
    s = br.summarize(recs)
    g = copy_goal(s, "mtcopy-2")
    verdicts = {c["folio_kb"]: c["verdict"] for c in g["cells"]}
    assert verdicts == {4: "met", 16: "inconclusive", 64: "missed", 256: "missed",
                        1024: "missed"}
    assert g["verdict"] == "missed"
    text = "\n".join(br.goals(s))
    assert ("mtcopy-2 copy phase >= 1.6x mtcopy-1's at every folio size 4K-1M (copy rates in "
            "the same boot, traced runs): 4K 2.00x [2.00..2.00] over 2 boot(s) met; "
            "16K 1.75x [1.50..2.00] over 2 boot(s) inconclusive") in text
    # dcbm-4 and none were not profiled: not measured, never met
    d = copy_goal(s, "dcbm-4")
    assert d["verdict"] == "inconclusive" and d["not_measured"] == "64K, 256K, 1M, 2M"
    assert "dcbm-4 copy phase >= 1.3x none's at every folio size 64K-2M" in text


def test_copy_phase_goal_met_only_over_two_boots_and_clean_profiles():
    def run(extra=None, rounds=(0, 1)):
        recs = [copy_prof(rnd, c, kb, ms) for rnd in rounds for kb in (64, 256, 1024, 2048)
                for c, ms in (("none", 4), ("dcbm-4", 2))]
        return br.summarize(recs + (extra or []))
    assert copy_goal(run(), "dcbm-4")["verdict"] == "met"
    # one boot is a point, not a range
    assert copy_goal(run(rounds=(0,)), "dcbm-4")["verdict"] == "inconclusive"
    # a profile that lost events, did not verify or was not bracketed by
    # the move's markers does not count: that boot's pair is gone
    for bad in ({"lost_events": 5}, {"lost_events": None}, {"verified": False},
                {"verified": None}, {"markers": 1}):
        s = run(rounds=(0,), extra=[copy_prof(1, "none", kb, 4) for kb in (64, 256, 1024, 2048)] +
                [copy_prof(1, "dcbm-4", kb, 2, **bad) for kb in (64, 256, 1024, 2048)])
        assert copy_goal(s, "dcbm-4")["verdict"] == "inconclusive", bad
    # one size not profiled while every other is met: not met
    s = br.summarize([r for r in (copy_prof(rnd, c, kb, ms) for rnd in (0, 1)
                                  for kb in (64, 256, 1024) for c, ms in (("none", 4), ("dcbm-4", 2)))])
    g = copy_goal(s, "dcbm-4")
    assert g["verdict"] == "inconclusive" and g["not_measured"] == "2M"
    # under the emulator's aliasing 2M is never judged
    alias = [{"mode": "alias", "variant": "patched", "round": 0, "layout": lay, "ns_per_word": ns}
             for lay, ns in (("2m_apart", 10.0), ("shifted", 1.0))]
    g = copy_goal(run(extra=alias), "dcbm-4")
    assert {c["folio_kb"]: c["verdict"] for c in g["cells"]}[2048] == br.EMULATOR
    assert g["verdict"] == br.EMULATOR


def test_no_copy_phase_goals_without_profiles():
    s = br.summarize([rec("vanilla", 0, "vanilla", 4, 1.0), rec("patched", 0, "none", 4, 1.0)])
    assert not [g for g in s["goals"] if g.get("copy_phase")]
    # asked for but skipped (no tracepoint): shown as not measured, not dropped
    s = br.summarize([rec("patched", 0, "none", 4, 1.0),
                      {"mode": "profile", "skipped": True, "variant": "patched", "round": 0}])
    g = copy_goal(s, "mtcopy-2")
    assert g["verdict"] == "inconclusive" and g["not_measured"] == "4K, 16K, 64K, 256K, 1M"


def test_profile_dcbm_overhead_per_folio_and_descriptor():
    # 100 folios: 2 + 5 + 3 ms outside the transfers, 40 ms waiting
    s = br.summarize([prof(0, "dcbm-4", 64, dcbm_folios=100, dcbm_descriptors=400,
                           dcbm_plan_ns=2e6, dcbm_submit_ns=5e6, dcbm_wait_ns=40e6,
                           dcbm_teardown_ns=3e6),
                      prof(0, "none", 64)])
    rows = {r["config"]: r for r in s["profile"]}
    d = rows["dcbm-4"]
    assert abs(d["dcbm_overhead_us_per_folio"] - 100.0) < 1e-9
    assert abs(d["dcbm_submit_ns_per_descriptor"] - 12500) < 1e-9
    assert abs(d["dcbm_wait_share"] - 0.8) < 1e-9
    assert rows["none"]["dcbm_overhead_us_per_folio"] is None
    text = "\n".join(br.text_tables(s))
    assert "100 folios, 400 descriptors: 100.0 us/folio, 12500 ns/descriptor submitted, waiting 80%" \
        in text


def test_profile_mtcopy_helpers_per_batch_and_share_that_ran():
    s = br.summarize([prof(0, "mtcopy-2", 16, helpers_queued=8, helpers_ran=6, batch_copies=2),
                      prof(1, "mtcopy-2", 16, helpers_queued=0, helpers_ran=0, batch_copies=2),
                      prof(0, "mtcopy-1", 16, helpers_queued=None, helpers_ran=None)])
    rows = {r["config"]: r for r in s["profile"]}
    r = rows["mtcopy-2"]
    assert r["helpers_queued"] == 8 and r["helpers_per_batch"] == 2
    assert r["helpers_ran_share"] == 0.75
    text = "\n".join(br.text_tables(s))
    assert "8 queued, 2.00 per batch copy, 75% ran" in text
    # not traced reads as such, never as "0 queued"
    assert rows["mtcopy-1"]["helpers_queued"] is None
    assert "mtcopy-1      16K not traced" in text


def _auto_recs(auto_vals, best=2.0, none=1.0, spread=0.1):
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
    s = br.summarize(_auto_recs([1.9, 1.9, 1.9]))
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
    assert "auto/best 0.95" in "\n".join(br.text_tables(s))
    assert "| 64K to 1 | mtcopy-2 | 0.95 [0.95..0.95] | met |" in "\n".join(br.markdown_tables(s))


def test_auto_verdicts_missed_and_inconclusive():
    # every round below 0.9 of the best: missed; above none though
    s = br.summarize(_auto_recs([1.5, 1.6, 1.7]))
    [r] = s["auto"]
    assert r["verdict_best"] == "missed" and r["verdict_none"] == "met"
    # one round under, one over: inconclusive; one round only: inconclusive
    s = br.summarize(_auto_recs([1.5, 2.0]))
    assert s["auto"][0]["verdict_best"] == "inconclusive"
    s = br.summarize(_auto_recs([2.0]))
    assert s["auto"][0]["verdict_best"] == "inconclusive"
    # below none in every round: missed
    s = br.summarize(_auto_recs([0.5, 0.6], none=1.0))
    assert s["auto"][0]["verdict_none"] == "missed"
    # no auto measured: no rows, no goals
    s = br.summarize([r for r in _auto_recs([1.0, 1.0]) if r["config"] != "auto"])
    assert s["auto"] == [] and s["auto_goals"] == []


def test_auto_report_cannot_pass_what_it_did_not_see():
    # a round where auto moved nothing is 0x, not skipped: not met
    s = br.summarize(_auto_recs([0.0, 1.9, 1.9]))
    assert s["auto"][0]["vs_best_min"] == 0 and s["auto"][0]["verdict_best"] != "met"
    # noise above the cap: no bar, inconclusive even at 0.5x
    s = br.summarize(_auto_recs([1.0, 1.0, 1.0], spread=1.2))
    assert s["auto"][0]["verdict_best"] == "inconclusive"
    # a cell the fixed configurations measured and auto did not: inconclusive
    recs = _auto_recs([1.9, 1.9]) + [rec("patched", rnd, "mtcopy-2", 64, 2.0, to=2)
                                     for rnd in (0, 1)]
    s = br.summarize(recs)
    cell = [r for r in s["auto"] if r["to"] == 2][0]
    assert cell["pairs"] == 0 and cell["verdict_best"] == "inconclusive"
    goals = {g["goal"]: g["verdict"] for g in s["auto_goals"]}
    assert goals["auto >= the best fixed configuration within the noise, every cell"] \
        == "inconclusive"
    # corrupted data under auto: missed, however fast
    recs = _auto_recs([2.5, 2.5])
    recs[[i for i, r in enumerate(recs) if r["config"] == "auto"][0]]["bad_bytes"] = 3
    s = br.summarize(recs)
    assert s["auto"][0]["verdict_best"] == "missed" and s["auto"][0]["verdict_none"] == "missed"
    # auto asked for but absent: the goals say so, inconclusive
    recs = [r for r in _auto_recs([1.0, 1.0]) if r["config"] != "auto"]
    recs.append({"mode": "config", "config": "auto", "absent": True, "reason": "no mtcopy",
                 "variant": "patched", "round": 0})
    s = br.summarize(recs)
    assert {g["verdict"] for g in s["auto_goals"]} == {"inconclusive"}
    assert "not measured: no mtcopy" in s["auto_goals"][0]["note"]


def test_auto_hog_goal_is_not_judged_from_compaction_with_one_hog():
    # the compaction runs' hog is one busy loop on the compacting CPU, not a
    # hog on every CPU: never the goal's evidence
    def comp(rnd, cfg, rate):
        return {"mode": "compaction", "config": cfg, "variant": "patched", "round": rnd,
                "hog": True, "wall_s": 1.0, "pgmigrate_success": rate}
    s = br.summarize(_auto_recs([1.9, 1.9]) + [comp(r, c, v) for r in (0, 1)
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
        recs += br.load_records(p, "patched", rnd)
    return recs


def test_hog_tput_is_its_own_measurement_and_judges_the_hog_goal(tmp_path):
    base = _auto_recs([1.9, 1.9])
    # auto at none's speed under the hog, every round: met; never a tput cell
    lines = _hog_recs([1.0, 1.0])
    hog = _load(tmp_path, [lines[:6], lines[6:]])
    assert {r["mode"] for r in hog} == {"tput_hog"}
    s = br.summarize(base + hog)
    assert [(r["folio_kb"], r["to"]) for r in s["auto"]] == [(64, 1)]
    [h] = s["hog"]
    assert h["pairs"] == 2 and abs(h["median"] - 1.0) < 1e-9 and h["verdict"] == "met"
    assert abs(h["others"]["mtcopy-2"] - 0.7) < 1e-9
    goal = [g for g in s["auto_goals"] if "hog" in g["goal"]][0]
    assert goal["verdict"] == "met" and "4K 1.00x none" in goal["note"]
    assert "mtcopy-2/none 0.70" in "\n".join(br.text_tables(s))

    def hog(lines):
        s = br.summarize(base + _load(tmp_path, [lines[:6], lines[6:]]))
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
    s = br.summarize(base + _load(tmp_path, [lines[:6], lines[6:12], lines[12:]]))
    assert s["hog"][0]["verdict"] == "inconclusive" and "without auto" in s["hog"][0]["why"]
    # a skipped hog cell stays a cell, inconclusive
    lines = _hog_recs([1.0, 1.0]) + [json.dumps({"mode": "tput", "config": "auto",
                                                 "folio_kb": 64, "to": 1, "hog": True,
                                                 "skipped": True, "reason": "no room"})]
    s = br.summarize(base + _load(tmp_path, [lines[:6], lines[6:]]))
    cells = {r["folio_kb"]: r for r in s["hog"]}
    assert cells[4]["verdict"] == "met" and cells[64]["verdict"] == "inconclusive"
    assert [g for g in s["auto_goals"] if "hog" in g["goal"]][0]["verdict"] == "inconclusive"
    # a buffer not in folios of the size: inconclusive
    assert hog(_hog_recs([1.0, 1.0], folio_share=40))["verdict"] == "inconclusive"
    # below none by more than the noise in every round: missed
    lines = _hog_recs([0.7, 0.75])
    s = br.summarize(base + _load(tmp_path, [lines[:6], lines[6:]]))
    assert s["hog"][0]["verdict"] == "missed"
    assert [g for g in s["auto_goals"] if "hog" in g["goal"]][0]["verdict"] == "missed"
    # one round only, or corrupted bytes under auto
    s = br.summarize(base + _load(tmp_path, [_hog_recs([1.2])]))
    assert s["hog"][0]["verdict"] == "inconclusive"
    lines = _hog_recs([1.2, 1.2], bad=1)
    s = br.summarize(base + _load(tmp_path, [lines[:6], lines[6:]]))
    assert s["hog"][0]["verdict"] == "missed"
    # no auto under the hog: no rows, the hog goal not measured
    lines = [ln for ln in _hog_recs([1.0, 1.0]) if '"auto"' not in ln]
    s = br.summarize(base + _load(tmp_path, [lines[:4], lines[4:]]))
    assert s["hog"] == []
    assert [g for g in s["auto_goals"] if "hog" in g["goal"]][0]["verdict"] == "inconclusive"


def test_auto_choices_sum_the_parts_and_say_what_the_model_held():
    def ch(rnd, part, kb, eng, chosen, folio_ns, batch_ns=0, not_ready=0, samples=3):
        return {"mode": "auto_choice", "config": "auto", "part": part, "rep": 0,
                "engine": eng, "size_kb": kb, "batch_ns": batch_ns, "folio_ns": folio_ns,
                "samples": samples, "chosen": chosen, "not_ready": not_ready,
                "variant": "patched", "round": rnd}
    recs = _auto_recs([1.9, 1.9]) + [
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
    s = br.summarize(recs)
    assert s["auto_splits"] == [{"part": "tput 0->1", "engine": "dcbm", "chosen": 5,
                                 "ratio_pct": 130}]
    assert "split between the CPU and dcbm: 5, learnt ratio 130%" in "\n".join(br.text_tables(s))
    c = {(r["part"], r["folio_kb"]): r for r in s["auto_choices"]}
    r = c[("tput 0->1", 4)]
    assert r["batches"] == 64
    assert abs(r["engines"]["mtcopy"]["share"] - 56 / 64) < 1e-9
    assert r["engines"]["mtcopy"]["folio_ns"] == 10000
    assert r["engines"]["dcbm"]["share"] == 0 and r["engines"]["dcbm"]["folio_ns"] == 130000
    assert c[("tput hog 0->1", 4)]["engines"]["cpu"]["share"] == 1
    text = "\n".join(br.text_tables(s))
    assert "mtcopy 88% [10.0+50]" in text and "mtcopy not ready 5 times" in text
    assert "What auto chose" in "\n".join(br.markdown_tables(s))


def _split_recs(split_vals, cpu=1.0, dcbm=2.0, spread=0.1, splits=8, bad=0,
                split_kb=2048, auto=True, share=None):
    """2M throughput, two reps a round of cpu, dcbm-4 and split (and auto at
    the best, so that auto's rows exist), with the split count records."""
    recs = []
    for rnd, sv in enumerate(split_vals):
        cfgs = [("none", cpu), ("cpu", cpu), ("dcbm-4", dcbm), ("split", sv)]
        if auto:
            cfgs.append(("auto", dcbm))
        for cfg, v in cfgs:
            for f in (1 - spread / 2, 1 + spread / 2):
                extra = {"bad_bytes": bad if cfg == "split" else 0}
                if share is not None:
                    extra["folio_share"] = share
                recs.append(rec("patched", rnd, cfg, 2048, v * f, **extra))
        for kb in (4, 2048):
            recs.append({"mode": "splits", "config": "split", "part": "tput 0->1",
                         "folio_kb": kb, "to": 1, "rep": 0,
                         "splits": splits if kb == split_kb else 0,
                         "variant": "patched", "round": rnd})
    return recs


def _split_goal(recs):
    s = br.summarize(recs)
    [g] = [g for g in s["auto_goals"] if g["goal"].startswith("a 2M batch split")]
    return s, g


def test_split_met_only_above_the_faster_rival_plus_noise():
    # 2.4 against dcbm's 2.0: 1.2x every round, noise 0.1: met
    s, g = _split_goal(_split_recs([2.4, 2.4, 2.4]))
    [r] = s["split"]
    assert abs(r["min"] - 1.2) < 1e-9 and r["pairs"] == 3 and abs(r["noise"] - 0.1) < 1e-9
    assert g["verdict"] == "met" and "1.20x the faster of cpu and dcbm-4" in g["note"]
    assert "24 batches split" in g["note"]
    # split is not a fixed choice auto must match: auto at dcbm's speed is met
    assert {r["verdict_best"] for r in s["auto"]} == {"met"}
    # within the noise: inconclusive; slower than dcbm every round: missed
    assert _split_goal(_split_recs([2.1, 2.1, 2.1]))[1]["verdict"] == "inconclusive"
    assert _split_goal(_split_recs([1.5, 1.5, 1.5]))[1]["verdict"] == "missed"
    # one round cannot say
    assert _split_goal(_split_recs([2.4]))[1]["verdict"] == "inconclusive"
    # too noisy to say
    assert _split_goal(_split_recs([2.4, 2.4], spread=0.3))[1]["verdict"] == "inconclusive"
    # a tie with repetitions that agree exactly is not faster
    assert _split_goal(_split_recs([2.0, 2.0, 2.0], spread=0))[1]["verdict"] == "inconclusive"
    assert _split_goal(_split_recs([2.1, 2.1, 2.1], spread=0))[1]["verdict"] == "met"
    # the two-CPU emulator check is shown with it, and judges nothing
    two = [{"mode": "alias", "layout": "2m_apart", "threads": t, "seconds": sec,
            "ns_per_word": 1.0, "variant": "patched", "round": 0} for t, sec in ((1, 1), (2, 1))]
    _, g = _split_goal(_split_recs([1.5, 1.5, 1.5]) + two)
    assert g["verdict"] == "missed" and \
        "two CPUs copying halves of 2M periods in the patched boots: 1.00x" in g["note"]
    assert "artefact" not in g["note"]


def _two_cpu_check(penalty, boots=2):
    """alias records of boots where two CPUs gain 2x 37 pages off and
    2/penalty x 2M apart."""
    out = []
    for rnd in range(boots):
        for layout, two in (("shifted", 0.5), ("2m_apart", penalty / 2)):
            out += [{"mode": "alias", "layout": layout, "threads": t, "seconds": sec,
                     "ns_per_word": 1.0, "variant": "patched", "round": rnd}
                    for t, sec in ((1, 1.0), (2, two))]
    return out


def test_split_under_the_two_cpu_artefact_is_judged_as_it_is_and_flagged():
    art, clean = _two_cpu_check(10.0), _two_cpu_check(1.2)
    s = br.summarize(art)
    assert br.two_aliased(s) and not br.two_aliased(br.summarize(clean))
    assert any("shows the emulator's artefact" in t for t in br.text_tables(s))
    _, g = _split_goal(_split_recs([1.5, 1.5, 1.5]) + art)
    assert g["verdict"] == "missed" and "(the emulator's artefact)" in g["note"]
    assert _split_goal(_split_recs([2.4, 2.4, 2.4]) + art)[1]["verdict"] == "met"
    # the boundary: a penalty of exactly ALIAS_ARTEFACT flags, just below does not
    assert br.two_aliased(br.summarize(_two_cpu_check(br.ALIAS_ARTEFACT)))
    assert not br.two_aliased(br.summarize(_two_cpu_check(br.ALIAS_ARTEFACT * 0.99)))

def test_split_sizes_are_shown_at_every_folio_size_it_ran():
    recs = _split_recs([2.4, 2.4, 2.4])
    # a 1M cell too: split 1.5 against cpu 1.0 and dcbm-4 1.2, a round without dcbm left out
    for rnd in range(3):
        for cfg, v in (("cpu", 1.0), ("dcbm-4", 1.2), ("split", 1.5)):
            if cfg == "dcbm-4" and rnd == 2:
                continue
            recs.append(rec("patched", rnd, cfg, 1024, v))
        recs.append({"mode": "splits", "config": "split", "part": "tput 0->1", "folio_kb": 1024,
                     "to": 1, "rep": 0, "splits": 4, "variant": "patched", "round": rnd})
    s = br.summarize(recs)
    rows = {r["folio_kb"]: r for r in s["split_sizes"]}
    assert rows[1024]["pairs"] == 2 and abs(rows[1024]["median"] - 1.25) < 1e-9
    assert rows[1024]["splits"] == 12 and abs(rows[2048]["median"] - 1.2) < 1e-9
    assert "1M to 1      split/max(cpu,dcbm-4) 1.25" in "\n".join(br.text_tables(s))
    # the goal is still judged at 2M alone
    assert [r["to"] for r in s["split"]] == [1]


def test_split_n_is_judged_against_its_own_dcbm_and_never_a_fixed_choice():
    recs = _split_recs([2.4, 2.4, 2.4])
    # split-1 at 3.0 against cpu 1.0 and dcbm-1 1.5: 2x; faster than auto,
    # yet never auto's best fixed; its split counts stay its own
    for rnd in range(3):
        for cfg, v in (("dcbm-1", 1.5), ("split-1", 3.0)):
            recs.append(rec("patched", rnd, cfg, 2048, v))
        recs.append({"mode": "splits", "config": "split-1", "part": "tput 0->1",
                     "folio_kb": 2048, "to": 1, "rep": 0, "splits": 100,
                     "variant": "patched", "round": rnd})
    s = br.summarize(recs)
    rows = {(r["config"], r["folio_kb"]): r for r in s["split_sizes"]}
    assert rows[("split-1", 2048)]["rivals"] == ["cpu", "dcbm-1"]
    assert abs(rows[("split-1", 2048)]["median"] - 2.0) < 1e-9
    assert rows[("split-1", 2048)]["splits"] == 300 and rows[("split", 2048)]["splits"] == 24
    assert "split-1/max(cpu,dcbm-1) 2.00" in "\n".join(br.text_tables(s))
    assert all("split-1" not in r["best"] for r in s["auto"])
    [r] = s["split"]
    assert r["splits"] == 24 and abs(r["median"] - 1.2) < 1e-9


def test_split_missed_without_splits_or_with_corrupt_bytes():
    s, g = _split_goal(_split_recs([2.4, 2.4, 2.4], splits=0))
    assert g["verdict"] == "missed" and "no 2M batch was split" in g["note"]
    s, g = _split_goal(_split_recs([2.4, 2.4, 2.4], bad=1))
    assert g["verdict"] == "missed" and "corrupted bytes" in g["note"]
    # splits at 4K say nothing about the 2M cell
    s, g = _split_goal(_split_recs([2.4, 2.4, 2.4], split_kb=4))
    assert g["verdict"] == "missed" and "no 2M batch was split" in g["note"]


def test_split_rounds_need_both_rivals_and_a_split():
    recs = [r for r in _split_recs([2.4, 2.4, 2.4])
            if not (r.get("config") == "cpu" and r.get("round") == 1)]
    s, g = _split_goal(recs)
    assert s["split"][0]["pairs"] == 2 and g["verdict"] == "met"
    # a round whose 2M runs split nothing is left out, and said so
    recs = _split_recs([2.4, 2.4, 2.4])
    for r in recs:
        if r.get("mode") == "splits" and r["round"] == 0:
            r["splits"] = 0
    s, g = _split_goal(recs)
    assert s["split"][0]["pairs"] == 2 and "1 round(s) without a split left out" in g["note"]


def test_split_inconclusive_without_counts_or_2m_folios_and_without_auto():
    recs = [r for r in _split_recs([2.4, 2.4, 2.4]) if r.get("mode") != "splits"]
    assert _split_goal(recs)[1]["verdict"] == "inconclusive"
    s, g = _split_goal(_split_recs([2.4, 2.4, 2.4], share=50))
    assert g["verdict"] == "inconclusive" and "50% of a buffer in 2M folios" in g["note"]
    # judged without auto in the run too
    s, g = _split_goal(_split_recs([2.4, 2.4, 2.4], auto=False))
    assert g["verdict"] == "met"


def test_boots_with_different_workqueue_scopes_fail_the_run():
    from lab.molab import cli
    tput = {"mode": "tput", "folio_kb": 4, "to": 1, "gbps": 0.2, "rep": 0, "bytes": 1 << 26}
    recs = [{"mode": "run", "variant": "vanilla", "round": 0, "wq_scope": "system"},
            dict(tput, variant="vanilla", round=0, config="vanilla"),
            {"mode": "run", "variant": "patched", "round": 0, "wq_scope": "cache"},
            dict(tput, variant="patched", round=0, config="cpu")]
    s = br.summarize(recs)
    assert s["wq_scopes"] == ["cache", "system"]
    assert any("different workqueue affinity scopes (cache, system)" in f
               for f in cli._bench_failures({"records": recs}, s))
    for r in recs:
        if r["mode"] == "run":
            r["wq_scope"] = "system"
    s = br.summarize(recs)
    assert s["wq_scopes"] == ["system"]
    assert not any("workqueue" in f for f in cli._bench_failures({"records": recs}, s))
