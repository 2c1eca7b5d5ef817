"""guest/lib/mo_window.sh's one-pass reading of a trace window (tcalc,
teval, tsum), against sums computed here from the same events."""

import random
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
WINDOW = ROOT / "guest" / "lib" / "mo_window.sh"
MO_LIB = ROOT / "guest" / "lib" / "mo_lib.sh"
BUSYBOX = shutil.which("busybox")
pytestmark = pytest.mark.skipif(not BUSYBOX, reason="busybox not installed")

REASONS = ("damon", "compaction", "demotion")
ENGINES = ("dcbm", "mtcopy", "cpu")


COMMS = ("sh", "mo_tier", "kswapd0", "kworker/u8:2", "x-y")


def _events(seed, n=300):
    """Random events of both kinds, as dicts and as ftrace lines; among
    them lines of another event with the same fields, which count for
    nothing."""
    rng = random.Random(seed)
    evs, lines = [], ["# tracer: nop", "#"]
    for i in range(n):
        e = {"comm": rng.choice(COMMS), "pid": rng.choice(("90", "1234")),
             "reason": rng.choice(REASONS)}
        head = f"  {e['comm']}-{e['pid']} [00{i % 3}] ..... 10.{i:06d}:"
        kind = rng.random()
        if kind < 0.1:
            lines.append(f"{head} mm_migrate_batch_phases: reason={e['reason']} folios=99999 "
                         f"pages=99999 nr_succeeded=99999 engine=dcbm")
            continue
        if kind < 0.5:
            e.update(ev="mm_migrate_pages", nr_succeeded=rng.randint(0, 600))
            lines.append(f"{head} mm_migrate_pages: nr_succeeded={e['nr_succeeded']} nr_failed=0 "
                         f"mode=MIGRATE_ASYNC reason={e['reason']}")
        else:
            pages = rng.randint(0, 600)
            ep = rng.randint(0, pages)
            e.update(ev="mm_migrate_batch_copy", engine=rng.choice(ENGINES), folios=rng.randint(1, 5000),
                     pages=pages, engine_pages=ep, cpu_pages=pages - ep, lost=rng.choice((0, 0, 1)),
                     poisoned=rng.choice((0, 0, 0, 2)))
            lines.append(f"{head} mm_migrate_batch_copy: reason={e['reason']} mode=MIGRATE_ASYNC "
                         f"engine={e['engine']} folios={e['folios']} pages={pages} "
                         f"engine_pages={ep} cpu_pages={pages - ep} lost={e['lost']} "
                         f"poisoned={e['poisoned']} ns=1")
        evs.append(e)
    # The largest folios of all, in an event that the filters below leave out.
    e = dict(comm="sh", pid="1234", reason="demotion", ev="mm_migrate_batch_copy", engine="cpu",
             folios=5001, pages=1, engine_pages=0, cpu_pages=1, lost=0, poisoned=0)
    lines.append("  sh-1234 [000] ..... 11.000000: mm_migrate_batch_copy: reason=demotion "
                 "mode=MIGRATE_ASYNC engine=cpu folios=5001 pages=1 engine_pages=0 cpu_pages=1 "
                 "lost=0 poisoned=0 ns=1")
    evs.append(e)
    return evs, "\n".join(lines) + "\n"


def _sh(tmp_path, body):
    script = f". {MO_LIB}\nW={tmp_path}\n. {WINDOW}\n{body}"
    return subprocess.run([BUSYBOX, "sh", "-c", script], capture_output=True, text=True)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_tcalc_sums_counts_and_maxima_in_one_pass(tmp_path, seed):
    evs, text = _events(seed)
    (tmp_path / "trace").write_text(text)
    B, M = "mm_migrate_batch_copy", "mm_migrate_pages"
    quads = [
        ("_a", M, "nr_succeeded", 'f["reason"] == "damon"',
         lambda e: e["ev"] == M and e["reason"] == "damon", "nr_succeeded"),
        ("_b", B, "n", "1", lambda e: e["ev"] == B, "n"),
        ("_c", B, "pages", 'f["reason"] == "compaction" && f["pid"] == "90"',
         lambda e: e["ev"] == B and e["reason"] == "compaction" and e["pid"] == "90", "pages"),
        ("_d", B, "engine_pages", 'f["comm"] == "mo_tier" && f["engine"] == "dcbm"',
         lambda e: e["ev"] == B and e["comm"] == "mo_tier" and e["engine"] == "dcbm", "engine_pages"),
        ("_e", B, "max_folios", 'f["reason"] != "demotion"',
         lambda e: e["ev"] == B and e["reason"] != "demotion", "max_folios"),
        ("_f", B, "lost", "1", lambda e: e["ev"] == B, "lost"),
        ("_g", M, "n", 'f["reason"] == "nothing"', lambda e: False, "n"),
        ("_h", B, "max_folios", 'f["reason"] == "damon" && f["pid"] == "90"',
         lambda e: e["ev"] == B and e["reason"] == "damon" and e["pid"] == "90", "max_folios"),
        ("_i", B, "cpu_pages", 'f["comm"] == "kworker/u8:2"',
         lambda e: e["ev"] == B and e["comm"] == "kworker/u8:2", "cpu_pages"),
        ("_j", M, "nr_succeeded", 'f["comm"] == "x-y" && f["pid"] == "1234"',
         lambda e: e["ev"] == M and e["comm"] == "x-y" and e["pid"] == "1234", "nr_succeeded"),
        ("_k", B, "poisoned", 'f["engine"] != "cpu"',
         lambda e: e["ev"] == B and e["engine"] != "cpu", "poisoned"),
        ("_l", M, "n", "1", lambda e: e["ev"] == M, "n"),
    ]
    args = " ".join(f"{n} {ev} {fld} '{cond}'" for n, ev, fld, cond, _, _ in quads)
    r = _sh(tmp_path, f"tcalc {args}\n")
    assert r.returncode == 0, r.stderr
    want = []
    for name, _, _, _, match, fld in quads:
        sel = [e for e in evs if match(e)]
        v = (len(sel) if fld == "n" else max([e["folios"] for e in sel], default=0)
             if fld == "max_folios" else sum(e[fld] for e in sel))
        want.append(f"{name}={v}")
    assert r.stdout.split() == want
    got = {w.split("=")[0]: int(w.split("=")[1]) for w in want}
    # The data can tell a filter from none: every sum is there, and the
    # filtered maximum is not the overall one.
    assert all(got[k] > 0 for k in ("_a", "_b", "_c", "_d", "_e", "_f", "_i", "_j", "_k", "_l"))
    assert 0 < got["_h"] <= got["_e"] < 5001
    # tsum is one quadruple of it, the value alone.
    r = _sh(tmp_path, "tsum mm_migrate_pages nr_succeeded 'f[\"reason\"] == \"damon\"'\n")
    assert r.stdout.strip() == want[0].split("=")[1]


