"""Throughput: move_pages() GB/s per configuration, folio size and target
node, its ratios against vanilla and against none, and one thread's memcpy
(the ceiling a copy is measured against)."""

from collections import defaultdict

from .fmt import folio_cell, num, p_text, ratio_cell, span, unmoved_cell, with_p
from .records import FOLIO_SHARE_LOW, VANILLA, config_of, moved_gbps, usable
from .significance import p_legend, p_vs_vanilla_and_none
from .stats import (folio_share_min, mean_sd, not_moved_share, per_round, ratio_fields,
                    samples_by, vs_vanilla_and_none)


def memcpy_summary(records):
    """Per kernel variant: one thread's memcpy GB/s (mean), its per-round
    medians, and the mean by thread count (runs with more threads, the
    parallelism the machine has, are reported apart)."""
    mem_all = [r for r in records if usable(r, "memcpy")]
    memcpy = [r for r in mem_all if (r.get("threads") or 1) == 1]
    mem_round = per_round(memcpy, lambda r: r["variant"])
    # variants in a fixed order: a set's order changed with the hash seed
    mem_mean = {v: mean_sd([r.get("gbps") for r in memcpy if r["variant"] == v])[0]
                for v in sorted({r["variant"] for r in memcpy})}
    mem_threads = defaultdict(dict)
    for v, t in {(r["variant"], r.get("threads") or 1) for r in mem_all}:
        mem_threads[v][t] = mean_sd([r.get("gbps") for r in mem_all
                                     if r["variant"] == v and (r.get("threads") or 1) == t])[0]
    return {v: {"gbps": m, "rounds": mem_round.get(v, {}),
                "by_threads": dict(sorted(mem_threads.get(v, {}).items()))}
            for v, m in mem_mean.items()}


def throughput_rows(records, memcpy):
    """The throughput table, per (config, folio_kb, to); ``memcpy`` is
    memcpy_summary(). GB/s counts the bytes that moved (moved_gbps())."""
    tput = [r for r in records if usable(r, "tput")]
    key = lambda r: (config_of(r), r.get("folio_kb"), r.get("to"))
    groups = defaultdict(list)
    for r in tput:
        groups[key(r)].append(r)
    per = per_round(tput, key, moved_gbps)
    samples = samples_by(tput, key, moved_gbps)
    rows = []
    for (cfg, kb, to), rs in sorted(groups.items(), key=lambda x: (str(x[0][0]), x[0][1] or 0,
                                                                   x[0][2] or 0)):
        m, sd = mean_sd([moved_gbps(r) for r in rs])
        share = folio_share_min(rs)
        ratio, vs_none = vs_vanilla_and_none(per, cfg, (kb, to))
        p, p_none = p_vs_vanilla_and_none(samples, cfg, (kb, to))
        variant = VANILLA if cfg == VANILLA else "patched"
        mem = (memcpy.get(variant) or {}).get("gbps")
        rows.append({
            # n: the GB/s figures (a move mo_bench could not time has none)
            "config": cfg, "folio_kb": kb, "to": to, "n": len(samples.get((cfg, kb, to), [])),
            "gbps": m, "gbps_sd": sd, "gbps_recorded": mean_sd([r.get("gbps") for r in rs])[0],
            "not_moved_share": not_moved_share(rs),
            **ratio_fields("ratio_", ratio), "ratio_p": p,
            **ratio_fields("vs_none_", vs_none), "vs_none_p": p_none,
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
    return rows


def throughput_text(summary):
    lines = ["== throughput: move_pages() GB/s of the bytes that moved (mean +- sd); ratio "
             "vs vanilla and vs none (the patched kernel, copying off, same boot): median "
             "of per-round ratios of per-round medians [min..max]; fraction of memcpy; "
             "unmoved: pages not on the target node after the move ('-': not recorded, and "
             "GB/s then counts the whole buffer); folios: lowest share "
             f"of the buffer in folios of that size (! below {FOLIO_SHARE_LOW:.0f}%)"]
    if legend := p_legend((summary.get("p_floors") or {}).get("throughput")):
        lines.append(legend)
    lines.append(f"{'config':<10} {'folio':>6} {'to':>3} {'n':>3} {'GB/s':>8} {'sd':>7} "
                 f"{'ratio':>6} {'[min..max]':>13} {'p':>7} {'vs none':>7} {'[min..max]':>13} "
                 f"{'p':>7} {'memcpy':>6} {'sys s/GiB':>9} {'TLB/GiB':>7} {'EBUSY':>6} "
                 f"{'unmoved':>7} {'folios':>6}")
    for r in summary["throughput"]:
        lines.append(f"{r['config']:<10} {str(r['folio_kb']) + 'K':>6} {r['to']!s:>3} {r['n']:>3} "
                     f"{num(r['gbps']):>8} {num(r['gbps_sd']):>7} "
                     f"{num(r['ratio_median'], '{:.2f}'):>6} "
                     f"{span(r['ratio_min'], r['ratio_max']):>13} "
                     f"{p_text(r.get('ratio_p')):>7} "
                     f"{num(r.get('vs_none_median'), '{:.2f}'):>7} "
                     f"{span(r.get('vs_none_min'), r.get('vs_none_max')):>13} "
                     f"{p_text(r.get('vs_none_p')):>7} "
                     f"{num(r['memcpy_fraction'], '{:.2f}'):>6} "
                     f"{num(r['sys_s_per_gib'], '{:.2f}'):>9} "
                     f"{num(r['tlb_ipis_per_gib'], '{:.0f}'):>7} "
                     f"{num(r['ebusy'], '{:.0f}'):>6} {unmoved_cell(r):>7} {folio_cell(r):>6}")
    for v, m in summary["memcpy"].items():
        lines.append(f"memcpy ({v} kernel): {num(m['gbps'])} GB/s")
    return lines


def throughput_md(summary):
    """One table per target node: vanilla's GB/s, every other row's ratios."""
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
                    cell = f"{num(r['gbps'])} +- {num(r['gbps_sd'])}"
                else:
                    cell = with_p(ratio_cell(r, sep=" "), r, "ratio_")
                    if r.get("vs_none_median") is not None:
                        cell += f" / {with_p(ratio_cell(r, 'vs_none_', sep=' '), r, 'vs_none_')}"
                if r.get("not_moved_share"):
                    cell += f" (unmoved {unmoved_cell(r)})"
                if r.get("folio_share_low"):
                    cell += f" (folios {folio_cell(r)})"
                cells.append(cell)
            out.append(f"| {c} | " + " | ".join(cells) + " |")
        out.append("")
    if out and (legend := p_legend((summary.get("p_floors") or {}).get("throughput"))):
        out += [legend, ""]
    return out
