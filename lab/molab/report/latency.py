"""Latency against batch size: when page 0 is usable at its destination,
and the longest stall a reader saw."""

import statistics
from collections import defaultdict

from .fmt import num
from .records import config_of, usable
from .stats import mean_sd


def latency_rows(records):
    groups = defaultdict(list)
    for r in records:
        if not usable(r, "latency"):
            continue
        size = (r.get("folios"), 2048) if r.get("folios") else (r.get("pages"), 4)
        groups[(config_of(r), size[1], size[0])].append(r)
    rows = []
    for (cfg, kb, n), rs in sorted(groups.items(), key=lambda x: (str(x[0][0]), x[0][1],
                                                                  x[0][2] or 0)):
        fu = [r.get("first_usable_us") for r in rs if r.get("first_usable_us") is not None]
        ms = [r.get("max_stall_us") for r in rs if r.get("max_stall_us") is not None]
        rows.append({"config": cfg, "folio_kb": kb, "batch": n, "n": len(rs),
                     "first_usable_us": statistics.median(fu) if fu else None,
                     "max_stall_us": statistics.median(ms) if ms else None,
                     "move_us": mean_sd([r.get("move_us") for r in rs])[0]})
    return rows


def latency_text(summary):
    if not summary["latency"]:
        return []
    lines = ["", "== latency: time until page 0 is usable at its destination, and the "
             "longest stall a reader saw (median us)"]
    for r in summary["latency"]:
        lines.append(f"{r['config']:<10} {r['batch']!s:>4} x {r['folio_kb']}K  first usable "
                     f"{num(r['first_usable_us'], '{:.0f}'):>8}  max stall "
                     f"{num(r['max_stall_us'], '{:.0f}'):>8}  move "
                     f"{num(r['move_us'], '{:.0f}'):>8}")
    return lines
