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
    # kunit: leaves are copy_single_folio, copy_batch, 4K, 64K, 2M, register_unregister
    assert r["kunit"].status == "PASS" and r["kunit"].tests == 6 and r["kunit"].skipped == 0
    assert r["migration"].status == "PASS" and r["migration"].tests == 2
    assert r["migration"].skipped_names == []
    assert r["sample"].status == "PASS"
    lines = summ.lines()
    assert lines[0] == "PASS  kunit  (6 tests)"
    assert lines[1].startswith("PASS  migration  (2 tests)")
    # the tally counts test cases: kunit 6, migration 2, sample 1
    assert lines[-1] == "9 passed, 0 failed"


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
    assert r["notap"].status == "FAIL" and r["notap"].reason == "no TAP results: nothing was tested"
    assert r["missing"].status == "FAIL" and r["missing"].reason.startswith("missing")
    assert r["short"].status == "FAIL" and "planned 4" in r["short"].reason
    assert r["allskip"].status == "FAIL" and "no DMA engine" in r["allskip"].reason
    assert "nothing was tested" in r["allskip"].reason
    assert r["neverran"].status == "FAIL" and "did not run" in r["neverran"].reason
    # cases: brokentap 2 passed + 1 failed, kunit 1 + 1, short 2 passed (+1 for the suite),
    # crashy, notap, missing, allskip, neverran one each
    assert summ.lines()[-1] == "5 passed, 8 failed"


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
    assert any(l.startswith("FAIL  console  1 finding(s): warning: WARNING: CPU: 1 PID: 77")
               for l in summ.lines())


def test_emulator_fault_line_and_status():
    log = ("[ 0.0] Linux\n[ 1.0] Oops: int3: 0000 [#1] PREEMPT SMP\n"
           "[ 1.0] RIP: 0010:f+0x4/0x80\n")
    rep = console.excuse_int3(console.scan_text(log, "multi"),
                              console.PatchSites({0x1003}, {"f": [0x1000]}))
    summ = results.summarize(rep, [])
    assert summ.status == "EMULATOR-FAULT" and not summ.ok
    line = [l for l in summ.lines() if l.startswith("EMULATOR-FAULT")][0]
    assert "multi-threaded TCG" in line and "Oops: int3" in line and "jump-label site" in line


def test_kunit_without_output_or_suites_fails():
    rep = console.scan_text("[ 0.5] KTAP version 1\n[ 0.5] 1..0\n@@MO-DONE\n")
    s = results.evaluate_kunit(rep)
    assert s.status == "FAIL" and "nothing was tested" in s.reason
    rep = console.scan_text("[ 0.0] Linux\n@@MO-DONE\n")
    assert results.evaluate_kunit(rep).status == "FAIL"


def test_kunit_absent_before_userspace_is_a_failure():
    rep = console.scan_text("[ 0.0] Linux\n[ 0.1] Kernel panic - not syncing: VFS\n")
    assert results.evaluate_kunit(rep).status == "FAIL"


def test_expected_kunit_suite_missing_fails():
    rep = console.scan_text((FIX / "clean.log").read_text())
    assert results.evaluate_kunit(rep, expect=("migrate_copy", "migrator_api")).status == "PASS"
    s = results.evaluate_kunit(rep, expect=("migrate_copy", "migrate_offload_registry"))
    assert s.status == "FAIL" and "absent: migrate_offload_registry" in s.reason


def _with_end_state(state, start="tainted=0 debug_locks=1 kmemleak=-"):
    text = (FIX / "clean.log").read_text()
    text = text.replace("@@MO-STATE start tainted=262144 debug_locks=1 kmemleak=-",
                        f"@@MO-STATE start {start}")
    return text.replace("@@MO-STATE end tainted=262144 debug_locks=1 kmemleak=on",
                        f"@@MO-STATE end {state}" if state else "")


def test_kernel_health_at_the_end_of_the_run():
    def health(state, debug=True, **kw):
        rep = console.scan_text(_with_end_state(state, **kw))
        return results.summarize(rep, ["sample"], require_debug=debug)
    assert health("tainted=262144 debug_locks=1 kmemleak=on").ok     # KUnit's N only
    s = health("tainted=512 debug_locks=1 kmemleak=on")               # W: a warning
    assert not s.ok and "kernel tainted: 512 (W) at the end" in s.lines()[-2]
    assert not health("tainted=0 debug_locks=0 kmemleak=on").ok      # lockdep turned off
    assert not health("tainted=0 debug_locks=1 kmemleak=off").ok     # kmemleak disabled
    assert health("tainted=0 debug_locks=1 kmemleak=off", debug=False).ok
    s = health("")                                                   # no end state at all
    assert not s.ok and "no end state" in s.lines()[-2]
    s = health("tainted=4096 debug_locks=1 kmemleak=on", start="tainted=4096 debug_locks=1 kmemleak=on")  # O at boot
    assert not s.ok and "at the start" in " ".join(s.lines())


