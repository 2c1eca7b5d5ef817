"""Turn the bench suite's JSON lines from alternating boots into tables,
JSON, CSV and plots.

Every record comes from guest/mo_bench (one JSON object a line) and is
tagged here with the kernel variant ("vanilla" or "patched") and the boot
round. Under emulation only ratios measured in the same session mean
anything, so each ratio against vanilla is taken per round (patched boot r
against vanilla boot r) and reported as the median over rounds with its
spread (min..max).
"""

import csv
import json
import statistics
from collections import defaultdict

VANILLA = "vanilla"
NONE = "none"           # the patched kernel with batch copying off
# The modes of mo_bench that measure something; "run", "config" and "part"
# lines are bookkeeping, and a record with "skipped" or "absent" measured nothing.
MEASURED = ("tput", "tput_hog", "count", "latency", "memcpy", "compaction", "alias", "profile",
            "tiering")
# A cell whose buffer was less than this share (percent) in folios of the
# named size did not measure that folio size: flagged with "!".
FOLIO_SHARE_LOW = 90.0


def load_records(path, variant, rnd):
    """The JSON lines of one boot's bench.jsonl, tagged; bad lines skipped."""
    out = []
    for line in path.read_text(errors="replace").splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            continue
        rec["variant"] = variant
        rec["round"] = rnd
        # tput under a hog on every CPU is its own measurement, never a
        # throughput cell
        if rec.get("mode") == "tput" and rec.get("hog") is True:
            rec["mode"] = "tput_hog"
        out.append(rec)
    return out


def _usable(rec, mode):
    return rec.get("mode") == mode and not rec.get("skipped") and not rec.get("absent")


def config_of(rec):
    """The engine configuration: "vanilla" for every vanilla-kernel record."""
    return VANILLA if rec["variant"] == VANILLA else rec.get("config") or rec.get("engine")


def mean_sd(values):
    values = [v for v in values if v is not None]
    if not values:
        return None, None
    m = statistics.fmean(values)
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    return m, sd


def moved_gbps(rec):
    """GB/s of the bytes that really moved.

    mo_bench's "gbps" divides the whole buffer by the time, moved or not;
    "stayed_behind" (pages not on the target node by a move_pages() query
    after the move) is the truth about what moved, whatever the per-page
    status said (6.12 reports -EBUSY for pages that did move). Records
    without those fields (older runs) keep their figure.
    """
    g, pages, stayed = rec.get("gbps"), rec.get("pages"), rec.get("stayed_behind")
    if not isinstance(g, (int, float)):
        return None
    if isinstance(pages, int) and pages > 0 and isinstance(stayed, (int, float)):
        return g * max(pages - stayed, 0) / pages
    return g


def _not_moved_share(rs):
    """Share of the pages of these records that stayed behind (None if unknown)."""
    known = [r for r in rs if isinstance(r.get("pages"), int) and r["pages"] > 0
             and isinstance(r.get("stayed_behind"), (int, float))]
    if not known:
        return None
    return sum(r["stayed_behind"] for r in known) / sum(r["pages"] for r in known)


def _folio_share_min(rs):
    """The lowest share (percent) of the buffer in folios of the named size."""
    shares = [r["folio_share"] for r in rs if isinstance(r.get("folio_share"), (int, float))]
    return min(shares) if shares else None


def _per_round(records, key, value="gbps"):
    """{key(rec): {round: median of value}}; ``value`` is a key or a function.

    The median, because speed under emulation comes in phases: one slow
    phase in a boot would otherwise pull that boot's figure far off.
    """
    acc = defaultdict(lambda: defaultdict(list))
    for r in records:
        v = value(r) if callable(value) else r.get(value)
        if isinstance(v, (int, float)):
            acc[key(r)][r["round"]].append(v)
    return {k: {rnd: statistics.median(vs) for rnd, vs in d.items()} for k, d in acc.items()}


def ratio_stats(num_rounds, den_rounds):
    """Median and min/max over rounds of num/den, pairing the same round."""
    ratios = [num_rounds[r] / den_rounds[r] for r in num_rounds
              if r in den_rounds and den_rounds[r] > 0]
    if not ratios:
        return None
    return {"median": statistics.median(ratios), "min": min(ratios), "max": max(ratios),
            "pairs": len(ratios)}


def summarize(records):
    """All tables as plain data (what bench.json's "summary" holds).

    Throughput ("gbps") counts the bytes that moved only (moved_gbps());
    "measurements" counts the records that measured something (MEASURED
    modes, not skipped), "records" every line, bookkeeping included.
    """
    tput = [r for r in records if _usable(r, "tput")]
    count = [r for r in records if _usable(r, "count")]
    lat = [r for r in records if _usable(r, "latency")]
    memcpy = [r for r in records if _usable(r, "memcpy")]
    comp = [r for r in records if _usable(r, "compaction")]
    by_mode = {m: sum(1 for r in records if _usable(r, m)) for m in MEASURED}
    absent = defaultdict(lambda: {"rounds": set(), "reason": ""})
    for r in records:
        if r.get("absent"):
            a = absent[(r["variant"], r.get("config"))]
            a["rounds"].add(r.get("round"))
            a["reason"] = a["reason"] or r.get("reason") or ""

    # Throughput, per (config, folio_kb, to).
    groups = defaultdict(list)
    for r in tput:
        groups[(config_of(r), r.get("folio_kb"), r.get("to"))].append(r)
    per_round = _per_round(tput, lambda r: (config_of(r), r.get("folio_kb"), r.get("to")),
                           moved_gbps)
    # The ceiling is one thread's memcpy; runs with more threads (the
    # parallelism the machine has) are reported apart.
    mem_all = memcpy
    memcpy = [r for r in mem_all if (r.get("threads") or 1) == 1]
    mem_round = _per_round(memcpy, lambda r: r["variant"])
    mem_mean = {v: mean_sd([r.get("gbps") for r in memcpy if r["variant"] == v])[0]
                for v in {r["variant"] for r in memcpy}}
    mem_threads = defaultdict(dict)
    for v, t in {(r["variant"], r.get("threads") or 1) for r in mem_all}:
        mem_threads[v][t] = mean_sd([r.get("gbps") for r in mem_all
                                     if r["variant"] == v and (r.get("threads") or 1) == t])[0]
    rows = []
    for (cfg, kb, to), rs in sorted(groups.items(), key=lambda x: (str(x[0][0]), x[0][1] or 0,
                                                                   x[0][2] or 0)):
        m, sd = mean_sd([moved_gbps(r) for r in rs])
        share = _folio_share_min(rs)
        ratio = ratio_stats(per_round.get((cfg, kb, to), {}),
                            per_round.get((VANILLA, kb, to), {})) if cfg != VANILLA else None
        # Against "none" in the same patched boot: no boot-to-boot drift.
        vs_none = ratio_stats(per_round.get((cfg, kb, to), {}),
                              per_round.get((NONE, kb, to), {})) \
            if cfg not in (VANILLA, NONE) else None
        variant = VANILLA if cfg == VANILLA else "patched"
        mem = mem_mean.get(variant)
        rows.append({
            "config": cfg, "folio_kb": kb, "to": to, "n": len(rs),
            "gbps": m, "gbps_sd": sd, "gbps_recorded": mean_sd([r.get("gbps") for r in rs])[0],
            "not_moved_share": _not_moved_share(rs),
            "ratio_median": ratio and ratio["median"], "ratio_min": ratio and ratio["min"],
            "ratio_max": ratio and ratio["max"], "ratio_pairs": ratio and ratio["pairs"],
            "vs_none_median": vs_none and vs_none["median"],
            "vs_none_min": vs_none and vs_none["min"], "vs_none_max": vs_none and vs_none["max"],
            "vs_none_pairs": vs_none and vs_none["pairs"],
            "memcpy_fraction": (m / mem) if (m is not None and mem) else None,
            "folio_share": mean_sd([r.get("folio_share") for r in rs])[0],
            "folio_share_min": share,
            "folio_share_low": share is not None and share < FOLIO_SHARE_LOW,
            "not_moved": mean_sd([r.get("not_moved") for r in rs])[0],
            "ebusy": mean_sd([r.get("ebusy") for r in rs])[0],
            "stayed_behind": mean_sd([r.get("stayed_behind") for r in rs])[0],
            "sys_s_per_gib": mean_sd([r.get("sys_s_per_gib") for r in rs])[0],
            "tlb_ipis_per_gib": mean_sd([r.get("tlb_ipis_per_gib") for r in rs])[0],
            "batch_copied": mean_sd([r.get("pgmigrate_batch_copied") for r in rs])[0],
            "batch_fallback": mean_sd([r.get("pgmigrate_batch_fallback") for r in rs])[0],
        })

    # Folio-count sweep at 2M.
    cgroups = defaultdict(list)
    for r in count:
        cgroups[(config_of(r), r.get("folios"))].append(r)
    c_round = _per_round(count, lambda r: (config_of(r), r.get("folios")), moved_gbps)
    count_rows = []
    for (cfg, n), rs in sorted(cgroups.items(), key=lambda x: (str(x[0][0]), x[0][1] or 0)):
        m, sd = mean_sd([moved_gbps(r) for r in rs])
        ratio = ratio_stats(c_round.get((cfg, n), {}), c_round.get((VANILLA, n), {})) \
            if cfg != VANILLA else None
        vs_none = ratio_stats(c_round.get((cfg, n), {}), c_round.get((NONE, n), {})) \
            if cfg not in (VANILLA, NONE) else None
        share = _folio_share_min(rs)
        count_rows.append({"config": cfg, "folios": n, "n": len(rs), "gbps": m, "gbps_sd": sd,
                           "ratio_median": ratio and ratio["median"],
                           "ratio_min": ratio and ratio["min"], "ratio_max": ratio and ratio["max"],
                           "vs_none_median": vs_none and vs_none["median"],
                           "vs_none_min": vs_none and vs_none["min"],
                           "vs_none_max": vs_none and vs_none["max"],
                           "not_moved_share": _not_moved_share(rs),
                           "folio_share_min": share,
                           "folio_share_low": share is not None and share < FOLIO_SHARE_LOW})

    # Latency against batch size.
    lgroups = defaultdict(list)
    for r in lat:
        size = (r.get("folios"), 2048) if r.get("folios") else (r.get("pages"), 4)
        lgroups[(config_of(r), size[1], size[0])].append(r)
    lat_rows = []
    for (cfg, kb, n), rs in sorted(lgroups.items(), key=lambda x: (str(x[0][0]), x[0][1],
                                                                   x[0][2] or 0)):
        fu = [r.get("first_usable_us") for r in rs if r.get("first_usable_us") is not None]
        ms = [r.get("max_stall_us") for r in rs if r.get("max_stall_us") is not None]
        lat_rows.append({"config": cfg, "folio_kb": kb, "batch": n, "n": len(rs),
                         "first_usable_us": statistics.median(fu) if fu else None,
                         "max_stall_us": statistics.median(ms) if ms else None,
                         "move_us": mean_sd([r.get("move_us") for r in rs])[0]})

    # Compaction.
    def with_rate(r):
        w, m = r.get("wall_s"), r.get("pgmigrate_success")
        ok = isinstance(w, (int, float)) and w > 0 and isinstance(m, (int, float))
        return {**r, "migrated_per_s": m / w if ok else None}
    comp = [with_rate(r) for r in comp]
    kgroups = defaultdict(list)
    for r in comp:
        kgroups[(config_of(r), bool(r.get("hog")))].append(r)
    k_round = _per_round(comp, lambda r: (config_of(r), bool(r.get("hog"))), "migrated_per_s")
    comp_rows = []
    for (cfg, hog), rs in sorted(kgroups.items(), key=lambda x: (str(x[0][0]), x[0][1])):
        def avg(k):
            return mean_sd([r.get(k) for r in rs])[0]
        ratio = ratio_stats(k_round.get((cfg, hog), {}), k_round.get((VANILLA, hog), {})) \
            if cfg != VANILLA else None
        vs_none = ratio_stats(k_round.get((cfg, hog), {}), k_round.get((NONE, hog), {})) \
            if cfg not in (VANILLA, NONE) else None
        mps, mps_sd = mean_sd([r.get("migrated_per_s") for r in rs])
        comp_rows.append({"config": cfg, "hog": hog, "n": len(rs), "wall_s": avg("wall_s"),
                          "wall_s_sd": mean_sd([r.get("wall_s") for r in rs])[1],
                          "migrated_per_s": mps, "migrated_per_s_sd": mps_sd,
                          "ratio_median": ratio and ratio["median"],
                          "ratio_min": ratio and ratio["min"], "ratio_max": ratio and ratio["max"],
                          "vs_none_median": vs_none and vs_none["median"],
                          "vs_none_min": vs_none and vs_none["min"],
                          "vs_none_max": vs_none and vs_none["max"],
                          "vs_none_pairs": vs_none and vs_none["pairs"],
                          "hog_base_per_s": avg("hog_base_per_s"),
                          "pgmigrate_success": avg("pgmigrate_success"),
                          "huge_target": avg("huge_target"), "huge_obtained": avg("huge_obtained"),
                          "batch_copied": avg("pgmigrate_batch_copied"),
                          "user_s": avg("user_s"), "sys_s": avg("sys_s"), "idle_s": avg("idle_s"),
                          "sys_pct": avg("sys_pct"), "hog_per_s": avg("hog_per_s")})

    tier_rows, tier_idle = tiering_rows([r for r in records if _usable(r, "tiering")])
    # Tiering asked for (the run line's "tier") but skipped or missing in a
    # boot: on a machine without a lower tier, say, the table would simply
    # not be there, and the run must not read as a pass.
    tier_missing = [{"variant": r["variant"], "round": r["round"], "config": config_of(r),
                     "reason": r.get("reason") or ""}
                    for r in records if r.get("mode") == "tiering" and r.get("skipped")]
    for r in records:
        if r.get("mode") == "run" and r.get("tier") == 1 and not any(
                x.get("mode") == "tiering" and x["variant"] == r["variant"]
                and x["round"] == r["round"] for x in records):
            tier_missing.append({"variant": r["variant"], "round": r["round"], "config": None,
                                 "reason": "no tiering record in this boot"})
    bad = sum(1 for r in records if (r.get("bad_bytes") or 0) > 0)
    out = {"throughput": rows, "count": count_rows, "latency": lat_rows,
           "compaction": comp_rows, "tiering": tier_rows, "tiering_idle": tier_idle,
           "tiering_missing": tier_missing, "alias": alias_penalty(records),
           "alias_two": alias_two(records),
           "profile": profile_rows(records, mem_mean.get("patched")),
           "memcpy": {v: {"gbps": m, "rounds": mem_round.get(v, {}),
                          "by_threads": dict(sorted(mem_threads.get(v, {}).items()))}
                      for v, m in mem_mean.items()},
           "absent": [{"variant": v, "config": c, "rounds": sorted(a["rounds"], key=str),
                       "reason": a["reason"]}
                      for (v, c), a in sorted(absent.items(), key=lambda x: str(x[0]))],
           "measurements": sum(by_mode.values()),
           "measurements_by_mode": {m: n for m, n in by_mode.items() if n},
           "skipped": sum(1 for r in records if r.get("skipped")),
           "records_with_bad_bytes": bad, "records": len(records)}
    # The workqueue scope each boot ran with (run_bench sets it in a VM):
    # boots with different scopes are not comparable.
    out["wq_scopes"] = sorted({r.get("wq_scope") or "unrecorded"
                               for r in records if r.get("mode") == "run"})
    out["copy_phase"] = copy_phase_ratios(records)
    # Profiles were asked for (even if skipped: no tracepoint): the copy
    # goals must then show, as not measured if need be.
    out["profiled"] = any(r.get("mode") == "profile" for r in records)
    out["goals"] = goal_verdicts(out)
    out["auto"] = auto_rows(records)
    out["split"] = split_rows(records)
    out["split_sizes"] = split_sizes(records)
    out["hog"] = hog_rows(records)
    out["auto_choices"] = auto_choices(records)
    out["auto_splits"] = auto_splits(records)
    out["auto_not_ready"] = auto_not_ready(records)
    out["auto_model_unparsed"] = sum(r.get("lines") or 0 for r in records
                                     if r.get("mode") == "auto_model_unparsed")
    asked = [r for r in records if r.get("mode") == "config" and r.get("config") == AUTO]
    if not out["auto"] and asked:
        out["auto_absent"] = next((r.get("reason") for r in asked if r.get("absent")),
                                  None) or "no measurement of auto"
    out["auto_goals"] = auto_goals(out)
    return out