def test_teval_sets_the_values(tmp_path):
    evs, text = _events(4)
    (tmp_path / "trace").write_text(text)
    r = _sh(tmp_path, "T_N=0 T_FAIL=0\nteval _x mm_migrate_batch_copy n 1 _y mm_migrate_pages n 1\n"
                      "echo \"x=$_x y=$_y fail=$T_FAIL\"\n")
    x, y, fail = (int(w.split("=")[1]) for w in r.stdout.split())
    assert (x, y, fail) == (sum(e["ev"] == "mm_migrate_batch_copy" for e in evs),
                            sum(e["ev"] == "mm_migrate_pages" for e in evs), 0), r.stdout


@pytest.mark.parametrize("args", [
    "_x mm_migrate_batch_copy n 'f[\"reason\"] =='",     # an awk syntax error
    "_x mm_migrate_batch_copy n",                        # not a quadruple
])
def test_a_window_that_cannot_be_read_is_a_failed_test(tmp_path, args):
    _, text = _events(5)
    (tmp_path / "trace").write_text(text)
    r = _sh(tmp_path, f"T_N=0 T_FAIL=0\nteval {args}; echo \"rc=$? fail=$T_FAIL\"\n")
    assert "not ok 1 the trace window read back" in r.stdout
    assert r.stdout.splitlines()[-1] == "rc=1 fail=1", r.stdout


def test_teval_refuses_a_value_that_is_not_an_integer(tmp_path):
    (tmp_path / "trace").write_text(
        "  sh-90 [000] ..... 1.0: mm_migrate_batch_copy: reason=damon engine=dcbm folios=1 "
        "pages=1.5 engine_pages=1 cpu_pages=0 lost=0 poisoned=0 ns=1\n")
    r = _sh(tmp_path, "T_N=0 T_FAIL=0 _x=7\nteval _x mm_migrate_batch_copy pages 1; "
                      "echo \"rc=$? x=$_x fail=$T_FAIL\"\n")
    assert r.stdout.splitlines()[-1] == "rc=1 x=7 fail=1", r.stdout


@pytest.mark.parametrize("mode", ["on", "off"])
def test_checks_judge_nothing_of_a_window_that_cannot_be_read(tmp_path, mode):
    """No trace file: the window is reported unread, and no check of it
    runs on what an earlier window left in the variables."""
    for f in ("before", "after", "before_in", "after_in"):
        (tmp_path / f).write_text("pgmigrate_batch_copied 64\npgmigrate_batch_fallback 0\n"
                                  "pgmigrate_batch_wasted 0\n")
    (tmp_path / "reasons").write_text("compaction\n")
    r = _sh(tmp_path, f"T_N=0 T_FAIL=0 HAVE_EVB=yes OVERRUN=0 MO={tmp_path}\n"
                      "_mig=64 _pg=64 _ep=64 _cpu=0 _lp=0 _po=0 _nev=5 _en=5 _oth=64\n"
                      f"checks dcbm {mode} damon damon; echo \"rc=$?\"\n")
    lines = [l for l in r.stdout.splitlines() if l.startswith(("ok", "not ok"))]
    assert lines == [f"not ok 1 the trace window read back ({14 if mode == 'on' else 7} values "
                     f"from {tmp_path}/trace)"], r.stdout
    assert "@@MO-ROW" not in r.stdout and r.stdout.splitlines()[-1] == "rc=1"
