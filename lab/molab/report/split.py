"""The split: auto with dcbm alone, every batch split between the CPU and
dcbm where the models cut it (run_bench's configuration "split", or split-N
over N channels), against the faster of cpu and its own dcbm alone."""

import statistics
from collections import defaultdict

from .alias import aliased, two_aliased
from .fmt import kb_label, num, span
from .records import FOLIO_SHARE_LOW, config_of, moved_gbps, usable
from .stats import (AUTO_NOISE_MAX, folio_share_min, median_spread, overall, per_round,
                    ratio_stats, samples_by)

SPLIT = "split"
SPLIT_RIVALS = ("cpu", "dcbm-4")
# a split must beat the faster rival by more than this even when the
# repetitions agree exactly: a tie is not "faster"
SPLIT_MARGIN_MIN = 0.02


def is_split(config):
    """split, or split-N (auto with dcbm over N channels, every batch
    split): never a fixed choice."""
    return config == SPLIT or (config or "").startswith(SPLIT + "-")


def split_rivals(config):
    """What a split configuration is measured against: the CPU and its own
    dcbm alone (split: dcbm-4)."""
    n = config[len(SPLIT) + 1:] if config != SPLIT else "4"
    return ("cpu", f"dcbm-{n}")


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
    recs = [r for r in records if usable(r, "tput") and r.get("folio_kb") == 2048
            and config_of(r) in (SPLIT, *SPLIT_RIVALS)]
    if not any(config_of(r) == SPLIT for r in recs):
        return []
    counts = [r for r in records if r.get("mode") == "splits"
              and (r.get("config") or SPLIT) == SPLIT]
    per = per_round(recs, lambda r: (config_of(r), r.get("to")), moved_gbps)
    reps = samples_by(recs, lambda r: (config_of(r), r.get("to"), r["round"]), moved_gbps)
    out = []
    for to in sorted({r.get("to") for r in recs if config_of(r) == SPLIT}, key=lambda t: t or 0):
        noise = median_spread(v for (c, t, _), v in reps.items() if t == to)
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
        share = folio_share_min(mine_recs)
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
    recs = [r for r in records if usable(r, "tput")]
    per = per_round(recs, lambda r: (config_of(r), r.get("folio_kb"), r.get("to")), moved_gbps)
    splits = defaultdict(int)
    for r in records:
        if r.get("mode") == "splits":
            splits[(r.get("config") or SPLIT, r.get("folio_kb"), r.get("to"))] += \
                r.get("splits") or 0
    out = []
    cells = {(config_of(r), r.get("folio_kb"), r.get("to")) for r in recs
             if is_split(config_of(r))}
    for conf, kb, to in sorted(cells, key=lambda c: (c[0], c[1] or 0, c[2] or 0)):
        rivals_c = split_rivals(conf)
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


def split_size_lines(summary):
    rows = summary.get("split_sizes") or []
    if not rows:
        return []
    out = ["", "== the split (auto_split 2) against the faster of cpu and its dcbm alone at "
           "each folio size (shown, the goal is judged for split at 2M): median of per-round "
           "ratios [min..max], batches split"]
    for r in rows:
        rv = ",".join(r.get("rivals") or split_rivals(SPLIT))
        out.append(f"{kb_label(r['folio_kb'])} to {r['to']:<6} {r.get('config', SPLIT)}/max({rv}) "
                   f"{num(r['median'], '{:.2f}')} {span(r['min'], r['max']):>13}  "
                   f"{r['pairs']} rounds, {r['splits']} batches split")
    return out


def split_goal(summary):
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
    if aliased(summary):
        notes.append("2M cells measure the emulator")
    two = ((summary.get("alias_two") or {}).get("patched") or {}).get("2m_apart")
    if two:
        notes.append(f"two CPUs copying halves of 2M periods in the patched boots: "
                     f"{two['median']:.2f}x one [{two['min']:.2f}..{two['max']:.2f}]"
                     + (" (the emulator's artefact)" if two_aliased(summary) else ""))
    return {"goal": goal, "verdict": overall(r["verdict"] for r in rows),
            "note": "; ".join(notes)}
