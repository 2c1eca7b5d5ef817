"""report.txt: every part's table as text lines, then the emulator check,
the goals and what was measured."""

from .alias import alias_line, alias_two_lines
from .auto_report import auto_text
from .compaction import compaction_text
from .count import count_text
from .goals import goals
from .latency import latency_text
from .profile import profile_text
from .tiering import tiering_text
from .tput import throughput_text


def _absent(a):
    where = f"{a['variant']}"
    if a.get("rounds"):
        where += ", round" + ("s " if len(a["rounds"]) > 1 else " ") + \
            ",".join(str(x) for x in a["rounds"])
    if a.get("reason"):
        where += f": {a['reason']}"
    return f"{a['config']} ({where})"


def measured_lines(summary):
    """How many measurements the tables stand on, what was absent, and the
    data check. Summaries of old bench.json files lack some keys."""
    out = []
    if summary["absent"]:
        out.append("absent configurations (reported, not measured): " +
                   ", ".join(_absent(a) for a in summary["absent"]))
    if "measurements" in summary:
        by_mode = ", ".join(f"{m} {n}" for m, n in summary["measurements_by_mode"].items())
        out.append(f"measurements: {summary['measurements']} ({by_mode or 'none'}), "
                   f"{summary['skipped']} skipped; {summary['records']} record lines in all "
                   f"(bookkeeping included), with corrupted bytes: "
                   f"{summary['records_with_bad_bytes']}")
    return out


def text_tables(summary):
    lines = throughput_text(summary)
    lines += count_text(summary)
    lines += latency_text(summary)
    lines += compaction_text(summary)
    lines += tiering_text(summary)
    lines += auto_text(summary)
    lines += profile_text(summary)
    lines.append("")
    if alias := alias_line(summary):
        lines.append(alias)
    lines += alias_two_lines(summary)
    lines += goals(summary)
    lines += measured_lines(summary)
    return lines
