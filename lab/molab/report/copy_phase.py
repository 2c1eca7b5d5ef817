"""The copy-phase goals (issue 12): copy rates of two configurations in the
same boot, from the traced profile runs."""

from .records import VANILLA, config_of, usable
from .stats import per_round, range_verdict, ratio_stats

# config, the config it is compared with in the same boot, the least ratio
# of their copy rates, the folio sizes (KB) that must all clear it.
COPY_GOALS = (("mtcopy-2", "mtcopy-1", 1.6, (4, 16, 64, 256, 1024)),
              ("dcbm-4", "none", 1.3, (64, 256, 1024, 2048)))


def copy_rate(r):
    """Bytes copied / copy time (batch copy step + per-folio copies) of one
    profile record; None when it copied nothing, lost events or did not
    verify, or whose events were not bracketed by the move's two markers
    (its times would not be the whole copy)."""
    ns = (r.get("copy_ns") or 0) + (r.get("folio_copy_ns") or 0)
    pages = (r.get("batch_copy_pages") or 0) + (r.get("folio_copy_pages") or 0)
    if ns <= 0 or pages <= 0 or r.get("lost_events") != 0 or r.get("verified") is not True \
            or r.get("markers") != 2:
        return None
    return pages * 4096 / ns


def copy_phase_ratios(records):
    """For each copy-phase goal and folio size: the ratio of the two
    configurations' copy rates, paired boot by boot (a profile record is one
    traced run per boot), median [min..max] over boots."""
    per = per_round([r for r in records if usable(r, "profile") and r["variant"] != VANILLA],
                    lambda r: (config_of(r), r.get("folio_kb")), copy_rate)
    out = []
    for num, den, goal, sizes in COPY_GOALS:
        for kb in sizes:
            st = ratio_stats(per.get((num, kb), {}), per.get((den, kb), {}))
            out.append({"config": num, "against": den, "folio_kb": kb, "goal": goal,
                        **({f"ratio_{k}": v for k, v in st.items()} if st else
                           {"ratio_median": None, "ratio_min": None, "ratio_max": None,
                            "ratio_pairs": 0})})
    return out


def copy_goal_verdict(c):
    """met / missed / inconclusive for one copy-phase cell: the whole range
    over at least two boots above (met) or below (missed) the goal."""
    return range_verdict(c.get("ratio_min"), c.get("ratio_max"), c.get("goal"),
                         c.get("ratio_pairs") or 0)
