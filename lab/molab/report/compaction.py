"""Compaction of a fragmented node: wall time, 4K pages migrated per second
and its ratios, the 2M blocks made, CPU, and a hog's rate beside it."""

from collections import defaultdict

from .fmt import num, ratio_cell, ratios_text
from .records import config_of, usable
from .stats import mean_sd, per_round, ratio_fields, vs_vanilla_and_none


def _with_rate(r):
    w, m = r.get("wall_s"), r.get("pgmigrate_success")
    ok = isinstance(w, (int, float)) and w > 0 and isinstance(m, (int, float))
    return {**r, "migrated_per_s": m / w if ok else None}


def compaction_rows(records):
    comp = [_with_rate(r) for r in records if usable(r, "compaction")]
    key = lambda r: (config_of(r), bool(r.get("hog")))
    groups = defaultdict(list)
    for r in comp:
        groups[key(r)].append(r)
    per = per_round(comp, key, "migrated_per_s")
    rows = []
    for (cfg, hog), rs in sorted(groups.items(), key=lambda x: (str(x[0][0]), x[0][1])):
        def avg(k):
            return mean_sd([r.get(k) for r in rs])[0]
        ratio, vs_none = vs_vanilla_and_none(per, cfg, (hog,))
        mps, mps_sd = mean_sd([r.get("migrated_per_s") for r in rs])
        rows.append({"config": cfg, "hog": hog, "n": len(rs), "wall_s": avg("wall_s"),
                     "wall_s_sd": mean_sd([r.get("wall_s") for r in rs])[1],
                     "migrated_per_s": mps, "migrated_per_s_sd": mps_sd,
                     **ratio_fields("ratio_", ratio, pairs=False),
                     **ratio_fields("vs_none_", vs_none),
                     "hog_base_per_s": avg("hog_base_per_s"),
                     "pgmigrate_success": avg("pgmigrate_success"),
                     "huge_target": avg("huge_target"), "huge_obtained": avg("huge_obtained"),
                     "batch_copied": avg("pgmigrate_batch_copied"),
                     "user_s": avg("user_s"), "sys_s": avg("sys_s"), "idle_s": avg("idle_s"),
                     "sys_pct": avg("sys_pct"), "hog_per_s": avg("hog_per_s")})
    return rows


def compaction_text(summary):
    if not summary["compaction"]:
        return []
    lines = ["", "== compaction of a fragmented node: wall s (mean +- sd), 4K pages migrated, "
             "migration rate (pages/s) and its ratio vs vanilla and vs none (median of "
             "per-round ratios [min..max]), free 2M blocks made/most possible, CPU, hog "
             "rate during/alone"]
    for r in summary["compaction"]:
        hog = (f"  hog {num(r['hog_per_s'], '{:.3g}')}/s alone "
               f"{num(r.get('hog_base_per_s'), '{:.3g}')}/s" if r["hog"] else "")
        lines.append(f"{r['config']:<10} hog={'yes' if r['hog'] else 'no ':<3} n={r['n']} wall "
                     f"{num(r['wall_s'], '{:.2f}')} +- {num(r.get('wall_s_sd'), '{:.2f}')}s  "
                     f"migrated {num(r['pgmigrate_success'], '{:.0f}')}  "
                     f"{num(r.get('migrated_per_s'), '{:.0f}')}/s{ratios_text(r)}  "
                     f"2M {num(r['huge_obtained'], '{:.0f}')}/{num(r['huge_target'], '{:.0f}')} "
                     f"user {num(r['user_s'], '{:.2f}')}s sys {num(r['sys_s'], '{:.2f}')}s "
                     f"idle {num(r['idle_s'], '{:.2f}')}s{hog}")
    return lines


def compaction_md(summary):
    if not summary["compaction"]:
        return []
    out = ["Compaction of a fragmented node (4K pages migrated per second, ratio "
           "against vanilla and against none in the same boot: median of per-round "
           "ratios [min..max])", "",
           "| config | hog | n | wall s | pages migrated | pages/s | ratio | vs none | "
           "free 2M made/possible | hog rate vs alone |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for r in summary["compaction"]:
        hog = (f"{r['hog_per_s'] / r['hog_base_per_s']:.2f}"
               if r["hog"] and r.get("hog_per_s") and r.get("hog_base_per_s") else "-")
        out.append(f"| {r['config']} | {'yes' if r['hog'] else 'no'} | {r['n']} | "
                   f"{num(r['wall_s'], '{:.2f}')} +- {num(r.get('wall_s_sd'), '{:.2f}')} | "
                   f"{num(r['pgmigrate_success'], '{:.0f}')} | "
                   f"{num(r.get('migrated_per_s'), '{:.0f}')} | {ratio_cell(r, sep=' ')} | "
                   f"{ratio_cell(r, 'vs_none_', sep=' ')} | "
                   f"{num(r['huge_obtained'], '{:.0f}')}/{num(r['huge_target'], '{:.0f}')} | "
                   f"{hog} |")
    out.append("")
    return out
