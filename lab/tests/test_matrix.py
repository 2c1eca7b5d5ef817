"""The reason x engine matrix: rows printed by guest/lib/mo_window.sh, read
by lab/molab/matrix.py."""

import shutil
import subprocess
from pathlib import Path

import pytest

from lab.molab import console, matrix

ROOT = Path(__file__).resolve().parents[2]
WINDOW = ROOT / "guest" / "lib" / "mo_window.sh"
MO_LIB = ROOT / "guest" / "lib" / "mo_lib.sh"
BUSYBOX = shutil.which("busybox")


def _block(name, lines):
    return console.Block(name=name, start_line=1, lines=list(lines), ended=True, rc=0)


def _complete(bad=0, off_batched=0, skip=None):
    """Lines of a run that drove every reason with every engine."""
    lines = []
    for r in matrix.REASONS:
        for e in matrix.ENGINES:
            if (r, e) == skip:
                continue
            own = "0 64" if e == "cpu" else ("0 0" if e == "none" else "60 4")
            pages = 0 if e == "none" else 64
            lines.append(f"# @@MO-ROW engine={e} reason={r} batched=on migrated=64 "
                         f"batch_pages={pages} engine_pages={own.split()[0]} cpu_pages={own.split()[1]}")
            if e != "none":
                lines.append(f"# @@MO-ROW engine={e} reason={r} batched=off migrated=64 "
                             f"batch_pages={off_batched} engine_pages=0 cpu_pages=0")
            lines.append(f"# @@MO-BYTES engine={e} reasons={r} bytes=1048576 bad={bad}")
    return lines


def test_a_complete_matrix_has_no_gaps():
    cells = matrix.collect([_block("reasons", _complete())])
    assert matrix.problems(cells) == []
    text = "\n".join(matrix.text(cells))
    assert "demotion" in text and "60 (93%)" in text and "64 (100%)" in text
    md = matrix.markdown(cells)
    assert md.count("\n") == 2 + len(matrix.REASONS) * len(matrix.ENGINES)


@pytest.mark.parametrize("kw,want", [
    (dict(skip=("damon", "dcbm")), "damon with dcbm: not driven"),
    (dict(bad=3), "3 bad bytes"),
    (dict(off_batched=5), "5 pages batched with compaction off"),
])
def test_gaps_are_named(kw, want):
    gaps = matrix.problems(matrix.collect([_block("reasons", _complete(**kw))]))
    assert any(want in g for g in gaps), gaps


def test_a_reason_not_batched_by_its_engine_or_without_bytes_is_a_gap():
    lines = [l for l in _complete() if "reason=damon" not in l or "engine=mtcopy" not in l]
    lines += ["# @@MO-ROW engine=mtcopy reason=damon batched=on migrated=64 batch_pages=64 "
              "engine_pages=0 cpu_pages=64",
              "# @@MO-BYTES engine=mtcopy reasons=damon bytes=-1 bad=-1"]
    gaps = matrix.problems(matrix.collect([_block("reasons", lines)]))
    assert any("damon with mtcopy: not batch-copied by mtcopy" in g for g in gaps), gaps
    assert any("damon with mtcopy: bytes checked unknown" in g for g in gaps), gaps
    lines = [l for l in _complete() if not ("MO-BYTES" in l and "reasons=damon" in l)]
    gaps = matrix.problems(matrix.collect([_block("reasons", lines)]))
    assert sum("bytes checked unknown" in g for g in gaps) == len(matrix.ENGINES), gaps


def test_bytes_of_a_program_count_for_each_of_its_reasons():
    cells = matrix.collect([_block("tiering", [
        "# @@MO-BYTES engine=cpu reasons=demotion,numa_misplaced bytes=4096 bad=0"])])
    assert cells[("demotion", "cpu")].bytes == cells[("numa_misplaced", "cpu")].bytes == 4096


