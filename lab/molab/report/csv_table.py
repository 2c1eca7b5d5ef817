"""throughput.csv: the throughput table, one row per cell, every field."""

import csv


def write_csv(summary, path):
    rows = summary["throughput"]
    if not rows:
        path.write_text("")
        return
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