def _share(part, whole):
    ok = isinstance(part, (int, float)) and isinstance(whole, (int, float)) and whole > 0
    return part / whole if ok else None


def tiering_rows(recs):
    """The tiering table: per (config, hog) the task's progress (pages
    touched per second) with its ratio against vanilla and against none
    (median of per-round ratios [min..max]), pages demoted and promoted per
    second, the fast node's kswapd and the task's CPU time as shares of the
    window, and the share of the hot window found on the fast node.

    Returns (rows, idle): idle lists the records without the hog whose
    window saw no demotion or no promotion: they measured no tiering.
    Under the hog, tiering may stall (the task's NUMA scanning runs on its
    CPU time, kswapd shares a CPU with a busy loop): a result to show (the
    row says "stalled"), not a run that did nothing; the same
    configuration's run without the hog proves the scenario works.
    """
    def derived(r):
        sec = r.get("seconds")
        user, sys_ = r.get("app_user_s"), r.get("app_sys_s")
        app = user + sys_ if isinstance(user, (int, float)) and isinstance(sys_, (int, float)) \
            else None
        return {**r, "kswapd_share": _share(r.get("kswapd_cpu_s"), sec),
                "app_share": _share(app, sec), "app_sys_share": _share(sys_, sec),
                # busy CPUs of the machine, in CPUs: kworkers and DMA threads too
                "machine_busy_cpus": _share(r.get("machine_busy_s"), sec)}
    recs = [derived(r) for r in recs]
    idle = [{"variant": r["variant"], "round": r["round"], "config": config_of(r),
             "hog": bool(r.get("hog")), "demoted": r.get("demoted"),
             "promoted": r.get("pgpromote_success")}
            for r in recs if not r.get("hog")
            and (not r.get("demoted") or not r.get("pgpromote_success"))]
    key = lambda r: (config_of(r), bool(r.get("hog")))
    groups = defaultdict(list)
    for r in recs:
        groups[key(r)].append(r)
    per_round = _per_round(recs, key, "touch_per_s")
    rows = []
    for (cfg, hog), rs in sorted(groups.items(), key=lambda x: (x[0][0] != VANILLA,
                                                                 str(x[0][0]), x[0][1])):
        def med(k):
            vs = [r.get(k) for r in rs if isinstance(r.get(k), (int, float))]
            return statistics.median(vs) if vs else None
        ratio = ratio_stats(per_round.get((cfg, hog), {}), per_round.get((VANILLA, hog), {})) \
            if cfg != VANILLA else None
        vs_none = ratio_stats(per_round.get((cfg, hog), {}), per_round.get((NONE, hog), {})) \
            if cfg not in (VANILLA, NONE) else None
        rows.append({"config": cfg, "hog": hog, "n": len(rs),
                     "touch_per_s": med("touch_per_s"),
                     "touch_per_s_sd": mean_sd([r.get("touch_per_s") for r in rs])[1],
                     "ratio_median": ratio and ratio["median"],
                     "ratio_min": ratio and ratio["min"], "ratio_max": ratio and ratio["max"],
                     "vs_none_median": vs_none and vs_none["median"],
                     "vs_none_min": vs_none and vs_none["min"],
                     "vs_none_max": vs_none and vs_none["max"],
                     "demote_per_s": med("demote_per_s"), "promote_per_s": med("promote_per_s"),
                     "kswapd_share": med("kswapd_share"), "app_share": med("app_share"),
                     "app_sys_share": med("app_sys_share"),
                     "machine_busy_cpus": med("machine_busy_cpus"),
                     "hog_per_s": med("hog_per_s"),
                     "hot_on_fast_pct": med("hot_on_fast_pct"),
                     "batch_copied": med("pgmigrate_batch_copied"),
                     "working_set_mb": med("size_bytes") and med("size_bytes") / 2**20,
                     "fast_free_mb": med("fast_free_mb")})
    return rows, idle


def _tiering_text(summary):
    rows = summary.get("tiering") or []
    if not rows:
        return []
    ws = {round(r["working_set_mb"]) for r in rows if r.get("working_set_mb")}
    ff = {round(r["fast_free_mb"]) for r in rows if r.get("fast_free_mb")}
    pct = "{:.0%}"
    out = ["", "== tiering: a working set of " + "/".join(f"{w}" for w in sorted(ws)) +
           " MiB on a fast node with " + "/".join(f"{f}" for f in sorted(ff)) +
           " MiB free, a hot quarter shifting by an eighth per pass; per configuration "
           "(median over rounds): pages the task touched per second and its ratio vs "
           "vanilla / vs none (median of per-round ratios [min..max]), pages demoted and "
           "promoted per second, kswapd's and the task's CPU as shares of the window, "
           "the hot window's share on the fast node"]
    for r in rows:
        ratio = f" {_ratio(r)}" if r.get("ratio_median") is not None else ""
        if r.get("vs_none_median") is not None:
            ratio += f" vs none {_ratio(r, 'vs_none_')}"
        out.append(f"{r['config']:<10} hog={'yes' if r['hog'] else 'no ':<3} n={r['n']} "
                   f"touched {_f(r['touch_per_s'], '{:.0f}')}/s{ratio}  demoted "
                   f"{_f(r['demote_per_s'], '{:.0f}')}/s promoted "
                   f"{_f(r['promote_per_s'], '{:.0f}')}/s  kswapd "
                   f"{_f(r['kswapd_share'], pct)} task {_f(r['app_share'], pct)} "
                   f"(sys {_f(r['app_sys_share'], pct)}) machine busy "
                   f"{_f(r.get('machine_busy_cpus'), '{:.2f}')} CPUs"
                   f"{'  hog ' + _f(r.get('hog_per_s'), '{:.3g}') + '/s' if r['hog'] else ''}"
                   f"  hot on fast "
                   f"{_f(r['hot_on_fast_pct'], '{:.0f}')}%"
                   f"{' (stalled: no migration either way)' if _stalled(r) else ''}")
    for i in summary.get("tiering_idle") or []:
        out.append(f"  NO TIERING in {i['variant']} round {i['round']} {i['config']} "
                   f"hog={'yes' if i['hog'] else 'no'}: demoted {i['demoted']}, promoted "
                   f"{i['promoted']} in the window")
    return out


def _stalled(r):
    return not r.get("demote_per_s") and not r.get("promote_per_s")


