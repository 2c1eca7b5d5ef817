"""The reason x engine matrix of a test boot.

The suites that drive migration reasons for real (tiering, reasons,
memory_offline, folios) print, through guest/lib/mo_window.sh, one line per
trace window and one per test program they ran:

    # @@MO-ROW engine=E reason=R batched=on|off migrated=N batch_pages=P
             engine_pages=EP cpu_pages=C
    # @@MO-BYTES engine=E reasons=R1[,R2] bytes=B bad=X

(one line each). ROW: the window's pages migrated for reason R (the
suite's own selection: its task, its program), the pages of R's batch
copies, those the engine copied itself and those the CPU copied; "off"
windows ran with R removed from migrate_offload/reasons. BYTES: what a test
program that ran while those reasons moved its pages verified byte by byte
(mo_pattern_verify) and how many bytes were bad; a program whose pages
served two reasons counts for both.

The suites judge each window themselves; the matrix adds the view across
suites: a whole run must drive every reason with every engine of its scope
(guest/lib/engines.list, which the suites read too) where the list's
matrix line names the scope, otherwise every reason with some engine of it
and every engine with some reason; every cell it shows batched by its
engine, with bytes checked and none bad; remove every reason at least once
(with some engine) and never batch a reason that was off.
"""

import re
from dataclasses import dataclass, field

from .util import GUEST

ENGINE_LIST = GUEST / "lib" / "engines.list"


def scope_engines(path=ENGINE_LIST):
    """{name: (engine, ...)} from guest/lib/engines.list ('name: e1 e2'):
    the test scopes and the bench's line, read as the guest's sed reads a
    name's list (mo_lib.sh, lib_configs.sh): comments cut, only lines that
    start with 'name:', a name's lines joined."""
    out = {}
    for line in path.read_text().splitlines():
        m = re.match(r"([^\s:#]+):(.*)", line.split("#", 1)[0])
        if m:
            out[m.group(1)] = out.get(m.group(1), ()) + tuple(m.group(2).split())
    return out

# enum migrate_reason's batchable reasons, in the kernel's order.
REASONS = ("compaction", "memory_failure", "memory_hotplug", "syscall_or_cpuset",
           "mempolicy_mbind", "numa_misplaced", "contig_range", "longterm_pin",
           "demotion", "damon")
_LISTS = scope_engines()
# "bench:" names the bench's default configurations (guest/bench reads the
# same line), not a test scope.
BENCH_CONFIGS = _LISTS["bench"]
# "matrix:" names the scopes that drive every reason with every engine of
# their line; the others (ci) every reason with some engine, every engine
# with some reason.
WHOLE_MATRIX = _LISTS.get("matrix", ())
SCOPES = {scope: engines for scope, engines in _LISTS.items()
          if scope not in ("bench", "matrix")}
ENGINES = SCOPES["full"]      # every engine the suites know

LINE_RE = re.compile(r"@@MO-(ROW|BYTES)((?:[ \t]+[a-z_]+=\S*)+)[ \t]*$")


@dataclass
class Cell:
    windows: int = 0          # windows with the reason batched
    migrated: int = 0
    batch_pages: int = 0
    engine_pages: int = 0
    cpu_pages: int = 0
    off_windows: int = 0      # windows with the reason removed
    off_migrated: int = 0
    off_batched: int = 0
    programs: int = 0         # BYTES lines
    bytes: int = 0
    bad: int = 0
    unknown: int = 0          # BYTES lines without a count (program died early)
    suites: set = field(default_factory=set)


def _fields(text):
    out = {}
    for kv in text.split():
        k, _, v = kv.partition("=")
        out[k] = v
    return out


def _int(v):
    try:
        return int(v)
    except (TypeError, ValueError):
        return -1


def collect(blocks, files=()):
    """{(reason, engine): Cell} from the suite blocks of a console report;
    a suite's <suite>/matrix.rows file among @files (its rows as the guest
    wrote them, sent whole) replaces its console lines, which a kernel
    message may have split."""
    cells = {}
    sent = {f.name.rsplit("/", 1)[0]: f.data for f in files
            if f.name.endswith("/matrix.rows") and f.data is not None and not f.error}

    def cell(reason, engine, suite):
        c = cells.setdefault((reason, engine), Cell())
        c.suites.add(suite)
        return c

    for b in blocks:
        lines = sent[b.name].decode(errors="replace").splitlines() if b.name in sent else b.lines
        for line in lines:
            m = LINE_RE.search(line)
            if not m:
                continue
            f = _fields(m.group(2))
            engine = f.get("engine", "?")
            if m.group(1) == "ROW":
                c = cell(f.get("reason", "?"), engine, b.name)
                mig, pages = _int(f.get("migrated")), _int(f.get("batch_pages"))
                if f.get("batched") == "off":
                    c.off_windows += 1
                    c.off_migrated += max(mig, 0)
                    # Unreadable: counted as batched, so that it is looked at.
                    c.off_batched += pages if pages >= 0 else 1
                else:
                    c.windows += 1
                    c.migrated += max(mig, 0)
                    c.batch_pages += max(pages, 0)
                    c.engine_pages += max(_int(f.get("engine_pages")), 0)
                    c.cpu_pages += max(_int(f.get("cpu_pages")), 0)
                continue
            nbytes, bad = _int(f.get("bytes")), _int(f.get("bad"))
            for reason in filter(None, f.get("reasons", "").split(",")):
                c = cell(reason, engine, b.name)
                c.programs += 1
                if nbytes < 0 or bad < 0:
                    c.unknown += 1
                    continue
                c.bytes += nbytes
                c.bad += bad
    return cells


