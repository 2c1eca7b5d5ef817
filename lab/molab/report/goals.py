"""The throughput and copy-phase goals: judged met, missed or inconclusive
on whole per-round ranges, never asserted."""

from .alias import aliased
from .copy_phase import COPY_GOALS, copy_goal_verdict
from .fmt import kb_label

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
    emulator artefact (alias.aliased(): median >= ALIAS_ARTEFACT), a cell is
    "inconclusive: emulator", never met or missed. The cpu goal is missed
    if any cell is missed, met only if every cell is met, otherwise
    "inconclusive: emulator" if the only cells short of met are 2M cells
    under the artefact, else "inconclusive"."""
    emulated = aliased(summary)

    def judge(r, goal):
        if emulated and r["folio_kb"] == 2048:
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
                      "verdict": (EMULATOR if emulated and c["folio_kb"] == 2048
                                  and c["ratio_pairs"] else copy_goal_verdict(c))}
                     for c in cs]
            vs = {c["verdict"] for c in cells}
            v = ("missed" if "missed" in vs else "met" if vs == {"met"} else
                 EMULATOR if vs <= {"met", EMULATOR} and vs else "inconclusive")
            lo, hi = kb_label(sizes[0]), kb_label(sizes[-1])
            g = {"goal": f"{num} copy phase >= {goal}x {den}'s at every folio size {lo}-{hi}",
                 "config": num, "against": den, "min_ratio": goal, "copy_phase": True,
                 "verdict": v, "cells": cells}
            gaps = [kb_label(c["folio_kb"]) for c in cs if not c["ratio_pairs"]]
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
                parts.append(f"{kb_label(c['folio_kb'])} " + (
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