def _tiering_md(summary):
    rows = summary.get("tiering") or []
    if not rows:
        return []
    pct = "{:.0%}"
    out = ["Tiering: kswapd demotes, NUMA balancing (tiering mode) promotes, a task checks and "
           "rewrites a hot window that moves (medians over rounds; ratio of the task's "
           "progress against vanilla and against none: median of per-round ratios "
           "[min..max])", "",
           "| config | hog | n | pages touched/s | vs vanilla | vs none | demoted/s | "
           "promoted/s | kswapd CPU | task CPU (sys) | machine busy CPUs | hog/s | hot on fast |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        out.append(f"| {r['config']} | {'yes' if r['hog'] else 'no'} | {r['n']} | "
                   f"{_f(r['touch_per_s'], '{:.0f}')} | {_ratio(r, sep=' ')} | "
                   f"{_ratio(r, 'vs_none_', sep=' ')} | {_f(r['demote_per_s'], '{:.0f}')} | "
                   f"{_f(r['promote_per_s'], '{:.0f}')} | {_f(r['kswapd_share'], pct)} | "
                   f"{_f(r['app_share'], pct)} ({_f(r['app_sys_share'], pct)}) | "
                   f"{_f(r.get('machine_busy_cpus'), '{:.2f}')} | "
                   f"{_f(r.get('hog_per_s'), '{:.3g}') if r['hog'] else '-'} | "
                   f"{_f(r['hot_on_fast_pct'], '{:.0f}')}%"
                   f"{' (stalled)' if _stalled(r) else ''} |")
    out.append("")
    return out


# The copy-phase goals (issue 12): config, the config it is compared with in
# the same boot, the least ratio of their copy rates, the folio sizes (KB)
# that must all clear it.
COPY_GOALS = (("mtcopy-2", "mtcopy-1", 1.6, (4, 16, 64, 256, 1024)),
              ("dcbm-4", "none", 1.3, (64, 256, 1024, 2048)))


def _copy_rate(r):
    """Bytes copied / copy time (batch copy step + per-folio copies) of one
    profile record; None when it copied nothing, lost events or did not
    verify, or whose events were not bracketed by the move's two markers
    (its times would not be the whole copy)."""
    ns = (r.get("copy_ns") or 0) + (r.get("folio_copy_ns") or 0)
    pages = (r.get("batch_copy_pages") or 0) + (r.get("folio_copy_pages") or 0)
    if ns <= 0 or pages <= 0 or r.get("lost_events") != 0 or r.get("verified") is not True \
            or r.get("markers") != 2:
        return None
    return pages * 4096 / ns


def copy_phase_ratios(records):
    """For each copy-phase goal and folio size: the ratio of the two
    configurations' copy rates, paired boot by boot (a profile record is one
    traced run per boot), median [min..max] over boots."""
    per = _per_round([r for r in records if _usable(r, "profile") and r["variant"] != VANILLA],
                     lambda r: (config_of(r), r.get("folio_kb")), _copy_rate)
    out = []
    for num, den, goal, sizes in COPY_GOALS:
        for kb in sizes:
            st = ratio_stats(per.get((num, kb), {}), per.get((den, kb), {}))
            out.append({"config": num, "against": den, "folio_kb": kb, "goal": goal,
                        **({f"ratio_{k}": v for k, v in st.items()} if st else
                           {"ratio_median": None, "ratio_min": None, "ratio_max": None,
                            "ratio_pairs": 0})})
    return out


def _kb(kb):
    """4 -> '4K', 1024 -> '1M'."""
    return f"{kb // 1024}M" if kb >= 1024 and kb % 1024 == 0 else f"{kb}K"


def copy_goal_verdict(c):
    """met / missed / inconclusive for one copy-phase cell: the whole range
    over at least two boots above (met) or below (missed) the goal."""
    return _verdict(c.get("ratio_min"), c.get("ratio_max"), c.get("goal"),
                    c.get("ratio_pairs") or 0)


def profile_rows(records, memcpy_gbps=None):
    """Where the time of a migration goes, per configuration and folio size.

    From the "profile" records (a traced tput run each, summing the
    mm_migrate_batch_phases, mm_migrate_folio_copy and mm_migrate_batch_copy
    events of mo_bench): the shares of unmap (destination allocation, rmap
    walks), TLB flush, copy (the batch copy step plus the move phase's
    per-folio copies) and the rest of the move phase (remapping, metadata),
    summed over every round; the copy's own throughput (bytes / copy time);
    the most a free copy could gain (Amdahl: total / (total - copy)); the
    engine's share of the batch copy step. Traced runs are slower than
    untraced ones (two clock reads per per-folio copy): traced_gbps is
    their throughput, not the bench's.
    """
    groups = defaultdict(list)
    for r in records:
        if _usable(r, "profile") and r["variant"] != VANILLA:
            groups[(config_of(r), r.get("folio_kb"))].append(r)
    rows = []
    for (cfg, kb), rs in sorted(groups.items(), key=lambda x: (str(x[0][0]), x[0][1] or 0)):
        def tot(k):
            return sum(r.get(k) or 0 for r in rs)
        unmap, flush, fcopy = tot("unmap_ns"), tot("flush_ns"), tot("folio_copy_ns")
        bcopy, move = tot("copy_ns"), tot("move_ns")
        total = unmap + flush + bcopy + move
        copy = bcopy + fcopy
        pages = tot("pages")
        row = {"config": cfg, "folio_kb": kb, "n": len(rs), "pages": pages,
               "batches": tot("batches"), "total_ms": total / 1e6,
               "unmap_share": unmap / total if total else None,
               "flush_share": flush / total if total else None,
               "copy_share": copy / total if total else None,
               "move_share": (move - fcopy) / total if total else None,
               "batch_copy_share_of_copy": bcopy / copy if copy else None,
               "engine_share_of_batch_copy": (tot("engine_ns") / tot("batch_copy_ns")
                                              if tot("batch_copy_ns") else None),
               # pages copied, not unmapped: a retried folio unmaps twice
               "copy_gbps": ((tot("batch_copy_pages") + tot("folio_copy_pages")) * 4096 / copy
                             if copy else None),
               "free_copy_bound": total / (total - copy) if total > copy > 0 else None,
               "batch_copy_pages": tot("batch_copy_pages"),
               "folio_copy_pages": tot("folio_copy_pages"),
               "traced_gbps": mean_sd([r.get("traced_gbps") for r in rs])[0],
               "lost_events": (tot("lost_events")
                               if all(isinstance(r.get("lost_events"), int) for r in rs)
                               else None),
               "verified": all(r.get("verified") is True for r in rs)}
        # dcbm's own steps (dcbm_batch): the CPU time per folio outside
        # the transfers, and per descriptor submitted.
        dfol, ddesc = tot("dcbm_folios"), tot("dcbm_descriptors")
        over = tot("dcbm_plan_ns") + tot("dcbm_submit_ns") + tot("dcbm_teardown_ns")
        # mtcopy's helpers: queued per batch, and the share that ran
        # before the mover had taken their chunks itself.
        # Not traced (no workqueue events: null in the record) is not 0.
        traced = [r for r in rs if isinstance(r.get("helpers_queued"), int)]
        hq = sum(r["helpers_queued"] for r in traced) if traced else None
        hr = sum(r.get("helpers_ran") or 0 for r in traced) if traced else None
        nbc = sum(r.get("batch_copies") or 0 for r in traced)
        row.update(helpers_queued=hq, helpers_ran=hr,
                   helpers_per_batch=hq / nbc if traced and nbc else None,
                   helpers_ran_share=hr / hq if hq else None)
        row.update(dcbm_folios=dfol, dcbm_descriptors=ddesc,
                   dcbm_overhead_us_per_folio=over / dfol / 1e3 if dfol else None,
                   dcbm_submit_ns_per_descriptor=(tot("dcbm_submit_ns") / ddesc
                                                  if ddesc else None),
                   dcbm_wait_share=(tot("dcbm_wait_ns") / (over + tot("dcbm_wait_ns"))
                                    if over + tot("dcbm_wait_ns") else None))
        # A profile that measured nothing, or whose parts do not add up.
        row["consistent"] = bool(pages and total > 0 and fcopy <= move
                                 and row["lost_events"] == 0)
        row["copy_vs_memcpy"] = (row["copy_gbps"] / memcpy_gbps
                                 if row["copy_gbps"] and memcpy_gbps else None)
        rows.append(row)
    return rows


def _profile_lines(summary):
    """The phase profile as text lines (empty without profile records)."""
    prof = summary.get("profile") or []
    if not prof:
        return []
    lines = ["", "== where the time goes (traced tput runs, summed over rounds): share of "
             "unmap (allocation + rmap walks), TLB flush, copy (batch copy step + per-folio "
             "copies), rest of the move phase; copy GB/s (bytes / copy time) and its fraction "
             "of one thread's memcpy; the most a free copy could gain (total / (total - copy)); "
             "engine: its share of the batch copy step"]
    lines.append(f"{'config':<10} {'folio':>6} {'n':>2} {'unmap':>6} {'flush':>6} {'copy':>6} "
                 f"{'move':>6} {'copy GB/s':>9} {'/memcpy':>7} {'bound':>6} {'engine':>6} "
                 f"{'traced GB/s':>11}")
    pct = "{:.0%}"
    for r in prof:
        flag = ("" if r["verified"] and r.get("consistent", True)
                else "  NOT VERIFIED, EVENTS LOST OR INCONSISTENT")
        lines.append(f"{r['config']:<10} {str(r['folio_kb']) + 'K':>6} {r['n']:>2} "
                     f"{_f(r['unmap_share'], pct):>6} {_f(r['flush_share'], pct):>6} "
                     f"{_f(r['copy_share'], pct):>6} {_f(r['move_share'], pct):>6} "
                     f"{_f(r['copy_gbps'], '{:.2f}'):>9} {_f(r['copy_vs_memcpy'], '{:.2f}'):>7} "
                     f"{_f(r['free_copy_bound'], '{:.2f}'):>6} "
                     f"{_f(r['engine_share_of_batch_copy'], pct):>6} "
                     f"{_f(r['traced_gbps'], '{:.3f}'):>11}{flag}")
    mt = [r for r in prof if str(r["config"]).startswith("mtcopy")]
    if mt:
        lines.append("mtcopy's helpers (workqueue events of mtcopy_work_fn): queued per batch, "
                     "and the share that ran before the mover had taken their chunks itself")
        for r in mt:
            if r["helpers_queued"] is None:
                lines.append(f"  {r['config']:<10} {str(r['folio_kb']) + 'K':>6} not traced")
                continue
            lines.append(f"  {r['config']:<10} {str(r['folio_kb']) + 'K':>6} "
                         f"{r['helpers_queued']} queued, "
                         f"{_f(r['helpers_per_batch'], '{:.2f}')} per batch copy, "
                         f"{_f(r['helpers_ran_share'], '{:.0%}')} ran")
    dc = [r for r in prof if r.get("dcbm_folios")]
    if dc:
        lines.append("dcbm's own steps (dcbm_batch): CPU time per folio outside the transfers "
                     "(plan + submit + teardown), submit time per descriptor, waiting's share")
        for r in dc:
            lines.append(f"  {r['config']:<10} {str(r['folio_kb']) + 'K':>6} "
                         f"{r['dcbm_folios']} folios, {r['dcbm_descriptors']} descriptors: "
                         f"{_f(r['dcbm_overhead_us_per_folio'], '{:.1f}')} us/folio, "
                         f"{_f(r['dcbm_submit_ns_per_descriptor'], '{:.0f}')} ns/descriptor "
                         f"submitted, waiting {_f(r['dcbm_wait_share'], '{:.0%}')}")
    for v, m in summary["memcpy"].items():
        bt = m.get("by_threads") or {}
        if len(bt) > 1:
            one = bt.get(1)
            lines.append(f"memcpy ({v} kernel) by threads: " + ", ".join(
                f"{t}: {_f(g)} GB/s" + (f" ({g / one:.2f}x)" if one and g and t != 1 else "")
                for t, g in bt.items()))
    return lines