@pytest.mark.skipif(not BUSYBOX, reason="busybox not installed")
def test_rows_from_the_guest_library(tmp_path):
    """mo_window.sh's batch_checks and bytes_row print what collect() reads."""
    (tmp_path / "trace").write_text(
        "# tracer: nop\n"
        "  sh-90 [001] ..... 10.000001: mm_migrate_pages: nr_succeeded=512 nr_failed=0 "
        "nr_thp_succeeded=0 nr_thp_failed=0 nr_thp_split=0 nr_split=0 mode=MIGRATE_ASYNC reason=damon\n"
        "  sh-90 [001] ..... 10.000002: mm_migrate_batch_copy: reason=damon mode=MIGRATE_ASYNC "
        "engine=dcbm folios=512 pages=512 engine_pages=500 cpu_pages=12 lost=0 poisoned=0 ns=1\n")
    (tmp_path / "before").write_text("pgmigrate_batch_copied 0\npgmigrate_batch_fallback 0\n"
                                     "pgmigrate_batch_wasted 0\n")
    (tmp_path / "after").write_text("pgmigrate_batch_copied 512\npgmigrate_batch_fallback 12\n"
                                    "pgmigrate_batch_wasted 0\n")
    (tmp_path / "prog.out").write_text("pages=512\nbad_bytes=0\nbytes_checked=8388608\n")
    (tmp_path / "dead.out").write_text("pages=512\n")
    script = (f". {MO_LIB}\nW={tmp_path}\nHAVE_EVB=yes\nOVERRUN=0\nMO_OUTDIR={tmp_path}\n. {WINDOW}\n"
              "batch_checks dcbm damon damon\n"
              f"bytes_row dcbm damon {tmp_path / 'prog.out'}\n"
              f"bytes_row mtcopy damon {tmp_path / 'dead.out'}\n")
    r = subprocess.run([BUSYBOX, "sh", "-c", script], capture_output=True, text=True)
    cells = matrix.collect([_block("reasons", r.stdout.splitlines())])
    c = cells[("damon", "dcbm")]
    assert (c.windows, c.migrated, c.batch_pages, c.engine_pages, c.cpu_pages) == (1, 512, 512, 500, 12), r.stdout
    assert (c.programs, c.bytes, c.bad, c.unknown) == (1, 8388608, 0, 0)
    assert cells[("damon", "mtcopy")].unknown == 1, r.stdout
    # The same rows in the file init sends back.
    f = console.FileXfer(name="reasons/matrix.rows", start_line=1, ended=True,
                         data=(tmp_path / "matrix.rows").read_bytes())
    again = matrix.collect([_block("reasons", [])], [f])
    assert again[("damon", "dcbm")] == c


def test_the_sent_file_wins_over_split_console_lines():
    rows = _complete()
    # A kernel message split one console row in two: that window is lost
    # from the console, not from the file the guest sent.
    split = [l for l in rows if "reason=damon batched=on" not in l or "engine=dcbm" not in l]
    split += ["# @@MO-ROW engine=dcbm reason=damon batched=on migrated=64 batch_pa",
              "ges=64 engine_pages=60 cpu_pages=4"]
    assert any("damon with dcbm" in g for g in matrix.problems(matrix.collect([_block("reasons", split)])))
    f = console.FileXfer(name="reasons/matrix.rows", start_line=1, ended=True,
                         data="\n".join(l[2:] for l in rows).encode())
    assert matrix.problems(matrix.collect([_block("reasons", split)], [f])) == []


REASONS_SUITE = ROOT / "guest" / "suites" / "reasons"
ZONEINFO = """Node 0, zone      DMA
  pages free     3968
        present  3998
Node 1, zone   Normal
  pages free     1000
        present  20000
Node 1, zone  Movable
  pages free     50000
        min      10
        present  60000
"""
BUDDYINFO = """Node 0, zone      DMA      0      0      0      0      0      0      0      0      1      1      3
Node 1, zone   Normal    100     50     25      0      0      0      0      0      0      1      0
Node 1, zone  Movable   1000    500    250    125     60     30     15      8      4      2     40
"""


