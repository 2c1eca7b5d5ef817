"""All tables as plain data: what bench.json's "summary" holds and every
rendering reads."""

from collections import defaultdict

from .alias import alias_penalty, alias_two
from .auto import AUTO, auto_rows, hog_rows
from .auto_report import auto_goals
from .choices import auto_choices, auto_not_ready, auto_splits
from .compaction import compaction_rows
from .copy_phase import copy_phase_ratios
from .count import count_rows
from .goals import goal_verdicts
from .latency import latency_rows
from .profile import profile_rows
from .records import MEASURED, usable
from .significance import p_floors
from .split import split_rows, split_sizes
from .tiering import tiering_missing, tiering_rows
from .tput import memcpy_summary, throughput_rows


def _absent(records):
    """Configurations a boot reported absent, with the rounds and a reason."""
    absent = defaultdict(lambda: {"rounds": set(), "reason": ""})
    for r in records:
        if r.get("absent"):
            a = absent[(r["variant"], r.get("config"))]
            a["rounds"].add(r.get("round"))
            a["reason"] = a["reason"] or r.get("reason") or ""
    return [{"variant": v, "config": c, "rounds": sorted(a["rounds"], key=str),
             "reason": a["reason"]}
            for (v, c), a in sorted(absent.items(), key=lambda x: str(x[0]))]


def summarize(records):
    """All tables as plain data (what bench.json's "summary" holds).

    Throughput ("gbps") counts the bytes that moved only (moved_gbps());
    "measurements" counts the records that measured something (MEASURED
    modes, not skipped), "records" every line, bookkeeping included.
    """
    by_mode = {m: sum(1 for r in records if usable(r, m)) for m in MEASURED}
    memcpy = memcpy_summary(records)
    tier_rows, tier_idle = tiering_rows([r for r in records if usable(r, "tiering")])
    bad = sum(1 for r in records if (r.get("bad_bytes") or 0) > 0)
    out = {"throughput": throughput_rows(records, memcpy), "count": count_rows(records),
           "latency": latency_rows(records), "compaction": compaction_rows(records),
           "tiering": tier_rows, "tiering_idle": tier_idle,
           "tiering_missing": tiering_missing(records), "alias": alias_penalty(records),
           "alias_two": alias_two(records),
           "profile": profile_rows(records, (memcpy.get("patched") or {}).get("gbps")),
           "memcpy": memcpy,
           "absent": _absent(records),
           "measurements": sum(by_mode.values()),
           "measurements_by_mode": {m: n for m, n in by_mode.items() if n},
           "skipped": sum(1 for r in records if r.get("skipped")),
           "records_with_bad_bytes": bad, "records": len(records)}
    # The smallest p each table's sample sizes allow (its p column's legend).
    out["p_floors"] = {
        "throughput": p_floors(out["throughput"], lambda r: (r["folio_kb"], r["to"])),
        "count": p_floors(out["count"], lambda r: (r["folios"],))}
    # The workqueue scope each boot ran with (run_bench sets it in a VM):
    # boots with different scopes are not comparable.
    out["wq_scopes"] = sorted({r.get("wq_scope") or "unrecorded"
                               for r in records if r.get("mode") == "run"})
    out["copy_phase"] = copy_phase_ratios(records)
    # Profiles were asked for (even if skipped: no tracepoint): the copy
    # goals must then show, as not measured if need be.
    out["profiled"] = any(r.get("mode") == "profile" for r in records)
    out["goals"] = goal_verdicts(out)
    out["auto"] = auto_rows(records)
    out["split"] = split_rows(records)
    out["split_sizes"] = split_sizes(records)
    out["hog"] = hog_rows(records)
    out["auto_choices"] = auto_choices(records)
    out["auto_splits"] = auto_splits(records)
    out["auto_not_ready"] = auto_not_ready(records)
    out["auto_model_unparsed"] = sum(r.get("lines") or 0 for r in records
                                     if r.get("mode") == "auto_model_unparsed")
    asked = [r for r in records if r.get("mode") == "config" and r.get("config") == AUTO]
    if not out["auto"] and asked:
        out["auto_absent"] = next((r.get("reason") for r in asked if r.get("absent")),
                                  None) or "no measurement of auto"
    out["auto_goals"] = auto_goals(out)
    return out