def alias_penalty(records):
    """The emulator check (mo_bench alias): per boot, the median time of a
    word copy whose source and destination are 2M apart over that of one
    shifted by 37 pages; median [min..max] over boots. About 1 on hardware."""
    acc = defaultdict(lambda: defaultdict(list))
    for r in records:
        if _usable(r, "alias") and isinstance(r.get("ns_per_word"), (int, float)) \
                and (r.get("threads") or 1) == 1:
            acc[(r["variant"], r["round"])][r.get("layout")].append(r["ns_per_word"])
    ratios = [statistics.median(d["2m_apart"]) / statistics.median(d["shifted"])
              for d in acc.values() if d.get("2m_apart") and d.get("shifted")
              and statistics.median(d["shifted"]) > 0]
    if not ratios:
        return None
    return {"median": statistics.median(ratios), "min": min(ratios), "max": max(ratios),
            "boots": len(ratios)}


def alias_two(records):
    """The emulator check's two-CPU copies (mo_bench alias, "threads":2: two
    CPUs at once, half of every 2M period each), per kernel (vanilla and
    patched boots apart: a figure that differs between them is not the
    emulator's alone): per boot and layout, the gain, the median time of
    one CPU's copy over that of the two CPUs'; the penalty, the shifted
    gain over the 2M-apart gain; and at 2M apart the slower CPU's half over
    the faster's. Each: median [min..max] over boots. On hardware: gains
    about 2, penalty and halves about 1."""
    acc = defaultdict(lambda: defaultdict(list))
    halves = defaultdict(list)
    for r in records:
        if not (_usable(r, "alias") and isinstance(r.get("seconds"), (int, float))
                and r["seconds"] > 0):
            continue
        threads = r.get("threads") or 1
        acc[(r["variant"], r["round"], r.get("layout"))][threads].append(r["seconds"])
        a, b = r.get("first_seconds"), r.get("second_seconds")
        if threads == 2 and r.get("layout") == "2m_apart" and \
                isinstance(a, (int, float)) and isinstance(b, (int, float)) and min(a, b) > 0:
            halves[(r["variant"], r["round"])].append(max(a, b) / min(a, b))
    boot = defaultdict(dict)
    for (variant, rnd, layout), by in acc.items():
        if by.get(1) and by.get(2):
            boot[(variant, rnd)][layout] = statistics.median(by[1]) / statistics.median(by[2])

    def stats(vals):
        return {"median": statistics.median(vals), "min": min(vals), "max": max(vals)} \
            if vals else None
    out = {}
    for variant in sorted({v for v, _ in boot}):
        bs = {rnd: b for (v, rnd), b in boot.items() if v == variant}
        far = [b["2m_apart"] for b in bs.values() if "2m_apart" in b]
        if not far:
            continue
        out[variant] = {
            "boots": len(far), "2m_apart": stats(far),
            "shifted": stats([b["shifted"] for b in bs.values() if "shifted" in b]),
            "penalty": stats([b["shifted"] / b["2m_apart"] for b in bs.values()
                              if "shifted" in b and "2m_apart" in b]),
            "halves": stats([statistics.median(h) for (v, _), h in halves.items()
                             if v == variant])}
    return out or None


def two_aliased(summary):
    """Whether the patched boots' two-CPU check (alias_two()) shows the
    emulator's artefact for two copiers of one 2M folio: in the median
    patched boot, two CPUs gained ALIAS_ARTEFACT times less 2M apart than
    37 pages off. A flag on the 2M figures of parallel copies, never a
    verdict: a slow parallel copy at 2M may still be the kernel's."""
    pen = ((summary.get("alias_two") or {}).get("patched") or {}).get("penalty")
    return bool(pen and pen["median"] >= ALIAS_ARTEFACT)


def _alias_two_lines(summary):
    out = []
    for variant, a in sorted((summary.get("alias_two") or {}).items()):
        far = a["2m_apart"]
        line = (f"emulator check, two CPUs ({variant}, {a['boots']} boot(s)): copying the two "
                f"halves of every 2M period at once was {far['median']:.2f}x as fast as one CPU "
                f"2M apart [{far['min']:.2f}..{far['max']:.2f}]")
        if sh := a.get("shifted"):
            line += f", {sh['median']:.2f}x 37 pages off [{sh['min']:.2f}..{sh['max']:.2f}]"
        if h := a.get("halves"):
            line += (f"; 2M apart the slower CPU's half took {h['median']:.1f}x the faster's "
                     f"[{h['min']:.1f}..{h['max']:.1f}]")
        out.append(line + " (on hardware about 2x in both layouts, halves alike)")
    if two_aliased(summary):
        out.append("the patched boots' two-CPU check shows the emulator's artefact: 2M figures of "
                   "parallel copies (mtcopy-2, dcbm-N, the split) measure it as much as the "
                   "kernel; they are judged as they are")
    return out


def _alias_line(summary):
    a = summary.get("alias")
    if not a:
        return None
    return (f"emulator check: a word copy between buffers 2M apart took {a['median']:.1f}x the "
            f"time of one 37 pages off [{a['min']:.1f}..{a['max']:.1f}] over {a['boots']} "
            f"boot(s) (about 1.0x on hardware): 2M folio copies here measure the emulator's "
            f"software TLB as much as the kernel")


# The alias check's ratio above which 2M figures measure the emulator (about
# 1.0 on hardware, 4-13 under QEMU TCG).
ALIAS_ARTEFACT = 1.5


def goal_verdict(r, goal):
    """met / missed / inconclusive for one cell against ``goal``.

    "met" only when the whole per-round range clears the goal both against
    vanilla and against none in the same boot (both minima >= goal);
    "missed" only when both whole ranges lie below it (both maxima < goal);
    anything else is "inconclusive": the two ranges straddle the goal or
    disagree, a figure is missing (no none in the same boot), or fewer than
    two rounds were paired, against vanilla or against none (one round is a
    point, not a range).
    """
    keys = ("ratio_min", "ratio_max", "vs_none_min", "vs_none_max")
    if any(r.get(k) is None for k in keys) or (r.get("ratio_pairs") or 0) < 2 \
            or (r.get("vs_none_pairs") or 0) < 2:
        return "inconclusive"
    # Fewer than FOLIO_SHARE_LOW % of the buffer in folios of the named
    # size: the cell measured some other mix, not the size the goal names.
    if r.get("folio_share_low"):
        return "inconclusive"
    if r["ratio_min"] >= goal and r["vs_none_min"] >= goal:
        return "met"
    if r["ratio_max"] < goal and r["vs_none_max"] < goal:
        return "missed"
    return "inconclusive"


EMULATOR = "inconclusive: emulator"
# The folio sizes (KB) "every folio size" means: the full bench's. A run
# that measured fewer (QUICK) cannot meet a goal about all of them.
GOAL_SIZES = (4, 16, 64, 256, 1024, 2048)


def goal_verdicts(summary):
    """The goals as data (bench.json's summary "goals"), judged by
    goal_verdict(): mtcopy-2 >= 1.5x at 2M, node by node; cpu >= 0.97x at
    every folio size and node. At 2M, while the alias check shows the
    emulator artefact (median >= ALIAS_ARTEFACT), a cell is
    "inconclusive: emulator", never met or missed. The cpu goal is missed
    if any cell is missed, met only if every cell is met, otherwise
    "inconclusive: emulator" if the only cells short of met are 2M cells
    under the artefact, else "inconclusive"."""
    alias = summary.get("alias")
    aliased = bool(alias and alias["median"] >= ALIAS_ARTEFACT)

    def judge(r, goal):
        if aliased and r["folio_kb"] == 2048:
            return EMULATOR
        return goal_verdict(r, goal)

    def cell(r, goal):
        return {"folio_kb": r["folio_kb"], "to": r["to"], "verdict": judge(r, goal)}
    out = []
    # The nodes measured at all (vanilla is measured in every run): a goal
    # whose configuration is absent there is "inconclusive", not silent.
    nodes = sorted({r["to"] for r in summary["throughput"] if r.get("to") is not None})
    for to in nodes:
        rs = [r for r in summary["throughput"] if r["config"] == "mtcopy-2"
              and r["folio_kb"] == 2048 and r["to"] == to and r["ratio_median"] is not None]
        g = {"goal": f"mtcopy-2 >= 1.5x at 2M to node {to}", "config": "mtcopy-2",
             "min_ratio": 1.5, "to": to}
        if rs:
            c = cell(rs[0], 1.5)
            g.update(verdict=c["verdict"], cells=[c])
        else:
            g.update(verdict="inconclusive", cells=[], not_measured="mtcopy-2 at 2M")
        out.append(g)
    cells = [cell(r, 0.97) for r in summary["throughput"]
             if r["config"] == "cpu" and r["ratio_median"] is not None]
    if cells or nodes:
        vs = {c["verdict"] for c in cells}
        v = ("missed" if "missed" in vs else "met" if vs == {"met"} else
             EMULATOR if vs == {"met", EMULATOR} or vs == {EMULATOR} else "inconclusive")
        have = {(c["folio_kb"], c["to"]) for c in cells}
        gaps = [f"{kb}K to node {to}" for to in nodes for kb in GOAL_SIZES
                if (kb, to) not in have]
        g = {"goal": "cpu >= 0.97x at every folio size and node", "config": "cpu",
             "min_ratio": 0.97, "verdict": v, "cells": cells}
        if gaps:
            g["not_measured"] = ", ".join(gaps)
            if v != "missed":
                g["verdict"] = "inconclusive"
        out.append(g)
    # The copy-phase goals, only when the run traced at all (MO_PROFILE).
    if summary.get("profiled") or summary.get("profile"):
        for num, den, goal, sizes in COPY_GOALS:
            cs = [c for c in summary.get("copy_phase") or []
                  if c["config"] == num and c["against"] == den]
            cells = [{"folio_kb": c["folio_kb"],
                      "verdict": (EMULATOR if aliased and c["folio_kb"] == 2048
                                  and c["ratio_pairs"] else copy_goal_verdict(c))}
                     for c in cs]
            vs = {c["verdict"] for c in cells}
            v = ("missed" if "missed" in vs else "met" if vs == {"met"} else
                 EMULATOR if vs <= {"met", EMULATOR} and vs else "inconclusive")
            lo, hi = _kb(sizes[0]), _kb(sizes[-1])
            g = {"goal": f"{num} copy phase >= {goal}x {den}'s at every folio size {lo}-{hi}",
                 "config": num, "against": den, "min_ratio": goal, "copy_phase": True,
                 "verdict": v, "cells": cells}
            gaps = [_kb(c["folio_kb"]) for c in cs if not c["ratio_pairs"]]
            if gaps:
                g["not_measured"] = ", ".join(gaps)
            out.append(g)
    return out


