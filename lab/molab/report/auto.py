"""auto against the best fixed configuration of each round and against
none, per throughput cell and folio count, and under a busy loop on every
CPU (tput --hog)."""

import statistics

from .records import FOLIO_SHARE_LOW, NONE, VANILLA, config_of, moved_gbps, usable
from .split import is_split
from .stats import (AUTO_NOISE_MAX, folio_share_min, median_spread, per_round, range_verdict,
                    ratio_stats, samples_by)

AUTO = "auto"


def auto_rows(records):
    """auto against the best fixed configuration of each round and against
    none, per throughput cell (folio size, target) and folio count, in the
    same boot. Noise of a cell: the median over its fixed configurations and
    rounds of the spread of their repetitions within a round ((max - min) /
    median); "within the noise" means a ratio >= 1 - noise."""
    out = []
    for kind, mode, keyf in (("tput", "tput", lambda r: (r.get("folio_kb"), r.get("to"))),
                             ("count", "count", lambda r: (2048, r.get("folios")))):
        recs = [r for r in records if usable(r, mode) and config_of(r) != VANILLA
                and not is_split(config_of(r))]
        if not any(config_of(r) == AUTO for r in recs):
            continue
        # auto's data corrupted in a cell: that cell is missed, whatever the speed
        corrupt = {keyf(r) for r in recs if config_of(r) == AUTO and (r.get("bad_bytes") or 0) > 0}
        per = per_round(recs, lambda r: (config_of(r), keyf(r)), moved_gbps)
        reps = samples_by(recs, lambda r: (config_of(r), keyf(r), r["round"]), moved_gbps)
        # every cell a fixed configuration measured: one auto lacks is inconclusive
        for cell in sorted({keyf(r) for r in recs},
                           key=lambda c: tuple(x or 0 for x in c)):
            auto = per.get((AUTO, cell), {})
            fixed = {c: d for (c, k), d in per.items() if k == cell and c != AUTO}
            noise = median_spread(v for (c, k, _), v in reps.items()
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
                                         range_verdict(b[1], b[2], bar, len(vs_best))),
                        "verdict_none": ("missed" if cell in corrupt else
                                         range_verdict(n[1], n[2], bar, len(vs_none)))})
    return out


def hog_verified(r):
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
    recs = [r for r in hogrecs if usable(r, "tput_hog") and hog_verified(r)]
    per = per_round(recs, lambda r: (config_of(r), keyf(r)), moved_gbps)
    reps = samples_by(recs, lambda r: (config_of(r), keyf(r), r["round"]), moved_gbps)
    corrupt = {keyf(r) for r in recs if config_of(r) == AUTO and (r.get("bad_bytes") or 0) > 0}
    out = []
    for cell in sorted({keyf(r) for r in hogrecs}, key=lambda c: tuple(x or 0 for x in c)):
        mine = [r for r in hogrecs if keyf(r) == cell]
        unverified = sum(1 for r in mine if usable(r, "tput_hog") and not hog_verified(r))
        skipped = sum(1 for r in mine if r.get("skipped"))
        auto, none = per.get((AUTO, cell), {}), per.get((NONE, cell), {})
        st = ratio_stats(auto, none) or {"pairs": 0}
        lacking = sum(1 for rnd in none if rnd not in auto)
        fixed = {c: [d[rnd] / none[rnd] for rnd in sorted(d) if none.get(rnd)]
                 for (c, k), d in per.items() if k == cell and c not in (AUTO, NONE)}
        noise = median_spread(v for (c, k, _), v in reps.items()
                               if k == cell and c in (AUTO, NONE))
        share = folio_share_min([r for r in recs if keyf(r) == cell])
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
            verdict = range_verdict(st.get("min"), st.get("max"), bar, st["pairs"])
        out.append({"folio_kb": cell[0], "to": cell[1], "noise": noise, "pairs": st["pairs"],
                    "median": st.get("median"), "min": st.get("min"), "max": st.get("max"),
                    "why": why,
                    "others": {c: statistics.median(v) for c, v in fixed.items() if v},
                    "corrupt": cell in corrupt, "verdict": verdict})
    return out
