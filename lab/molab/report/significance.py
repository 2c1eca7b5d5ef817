"""Significance of a throughput comparison: a two-sided Mann-Whitney U test
over the per-repetition samples of a configuration and of the reference
it is compared with (vanilla, or none in the same boots), all rounds.

Shown beside the per-round ratio ranges, never judged: the goals' verdicts
stay on whole ranges. With few repetitions p has a floor: 6 samples a side
(3 rounds of 2) cannot give less than 0.0022, however far apart they are.
"""

from collections import Counter

from ..errors import LabError
from .fmt import p_text
from .records import NONE, VANILLA

SCIPY_FIX = "run 'sudo sh lab/setup.sh' (it installs python3-scipy)"


def require_scipy():
    """scipy imports, or a LabError naming the fix (the report's p needs it)."""
    try:
        from scipy.stats import mannwhitneyu  # noqa: F401
    except ImportError as e:
        raise LabError(f"python3 cannot import scipy ({e}), which the bench report's p "
                       "column needs", SCIPY_FIX) from None


def mann_whitney_p(x, y):
    """The two-sided Mann-Whitney U p-value of samples x against y (scipy
    picks the exact test for small samples without ties); None when either
    sample is empty or both are one value (p would be 1 whatever they are)."""
    x, y = list(x), list(y)
    if not x or not y or len(x) + len(y) < 3:
        return None
    require_scipy()
    from scipy.stats import mannwhitneyu
    return float(mannwhitneyu(x, y, alternative="two-sided").pvalue)


def p_floor(n, against_n):
    """The smallest p mann_whitney_p() gives samples of n and against_n
    values: every value of one below every value of the other."""
    return mann_whitney_p(range(n), range(n, n + against_n))


def p_vs_vanilla_and_none(samples, cfg, cell):
    """mann_whitney_p() of configuration ``cfg``'s samples in ``cell`` (the
    rest of the samples' key) against vanilla's and against none's; None
    where it is itself the reference, as vs_vanilla_and_none()."""
    mine = samples.get((cfg, *cell), [])
    vanilla = mann_whitney_p(mine, samples.get((VANILLA, *cell), [])) \
        if cfg != VANILLA else None
    none = mann_whitney_p(mine, samples.get((NONE, *cell), [])) \
        if cfg not in (VANILLA, NONE) else None
    return vanilla, none


def p_floors(rows, cell):
    """The floors of the p-values in ``rows`` (throughput or count rows;
    ``cell(row)`` is the rest of a row's key after its config): one entry
    per pair of sample sizes, {"n": the row's, "against_n": the
    reference's, "p_min": p_floor(), "comparisons": how many p had it},
    the most common first."""
    n_of = {(r["config"], *cell(r)): r["n"] for r in rows}
    pairs = Counter()
    for r in rows:
        for ref, key in ((VANILLA, "ratio_p"), (NONE, "vs_none_p")):
            against = n_of.get((ref, *cell(r)))
            if r.get(key) is not None and against:
                pairs[(r["n"], against)] += 1
    return [{"n": n, "against_n": m, "p_min": p_floor(n, m), "comparisons": k}
            for (n, m), k in sorted(pairs.items(), key=lambda x: (-x[1], x[0]))]


def p_legend(floors):
    """The one-line legend of a table's p column, with its floor."""
    if not floors:
        return None
    lows = "; ".join(
        f"{p_text(f['p_min'])} with {f['n']} samples a side" if f["n"] == f["against_n"] else
        f"{p_text(f['p_min'])} with {f['n']} and {f['against_n']} samples"
        for f in floors)
    return ("p: two-sided Mann-Whitney U test of the row's per-repetition GB/s, every round, "
            "against its reference's (vanilla, or none): the chance of samples at least this "
            "far apart if both came from one distribution; shown, not judged; with few "
            f"repetitions p has a floor: {lows}")