def goals(summary):
    """The goals, as measured (never asserted): one line each, verdicts
    from goal_verdicts()."""
    out = []
    rows = {(r["config"], r["folio_kb"], r["to"]): r for r in summary["throughput"]}

    def spread(r):
        txt = f"[{r['ratio_min']:.2f}..{r['ratio_max']:.2f}] over {r['ratio_pairs']} round(s)"
        if r.get("vs_none_median") is not None:
            txt += (f"; {r['vs_none_median']:.2f}x none in the same boot "
                    f"[{r['vs_none_min']:.2f}..{r['vs_none_max']:.2f}]")
            if r.get("vs_none_pairs") is not None:
                txt += f" over {r['vs_none_pairs']} round(s)"
        return txt
    cp = {(c["config"], c["folio_kb"]): c for c in summary.get("copy_phase") or []}
    for g in goal_verdicts(summary):
        if g.get("copy_phase"):
            parts = []
            for c in g["cells"]:
                r = cp[(g["config"], c["folio_kb"])]
                parts.append(f"{_kb(c['folio_kb'])} " + (
                    f"{r['ratio_median']:.2f}x [{r['ratio_min']:.2f}..{r['ratio_max']:.2f}] "
                    f"over {r['ratio_pairs']} boot(s) {c['verdict']}"
                    if r["ratio_pairs"] else "not measured"))
            out.append(f"{g['goal']} (copy rates in the same boot, traced runs): "
                       f"{'; '.join(parts)}: {g['verdict']}")
            continue
        if not g["cells"]:
            out.append(f"{g['goal']}: not measured in this run ({g['not_measured']}): "
                       f"{g['verdict']}")
            continue
        if g["config"] == "mtcopy-2":
            [c] = g["cells"]
            r = rows[("mtcopy-2", 2048, c["to"])]
            out.append(f"2M folios to node {r['to']}: mtcopy-2 at {r['ratio_median']:.2f}x "
                       f"vanilla {spread(r)} (goal >= 1.5x: {g['verdict']})")
            continue
        cells = [(c["verdict"], rows[("cpu", c["folio_kb"], c["to"])]) for c in g["cells"]]
        judged = [(v, r) for v, r in cells if v != EMULATOR]
        rank = {"missed": 0, "inconclusive": 1, "met": 2}
        if judged:
            v, worst = min(judged, key=lambda x: (rank[x[0]], x[1]["ratio_median"]))
        else:
            v, worst = cells[0]
        skipped = len(cells) - len(judged)
        note = f"; {skipped} 2M cell(s) not judged: emulator" if skipped else ""
        if g.get("not_measured"):
            note += f"; not measured: {g['not_measured']}"
        low = [f"{r['folio_kb']}K" for _, r in cells if r.get("folio_share_low")]
        if low:
            note += f"; too few folios of the named size at {', '.join(low)}"
        out.append(f"built-in cpu: {'worst' if judged else 'only'} cell "
                   f"{worst['ratio_median']:.2f}x vanilla at {worst['folio_kb']}K to node "
                   f"{worst['to']} {spread(worst)} (goal >= 0.97x everywhere: "
                   f"{g['verdict']}{note})")
    if not out:
        out.append("goals: no vanilla/patched pairs to compare")
    return out


def _f(v, fmt="{:.3f}"):
    return "-" if v is None else fmt.format(v)


def _rng(lo, hi):
    return f"[{lo:.2f}..{hi:.2f}]" if lo is not None and hi is not None else ""


def _ratio(r, prefix="ratio_", sep="x "):
    """'1.20x [1.00..1.40]' (median [min..max] over rounds), '-' if none."""
    m = r.get(prefix + "median")
    if m is None:
        return "-"
    return f"{m:.2f}{sep}{_rng(r.get(prefix + 'min'), r.get(prefix + 'max'))}"


def _folios(r):
    """The lowest folio share of a cell, '!' when below FOLIO_SHARE_LOW."""
    share = r.get("folio_share_min")
    if share is None:
        return "-"
    return f"{share:.0f}%" + ("!" if r.get("folio_share_low") else "")


def _unmoved(r):
    share = r.get("not_moved_share")
    if share is None:
        return "-"
    # A few pages out of thousands must not print as "0.0%".
    return "<0.1%" if 0 < share < 0.001 else f"{100 * share:.1f}%"


def _absent(a):
    where = f"{a['variant']}"
    if a.get("rounds"):
        where += ", round" + ("s " if len(a["rounds"]) > 1 else " ") + \
            ",".join(str(x) for x in a["rounds"])
    if a.get("reason"):
        where += f": {a['reason']}"
    return f"{a['config']} ({where})"


def _measured_lines(summary):
    """How many measurements the tables stand on, what was absent, and the
    data check. Summaries of old bench.json files lack some keys."""
    out = []
    if summary["absent"]:
        out.append("absent configurations (reported, not measured): " +
                   ", ".join(_absent(a) for a in summary["absent"]))
    if "measurements" in summary:
        by_mode = ", ".join(f"{m} {n}" for m, n in summary["measurements_by_mode"].items())
        out.append(f"measurements: {summary['measurements']} ({by_mode or 'none'}), "
                   f"{summary['skipped']} skipped; {summary['records']} record lines in all "
                   f"(bookkeeping included), with corrupted bytes: "
                   f"{summary['records_with_bad_bytes']}")
    return out


AUTO = "auto"
# auto with dcbm alone, every batch split between the CPU and dcbm where the
# models cut it (run_bench's configuration "split"): not a fixed choice
SPLIT = "split"


def _is_split(config):
    """split, or split-N (auto with dcbm over N channels, every batch
    split): never a fixed choice."""
    return config == SPLIT or (config or "").startswith(SPLIT + "-")


def _split_rivals(config):
    """What a split configuration is measured against: the CPU and its own
    dcbm alone (split: dcbm-4)."""
    n = config[len(SPLIT) + 1:] if config != SPLIT else "4"
    return ("cpu", f"dcbm-{n}")
SPLIT_RIVALS = ("cpu", "dcbm-4")


# A cell noisier than this cannot tell auto from the best: inconclusive.
AUTO_NOISE_MAX = 0.15


def _verdict(lo, hi, bar, pairs):
    """met when the whole per-round range clears ``bar``, missed when all of
    it lies below, inconclusive otherwise, with fewer than two rounds, or
    without a bar (noise unknown or above AUTO_NOISE_MAX)."""
    if lo is None or pairs < 2 or bar is None:
        return "inconclusive"
    if lo >= bar:
        return "met"
    if hi < bar:
        return "missed"
    return "inconclusive"


def _median_spread(groups):
    """The median over groups of repetitions of (max - min) / median; None
    without a group of two or more."""
    spreads = [(max(v) - min(v)) / statistics.median(v) for v in groups
               if len(v) > 1 and statistics.median(v) > 0]
    return statistics.median(spreads) if spreads else None


def auto_rows(records):
    """auto against the best fixed configuration of each round and against
    none, per throughput cell (folio size, target) and folio count, in the
    same boot. Noise of a cell: the median over its fixed configurations and
    rounds of the spread of their repetitions within a round ((max - min) /
    median); "within the noise" means a ratio >= 1 - noise."""
    out = []
    for kind, mode, keyf in (("tput", "tput", lambda r: (r.get("folio_kb"), r.get("to"))),
                             ("count", "count", lambda r: (2048, r.get("folios")))):
        recs = [r for r in records if _usable(r, mode) and config_of(r) != VANILLA
                and not _is_split(config_of(r))]
        if not any(config_of(r) == AUTO for r in recs):
            continue
        # auto's data corrupted in a cell: that cell is missed, whatever the speed
        corrupt = {keyf(r) for r in recs if config_of(r) == AUTO and (r.get("bad_bytes") or 0) > 0}
        per = _per_round(recs, lambda r: (config_of(r), keyf(r)), moved_gbps)
        reps = defaultdict(list)
        for r in recs:
            v = moved_gbps(r)
            if isinstance(v, (int, float)):
                reps[(config_of(r), keyf(r), r["round"])].append(v)
        # every cell a fixed configuration measured: one auto lacks is inconclusive
        for cell in sorted({keyf(r) for r in recs},
                           key=lambda c: tuple(x or 0 for x in c)):
            auto = per.get((AUTO, cell), {})
            fixed = {c: d for (c, k), d in per.items() if k == cell and c != AUTO}
            noise = _median_spread(v for (c, k, _), v in reps.items()
                                   if k == cell and c != AUTO)
            vs_best, vs_none, best = [], [], []
            for rnd in sorted(auto):
                cands = {c: d[rnd] for c, d in fixed.items() if d.get(rnd)}
                # a round where auto moved nothing counts (0x), it is not skipped
                if not cands or auto.get(rnd) is None:
                    continue
                bc = max(cands, key=cands.get)
                best.append(bc)
                vs_best.append(auto[rnd] / cands[bc])
                if cands.get(NONE):
                    vs_none.append(auto[rnd] / cands[NONE])
            bar = None if noise is None or noise > AUTO_NOISE_MAX else 1 - noise

            def rng(v):
                return (statistics.median(v), min(v), max(v)) if v else (None, None, None)
            b, n = rng(vs_best), rng(vs_none)
            out.append({"kind": kind, "folio_kb": cell[0],
                        "to" if kind == "tput" else "folios": cell[1],
                        "best": best, "noise": noise,
                        "vs_best_median": b[0], "vs_best_min": b[1], "vs_best_max": b[2],
                        "vs_none_median": n[0], "vs_none_min": n[1], "vs_none_max": n[2],
                        "pairs": len(vs_best),
                        "corrupt": cell in corrupt,
                        "verdict_best": ("missed" if cell in corrupt else
                                         _verdict(b[1], b[2], bar, len(vs_best))),
                        "verdict_none": ("missed" if cell in corrupt else
                                         _verdict(n[1], n[2], bar, len(vs_none)))})
    return out


def _hog_verified(r):
    """A tput record under hogs counts only if a hog ran on every CPU the
    guest had and the hogs made progress during the timed move."""
    hogs, online, rate = r.get("hogs"), r.get("cpus_online"), r.get("hog_per_s")
    return (isinstance(hogs, int) and hogs >= 1 and hogs == online
            and isinstance(rate, (int, float)) and rate > 0)


def hog_rows(records):
    """auto against none under a busy loop on every CPU (tput --hog records),
    per folio size and target, per round of the same boot: median [min..max]
    of auto / none. Noise: the median spread of none's and auto's
    repetitions within a round (the others, mtcopy's helpers fighting the
    hogs, would loosen the bar). Met when the whole range is >= 1 - noise,
    as auto's cells without a hog; missed when all of it is below or with
    corrupted bytes; inconclusive with fewer than 2 rounds, noise over
    AUTO_NOISE_MAX, a round none ran and auto did not, a record whose hogs
    are not verified (_hog_verified), a skipped measurement, or less than
    FOLIO_SHARE_LOW% of a buffer in folios of the size."""
    hogrecs = [r for r in records if r.get("mode") == "tput_hog" and config_of(r) != VANILLA]
    if not any(config_of(r) == AUTO for r in hogrecs):
        return []

    def keyf(r):
        return (r.get("folio_kb"), r.get("to"))
    recs = [r for r in hogrecs if _usable(r, "tput_hog") and _hog_verified(r)]
    per = _per_round(recs, lambda r: (config_of(r), keyf(r)), moved_gbps)
    reps = defaultdict(list)
    for r in recs:
        v = moved_gbps(r)
        if isinstance(v, (int, float)):
            reps[(config_of(r), keyf(r), r["round"])].append(v)
    corrupt = {keyf(r) for r in recs if config_of(r) == AUTO and (r.get("bad_bytes") or 0) > 0}
    out = []
    for cell in sorted({keyf(r) for r in hogrecs}, key=lambda c: tuple(x or 0 for x in c)):
        mine = [r for r in hogrecs if keyf(r) == cell]
        unverified = sum(1 for r in mine if _usable(r, "tput_hog") and not _hog_verified(r))
        skipped = sum(1 for r in mine if r.get("skipped"))
        auto, none = per.get((AUTO, cell), {}), per.get((NONE, cell), {})
        st = ratio_stats(auto, none) or {"pairs": 0}
        lacking = sum(1 for rnd in none if rnd not in auto)
        fixed = {c: [d[rnd] / none[rnd] for rnd in sorted(d) if none.get(rnd)]
                 for (c, k), d in per.items() if k == cell and c not in (AUTO, NONE)}
        noise = _median_spread(v for (c, k, _), v in reps.items()
                               if k == cell and c in (AUTO, NONE))
        share = _folio_share_min([r for r in recs if keyf(r) == cell])
        bar = None if noise is None or noise > AUTO_NOISE_MAX else 1 - noise
        why = ("hogs not verified in %d record(s)" % unverified if unverified else
               "%d measurement(s) skipped" % skipped if skipped else
               "%d round(s) without auto" % lacking if lacking else
               f"only {share:.0f}% of a buffer in folios of the size"
               if share is not None and share < FOLIO_SHARE_LOW else None)
        if cell in corrupt:
            verdict = "missed"
        elif why:
            verdict = "inconclusive"
        else:
            verdict = _verdict(st.get("min"), st.get("max"), bar, st["pairs"])
        out.append({"folio_kb": cell[0], "to": cell[1], "noise": noise, "pairs": st["pairs"],
                    "median": st.get("median"), "min": st.get("min"), "max": st.get("max"),
                    "why": why,
                    "others": {c: statistics.median(v) for c, v in fixed.items() if v},
                    "corrupt": cell in corrupt, "verdict": verdict})
    return out


