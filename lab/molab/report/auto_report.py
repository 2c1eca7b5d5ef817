"""auto's goals, judged from auto_rows(), hog_rows() and the split, and
auto's tables in text and Markdown."""

from .alias import aliased
from .choices import choice_lines
from .fmt import kb_label, num, span
from .split import split_goal, split_size_lines
from .stats import overall


def auto_goals(summary):
    """The issue's goals for auto, judged from auto_rows() (2M throughput
    cells under the emulator artefact judged as they are, but flagged), the
    compaction runs with a hog, and the split (split_rows())."""
    rows = summary.get("auto") or []
    if not rows:
        why = summary.get("auto_absent")
        # the split is its own configuration: judged whether auto ran or not
        split = [split_goal(summary)] if summary.get("split") or why is not None else []
        if why is None:
            return split
        # asked for, not measured: every goal inconclusive, with the reason
        return [{"goal": g, "verdict": "inconclusive", "note": f"not measured: {why}"}
                for g in ("auto >= the best fixed configuration within the noise, every cell",
                          "auto never below none, every cell",
                          "under a CPU hog on every CPU, auto never below none")] + split
    emulated = aliased(summary)
    flag = "; 2M cells measure the emulator" if emulated else ""
    out = [{"goal": "auto >= the best fixed configuration within the noise, every cell",
            "verdict": overall(r["verdict_best"] for r in rows), "note": flag},
           {"goal": "auto never below none, every cell",
            "verdict": overall(r["verdict_none"] for r in rows), "note": flag}]
    hog_tput = summary.get("hog") or []
    if hog_tput:
        v = overall(r["verdict"] for r in hog_tput)
        note = "move_pages() with a busy loop on every CPU: " + ", ".join(
            f"{kb_label(r['folio_kb'])} {num(r['median'], '{:.2f}')}x none "
            f"{span(r['min'], r['max'])}" + (f" ({r['why']})" if r["why"] else "")
            for r in hog_tput)
        if emulated:
            note += "; 2M cells measure the emulator"
    else:
        # the compaction runs' hog is one busy loop on the compacting CPU:
        # not this goal's
        v, note = "inconclusive", "not measured (no tput run of auto and none under a hog)"
    out.append({"goal": "under a CPU hog on every CPU, auto never below none",
                "verdict": v, "note": note})
    out.append(split_goal(summary))
    return out


def auto_cell(r):
    where = f"to {r['to']}" if r["kind"] == "tput" else f"{r['folios']} folios"
    return f"{kb_label(r['folio_kb'])} {where}"


def auto_text(summary):
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
        lines.append(f"{auto_cell(r):<18} best {best:<18} auto/best "
                     f"{num(r['vs_best_median'], '{:.2f}')} "
                     f"{span(r['vs_best_min'], r['vs_best_max']):>13} ({r['verdict_best']})  "
                     f"auto/none {num(r['vs_none_median'], '{:.2f}')} "
                     f"{span(r['vs_none_min'], r['vs_none_max']):>13} ({r['verdict_none']})  "
                     f"noise {num(r['noise'], '{:.0%}')}")
    hog = summary.get("hog") or []
    if hog:
        lines += ["", "== under a busy loop on every CPU (tput --hog): auto / none, median of "
                  "per-round ratios [min..max]; the other configurations / none for comparison"]
        for r in hog:
            others = "  ".join(f"{c}/none {v:.2f}" for c, v in sorted(r["others"].items()))
            why = f": {r['why']}" if r["why"] else ""
            lines.append(f"{kb_label(r['folio_kb'])} to {r['to']:<10} auto/none "
                         f"{num(r['median'], '{:.2f}')} {span(r['min'], r['max']):>13} "
                         f"({r['verdict']}{why})  noise {num(r['noise'], '{:.0%}')}  {others}")
    lines += choice_lines(summary)
    lines += split_size_lines(summary)
    for g in auto_goals(summary):
        lines.append(f"goal: {g['goal']}: {g['verdict']}"
                     + (f" ({g['note'].lstrip('; ')})" if g.get("note") else ""))
    return lines


def auto_md(summary):
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
        out.append(f"| {auto_cell(r)} | {', '.join(sorted(set(r['best']))) or '-'} | "
                   f"{num(r['vs_best_median'], '{:.2f}')} "
                   f"{span(r['vs_best_min'], r['vs_best_max'])} | {r['verdict_best']} | "
                   f"{num(r['vs_none_median'], '{:.2f}')} "
                   f"{span(r['vs_none_min'], r['vs_none_max'])} | {r['verdict_none']} | "
                   f"{num(r['noise'], '{:.0%}')} |")
    out.append("")
    hog = summary.get("hog") or []
    if hog:
        out += ["Under a busy loop on every CPU (`tput --hog`), same boot:", "",
                "| cell | auto / none | verdict | others / none | noise |", "|---|---|---|---|---|"]
        for r in hog:
            others = ", ".join(f"{c} {v:.2f}" for c, v in sorted(r["others"].items())) or "-"
            why = f" ({r['why']})" if r["why"] else ""
            out.append(f"| {kb_label(r['folio_kb'])} to {r['to']} | {num(r['median'], '{:.2f}')} "
                       f"{span(r['min'], r['max'])} | {r['verdict']}{why} | {others} | "
                       f"{num(r['noise'], '{:.0%}')} |")
        out.append("")
    choices = choice_lines(summary)
    if choices:
        out += ["What auto chose (share of its batches per engine; its model's us per folio "
                "+ us per batch):", "", "```", *choices[2:], "```", ""]
    sizes = split_size_lines(summary)
    if sizes:
        out += ["The split against the faster of cpu and its dcbm alone at each folio size "
                "(shown; the goal is judged for split at 2M):", "", "```", *sizes[2:], "```", ""]
    for g in auto_goals(summary):
        out.append(f"- {g['goal']}: **{g['verdict']}**"
                   + (f" ({g['note'].lstrip('; ')})" if g.get("note") else ""))
    out.append("")
    return out
