"""report.md: the headline tables in Markdown (throughput ratios per
configuration and folio size, compaction, tiering, auto, the profile),
then the emulator check, the goals and what was measured."""

from .alias import alias_line, alias_two_lines
from .auto_report import auto_md
from .compaction import compaction_md
from .goals import goals
from .profile import profile_md
from .text import measured_lines
from .tiering import tiering_md
from .tput import throughput_md


def markdown_tables(summary):
    out = throughput_md(summary)
    out += compaction_md(summary)
    out += tiering_md(summary)
    out += auto_md(summary)
    out += profile_md(summary)
    if alias := alias_line(summary):
        out.append(f"- {alias}")
    out += [f"- {line}" for line in alias_two_lines(summary)]
    out += [f"- {g}" for g in goals(summary)]
    out += [f"- {line}" for line in measured_lines(summary)]
    return out