def auto_choices(records):
    """What auto chose: from the auto_choice records run_bench writes after
    every part of auto (the counts start at 0 with each part), per part and
    size class, the batches each engine (or the CPU) was chosen for, summed
    over rounds and repetitions, and the median of its model's estimates
    (fixed cost per batch, cost per folio) at the end of the parts."""
    acc = defaultdict(lambda: {"chosen": 0, "batch_ns": [], "folio_ns": []})
    for r in records:
        if r.get("mode") != "auto_choice":
            continue
        a = acc[(r.get("part"), r.get("size_kb"), r.get("engine"))]
        a["chosen"] += r.get("chosen") or 0
        for k in ("batch_ns", "folio_ns"):
            if isinstance(r.get(k), (int, float)) and r.get("samples"):
                a[k].append(r[k])
    cells = defaultdict(dict)
    for (part, kb, eng), a in acc.items():
        cells[(part, kb)][eng] = {
            "chosen": a["chosen"],
            "batch_ns": statistics.median(a["batch_ns"]) if a["batch_ns"] else None,
            "folio_ns": statistics.median(a["folio_ns"]) if a["folio_ns"] else None}
    out = []
    for (part, kb), engines in sorted(cells.items(), key=lambda x: (str(x[0][0]), x[0][1] or 0)):
        total = sum(e["chosen"] for e in engines.values())
        if not total:
            continue
        out.append({"part": part, "folio_kb": kb, "batches": total,
                    "engines": {n: dict(e, share=e["chosen"] / total)
                                for n, e in sorted(engines.items())}})
    return out


def auto_not_ready(records):
    """How often each engine was passed over as not ready, per part, summed
    over rounds and repetitions: auto_model prints an engine's one count on
    every size class row, so each part's count is taken once."""
    seen, acc = set(), defaultdict(int)
    for r in records:
        if r.get("mode") != "auto_choice":
            continue
        key = (r.get("round"), r.get("rep"), r.get("part"), r.get("engine"))
        if key in seen:
            continue
        seen.add(key)
        acc[(r.get("part"), r.get("engine"))] += r.get("not_ready") or 0
    return [{"part": p, "engine": e, "not_ready": n}
            for (p, e), n in sorted(acc.items(), key=lambda x: str(x[0])) if n]


def auto_splits(records):
    """The batches auto split (auto_split_model records: every size class
    together; a split also counts in the engine's class above), per part
    and engine, summed over rounds and repetitions, with the median of the
    learnt split ratio (what splits cost against their prediction, %)."""
    acc = defaultdict(lambda: {"chosen": 0, "ratio": []})
    for r in records:
        if r.get("mode") != "auto_split_model":
            continue
        a = acc[(r.get("part"), r.get("engine"))]
        a["chosen"] += r.get("chosen") or 0
        if r.get("samples") and isinstance(r.get("ratio_pct"), (int, float)):
            a["ratio"].append(r["ratio_pct"])
    return [{"part": p, "engine": e, "chosen": a["chosen"],
             "ratio_pct": statistics.median(a["ratio"]) if a["ratio"] else None}
            for (p, e), a in sorted(acc.items(), key=lambda x: str(x[0]))]


# a split must beat the faster rival by more than this even when the
# repetitions agree exactly: a tie is not "faster"
SPLIT_MARGIN_MIN = 0.02


def split_rows(records):
    """The split configuration against the faster of cpu and dcbm-4 alone,
    at 2M folios (throughput, per target), per round of the same boot:
    median [min..max] of split / max(cpu, dcbm-4). A round counts only if
    both rivals ran in it and the split configuration's 2M runs there did
    split batches (its "splits" records, per folio size and target). Noise:
    the median spread of the three configurations' repetitions within a
    round. Met only when every counted round clears 1 + max(noise, 2%);
    missed with corrupted bytes, when no 2M batch was split, or when every
    round is below 1; inconclusive otherwise (fewer than 2 rounds, noise
    over AUTO_NOISE_MAX, less than FOLIO_SHARE_LOW% of a buffer in 2M
    folios, no split count recorded)."""
    recs = [r for r in records if _usable(r, "tput") and r.get("folio_kb") == 2048
            and config_of(r) in (SPLIT, *SPLIT_RIVALS)]
    if not any(config_of(r) == SPLIT for r in recs):
        return []
    counts = [r for r in records if r.get("mode") == "splits"
              and (r.get("config") or SPLIT) == SPLIT]
    per = _per_round(recs, lambda r: (config_of(r), r.get("to")), moved_gbps)
    reps = defaultdict(list)
    for r in recs:
        v = moved_gbps(r)
        if isinstance(v, (int, float)):
            reps[(config_of(r), r.get("to"), r["round"])].append(v)
    out = []
    for to in sorted({r.get("to") for r in recs if config_of(r) == SPLIT}, key=lambda t: t or 0):
        noise = _median_spread(v for (c, t, _), v in reps.items() if t == to)
        cell = [r for r in counts if r.get("folio_kb") == 2048 and r.get("to") == to]
        split_in = defaultdict(int)
        for r in cell:
            split_in[r["round"]] += r.get("splits") or 0
        mine, ratios, unsplit = per.get((SPLIT, to), {}), [], 0
        for rnd in sorted(mine):
            rivals = [per.get((c, to), {}).get(rnd) for c in SPLIT_RIVALS]
            # both rivals measured in that round, or the round does not count
            if not all(isinstance(v, (int, float)) and v > 0 for v in rivals):
                continue
            if not split_in.get(rnd):
                unsplit += 1
                continue
            ratios.append(mine[rnd] / max(rivals))
        mine_recs = [r for r in recs if r.get("to") == to]
        corrupt = any((r.get("bad_bytes") or 0) > 0 for r in mine_recs if config_of(r) == SPLIT)
        share = _folio_share_min(mine_recs)
        bar = None if noise is None else 1 + max(noise, SPLIT_MARGIN_MIN)
        if corrupt:
            verdict, why = "missed", "corrupted bytes"
        elif not cell:
            verdict, why = "inconclusive", "no split count recorded"
        elif not sum(split_in.values()):
            verdict, why = "missed", "no 2M batch was split"
        elif share is not None and share < FOLIO_SHARE_LOW:
            verdict, why = "inconclusive", f"only {share:.0f}% of a buffer in 2M folios"
        elif len(ratios) < 2 or bar is None or noise > AUTO_NOISE_MAX:
            verdict, why = "inconclusive", None
        elif min(ratios) >= bar:
            verdict, why = "met", None
        elif max(ratios) < 1:
            verdict, why = "missed", None
        else:
            verdict, why = "inconclusive", None
        out.append({"to": to, "pairs": len(ratios), "noise": noise, "bar": bar,
                    "splits": sum(split_in.values()), "unsplit_rounds": unsplit,
                    "corrupt": corrupt, "why": why,
                    "median": statistics.median(ratios) if ratios else None,
                    "min": min(ratios) if ratios else None,
                    "max": max(ratios) if ratios else None, "verdict": verdict})
    return out


def split_sizes(records):
    """Each split configuration (split: dcbm-4; split-N: dcbm-N) against the
    faster of cpu and its own dcbm alone at every folio size it ran (the
    goal is judged for split at 2M alone, split_rows()): per size and
    target, the median [min..max] over rounds of split / max(rivals), each
    a median of the round's repetitions, and the batches split there.
    Shown, not judged: where a split pays."""
    recs = [r for r in records if _usable(r, "tput")]
    per = _per_round(recs, lambda r: (config_of(r), r.get("folio_kb"), r.get("to")), moved_gbps)
    splits = defaultdict(int)
    for r in records:
        if r.get("mode") == "splits":
            splits[(r.get("config") or SPLIT, r.get("folio_kb"), r.get("to"))] += \
                r.get("splits") or 0
    out = []
    cells = {(config_of(r), r.get("folio_kb"), r.get("to")) for r in recs
             if _is_split(config_of(r))}
    for conf, kb, to in sorted(cells, key=lambda c: (c[0], c[1] or 0, c[2] or 0)):
        rivals_c = _split_rivals(conf)
        # per round, the faster rival, where both ran
        faster = {}
        for rnd in per.get((conf, kb, to), {}):
            rivals = [per.get((c, kb, to), {}).get(rnd) for c in rivals_c]
            if all(isinstance(v, (int, float)) and v > 0 for v in rivals):
                faster[rnd] = max(rivals)
        st = ratio_stats(per.get((conf, kb, to), {}), faster) or {"pairs": 0}
        out.append({"config": conf, "rivals": list(rivals_c), "folio_kb": kb, "to": to,
                    "splits": splits.get((conf, kb, to), 0), "pairs": st["pairs"],
                    "median": st.get("median"), "min": st.get("min"), "max": st.get("max")})
    return out


def _split_size_lines(summary):
    rows = summary.get("split_sizes") or []
    if not rows:
        return []
    out = ["", "== the split (auto_split 2) against the faster of cpu and its dcbm alone at "
           "each folio size (shown, the goal is judged for split at 2M): median of per-round "
           "ratios [min..max], batches split"]
    for r in rows:
        rv = ",".join(r.get("rivals") or _split_rivals(SPLIT))
        out.append(f"{_kb(r['folio_kb'])} to {r['to']:<6} {r.get('config', SPLIT)}/max({rv}) "
                   f"{_f(r['median'], '{:.2f}')} {_rng(r['min'], r['max']):>13}  "
                   f"{r['pairs']} rounds, {r['splits']} batches split")
    return out