def test_file_errors_fail_the_run():
    rep = console.scan_text("[ 0.0] Linux\n@@MO-FILE-BEGIN f\nAAAA\n@@MO-FILE-END f size=5\n@@MO-DONE\n")
    summ = results.summarize(rep, [])
    assert not summ.ok and summ.file_problems


MIG_FAIL = """[ 0.0] Linux
@@MO-BEGIN migration
TAP version 13
1..2
ok 1 migration.private_anon
#  RUN           migration.shared_anon_htlb ...
Didn't migrate 1 pages
# migration.c:310:shared_anon_htlb:Expected migrate(ptr, self->n1, self->n2) (-2) == 0 (0)
not ok 2 migration.shared_anon_htlb
@@MO-END migration rc=1 t=40
@@MO-DONE
"""


KF_TEXT = "Didn't migrate 1 pages && Expected migrate(ptr, self->n1, self->n2) (-2) == 0 (0)"


def _known(tmp_path, release="6.12.117", text=KF_TEXT):
    kf = tmp_path / "kf"
    kf.write_text(f"# comment\nmigration | migration.shared_anon_htlb | {release} | {text} | "
                  f"fails on vanilla too\n\n")
    return results.load_known_failures(kf)


def _mig(*repl):
    text = MIG_FAIL.replace("[ 0.0] Linux", "[ 0.0] Linux version 6.12.117 (x)")
    for a, b in repl:
        text = text.replace(a, b)
    return console.scan_text(text)


def test_known_failures(tmp_path):
    known = _known(tmp_path)
    kf = known["migration"]["migration.shared_anon_htlb"]
    assert (kf.seen_on, kf.text, kf.why) == ("6.12.117", KF_TEXT, "fails on vanilla too")
    rep = _mig()
    s = results.summarize(rep, ["migration"], known=known).suites[0]
    assert s.status == "PASS" and s.rc == 1
    assert "known failure: migration.shared_anon_htlb (fails on vanilla too)" in s.line()
    assert (s.passed, s.failed, s.known_failed) == (1, 0, 1)
    # without the entry it fails
    assert results.summarize(rep, ["migration"]).suites[0].status == "FAIL"
    # a known failure does not hide another failure
    rep2 = _mig(("ok 1 migration.private_anon", "not ok 1 migration.private_anon"))
    s2 = results.summarize(rep2, ["migration"], known=known).suites[0]
    assert s2.status == "FAIL" and s2.failed_names == ["migration.private_anon"]
    # an entry that passes again is pointed out
    rep3 = console.scan_text(MIG_FAIL.replace("not ok 2", "ok 2").replace("rc=1", "rc=0"))
    s3 = results.summarize(rep3, ["migration"], known=known).suites[0]
    assert s3.status == "PASS" and "known failure now passes" in s3.reason


def test_known_failure_does_not_excuse_a_crash_or_timeout(tmp_path):
    known = _known(tmp_path)
    for rc in (139, 124, 2, 3):
        s = results.summarize(_mig(("rc=1", f"rc={rc}")), ["migration"], known=known).suites[0]
        assert s.status == "FAIL" and f"exit code {rc}" in s.reason, (rc, s.reason)


def test_known_failure_matches_text_and_release(tmp_path):
    # the same test failing with another message is a failure
    s = results.summarize(_mig(("(-2)", "(-1)")), ["migration"],
                          known=_known(tmp_path)).suites[0]
    assert s.status == "FAIL" and "failed otherwise" in s.reason
    # on another kernel release the entry does not apply
    s = results.summarize(_mig(), ["migration"], known=_known(tmp_path, "6.12.99")).suites[0]
    assert s.status == "FAIL" and "known failure of 6.12.99" in s.reason


def test_known_failures_file_with_a_bad_line_is_an_error(tmp_path):
    import pytest
    from lab.molab.errors import LabError
    kf = tmp_path / "kf"
    kf.write_text("migration migration.shared_anon_htlb  # the old format\n")
    with pytest.raises(LabError):
        results.load_known_failures(kf)


