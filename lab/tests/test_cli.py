import subprocess
import sys


from lab.molab import cli
from lab.molab.util import ROOT


def run_cli(*args, env=None):
    return subprocess.run([sys.executable, "-m", "lab.molab", *args], cwd=ROOT,
                          capture_output=True, text=True, env=env)


def assert_one_line_error(r, text=None):
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("molab: error: ") and "; " in lines[0]
    assert "Traceback" not in r.stderr + r.stdout
    if text:
        assert text in lines[0]


def test_unknown_subcommand():
    assert_one_line_error(run_cli("frobnicate"), "invalid choice: 'frobnicate'")


def test_unknown_option():
    assert_one_line_error(run_cli("boot", "--no-such-option"), "unrecognized arguments")


def test_bad_choice():
    assert_one_line_error(run_cli("kernel", "--flavour", "fast"), "invalid choice: 'fast'")


def test_no_command():
    assert_one_line_error(run_cli(), "no command given")


def test_bench_bad_rounds():
    # Checked before anything is built or booted.
    assert_one_line_error(run_cli("bench", "--rounds", "0"), "--rounds 0 is too small")


def test_bench_rerender(tmp_path):
    import json
    assert_one_line_error(run_cli("bench", "--rerender", str(tmp_path)), "not a bench result")
    (tmp_path / "bench.json").write_text("[1, 2]")
    assert_one_line_error(run_cli("bench", "--rerender", str(tmp_path)), "no records or facts")
    recs = [{"mode": "tput", "config": c, "folio_kb": 4, "to": 1, "gbps": g, "variant": v,
             "round": 0} for c, g, v in (("vanilla", 1.0, "vanilla"), ("cpu", 1.2, "patched"))]
    facts = {"kernels": {}, "qemu": ["QEMU x"], "host_cpu": "cpu", "host_cpus": 2,
             "git_commit": "0" * 40, "git_dirty": False}
    (tmp_path / "bench.json").write_text(json.dumps({"facts": facts, "records": recs}))
    r = run_cli("bench", "--rerender", str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert "| cpu | 1.20 [1.20..1.20] |" in (tmp_path / "report.md").read_text()
    assert json.loads((tmp_path / "bench.json").read_text())["summary"]["records"] == 2


def test_bad_ksrc_not_a_tree(tmp_path):
    assert_one_line_error(run_cli("tree", "--ksrc", str(tmp_path)), "no kernel Makefile")


def test_bad_ksrc_missing():
    assert_one_line_error(run_cli("tree", "--ksrc", "/nonexistent/linux"), "is not a directory")


def test_bad_ksrc_wrong_version(tmp_path):
    (tmp_path / "Makefile").write_text("VERSION = 6\nPATCHLEVEL = 6\nSUBLEVEL = 30\n")
    assert_one_line_error(run_cli("tree", "--ksrc", str(tmp_path)), "is Linux 6.6.30, not 6.12")


def test_ksrc_from_environment(tmp_path):
    import os
    env = dict(os.environ, KSRC=str(tmp_path))
    assert_one_line_error(run_cli("export", env=env), f"KSRC={tmp_path}")


def test_good_ksrc_accepted(tmp_path, capsys):
    (tmp_path / "Makefile").write_text("VERSION = 6\nPATCHLEVEL = 12\nSUBLEVEL = 117\n")
    assert cli.main(["tree", "--ksrc", str(tmp_path)]) == 0
    assert "not a git tree" in capsys.readouterr().out


def test_internal_errors_are_one_line(monkeypatch, capsys):
    def boom(a):
        raise RuntimeError("kaboom")
    monkeypatch.setitem(cli.COMMANDS, "tree", boom)
    monkeypatch.delenv("MOLAB_DEBUG", raising=False)
    assert cli.main(["tree"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "internal error RuntimeError: kaboom" in err[0]


def test_help_exits_zero():
    r = run_cli("--help")
    assert r.returncode == 0 and "boot" in r.stdout


def test_make_unknown_target():
    r = subprocess.run(["make", "-s", "no-such-target"], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 2
    assert "molab: error: unknown make target 'no-such-target'" in r.stderr


def test_report_rejudges_a_saved_log(tmp_path, capsys):
    from pathlib import Path
    fix = Path(__file__).parent / "fixtures"
    (tmp_path / "console.log").write_text((fix / "broken_suite.log").read_text())
    assert cli.main(["report", str(tmp_path), "--suites", "brokentap,notap"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("FAIL  brokentap  not ok: second")
    assert out[1].startswith("FAIL  notap  no TAP results")
    assert out[-1] == "2 passed, 2 failed"     # test cases: brokentap 2 + 1, notap 1
    (tmp_path / "console.log").write_text((fix / "clean.log").read_text())
    assert cli.main(["report", str(tmp_path / "console.log"), "--suites", "kunit,migration"]) == 0


def _matrix_lines(skip=(), scope="ci"):
    """A main boot's matrix rows: every reason with every engine of @scope,
    but @skip; the windows with the reason off by the scope's first engine."""
    from lab.molab import matrix
    out = []
    engines = matrix.SCOPES[scope]
    off = next(e for e in engines if e != "none")
    for r in matrix.REASONS:
        for e in engines:
            if (r, e) in skip:
                continue
            n = 0 if e == "none" else 8
            out += [f"# @@MO-ROW engine={e} reason={r} batched=on migrated=8 batch_pages={n} "
                    f"engine_pages={n if e not in ('cpu', 'none') else 0} cpu_pages={n if e == 'cpu' else 0}",
                    f"# @@MO-BYTES engine={e} reasons={r} bytes=32768 bad=0"]
            if e == off:
                out.append(f"# @@MO-ROW engine={e} reason={r} batched=off migrated=8 batch_pages=0 "
                           "engine_pages=0 cpu_pages=0")
    return out


def _fake_test_run(monkeypatch, tmp_path, builtin_ok=True, matrix_skip=(), scope="ci",
                   rows_scope=None, guest_scope=None):
    """cmd_test with builds and boots faked: returns (exit code, specs booted)."""
    from types import SimpleNamespace
    from lab.molab import console
    specs = []
    blocks = [console.Block(name="reasons", start_line=1,
                            lines=_matrix_lines(matrix_skip, rows_scope or scope))]

    def summary(passed, failed):
        return SimpleNamespace(passed=passed, failed=failed, skipped=0,
                               lines=lambda: [f"{'PASS' if not failed else 'FAIL'}  suite",
                                              f"{passed} passed, {failed} failed"])

    def boot(spec):
        specs.append(spec)
        builtin = spec.label.endswith("-builtin")
        # the scope guest/init.sh exported from mo.scope=, as the console scan reads it
        sc = next((w.split("=", 1)[1] for w in spec.cmdline_extra if w.startswith("mo.scope=")),
                  "full")
        ok = builtin_ok or not builtin
        return SimpleNamespace(ok=ok, summary=summary(40 if builtin else 200, 0 if ok else 1),
                               report=SimpleNamespace(release="6.12.117", scope=guest_scope or sc,
                                                      blocks=[] if builtin else blocks),
                               console_log=tmp_path / "console.log")

    def ensure(variant, flavour, ksrc=None):
        return SimpleNamespace(variant=variant, flavour=flavour, bzimage=tmp_path / flavour,
                               initramfs=tmp_path / f"{flavour}.cpio")

    monkeypatch.setattr(cli.tree, "ensure_tree", lambda ksrc, **kw: None)
    monkeypatch.setattr(cli.kernel, "ensure", ensure)
    monkeypatch.setattr(cli.initramfs, "build", lambda kb: None)
    # what the initramfs holds: every suite, bench, and one nobody listed yet
    monkeypatch.setattr(cli.initramfs, "guest_suites",
                        lambda kb: [s for s, _ in cli.SUITE_ORDER if s != "kunit"] +
                        ["bench", "newsuite"])
    monkeypatch.setattr(cli.qemu, "boot", boot)
    rc = cli.main(["test", "--skip-setup", "--skip-unit", "--scope", scope])
    return rc, specs


def test_make_test_boots_the_engines_built_in_too(monkeypatch, tmp_path, capsys):
    rc, specs = _fake_test_run(monkeypatch, tmp_path)
    assert rc == 0
    assert [s.kernel.name for s in specs] == ["debug", "builtin"]
    assert "memory_offline" in specs[0].suites and specs[1].suites == list(cli.BUILTIN_SUITES)
    # movable zone for memory_offline on both debug kernels; swdma channels set at boot
    assert all("movablecore=40%" in s.cmdline_extra for s in specs)
    # a CMA area on node 2 for the reasons suite (contig_range), both boots
    assert all("cma=256M@2G-3G" in s.cmdline_extra and "init_on_free=1" in s.cmdline_extra for s in specs)
    assert "reasons" in specs[0].suites
    assert "swdma.nr_chans=4" in specs[1].cmdline_extra and specs[1].require_debug
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == "240 passed, 0 failed"        # cases of both boots


def test_make_test_fails_when_a_reason_was_driven_with_no_engine(monkeypatch, tmp_path, capsys):
    rc, specs = _fake_test_run(monkeypatch, tmp_path,
                               matrix_skip={("damon", "mtcopy"), ("damon", "dcbm")})
    out = capsys.readouterr().out.splitlines()
    assert rc == 1 and out[-1] == "240 passed, 1 failed"
    assert "FAIL  matrix  damon: not driven with any of mtcopy, dcbm (no trace window)" in out
    assert (tmp_path / "matrix.md").read_text().count("| damon |") == 2


def test_make_test_passes_a_reason_driven_with_one_of_its_engines(monkeypatch, tmp_path, capsys):
    # ci (engines.list's matrix line has full only): one engine per reason is enough
    rc, specs = _fake_test_run(monkeypatch, tmp_path, matrix_skip={("damon", "dcbm")})
    out = capsys.readouterr().out.splitlines()
    assert rc == 0 and out[-1] == "240 passed, 0 failed", out[-5:]
    assert not [l for l in out if l.startswith("FAIL  matrix")]


def test_make_test_full_fails_when_a_pair_was_not_driven(monkeypatch, tmp_path, capsys):
    rc, specs = _fake_test_run(monkeypatch, tmp_path, scope="full", matrix_skip={("damon", "mtcopy")})
    out = capsys.readouterr().out.splitlines()
    assert rc == 1 and "FAIL  matrix  damon with mtcopy: not driven (no trace window)" in out


def test_make_test_fails_when_the_builtin_boot_fails(monkeypatch, tmp_path, capsys):
    rc, specs = _fake_test_run(monkeypatch, tmp_path, builtin_ok=False)
    assert rc == 1 and len(specs) == 2
    assert capsys.readouterr().out.splitlines()[-1] == "240 passed, 1 failed"


def test_make_test_runs_the_ci_scope_and_test_full_the_whole(monkeypatch, tmp_path, capsys):
    rc, specs = _fake_test_run(monkeypatch, tmp_path)
    assert rc == 0 and all("mo.scope=ci" in s.cmdline_extra for s in specs)
    assert (specs[0].args, specs[1].args) == ("", "MO_INTEGRITY_CONFS=mtcopy-2,dcbm-4")
    assert not set(cli.FULL_ONLY_SUITES) & set(specs[0].suites)
    assert specs[0].suites == [*cli.TEST_SUITES, "newsuite"]
    assert cli.FULL_ONLY_SUITES == ("migration", "host_kit", "mm_selftests")
    out = capsys.readouterr().out
    assert "slowest suites:" in out and "timings:" in out and "builtin boot+tests" in out
    specs.clear()
    rc, specs = _fake_test_run(monkeypatch, tmp_path, scope="full")
    assert rc == 0 and all("mo.scope=full" in s.cmdline_extra for s in specs)
    assert specs[1].args == ""
    assert specs[0].suites == [s for s, _ in cli.SUITE_ORDER] + ["newsuite"]
    assert specs[0].suites[:2] == ["kunit", "migration"]
    assert (tmp_path / "matrix.md").read_text().count("| damon |") == 4


def test_make_test_full_fails_on_a_ci_sized_matrix(monkeypatch, tmp_path, capsys):
    rc, _ = _fake_test_run(monkeypatch, tmp_path, scope="full", rows_scope="ci")
    out = capsys.readouterr().out.splitlines()
    assert rc == 1 and "FAIL  matrix  damon with cpu: not driven (no trace window)" in out


def test_slowest_suites_across_boots():
    from types import SimpleNamespace as NS
    def boot(*times):
        return NS(summary=NS(suites=[NS(name=n, seconds=t) for n, t in times]))
    line = cli.slowest_suites([boot(("a", 10), ("b", 300), ("c", None)), boot(("kunit", 61))], n=2)
    assert line == "b 5m00s, kunit (builtin) 1m01s"


def test_a_guest_that_ran_another_scope_fails_the_run(monkeypatch, tmp_path, capsys):
    rc, _ = _fake_test_run(monkeypatch, tmp_path, guest_scope="full")
    out = capsys.readouterr().out.splitlines()
    assert rc == 1 and any(l.startswith("FAIL  scope  the guest") for l in out)
    assert out[-1] == "240 passed, 2 failed"     # both boots


def test_guest_scope_read_from_the_console():
    from lab.molab import console
    rep = console.scan_text("[ 0.0] Linux\nmolab guest: suites 'a,b' args 'MO_X=1' scope ci\n"
                            "@@MO-DONE\n")
    assert rep.scope == "ci"
    rep = console.scan_text("[ 0.0] Linux\nmolab guest: suites 'a' args ''\n@@MO-DONE\n")
    assert rep.scope is None


def test_dcbm_late_runs_after_every_suite_that_needs_memory_whole():
    # its lost pairs' destinations stay allocated: no offlining, no CMA
    # allocation of the whole area may come after it
    names = [s for s, _ in cli.SUITE_ORDER]
    assert cli.TEST_SUITES[-1] == "dcbm_late"
    after = names[names.index("dcbm_late") + 1:]
    assert after == ["mm_selftests"] and not {"memory_offline", "reasons"} & set(after)