def _split_goal(summary):
    goal = "a 2M batch split between the CPU and dcbm faster than either alone"
    rows = summary.get("split") or []
    if not rows:
        return {"goal": goal, "verdict": "inconclusive",
                "note": "not measured (no 2M throughput run of the split configuration)"}
    notes = []
    for r in rows:
        part = f"to {r['to']}: "
        if r["median"] is not None:
            noise = "unknown" if r["noise"] is None else f"{r['noise']:.2f}"
            part += (f"{r['median']:.2f}x the faster of cpu and dcbm-4 "
                     f"[{r['min']:.2f}..{r['max']:.2f}], {r['pairs']} rounds, noise {noise}, "
                     f"{r['splits']} batches split")
        else:
            part += "no round with split batches, cpu and dcbm-4"
        if r["unsplit_rounds"]:
            part += f", {r['unsplit_rounds']} round(s) without a split left out"
        if r["why"]:
            part += f" ({r['why']})"
        notes.append(part)
    alias = summary.get("alias")
    if alias and alias["median"] >= ALIAS_ARTEFACT:
        notes.append("2M cells measure the emulator")
    two = ((summary.get("alias_two") or {}).get("patched") or {}).get("2m_apart")
    if two:
        notes.append(f"two CPUs copying halves of 2M periods in the patched boots: "
                     f"{two['median']:.2f}x one [{two['min']:.2f}..{two['max']:.2f}]"
                     + (" (the emulator's artefact)" if two_aliased(summary) else ""))
    return {"goal": goal, "verdict": _overall(r["verdict"] for r in rows),
            "note": "; ".join(notes)}


def _overall(vs):
    vs = set(vs)
    if not vs:
        return "inconclusive"
    return "missed" if "missed" in vs else "met" if vs == {"met"} else "inconclusive"


def auto_goals(summary):
    """The issue's goals for auto, judged from auto_rows() (2M throughput
    cells under the emulator artefact judged as they are, but flagged), the
    compaction runs with a hog, and the split (split_rows())."""
    rows = summary.get("auto") or []
    if not rows:
        why = summary.get("auto_absent")
        # the split is its own configuration: judged whether auto ran or not
        split = [_split_goal(summary)] if summary.get("split") or why is not None else []
        if why is None:
            return split
        # asked for, not measured: every goal inconclusive, with the reason
        return [{"goal": g, "verdict": "inconclusive", "note": f"not measured: {why}"}
                for g in ("auto >= the best fixed configuration within the noise, every cell",
                          "auto never below none, every cell",
                          "under a CPU hog on every CPU, auto never below none")] + split
    alias = summary.get("alias")
    aliased = bool(alias and alias["median"] >= ALIAS_ARTEFACT)
    flag = "; 2M cells measure the emulator" if aliased else ""
    out = [{"goal": "auto >= the best fixed configuration within the noise, every cell",
            "verdict": _overall(r["verdict_best"] for r in rows), "note": flag},
           {"goal": "auto never below none, every cell",
            "verdict": _overall(r["verdict_none"] for r in rows), "note": flag}]
    hog_tput = summary.get("hog") or []
    if hog_tput:
        v = _overall(r["verdict"] for r in hog_tput)
        note = "move_pages() with a busy loop on every CPU: " + ", ".join(
            f"{_kb(r['folio_kb'])} {_f(r['median'], '{:.2f}')}x none "
            f"{_rng(r['min'], r['max'])}" + (f" ({r['why']})" if r["why"] else "")
            for r in hog_tput)
        if aliased:
            note += "; 2M cells measure the emulator"
    else:
        # the compaction runs' hog is one busy loop on the compacting CPU:
        # not this goal's
        v, note = "inconclusive", "not measured (no tput run of auto and none under a hog)"
    out.append({"goal": "under a CPU hog on every CPU, auto never below none",
                "verdict": v, "note": note})
    out.append(_split_goal(summary))
    return out


def _auto_cell(r):
    where = f"to {r['to']}" if r["kind"] == "tput" else f"{r['folios']} folios"
    return f"{_kb(r['folio_kb'])} {where}"


def _auto_text(summary):
    rows = summary.get("auto") or []
    if not rows:
        # the split, measured without auto
        return ["", *(f"goal: {g['goal']}: {g['verdict']} ({g['note']})"
                      for g in auto_goals(summary))] if summary.get("split") else []
    lines = ["", "== auto against the best fixed configuration of each round and against none "
             "(same boot): median of per-round ratios [min..max]; noise: median spread of a "
             "fixed configuration's repetitions within a round; verdicts: met when the whole "
             "range is >= 1 - noise"]
    for r in rows:
        best = ",".join(sorted(set(r["best"]))) or "-"
        lines.append(f"{_auto_cell(r):<18} best {best:<18} auto/best "
                     f"{_f(r['vs_best_median'], '{:.2f}')} "
                     f"{_rng(r['vs_best_min'], r['vs_best_max']):>13} ({r['verdict_best']})  "
                     f"auto/none {_f(r['vs_none_median'], '{:.2f}')} "
                     f"{_rng(r['vs_none_min'], r['vs_none_max']):>13} ({r['verdict_none']})  "
                     f"noise {_f(r['noise'], '{:.0%}')}")
    hog = summary.get("hog") or []
    if hog:
        lines += ["", "== under a busy loop on every CPU (tput --hog): auto / none, median of "
                  "per-round ratios [min..max]; the other configurations / none for comparison"]
        for r in hog:
            others = "  ".join(f"{c}/none {v:.2f}" for c, v in sorted(r["others"].items()))
            why = f": {r['why']}" if r["why"] else ""
            lines.append(f"{_kb(r['folio_kb'])} to {r['to']:<10} auto/none "
                         f"{_f(r['median'], '{:.2f}')} {_rng(r['min'], r['max']):>13} "
                         f"({r['verdict']}{why})  noise {_f(r['noise'], '{:.0%}')}  {others}")
    lines += _choice_lines(summary)
    lines += _split_size_lines(summary)
    for g in auto_goals(summary):
        lines.append(f"goal: {g['goal']}: {g['verdict']}"
                     + (f" ({g['note'].lstrip('; ')})" if g.get("note") else ""))
    return lines


def _choice_lines(summary):
    """auto's choices per part and folio size: share of batches per engine,
    and its model's cost per folio (us) at the end of the parts."""
    rows = summary.get("auto_choices") or []
    if not rows:
        return []
    out = ["", "== what auto chose: share of its batches per engine [model: us per folio "
           "+ us per batch, median at the end of the parts]; not ready: times an engine "
           "could not start"]
    for r in rows:
        parts = []
        for n, e in r["engines"].items():
            model = ("?" if e["folio_ns"] is None else
                     f"{e['folio_ns'] / 1000:.1f}+{(e['batch_ns'] or 0) / 1000:.0f}")
            parts.append(f"{n} {e['share']:.0%} [{model}]")
        out.append(f"{r['part']:<14} {_kb(r['folio_kb']):>5} {r['batches']:>5} batches: "
                   + "  ".join(parts))
    for r in summary.get("auto_splits") or []:
        ratio = "" if r["ratio_pct"] is None else f", learnt ratio {r['ratio_pct']:.0f}%"
        out.append(f"{r['part']:<14} of these, split between the CPU and {r['engine']}: "
                   f"{r['chosen']}{ratio}")
    for r in summary.get("auto_not_ready") or []:
        out.append(f"{r['part']:<14} {r['engine']} not ready {r['not_ready']} times")
    if summary.get("auto_model_unparsed"):
        out.append(f"auto_model: {summary['auto_model_unparsed']} line(s) not understood "
                   "(another kernel's layout?): the choices above may miss engines")
    return out


def _auto_md(summary):
    rows = summary.get("auto") or []
    if not rows:
        return [*(f"- {g['goal']}: **{g['verdict']}** ({g['note']})"
                  for g in auto_goals(summary)), ""] if summary.get("split") else []
    out = ["auto against the best fixed configuration of each round and against none in the "
           "same boot (median of per-round ratios [min..max]; verdict: met when the whole "
           "range is >= 1 - noise, noise being the median spread of a fixed configuration's "
           "repetitions within a round)", "",
           "| cell | best fixed | auto / best | verdict | auto / none | verdict | noise |",
           "|---|---|---|---|---|---|---|"]
    for r in rows:
        out.append(f"| {_auto_cell(r)} | {', '.join(sorted(set(r['best']))) or '-'} | "
                   f"{_f(r['vs_best_median'], '{:.2f}')} "
                   f"{_rng(r['vs_best_min'], r['vs_best_max'])} | {r['verdict_best']} | "
                   f"{_f(r['vs_none_median'], '{:.2f}')} "
                   f"{_rng(r['vs_none_min'], r['vs_none_max'])} | {r['verdict_none']} | "
                   f"{_f(r['noise'], '{:.0%}')} |")
    out.append("")
    hog = summary.get("hog") or []
    if hog:
        out += ["Under a busy loop on every CPU (`tput --hog`), same boot:", "",
                "| cell | auto / none | verdict | others / none | noise |", "|---|---|---|---|---|"]
        for r in hog:
            others = ", ".join(f"{c} {v:.2f}" for c, v in sorted(r["others"].items())) or "-"
            why = f" ({r['why']})" if r["why"] else ""
            out.append(f"| {_kb(r['folio_kb'])} to {r['to']} | {_f(r['median'], '{:.2f}')} "
                       f"{_rng(r['min'], r['max'])} | {r['verdict']}{why} | {others} | "
                       f"{_f(r['noise'], '{:.0%}')} |")
        out.append("")
    choices = _choice_lines(summary)
    if choices:
        out += ["What auto chose (share of its batches per engine; its model's us per folio "
                "+ us per batch):", "", "```", *choices[2:], "```", ""]
    sizes = _split_size_lines(summary)
    if sizes:
        out += ["The split against the faster of cpu and its dcbm alone at each folio size "
                "(shown; the goal is judged for split at 2M):", "", "```", *sizes[2:], "```", ""]
    for g in auto_goals(summary):
        out.append(f"- {g['goal']}: **{g['verdict']}**"
                   + (f" ({g['note'].lstrip('; ')})" if g.get("note") else ""))
    out.append("")
    return out


