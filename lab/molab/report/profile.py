"""Where the time of a migration goes: the phase profile of the traced tput
runs (unmap, TLB flush, copy, the rest of the move), the copy's own rate,
dcbm's own steps and mtcopy's helpers."""

from collections import defaultdict

from .fmt import num
from .records import VANILLA, config_of, usable
from .stats import mean_sd


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
        if usable(r, "profile") and r["variant"] != VANILLA:
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


def profile_text(summary):
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
                     f"{num(r['unmap_share'], pct):>6} {num(r['flush_share'], pct):>6} "
                     f"{num(r['copy_share'], pct):>6} {num(r['move_share'], pct):>6} "
                     f"{num(r['copy_gbps'], '{:.2f}'):>9} {num(r['copy_vs_memcpy'], '{:.2f}'):>7} "
                     f"{num(r['free_copy_bound'], '{:.2f}'):>6} "
                     f"{num(r['engine_share_of_batch_copy'], pct):>6} "
                     f"{num(r['traced_gbps'], '{:.3f}'):>11}{flag}")
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
                         f"{num(r['helpers_per_batch'], '{:.2f}')} per batch copy, "
                         f"{num(r['helpers_ran_share'], '{:.0%}')} ran")
    dc = [r for r in prof if r.get("dcbm_folios")]
    if dc:
        lines.append("dcbm's own steps (dcbm_batch): CPU time per folio outside the transfers "
                     "(plan + submit + teardown), submit time per descriptor, waiting's share")
        for r in dc:
            lines.append(f"  {r['config']:<10} {str(r['folio_kb']) + 'K':>6} "
                         f"{r['dcbm_folios']} folios, {r['dcbm_descriptors']} descriptors: "
                         f"{num(r['dcbm_overhead_us_per_folio'], '{:.1f}')} us/folio, "
                         f"{num(r['dcbm_submit_ns_per_descriptor'], '{:.0f}')} ns/descriptor "
                         f"submitted, waiting {num(r['dcbm_wait_share'], '{:.0%}')}")
    for v, m in summary["memcpy"].items():
        bt = m.get("by_threads") or {}
        if len(bt) > 1:
            one = bt.get(1)
            lines.append(f"memcpy ({v} kernel) by threads: " + ", ".join(
                f"{t}: {num(g)} GB/s" + (f" ({g / one:.2f}x)" if one and g and t != 1 else "")
                for t, g in bt.items()))
    return lines


def profile_md(summary):
    if not summary.get("profile"):
        return []
    out = ["Where the time goes (traced tput runs, summed over rounds): shares of "
           "unmap (allocation + rmap walks), TLB flush, copy (batch copy step + "
           "per-folio copies) and the rest of the move phase; copy GB/s (bytes / copy "
           "time) and its fraction of one thread's memcpy; bound: the most a free "
           "copy could gain, total / (total - copy)", "",
           "| config | folio | unmap | flush | copy | move | copy GB/s | of memcpy | "
           "bound | engine share of batch copy |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    pct = "{:.0%}"
    for r in summary["profile"]:
        out.append(f"| {r['config']} | {r['folio_kb']}K | {num(r['unmap_share'], pct)} | "
                   f"{num(r['flush_share'], pct)} | {num(r['copy_share'], pct)} | "
                   f"{num(r['move_share'], pct)} | {num(r['copy_gbps'], '{:.2f}')} | "
                   f"{num(r['copy_vs_memcpy'], '{:.2f}')} | "
                   f"{num(r['free_copy_bound'], '{:.2f}')} | "
                   f"{num(r['engine_share_of_batch_copy'], pct)} |")
    out.append("")
    return out
