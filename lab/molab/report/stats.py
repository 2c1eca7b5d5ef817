"""The statistics every part shares: per-round medians, ratios paired round
by round, spreads of repetitions, and verdicts on whole ranges.

Under emulation only ratios measured in the same session mean anything, so
each ratio against vanilla is taken per round (patched boot r against
vanilla boot r) and reported as the median over rounds with its spread
(min..max).
"""

import statistics
from collections import defaultdict

from .records import NONE, VANILLA

# A cell noisier than this cannot tell auto from the best: inconclusive.
AUTO_NOISE_MAX = 0.15


def mean_sd(values):
    values = [v for v in values if v is not None]
    if not values:
        return None, None
    m = statistics.fmean(values)
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    return m, sd


def share(part, whole):
    ok = isinstance(part, (int, float)) and isinstance(whole, (int, float)) and whole > 0
    return part / whole if ok else None


def not_moved_share(rs):
    """Share of the pages of these records that stayed behind (None if unknown)."""
    known = [r for r in rs if isinstance(r.get("pages"), int) and r["pages"] > 0
             and isinstance(r.get("stayed_behind"), (int, float))]
    if not known:
        return None
    return sum(r["stayed_behind"] for r in known) / sum(r["pages"] for r in known)


def folio_share_min(rs):
    """The lowest share (percent) of the buffer in folios of the named size."""
    shares = [r["folio_share"] for r in rs if isinstance(r.get("folio_share"), (int, float))]
    return min(shares) if shares else None


def per_round(records, key, value="gbps"):
    """{key(rec): {round: median of value}}; ``value`` is a key or a function.

    The median, because speed under emulation comes in phases: one slow
    phase in a boot would otherwise pull that boot's figure far off.
    """
    acc = defaultdict(lambda: defaultdict(list))
    for r in records:
        v = value(r) if callable(value) else r.get(value)
        if isinstance(v, (int, float)):
            acc[key(r)][r["round"]].append(v)
    return {k: {rnd: statistics.median(vs) for rnd, vs in d.items()} for k, d in acc.items()}


def samples_by(records, key, value):
    """{key(rec): [value of each record]}: the per-repetition samples
    (a key with the round in it: the repetitions within one round)."""
    samples = defaultdict(list)
    for r in records:
        v = value(r)
        if isinstance(v, (int, float)):
            samples[key(r)].append(v)
    return samples


def median_range(values):
    """{"median", "min", "max"} of values, None without any."""
    if not values:
        return None
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def ratio_stats(num_rounds, den_rounds):
    """Median and min/max over rounds of num/den, pairing the same round."""
    ratios = [num_rounds[r] / den_rounds[r] for r in num_rounds
              if r in den_rounds and den_rounds[r] > 0]
    st = median_range(ratios)
    return st and {**st, "pairs": len(ratios)}


def vs_vanilla_and_none(per, cfg, cell):
    """ratio_stats() of configuration ``cfg`` in ``cell`` (the rest of the
    per_round() key) against vanilla, and against none in the same boot
    (no boot-to-boot drift); None where it is itself the reference."""
    mine = per.get((cfg, *cell), {})
    vanilla = ratio_stats(mine, per.get((VANILLA, *cell), {})) if cfg != VANILLA else None
    none = ratio_stats(mine, per.get((NONE, *cell), {})) if cfg not in (VANILLA, NONE) else None
    return vanilla, none


def ratio_fields(prefix, st, pairs=True):
    """A row's ``prefix``median/min/max (and pairs) from ratio_stats()."""
    out = {f"{prefix}{k}": st and st[k] for k in ("median", "min", "max")}
    if pairs:
        out[f"{prefix}pairs"] = st and st["pairs"]
    return out


def median_spread(groups):
    """The median over groups of repetitions of (max - min) / median; None
    without a group of two or more."""
    spreads = [(max(v) - min(v)) / statistics.median(v) for v in groups
               if len(v) > 1 and statistics.median(v) > 0]
    return statistics.median(spreads) if spreads else None


def range_verdict(lo, hi, bar, pairs):
    """met when the whole per-round range clears ``bar``, missed when all of
    it lies below, inconclusive otherwise, with fewer than two rounds, or
    without a bar (noise unknown or above AUTO_NOISE_MAX)."""
    if lo is None or pairs < 2 or bar is None:
        return "inconclusive"
    if lo >= bar:
        return "met"
    if hi < bar:
        return "missed"
    return "inconclusive"


def overall(vs):
    """One verdict of many: missed if any, met if all, else inconclusive."""
    vs = set(vs)
    if not vs:
        return "inconclusive"
    return "missed" if "missed" in vs else "met" if vs == {"met"} else "inconclusive"