def text_tables(summary):
    lines = []
    lines.append("== throughput: move_pages() GB/s of the bytes that moved (mean +- sd); ratio "
                 "vs vanilla and vs none (the patched kernel, copying off, same boot): median "
                 "of per-round ratios of per-round medians [min..max]; fraction of memcpy; "
                 "unmoved: pages not on the target node after the move ('-': not recorded, and "
                 "GB/s then counts the whole buffer); folios: lowest share "
                 f"of the buffer in folios of that size (! below {FOLIO_SHARE_LOW:.0f}%)")
    lines.append(f"{'config':<10} {'folio':>6} {'to':>3} {'n':>3} {'GB/s':>8} {'sd':>7} "
                 f"{'ratio':>6} {'[min..max]':>13} {'vs none':>7} {'[min..max]':>13} "
                 f"{'memcpy':>6} {'sys s/GiB':>9} {'TLB/GiB':>7} {'EBUSY':>6} {'unmoved':>7} "
                 f"{'folios':>6}")

    for r in summary["throughput"]:
        lines.append(f"{r['config']:<10} {str(r['folio_kb']) + 'K':>6} {r['to']!s:>3} {r['n']:>3} "
                     f"{_f(r['gbps']):>8} {_f(r['gbps_sd']):>7} {_f(r['ratio_median'], '{:.2f}'):>6} "
                     f"{_rng(r['ratio_min'], r['ratio_max']):>13} "
                     f"{_f(r.get('vs_none_median'), '{:.2f}'):>7} "
                     f"{_rng(r.get('vs_none_min'), r.get('vs_none_max')):>13} "
                     f"{_f(r['memcpy_fraction'], '{:.2f}'):>6} "
                     f"{_f(r['sys_s_per_gib'], '{:.2f}'):>9} {_f(r['tlb_ipis_per_gib'], '{:.0f}'):>7} "
                     f"{_f(r['ebusy'], '{:.0f}'):>6} {_unmoved(r):>7} {_folios(r):>6}")
    for v, m in summary["memcpy"].items():
        lines.append(f"memcpy ({v} kernel): {_f(m['gbps'])} GB/s")
    if summary["count"]:
        lines.append("")
        lines.append("== folio-count sweep at 2M: GB/s of the bytes that moved (mean +- sd), "
                     "ratio vs vanilla and vs none (median of per-round ratios [min..max]), "
                     "unmoved pages, lowest folio share")
        for r in summary["count"]:
            vs_none = (f" vs none {_ratio(r, 'vs_none_')}"
                       if r.get("vs_none_median") is not None else "")
            lines.append(f"{r['config']:<10} {r['folios']!s:>4} folios  {_f(r['gbps']):>8} "
                         f"+- {_f(r['gbps_sd'])}  {_ratio(r)}{vs_none}  unmoved "
                         f"{_unmoved(r)}  folios {_folios(r)}")
    if summary["latency"]:
        lines.append("")
        lines.append("== latency: time until page 0 is usable at its destination, and the "
                     "longest stall a reader saw (median us)")
        for r in summary["latency"]:
            lines.append(f"{r['config']:<10} {r['batch']!s:>4} x {r['folio_kb']}K  first usable "
                         f"{_f(r['first_usable_us'], '{:.0f}'):>8}  max stall "
                         f"{_f(r['max_stall_us'], '{:.0f}'):>8}  move {_f(r['move_us'], '{:.0f}'):>8}")
    if summary["compaction"]:
        lines.append("")
        lines.append("== compaction of a fragmented node: wall s (mean +- sd), 4K pages migrated, "
                     "migration rate (pages/s) and its ratio vs vanilla and vs none (median of "
                     "per-round ratios [min..max]), free 2M blocks made/most possible, CPU, hog "
                     "rate during/alone")
        for r in summary["compaction"]:
            hog = (f"  hog {_f(r['hog_per_s'], '{:.3g}')}/s alone "
                   f"{_f(r.get('hog_base_per_s'), '{:.3g}')}/s" if r["hog"] else "")
            ratio = f" {_ratio(r)}" if r.get("ratio_median") is not None else ""
            if r.get("vs_none_median") is not None:
                ratio += f" vs none {_ratio(r, 'vs_none_')}"
            lines.append(f"{r['config']:<10} hog={'yes' if r['hog'] else 'no ':<3} n={r['n']} wall "
                         f"{_f(r['wall_s'], '{:.2f}')} +- {_f(r.get('wall_s_sd'), '{:.2f}')}s  "
                         f"migrated {_f(r['pgmigrate_success'], '{:.0f}')}  "
                         f"{_f(r.get('migrated_per_s'), '{:.0f}')}/s{ratio}  "
                         f"2M {_f(r['huge_obtained'], '{:.0f}')}/{_f(r['huge_target'], '{:.0f}')} "
                         f"user {_f(r['user_s'], '{:.2f}')}s sys {_f(r['sys_s'], '{:.2f}')}s "
                         f"idle {_f(r['idle_s'], '{:.2f}')}s{hog}")
    lines += _tiering_text(summary)
    lines += _auto_text(summary)
    lines += _profile_lines(summary)
    lines.append("")
    if alias := _alias_line(summary):
        lines.append(alias)
    lines += _alias_two_lines(summary)
    lines += goals(summary)
    lines += _measured_lines(summary)
    return lines


def markdown_tables(summary):
    """The headline tables in Markdown (report.md): throughput ratios per
    configuration and folio size, compaction, goals, what was measured."""
    tput = summary["throughput"]
    out = []
    sizes = sorted({r["folio_kb"] for r in tput if r["folio_kb"]})
    for to in sorted({r["to"] for r in tput if r["to"] is not None}):
        rows = {(r["config"], r["folio_kb"]): r for r in tput if r["to"] == to}
        cfgs = sorted({c for c, _ in rows}, key=lambda c: (c != VANILLA, c))
        out.append(f"Node 0 -> {to}: vanilla in GB/s of the bytes that moved (mean +- sd); "
                   "every other row: ratio against vanilla, median of per-round ratios "
                   "[min..max] / against none in the same boot, median [min..max]; a cell "
                   "notes the pages that did not move, and the lowest share of the buffer in "
                   f"folios of its size when below {FOLIO_SHARE_LOW:.0f}% (!)")
        out.append("")
        out.append("| config | " + " | ".join(f"{kb}K" for kb in sizes) + " |")
        out.append("|---" * (len(sizes) + 1) + "|")
        for c in cfgs:
            cells = []
            for kb in sizes:
                r = rows.get((c, kb))
                if r is None:
                    cells.append("-")
                    continue
                if c == VANILLA:
                    cell = f"{_f(r['gbps'])} +- {_f(r['gbps_sd'])}"
                else:
                    cell = _ratio(r, sep=" ")
                    if r.get("vs_none_median") is not None:
                        cell += f" / {_ratio(r, 'vs_none_', sep=' ')}"
                if r.get("not_moved_share"):
                    cell += f" (unmoved {_unmoved(r)})"
                if r.get("folio_share_low"):
                    cell += f" (folios {_folios(r)})"
                cells.append(cell)
            out.append(f"| {c} | " + " | ".join(cells) + " |")
        out.append("")
    if summary["compaction"]:
        out.append("Compaction of a fragmented node (4K pages migrated per second, ratio "
                   "against vanilla and against none in the same boot: median of per-round "
                   "ratios [min..max])")
        out.append("")
        out.append("| config | hog | n | wall s | pages migrated | pages/s | ratio | vs none | "
                   "free 2M made/possible | hog rate vs alone |")
        out.append("|---|---|---|---|---|---|---|---|---|---|")
        for r in summary["compaction"]:
            hog = (f"{r['hog_per_s'] / r['hog_base_per_s']:.2f}"
                   if r["hog"] and r.get("hog_per_s") and r.get("hog_base_per_s") else "-")
            out.append(f"| {r['config']} | {'yes' if r['hog'] else 'no'} | {r['n']} | "
                       f"{_f(r['wall_s'], '{:.2f}')} +- {_f(r.get('wall_s_sd'), '{:.2f}')} | "
                       f"{_f(r['pgmigrate_success'], '{:.0f}')} | "
                       f"{_f(r.get('migrated_per_s'), '{:.0f}')} | {_ratio(r, sep=' ')} | "
                       f"{_ratio(r, 'vs_none_', sep=' ')} | "
                       f"{_f(r['huge_obtained'], '{:.0f}')}/{_f(r['huge_target'], '{:.0f}')} | "
                       f"{hog} |")
        out.append("")
    out += _tiering_md(summary)
    out += _auto_md(summary)
    if summary.get("profile"):
        out.append("Where the time goes (traced tput runs, summed over rounds): shares of "
                   "unmap (allocation + rmap walks), TLB flush, copy (batch copy step + "
                   "per-folio copies) and the rest of the move phase; copy GB/s (bytes / copy "
                   "time) and its fraction of one thread's memcpy; bound: the most a free "
                   "copy could gain, total / (total - copy)")
        out.append("")
        out.append("| config | folio | unmap | flush | copy | move | copy GB/s | of memcpy | "
                   "bound | engine share of batch copy |")
        out.append("|---|---|---|---|---|---|---|---|---|---|")
        pct = "{:.0%}"
        for r in summary["profile"]:
            out.append(f"| {r['config']} | {r['folio_kb']}K | {_f(r['unmap_share'], pct)} | "
                       f"{_f(r['flush_share'], pct)} | {_f(r['copy_share'], pct)} | "
                       f"{_f(r['move_share'], pct)} | {_f(r['copy_gbps'], '{:.2f}')} | "
                       f"{_f(r['copy_vs_memcpy'], '{:.2f}')} | "
                       f"{_f(r['free_copy_bound'], '{:.2f}')} | "
                       f"{_f(r['engine_share_of_batch_copy'], pct)} |")
        out.append("")
    if alias := _alias_line(summary):
        out.append(f"- {alias}")
    out += [f"- {line}" for line in _alias_two_lines(summary)]
    out += [f"- {g}" for g in goals(summary)]
    out += [f"- {line}" for line in _measured_lines(summary)]
    return out


def write_csv(summary, path):
    rows = summary["throughput"]
    if not rows:
        path.write_text("")
        return
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def plots(summary, outdir):
    """PNG plots; returns the files written (none without matplotlib)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    written = []
    tput = summary["throughput"]
    for to in sorted({r["to"] for r in tput if r["to"] is not None}):
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for cfg in sorted({r["config"] for r in tput}):
            pts = sorted((r["folio_kb"], r["gbps"], r["gbps_sd"] or 0) for r in tput
                         if r["config"] == cfg and r["to"] == to and r["gbps"] is not None)
            if pts:
                ax.errorbar([p[0] for p in pts], [p[1] for p in pts], yerr=[p[2] for p in pts],
                            marker="o", capsize=3, label=cfg)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("folio size (KiB)")
        ax.set_ylabel("move_pages() GB/s")
        ax.set_title(f"Throughput vs folio size, node 0 -> {to} (emulated: compare ratios)")
        ax.legend(fontsize=8)
        p = outdir / f"throughput_to{to}.png"
        fig.tight_layout()
        fig.savefig(p, dpi=110)
        plt.close(fig)
        written.append(p)
    def line_plot(rows, x, y, xlabel, ylabel, title, name, ylog=False):
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for cfg in sorted({r["config"] for r in rows}):
            pts = sorted((r[x], r[y]) for r in rows if r["config"] == cfg and r[y] is not None)
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=cfg)
        ax.set_xscale("log", base=2)
        if ylog:
            ax.set_yscale("log")
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        ax.legend(fontsize=8)
        path = outdir / name
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)

    if summary["count"]:
        line_plot(summary["count"], "folios", "gbps", "2M folios moved", "GB/s",
                  "Throughput vs folio count (2M)", "throughput_vs_count.png")
    tier = summary.get("tiering") or []
    if tier:
        cfgs = list(dict.fromkeys(r["config"] for r in tier))
        fig, axes = plt.subplots(1, 2, figsize=(11, 4.5))
        for hog, off in ((False, -0.2), (True, 0.2)):
            rows = {r["config"]: r for r in tier if r["hog"] == hog}
            xs = [i + off for i, c in enumerate(cfgs) if c in rows]
            label = "with hog" if hog else "alone"
            axes[0].bar(xs, [rows[c]["touch_per_s"] or 0 for c in cfgs if c in rows],
                        width=0.4, label=label)
            axes[1].bar(xs, [(rows[c]["demote_per_s"] or 0) + (rows[c]["promote_per_s"] or 0)
                             for c in cfgs if c in rows], width=0.4, label=label)
        for ax, yl in ((axes[0], "pages touched / s (task progress)"),
                       (axes[1], "pages demoted + promoted / s")):
            ax.set_xticks(range(len(cfgs)))
            ax.set_xticklabels(cfgs, rotation=30, fontsize=8)
            ax.set_ylabel(yl)
            ax.legend(fontsize=8)
        fig.suptitle("Tiering (medians over rounds; emulated: compare within a run)")
        path = outdir / "tiering.png"
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    lat = [r for r in summary["latency"] if r["folio_kb"] == 4]
    if lat:
        line_plot(lat, "batch", "first_usable_us", "4K pages per move_pages() call",
                  "first folio usable after (us)", "Latency vs batch size",
                  "latency_vs_batch.png", ylog=True)
    return written