def _kernel_score(node):
    """fragmentation_score_node() of mm/compaction.c over the fixtures."""
    present, free = {}, {}
    zone = None
    for line in ZONEINFO.splitlines():
        f = line.split()
        if f[0] == "Node":
            zone = f[3] if f[1] == f"{node}," else None
        elif zone and f[0] == "present":
            present[zone] = int(f[1])
    for line in BUDDYINFO.splitlines():
        f = line.split()
        if f[1] == f"{node},":
            counts = [int(c) for c in f[4:]]
            fr = sum(c << o for o, c in enumerate(counts))
            big = sum(c << o for o, c in enumerate(counts) if o >= 9)
            free[f[3]] = (fr - big) * 100 // fr if fr else 0
    node_present = sum(present.values())
    return sum(present[z] * free[z] // (node_present + 1) for z in free)


@pytest.mark.skipif(not BUSYBOX, reason="busybox not installed")
@pytest.mark.parametrize("node", [0, 1])
def test_frag_score_is_the_kernels_under_busybox_awk(tmp_path, node):
    import re
    fn = re.search(r"^frag_score\(\) \{.*?^\}\n", REASONS_SUITE.read_text(), re.S | re.M).group(0)
    (tmp_path / "zi").write_text(ZONEINFO)
    (tmp_path / "bi").write_text(BUDDYINFO)
    r = subprocess.run([BUSYBOX, "sh", "-c", fn + f"frag_score {node} {tmp_path}/zi {tmp_path}/bi"],
                       capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.strip() == str(_kernel_score(node)), r.stdout + r.stderr
    assert node == 0 or _kernel_score(node) > 15


def test_a_reason_never_removed_is_a_gap():
    lines = [l for l in _complete() if not ("batched=off" in l and "reason=damon" in l)]
    gaps = matrix.problems(matrix.collect([_block("reasons", lines)]))
    assert gaps == ["damon: the reason filter never tested (no window with damon removed)"], gaps


def _rotated(engines=("mtcopy", "dcbm"), drop=()):
    """A ci run: each reason with one engine, in turn (on and off)."""
    lines = []
    for i, r in enumerate(matrix.REASONS):
        e = engines[i % len(engines)]
        if (r, e) in drop:
            continue
        lines += [f"# @@MO-ROW engine={e} reason={r} batched=on migrated=64 "
                  "batch_pages=64 engine_pages=60 cpu_pages=4",
                  f"# @@MO-ROW engine={e} reason={r} batched=off migrated=64 "
                  "batch_pages=0 engine_pages=0 cpu_pages=0",
                  f"# @@MO-BYTES engine={e} reasons={r} bytes=1048576 bad=0"]
    return lines


def test_the_matrix_line_names_the_scopes_that_drive_every_pair():
    assert matrix.WHOLE_MATRIX == ("full",)
    assert set(matrix.SCOPES) == {"ci", "full"}


def test_ci_wants_each_reason_with_some_engine_and_each_engine_somewhere():
    ci = matrix.SCOPES["ci"]
    cells = matrix.collect([_block("reasons", _rotated(ci))])
    assert matrix.problems(cells, engines=ci, whole=False) == []
    # the same run fails the full scope's rule: a pair left out is named
    assert any("damon with mtcopy: not driven" in g or "with mtcopy: not driven" in g
               for g in matrix.problems(cells, engines=ci, whole=True))


def test_ci_names_a_reason_no_engine_drove_and_an_engine_that_drove_none():
    ci = matrix.SCOPES["ci"]
    r0 = matrix.REASONS[0]
    gaps = matrix.problems(matrix.collect([_block("reasons", _rotated(ci, drop=((r0, ci[0]),)))]),
                           engines=ci, whole=False)
    assert f"{r0}: not driven with any of {', '.join(ci)} (no trace window)" in gaps, gaps
    gaps = matrix.problems(matrix.collect([_block("reasons", _rotated((ci[0],)))]),
                           engines=ci, whole=False)
    assert gaps == [f"{ci[1]}: drove no reason (no trace window)"], gaps


def test_ci_still_judges_the_pairs_it_drove():
    ci = matrix.SCOPES["ci"]
    lines = [l.replace("bad=0", "bad=7") if "reasons=damon" in l else l for l in _rotated(ci)]
    gaps = matrix.problems(matrix.collect([_block("reasons", lines)]), engines=ci, whole=False)
    assert any("damon with" in g and "7 bad bytes" in g for g in gaps), gaps


def test_ci_judges_what_a_pair_without_its_on_window_shows():
    # dcbm/damon lost its batched window but kept an off window that
    # batched, and a program that saw bad bytes: none of it may pass
    ci = matrix.SCOPES["ci"]
    lines = [l for l in _rotated(ci) if not ("engine=dcbm reason=damon batched=on" in l)]
    lines = [l.replace("bad=0", "bad=9") if "engine=dcbm reasons=damon" in l else l for l in lines]
    lines = [l.replace("batch_pages=0", "batch_pages=5")
             if "engine=dcbm reason=damon batched=off" in l else l for l in lines]
    gaps = matrix.problems(matrix.collect([_block("reasons", lines)]), engines=ci, whole=False)
    assert "damon with dcbm: 9 bad bytes" in gaps, gaps
    assert "damon with dcbm: 5 pages batched with damon off" in gaps, gaps
    assert "damon: not driven with any of mtcopy, dcbm (no trace window)" in gaps, gaps


def test_ci_counts_only_on_windows_of_its_engines_as_driving():
    ci = matrix.SCOPES["ci"]
    # every reason's on window by cpu (not a ci engine), off windows by ci's
    lines = [l.replace("engine=mtcopy", "engine=cpu").replace("engine=dcbm", "engine=cpu")
             if "batched=on" in l else l for l in _rotated(ci)]
    gaps = matrix.problems(matrix.collect([_block("reasons", lines)]), engines=ci, whole=False)
    assert all(f"{r}: not driven with any of mtcopy, dcbm (no trace window)" in gaps
               for r in matrix.REASONS), gaps
    assert "mtcopy: drove no reason (no trace window)" in gaps
