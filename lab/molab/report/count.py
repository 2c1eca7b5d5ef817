"""The folio-count sweep at 2M: GB/s by number of folios per move."""

from collections import defaultdict

from .fmt import folio_cell, num, ratios_text, unmoved_cell
from .records import FOLIO_SHARE_LOW, config_of, moved_gbps, usable
from .significance import p_legend, p_vs_vanilla_and_none
from .stats import (folio_share_min, mean_sd, not_moved_share, per_round, ratio_fields,
                    samples_by, vs_vanilla_and_none)


def count_rows(records):
    count = [r for r in records if usable(r, "count")]
    key = lambda r: (config_of(r), r.get("folios"))
    groups = defaultdict(list)
    for r in count:
        groups[key(r)].append(r)
    per = per_round(count, key, moved_gbps)
    samples = samples_by(count, key, moved_gbps)
    rows = []
    for (cfg, n), rs in sorted(groups.items(), key=lambda x: (str(x[0][0]), x[0][1] or 0)):
        m, sd = mean_sd([moved_gbps(r) for r in rs])
        ratio, vs_none = vs_vanilla_and_none(per, cfg, (n,))
        p, p_none = p_vs_vanilla_and_none(samples, cfg, (n,))
        share = folio_share_min(rs)
        # n: the GB/s figures (a move mo_bench could not time has none)
        rows.append({"config": cfg, "folios": n, "n": len(samples.get((cfg, n), [])), "gbps": m,
                     "gbps_sd": sd,
                     **ratio_fields("ratio_", ratio, pairs=False), "ratio_p": p,
                     **ratio_fields("vs_none_", vs_none, pairs=False), "vs_none_p": p_none,
                     "not_moved_share": not_moved_share(rs),
                     "folio_share_min": share,
                     "folio_share_low": share is not None and share < FOLIO_SHARE_LOW})
    return rows


def count_text(summary):
    if not summary["count"]:
        return []
    lines = ["", "== folio-count sweep at 2M: GB/s of the bytes that moved (mean +- sd), "
             "ratio vs vanilla and vs none (median of per-round ratios [min..max]), "
             "unmoved pages, lowest folio share"]
    if legend := p_legend((summary.get("p_floors") or {}).get("count")):
        lines.append(legend)
    for r in summary["count"]:
        lines.append(f"{r['config']:<10} {r['folios']!s:>4} folios  {num(r['gbps']):>8} "
                     f"+- {num(r['gbps_sd'])} {ratios_text(r, always=True)}  unmoved "
                     f"{unmoved_cell(r)}  folios {folio_cell(r)}")
    return lines
