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


def _events(seed, n=300):
    """Random events of both kinds, as dicts and as ftrace lines."""
    rng = random.Random(seed)
    evs, lines = [], ["# tracer: nop", "#"]
    for i in range(n):
        e = {"comm": rng.choice(("sh", "mo_tier", "kswapd0")), "pid": rng.choice(("90", "1234")),
             "reason": rng.choice(REASONS)}
        head = f"  {e['comm']}-{e['pid']} [00{i % 3}] ..... 10.{i:06d}:"
        if rng.random() < 0.5:
            e.update(ev="mm_migrate_pages", nr_succeeded=rng.randint(0, 600))
            lines.append(f"{head} mm_migrate_pages: nr_succeeded={e['nr_succeeded']} nr_failed=0 "
                         f"mode=MIGRATE_ASYNC reason={e['reason']}")
        else:
            pages = rng.randint(0, 600)
            e.update(ev="mm_migrate_batch_copy", engine=rng.choice(ENGINES), folios=rng.randint(1, 40),
                     pages=pages, engine_pages=rng.randint(0, pages), lost=rng.choice((0, 0, 1)))
            lines.append(f"{head} mm_migrate_batch_copy: reason={e['reason']} mode=MIGRATE_ASYNC "
                         f"engine={e['engine']} folios={e['folios']} pages={pages} "
                         f"engine_pages={e['engine_pages']} lost={e['lost']} ns=1")
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
    assert any(int(w.split("=")[1]) > 0 for w in want[:6])
    # tsum is one quadruple of it, the value alone.
    r = _sh(tmp_path, "tsum mm_migrate_pages nr_succeeded 'f[\"reason\"] == \"damon\"'\n")
    assert r.stdout.strip() == want[0].split("=")[1]


def test_teval_sets_the_values(tmp_path):
    _, text = _events(4)
    (tmp_path / "trace").write_text(text)
    r = _sh(tmp_path, "T_N=0 T_FAIL=0\nteval _x mm_migrate_batch_copy n 1 _y mm_migrate_pages n 1\n"
                      "echo \"x=$_x y=$_y fail=$T_FAIL\"\n")
    x, y, fail = (int(w.split("=")[1]) for w in r.stdout.split())
    assert x > 0 and y > 0 and x + y == 300 and fail == 0, r.stdout


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
