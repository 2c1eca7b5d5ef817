"""Tiering: kswapd demotes, NUMA balancing promotes, a task rewrites a hot
window that moves; its progress per configuration, with and without a hog."""

import statistics
from collections import defaultdict

from .fmt import num, ratio_cell, ratios_text
from .records import VANILLA, config_of
from .stats import mean_sd, per_round, ratio_fields, share, vs_vanilla_and_none


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
        return {**r, "kswapd_share": share(r.get("kswapd_cpu_s"), sec),
                "app_share": share(app, sec), "app_sys_share": share(sys_, sec),
                # busy CPUs of the machine, in CPUs: kworkers and DMA threads too
                "machine_busy_cpus": share(r.get("machine_busy_s"), sec)}
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
    per = per_round(recs, key, "touch_per_s")
    rows = []
    for (cfg, hog), rs in sorted(groups.items(), key=lambda x: (x[0][0] != VANILLA,
                                                                 str(x[0][0]), x[0][1])):
        def med(k):
            vs = [r.get(k) for r in rs if isinstance(r.get(k), (int, float))]
            return statistics.median(vs) if vs else None
        ratio, vs_none = vs_vanilla_and_none(per, cfg, (hog,))
        rows.append({"config": cfg, "hog": hog, "n": len(rs),
                     "touch_per_s": med("touch_per_s"),
                     "touch_per_s_sd": mean_sd([r.get("touch_per_s") for r in rs])[1],
                     **ratio_fields("ratio_", ratio, pairs=False),
                     **ratio_fields("vs_none_", vs_none, pairs=False),
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


def tiering_missing(records):
    """Tiering asked for (the run line's "tier") but skipped or missing in a
    boot: on a machine without a lower tier, say, the table would simply
    not be there, and the run must not read as a pass."""
    out = [{"variant": r["variant"], "round": r["round"], "config": config_of(r),
            "reason": r.get("reason") or ""}
           for r in records if r.get("mode") == "tiering" and r.get("skipped")]
    for r in records:
        if r.get("mode") == "run" and r.get("tier") == 1 and not any(
                x.get("mode") == "tiering" and x["variant"] == r["variant"]
                and x["round"] == r["round"] for x in records):
            out.append({"variant": r["variant"], "round": r["round"], "config": None,
                        "reason": "no tiering record in this boot"})
    return out


def stalled(r):
    return not r.get("demote_per_s") and not r.get("promote_per_s")


def tiering_text(summary):
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
        out.append(f"{r['config']:<10} hog={'yes' if r['hog'] else 'no ':<3} n={r['n']} "
                   f"touched {num(r['touch_per_s'], '{:.0f}')}/s{ratios_text(r)}  demoted "
                   f"{num(r['demote_per_s'], '{:.0f}')}/s promoted "
                   f"{num(r['promote_per_s'], '{:.0f}')}/s  kswapd "
                   f"{num(r['kswapd_share'], pct)} task {num(r['app_share'], pct)} "
                   f"(sys {num(r['app_sys_share'], pct)}) machine busy "
                   f"{num(r.get('machine_busy_cpus'), '{:.2f}')} CPUs"
                   f"{'  hog ' + num(r.get('hog_per_s'), '{:.3g}') + '/s' if r['hog'] else ''}"
                   f"  hot on fast "
                   f"{num(r['hot_on_fast_pct'], '{:.0f}')}%"
                   f"{' (stalled: no migration either way)' if stalled(r) else ''}")
    for i in summary.get("tiering_idle") or []:
        out.append(f"  NO TIERING in {i['variant']} round {i['round']} {i['config']} "
                   f"hog={'yes' if i['hog'] else 'no'}: demoted {i['demoted']}, promoted "
                   f"{i['promoted']} in the window")
    return out


def tiering_md(summary):
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
                   f"{num(r['touch_per_s'], '{:.0f}')} | {ratio_cell(r, sep=' ')} | "
                   f"{ratio_cell(r, 'vs_none_', sep=' ')} | {num(r['demote_per_s'], '{:.0f}')} | "
                   f"{num(r['promote_per_s'], '{:.0f}')} | {num(r['kswapd_share'], pct)} | "
                   f"{num(r['app_share'], pct)} ({num(r['app_sys_share'], pct)}) | "
                   f"{num(r.get('machine_busy_cpus'), '{:.2f}')} | "
                   f"{num(r.get('hog_per_s'), '{:.3g}') if r['hog'] else '-'} | "
                   f"{num(r['hot_on_fast_pct'], '{:.0f}')}%"
                   f"{' (stalled)' if stalled(r) else ''} |")
    out.append("")
    return out