def _own(engine, c):
    """Pages the selected engine copied itself (the CPU for "cpu")."""
    return c.cpu_pages if engine == "cpu" else c.engine_pages


def problems(cells, reasons=REASONS, engines=ENGINES, whole=True):
    """What a whole run's matrix lacks, one line each (empty: complete).
    @whole: every reason must be driven with every engine of @engines;
    otherwise with at least one of them, and every engine of @engines with
    at least one reason. A row of another known engine (a suite run by
    hand in another scope) need not be there, but what it shows is judged
    as strictly."""
    out = []
    extra = sorted({e for (_, e) in cells if e not in engines and e in ENGINES})
    if not whole:
        driven = {(r, e) for (r, e), c in cells.items() if c.windows}
        for r in reasons:
            if not any((r, e) in driven for e in engines):
                out.append(f"{r}: not driven with any of {', '.join(engines)} (no trace window)")
        for e in engines:
            if not any((r, e) in driven for r in reasons):
                out.append(f"{e}: drove no reason (no trace window)")
    for r in reasons:
        for e in (*engines, *extra):
            c = cells.get((r, e))
            where = f"{r} with {e}"
            if c is None or not c.windows:
                if e in engines and whole:
                    out.append(f"{where}: not driven (no trace window)")
                if c is None:
                    continue
            else:
                if not c.migrated:
                    out.append(f"{where}: no page migrated in {c.windows} window(s)")
                if e != "none" and (not c.batch_pages or not _own(e, c)):
                    out.append(f"{where}: not batch-copied by {e} ({c.batch_pages} batched, "
                               f"{_own(e, c)} by the engine)")
            if e == "none" and c.batch_pages:
                out.append(f"{where}: {c.batch_pages} pages batched with no engine")
            if not c.programs or c.unknown:
                if (e in engines and c.windows) or c.unknown:
                    out.append(f"{where}: bytes checked unknown ({c.programs} program(s), "
                               f"{c.unknown} without a count)")
            elif not c.bytes:
                out.append(f"{where}: no byte checked")
            if c.bad:
                out.append(f"{where}: {c.bad} bad bytes")
            if c.off_batched:
                out.append(f"{where}: {c.off_batched} pages batched with {r} off")
    for r in reasons:
        if not any(cells.get((r, e)) and cells[(r, e)].off_windows for e in engines):
            out.append(f"{r}: the reason filter never tested (no window with {r} removed)")
    for (r, e), c in sorted(cells.items()):
        if r not in REASONS or e not in ENGINES:
            out.append(f"{r} with {e}: not a known reason or engine")
    return out


def _mib(n):
    return f"{n / 2**20:.0f}" if n >= 2**20 else f"{n / 2**20:.2f}"


def rows(cells, reasons=REASONS, engines=ENGINES):
    """Table rows (lists of strings), header first."""
    out = [["reason", "engine", "windows", "migrated", "batch-copied", "by engine",
            "MiB checked", "bad", "off: migrated", "off: batched"]]
    for r in reasons:
        for e in engines:
            c = cells.get((r, e)) or Cell()
            own = _own(e, c)
            share = f"{own} ({100 * own // c.batch_pages}%)" if c.batch_pages else "-"
            off = (str(c.off_migrated), str(c.off_batched)) if c.off_windows else ("-", "-")
            bad = str(c.bad) + (f" (+{c.unknown} unknown)" if c.unknown else "")
            out.append([r, e, str(c.windows), str(c.migrated), str(c.batch_pages),
                        share if e != "none" else "-", _mib(c.bytes), bad, *off])
    return out


def text(cells, engines=ENGINES):
    table = rows(cells, engines=engines)
    w = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    return ["  ".join(v.rjust(w[i]) if i > 1 else v.ljust(w[i]) for i, v in enumerate(row)).rstrip()
            for row in table]


def markdown(cells, engines=ENGINES):
    table = rows(cells, engines=engines)
    lines = ["| " + " | ".join(table[0]) + " |", "|" + "---|" * len(table[0])]
    lines += ["| " + " | ".join(row) + " |" for row in table[1:]]
    return "\n".join(lines) + "\n"