def test_repo_known_failures_file_parses():
    from lab.molab.qemu import KNOWN_FAILURES
    known = results.load_known_failures(KNOWN_FAILURES)
    assert all(isinstance(v, dict) for v in known.values())


def test_expected_kunit_suite_with_every_case_skipped_fails():
    text = (FIX / "clean.log").read_text()
    text = text.replace("ok 1 register_unregister", "ok 1 register_unregister # SKIP no engine")
    s = results.evaluate_kunit(console.scan_text(text), expect=("migrate_copy", "migrator_api"))
    assert s.status == "FAIL" and "no passed case (all skipped): migrator_api" in s.reason


def _one(body, rc="rc=0", name="s"):
    log = f"[ 0.0] Linux\n@@MO-BEGIN {name}\n{body}\n@@MO-END {name} {rc} t=1\n@@MO-DONE\n"
    return results.summarize(console.scan_text(log), [name]).suites[0]


def test_a_kernel_message_cannot_hide_a_failed_result():
    # "not o" + kernel message + "k 2 b": the guest's line is joined again
    s = _one("TAP version 13\n1..2\nok 1 a\nnot o[   3.1] random: crng reseeded\n"
             "[   3.2] another message\nk 2 b", rc="rc=1")
    assert s.status == "FAIL" and s.failed_names == ["b"], s.reason
    # the END marker itself cut in two keeps its exit code
    log = ("[ 0.0] Linux\n@@MO-BEGIN s\n1..1\nok 1 a\n@@MO-END s r[   3.1] msg\nc=3 t=1\n"
           "@@MO-DONE\n")
    s = results.summarize(console.scan_text(log), ["s"]).suites[0]
    assert s.status == "FAIL" and s.rc == 3


def test_an_end_marker_without_exit_code_fails():
    s = _one("1..1\nok 1 a", rc="")
    assert s.status == "FAIL" and "without an exit code" in s.reason


def test_structural_tap_problems_fail():
    s = _one("ok 1 a\nok 2 b")                              # no plan
    assert s.status == "FAIL" and "without a plan" in s.reason
    s = _one("1..2\nok 1 a\nok 1 b")                        # duplicated number
    assert s.status == "FAIL" and "not numbered 1..2" in s.reason
    s = _one("1..2\nok 1 a\nok 3 b")                        # a lost result
    assert s.status == "FAIL" and "numbered 3" in s.reason
    s = _one("1..2\nnot ok 1 a # TODO\nok 2 b # XFAIL")     # nothing passed
    assert s.status == "FAIL" and "nothing was tested" in s.reason
    s = _one("1..2\nnot ok 1 a # TODO later\nok 2 b")       # a TODO is not a pass
    assert s.status == "FAIL" and (s.passed, s.skipped) == (1, 1) and "a # skipped" not in s.reason


def test_kselftest_totals_that_disagree_with_tap_fail():
    body = "TAP version 13\n1..1\nok 1 a\n# Totals: pass:1 fail:0 xfail:0 xpass:0 skip:0 error:0"
    assert _one(body).status == "PASS"
    s = _one(body.replace("error:0", "error:1"))
    assert s.status == "FAIL" and "error:1" in s.reason


def test_kselftest_totals_count_a_known_failure(tmp_path):
    totals = "# Totals: pass:1 fail:1 xfail:0 xpass:0 skip:0 error:0\n"
    rep = _mig(("@@MO-END", totals + "@@MO-END"))
    s = results.summarize(rep, ["migration"], known=_known(tmp_path)).suites[0]
    assert s.status == "PASS", s.reason
    rep = _mig(("@@MO-END", totals.replace("fail:1", "fail:2") + "@@MO-END"))
    s = results.summarize(rep, ["migration"], known=_known(tmp_path)).suites[0]
    assert s.status == "FAIL" and "fail:2" in s.reason


def test_known_failure_that_timed_out_is_not_excused(tmp_path):
    rep = _mig(("not ok 2", "# shared_anon_htlb: Test terminated by timeout\nnot ok 2"))
    s = results.summarize(rep, ["migration"], known=_known(tmp_path)).suites[0]
    assert s.status == "FAIL" and "crashed or timed out" in s.reason


def test_incomplete_state_lines_fail():
    text = (FIX / "clean.log").read_text().replace(
        "@@MO-STATE end tainted=262144 debug_locks=1 kmemleak=on", "@@MO-STATE end tainted=0")
    s = results.summarize(console.scan_text(text), ["sample"])
    assert not s.ok and any("end state lacks debug_locks, kmemleak" in h for h in s.health)


