"""What auto chose: per part and folio size, the share of its batches each
engine (or the CPU) got, its model's estimates, the batches it split, and
how often an engine was not ready."""

import statistics
from collections import defaultdict

from .fmt import kb_label

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


def choice_lines(summary):
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
        out.append(f"{r['part']:<14} {kb_label(r['folio_kb']):>5} {r['batches']:>5} batches: "
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
