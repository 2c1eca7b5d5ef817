"""Turn the bench suite's JSON lines from alternating boots into tables,
JSON, CSV and plots.

Every record comes from guest/mo_bench (one JSON object a line) and is
tagged with the kernel variant ("vanilla" or "patched") and the boot round
(records.py). summarize() (summary.py) turns the records into plain data,
one part per module (tput, count, latency, compaction, tiering, alias,
profile, copy_phase, auto, choices, split, goals); significance.py gives
the throughput comparisons their p-values (scipy); text.py, markdown.py,
csv_table.py and plots.py render it.
"""

from .alias import ALIAS_ARTEFACT, two_aliased
from .csv_table import write_csv
from .goals import EMULATOR, GOAL_SIZES, goal_verdicts, goals
from .markdown import markdown_tables
from .plots import plots
from .records import NONE, VANILLA, config_of, load_records, moved_gbps
from .significance import mann_whitney_p, p_floor, require_scipy
from .summary import summarize
from .text import text_tables

__all__ = ["ALIAS_ARTEFACT", "EMULATOR", "GOAL_SIZES", "NONE", "VANILLA", "config_of",
           "goal_verdicts", "goals", "load_records", "mann_whitney_p", "markdown_tables",
           "moved_gbps", "p_floor", "plots", "require_scipy", "summarize", "text_tables",
           "two_aliased", "write_csv"]