def test_known_failure_needs_every_text_including_plain_output(tmp_path):
    # upstream migrate() fails with the same assertion when move_pages()
    # itself errs: only the line it printed (no "#") tells the two apart
    known = _known(tmp_path)
    for bad in ("Couldn't migrate pages: Cannot allocate memory", ""):
        s = results.summarize(_mig(("Didn't migrate 1 pages", bad)), ["migration"],
                              known=known).suites[0]
        assert s.status == "FAIL" and "Didn't migrate 1 pages" in s.reason, s.reason
    s = results.summarize(_mig(("Didn't migrate 1 pages", "Didn't migrate 7 pages")),
                          ["migration"], known=known).suites[0]
    assert s.status == "FAIL"


def test_any_skipped_test_fails_unless_listed(tmp_path):
    # one 2M case skipped among passes: the case that mattered did not run
    s = _one("1..3\nok 1 anon_4k\nok 2 anon_2m # SKIP only 3% of the buffer in 2048kB folios\n"
             "ok 3 shmem")
    assert s.status == "FAIL" and "anon_2m" in s.reason and "did not run" in s.reason, s.reason
    # listed in lab/known-failures with its skip reason: allowed
    kf = tmp_path / "kf"
    kf.write_text("s | anon_2m | 6.12.117 | only 3% | no THP in this guest\n")
    log = ("[ 0.0] Linux\n@@MO-BEGIN s\n1..2\nok 1 a\nok 2 anon_2m # SKIP only 3% left\n"
           "@@MO-END s rc=0 t=1\n@@MO-DONE\n")
    known = results.load_known_failures(kf)
    s = results.summarize(console.scan_text(log), ["s"], known=known).suites[0]
    assert s.status == "PASS", s.reason


def test_a_skipped_kunit_case_fails():
    text = (FIX / "clean.log").read_text()
    text = text.replace("ok 1 register_unregister", "ok 1 register_unregister # SKIP no free folio")
    s = results.evaluate_kunit(console.scan_text(text))
    assert s.status == "FAIL" and "register_unregister" in s.reason, s.reason


def test_a_suite_that_left_a_setting_changed_fails():
    log = ("[ 0.0] Linux\n@@MO-BEGIN s\n1..1\nok 1 a\n@@MO-END s rc=0 t=1\n"
           "molab guest: s left /sys/kernel/mm/transparent_hugepage/shmem_enabled at always "
           "(boot: never): put back\n@@MO-DONE\n")
    summ = results.summarize(console.scan_text(log), ["s"])
    assert summ.suites[0].status == "PASS"
    assert not summ.ok and any("suite s left" in p and "shmem_enabled at always" in p
                               for p in summ.protocol), summ.protocol
    # without the line, no protocol problem
    summ = results.summarize(console.scan_text(log.replace("molab guest: s left", "x")), ["s"])
    assert summ.protocol == []


def test_a_suite_that_ran_twice_fails():
    block = "@@MO-BEGIN s\n1..1\n{r} 1 a\n@@MO-END s rc={rc} t=1\n"
    log = ("[ 0.0] Linux\n" + block.format(r="not ok", rc=1) + block.format(r="ok", rc=0)
           + "@@MO-DONE\n")
    summ = results.summarize(console.scan_text(log), ["s"])
    assert summ.suites[0].status == "PASS"          # the last block alone
    assert not summ.ok and any("ran 2 times" in p for p in summ.protocol)
    # an END without its BEGIN is a protocol error too
    log = "[ 0.0] Linux\n@@MO-END t rc=0 t=1\n@@MO-DONE\n"
    summ = results.summarize(console.scan_text(log), [])
    assert not summ.ok and any("without BEGIN" in p for p in summ.protocol)


def test_an_engine_falling_back_outside_its_fault_suites_fails():
    msg = "[  9.1] dcbm: DMA copies timed out repeatedly, falling back to the cpu copy"
    log = ("[ 0.0] Linux\n@@MO-BEGIN {n}\n1..1\nok 1 a\n" + msg +
           "\n@@MO-END {n} rc=0 t=1\n@@MO-DONE\n")
    s = results.summarize(console.scan_text(log.format(n="engine_integrity")),
                          ["engine_integrity"]).suites[0]
    assert s.status == "FAIL" and "falling back" in s.reason, s.reason
    s = results.summarize(console.scan_text(log.format(n="dcbm_late")), ["dcbm_late"]).suites[0]
    assert s.status == "PASS", s.reason


