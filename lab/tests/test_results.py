from pathlib import Path

from lab.molab import console, results

FIX = Path(__file__).parent / "fixtures"


def summarize(name, suites, accel="single"):
    rep = console.scan_text((FIX / name).read_text(), accel)
    return results.summarize(rep, suites)


def by_name(summ):
    return {s.name: s for s in summ.suites}


def test_clean_run_summary():
    summ = summarize("clean.log", ["kunit", "migration", "sample"])
    r = by_name(summ)
    assert summ.ok and summ.status == "PASS"
    # kunit: leaves are copy_single_folio, copy_batch(skip), 4K, 64K, 2M, register_unregister
    assert r["kunit"].status == "PASS" and r["kunit"].tests == 6 and r["kunit"].skipped == 1
    assert r["migration"].status == "PASS" and r["migration"].tests == 2
    assert r["migration"].skipped_names == ["migration.private_anon_htlb"]
    assert r["sample"].status == "PASS"
    lines = summ.lines()
    assert lines[0] == "PASS  kunit  (6 tests, 1 skipped: copy_batch)"
    assert lines[1].startswith("PASS  migration  (2 tests, 1 skipped: migration.private_anon_htlb)")
    assert lines[-1] == "3 passed, 0 failed"


def test_broken_guest_tests_fail_the_run_with_clear_messages():
    summ = summarize("broken_suite.log",
                     ["kunit", "brokentap", "crashy", "notap", "missing", "short", "allskip",
                      "neverran"])
    r = by_name(summ)
    assert not summ.ok
    assert r["kunit"].status == "FAIL"
    assert r["kunit"].reason.startswith("not ok: migrate_copy.copy_single_folio")
    assert "EXPECTATION FAILED" in r["kunit"].reason
    assert r["brokentap"].status == "FAIL"
    assert r["brokentap"].reason == "not ok: second (integrity: checksum mismatch at offset 4096); exit code 1"
    assert r["crashy"].status == "FAIL"
    assert "planned 1 tests, 0 reported" in r["crashy"].reason
    assert r["notap"].status == "PASS" and r["notap"].reason == "no TAP output"
    assert r["missing"].status == "FAIL" and r["missing"].reason.startswith("missing")
    assert r["short"].status == "FAIL" and "planned 4" in r["short"].reason
    assert r["allskip"].status == "SKIP" and "no DMA engine" in r["allskip"].reason
    assert r["neverran"].status == "FAIL" and "did not run" in r["neverran"].reason
    assert summ.lines()[-1] == "1 passed, 6 failed, 1 skipped"


def test_nonzero_exit_with_all_ok_tap_fails():
    rep = console.scan_text("[ 0.0] Linux\n@@MO-BEGIN s\n1..1\nok 1 a\n@@MO-END s rc=3\n@@MO-DONE\n")
    s = results.summarize(rep, ["s"]).suites[0]
    assert s.status == "FAIL" and s.reason.startswith("exit code 3")


def test_unfinished_suite_fails():
    rep = console.scan_text("[ 0.0] Linux\n@@MO-BEGIN s\n1..2\nok 1 a\n"
                            "[ 5.0] Kernel panic - not syncing: oops\n")
    summ = results.summarize(rep, ["s"], boot_problem="")
    assert summ.suites[0].status == "FAIL"
    assert "did not finish" in summ.suites[0].reason
    assert summ.console_status == "FAIL"
    assert "Kernel panic" in summ.console_reason
    assert summ.boot_problem == "the guest did not finish (no @@MO-DONE)"
    assert summ.failed == 3


def test_console_failure_fails_even_if_every_test_passed():
    summ = summarize("warning.log", ["stress"])
    assert by_name(summ)["stress"].status == "PASS"
    assert not summ.ok
    assert any(l.startswith("FAIL  console  warning: WARNING: CPU: 1 PID: 77") for l in summ.lines())


def test_emulator_fault_line_and_status():
    log = "[ 0.0] Linux\n[ 1.0] Oops: int3: 0000 [#1] PREEMPT SMP\n"
    summ = results.summarize(console.scan_text(log, "multi"), [])
    assert summ.status == "EMULATOR-FAULT" and not summ.ok
    line = [l for l in summ.lines() if l.startswith("EMULATOR-FAULT")][0]
    assert "multi-threaded TCG" in line and "Oops: int3" in line


def test_kunit_without_suites_is_a_skip():
    rep = console.scan_text("[ 0.5] KTAP version 1\n[ 0.5] 1..0\n@@MO-DONE\n")
    s = results.evaluate_kunit(rep)
    assert s.status == "SKIP" and "no KUnit suites" in s.reason


def test_kunit_absent_before_userspace_is_a_failure():
    rep = console.scan_text("[ 0.0] Linux\n[ 0.1] Kernel panic - not syncing: VFS\n")
    assert results.evaluate_kunit(rep).status == "FAIL"


def test_file_errors_fail_the_run():
    rep = console.scan_text("[ 0.0] Linux\n@@MO-FILE-BEGIN f\nAAAA\n@@MO-FILE-END f size=5\n@@MO-DONE\n")
    summ = results.summarize(rep, [])
    assert not summ.ok and summ.file_problems


MIG_FAIL = """[ 0.0] Linux
@@MO-BEGIN migration
TAP version 13
1..2
ok 1 migration.private_anon
# migration.c:310:shared_anon_htlb:Expected migrate(ptr, self->n1, self->n2) (-2) == 0 (0)
not ok 2 migration.shared_anon_htlb
@@MO-END migration rc=1 t=40
@@MO-DONE
"""


def test_known_failures(tmp_path):
    kf = tmp_path / "kf"
    kf.write_text("# comment\nmigration migration.shared_anon_htlb  # fails on vanilla too\n\n")
    known = results.load_known_failures(kf)
    assert known == {"migration": {"migration.shared_anon_htlb": "fails on vanilla too"}}
    rep = console.scan_text(MIG_FAIL)
    s = results.summarize(rep, ["migration"], known=known).suites[0]
    assert s.status == "PASS"
    assert "known failure: migration.shared_anon_htlb (fails on vanilla too)" in s.line()
    # without the entry it fails
    assert results.summarize(rep, ["migration"]).suites[0].status == "FAIL"
    # a known failure does not hide another failure
    rep2 = console.scan_text(MIG_FAIL.replace("ok 1 migration.private_anon",
                                              "not ok 1 migration.private_anon"))
    s2 = results.summarize(rep2, ["migration"], known=known).suites[0]
    assert s2.status == "FAIL" and s2.failed_names == ["migration.private_anon"]
    # an entry that passes again is pointed out
    rep3 = console.scan_text(MIG_FAIL.replace("not ok 2", "ok 2").replace("rc=1", "rc=0"))
    s3 = results.summarize(rep3, ["migration"], known=known).suites[0]
    assert s3.status == "PASS" and "known failure now passes" in s3.reason


def test_repo_known_failures_file_parses():
    from lab.molab.qemu import KNOWN_FAILURES
    known = results.load_known_failures(KNOWN_FAILURES)
    assert all(isinstance(v, dict) for v in known.values())