# A suite that wraps another TAP producer echoes its results as diagnostics
# ("# not ok 3 x", "# | not ok 3 x", tap_passed's "# tap: N passed, M failed").
# A wrapper that lost the inner exit code would still print "ok": the judge
# must see the inner failure.
NESTED_CASES = [
    "# ok 1 inner_a\n# not ok 2 inner_b\nok 1 wrapper",
    "# | not ok 7 inner_b # with a comment\nok 1 wrapper",
    "#   not ok 2 - inner_b\nok 1 wrapper",
    "# tap: 5 passed, 1 failed, 0 skipped, plan 6\nok 1 wrapper",
    "# tap: 0 passed, 0 failed, 10 skipped, plan 10\nok 1 wrapper",
    "# tap: 3 passed, 0 failed, 0 skipped, plan none\nok 1 wrapper",
    "# tap: 3 passed, 0 failed, 0 skipped, plan 6\nok 1 wrapper",
    "# tap: 3 passed, 0 failed, 1 skipped, plan 4\nok 1 wrapper",
    "# Bail out! no memory\nok 1 wrapper",
    "# | Bail out! no memory\nok 1 wrapper",
    "# # Totals: pass:3 fail:1 xfail:0 xpass:0 skip:0 error:0\nok 1 wrapper",
    "# # Totals: pass:3 fail:0 xfail:0 xpass:0 skip:0 error:1\nok 1 wrapper",
]


def test_a_nested_failure_under_an_ok_result_fails():
    for inner in NESTED_CASES:
        s = _one(f"TAP version 13\n1..1\n{inner}")
        assert s.status == "FAIL", inner
        assert "nested" in s.reason and "wrapper" in s.reason, s.reason


def test_a_nested_failure_after_the_last_result_fails():
    s = _one("TAP version 13\nok 1 wrapper\n# not ok 2 inner_b\n1..1")
    assert s.status == "FAIL" and "nested" in s.reason, s.reason


def test_nested_results_that_passed_or_skipped_are_fine():
    body = ("TAP version 13\n1..1\n# ok 1 a\n# ok 2 b # SKIP no device\n"
            "# tap: 2 passed, 0 failed, 1 skipped, plan 3\n"
            "# 1 skip(s) allowed for this program (device-coherent)\n# nothing is not ok here\n"
            "# # Totals: pass:2 fail:0 xfail:0 xpass:0 skip:1 error:0\n"
            "# not okay: a sentence, not a result\nok 1 wrapper")
    s = _one(body)
    assert s.status == "PASS", s.reason


def test_a_nested_failure_under_a_failed_result_reports_the_result():
    s = _one("TAP version 13\n1..1\n# not ok 2 inner_b\nnot ok 1 wrapper", rc="rc=1")
    assert s.status == "FAIL" and s.reason.startswith("not ok: wrapper"), s.reason


def test_recorded_clean_console_has_no_nested_failure():
    assert summarize("clean.log", ["kunit", "migration", "sample"]).ok


def test_a_known_failure_with_its_inner_failures_still_passes(tmp_path):
    # mm_selftests prints the wrapped program's tally under its (known
    # failed) result: the known failure excuses it, the nested rule must not
    # fail it again.
    rep = _mig(("not ok 2", "# tap: 64 passed, 2 failed, 0 skipped, plan 66\n"
                            "# | not ok 17 wp-fork-pin\nnot ok 2"))
    s = results.summarize(rep, ["migration"], known=_known(tmp_path)).suites[0]
    assert s.status == "PASS", s.reason


WRAPPER_SHAPES = """TAP version 13
# ok 1 integrity.anon_4k.move_pages
# ok 2 integrity.anon_2m.move_pages
ok 1 cpu: kselftest integrity (anon 4K-2M, shmem, tmpfs, concurrent)
# tap: 36 passed, 0 failed, 0 skipped, plan 36
# compaction_test [dcbm]: 24.1s, exit 0; pgmigrate_success +5123
ok 2 compaction_test [dcbm]
# tap: 29 passed, 0 failed, 29 skipped, plan 58
# 29 skip(s) allowed for this program (device-coherent)
ok 3 hmm-tests [dcbm]
# migrate_offload_registry: 1 pages migrated while it ran; 12 cases passed, 0 'not ok' lines
ok 4 kunit_under_load: migrate_offload_registry passed under load
1..4"""


def test_passing_wrapper_output_of_the_guest_suites_passes():
    # the shapes (from their printf lines) engine_integrity, mm_selftests
    # (allowed skips) and
    # kunit_under_load print when their wrapped programs pass
    s = _one(WRAPPER_SHAPES)
    assert s.status == "PASS", s.reason
