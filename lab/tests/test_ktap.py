from lab.molab import ktap


def parse(text, **kw):
    return ktap.parse_text(text, **kw)


def test_kselftest_harness_output():
    res = parse("""TAP version 13
1..3
# Starting 3 tests from 1 test cases.
#  RUN           migration.private_anon ...
#            OK  migration.private_anon
ok 1 migration.private_anon
#  RUN           migration.shared_anon ...
#      SKIP      Not enough threads or NUMA nodes available
ok 2 migration.shared_anon # SKIP Not enough threads or NUMA nodes available
not ok 3 migration.private_anon_thp
# FAILED: 1 / 3 tests passed.
""")
    assert res.version == "TAP version 13"
    assert res.planned == 3
    assert [t.name for t in res.tests] == ["migration.private_anon", "migration.shared_anon",
                                          "migration.private_anon_thp"]
    assert res.tests[1].skipped and res.tests[1].reason.startswith("Not enough threads")
    assert res.counts() == (3, 1, 1, 1)
    assert [n for n, _ in res.failures()] == ["migration.private_anon_thp"]
    assert ktap.problems(res) == []


def test_nested_ktap_with_timestamps():
    text = """[    0.5] KTAP version 1
[    0.5] 1..1
[    0.5]     KTAP version 1
[    0.5]     # Subtest: suite
[    0.5]     1..2
[    0.5]     ok 1 plain
[    0.5]         KTAP version 1
[    0.5]         # Subtest: params
[    0.5]         ok 1 p1
[    0.5]         not ok 2 p2
[    0.5]     # params: pass:1 fail:1 skip:0 total:2
[    0.5]     not ok 2 params
[    0.5] # suite: pass:1 fail:1 skip:0 total:2
[    0.5] not ok 1 suite
"""
    res = parse(text)
    assert len(res.tests) == 1
    suite = res.tests[0]
    assert suite.name == "suite" and not suite.ok and suite.planned == 2
    assert [t.name for t in suite.subtests] == ["plain", "params"]
    assert [t.name for t in suite.subtests[1].subtests] == ["p1", "p2"]
    # leaves: plain, p1, p2
    assert res.counts() == (3, 2, 1, 0)
    # only the deepest failure is named
    assert [n for n, _ in res.failures()] == ["suite.params.p2"]


def test_timestamp_with_caller_id_and_cr():
    res = parse("[    1.234567][    T1] KTAP version 1\r\n[    1.234568][    T1] 1..1\r\n"
                "[    1.234569][    T1] ok 1 x\r\n")
    assert res.version == "KTAP version 1"
    assert res.counts() == (1, 1, 0, 0)


def test_strip_timestamp():
    assert ktap.strip_timestamp("[    1.234567] ok 1 a") == "ok 1 a"
    assert ktap.strip_timestamp("[    1.234567]     # Subtest: s") == "    # Subtest: s"
    assert ktap.strip_timestamp("no stamp") == "no stamp"


def test_skip_and_todo_directives():
    res = parse("1..4\nok 1 a # SKIP why\nnot ok 2 b # TODO later\nok 3 - c # skip lower\n"
                "not ok 4 d # SKIP not supported\n")
    assert [t.directive for t in res.tests] == ["SKIP", "TODO", "SKIP", "SKIP"]
    assert res.tests[2].name == "c"
    assert res.failures() == []
    total, passed, failed, skipped = res.counts()
    # an expected failure (TODO) tested nothing that passed: a skip
    assert (total, failed, skipped) == (4, 0, 4)


def test_plan_skip():
    res = parse("TAP version 13\n1..0 # SKIP no NUMA\n")
    assert res.planned == 0 and res.plan_skip == "no NUMA"
    assert ktap.problems(res) == []


def test_plan_mismatch_is_a_problem():
    res = parse("1..3\nok 1 a\nok 2 b\n")
    assert ktap.problems(res) == ["planned 3 tests, 2 reported"]


def test_missing_parent_result_is_reported():
    # kernel died in the middle of a KUnit suite
    res = parse("KTAP version 1\n1..1\n    KTAP version 1\n    # Subtest: s\n    1..2\n"
                "    ok 1 a\n")
    assert res.tests == [] and len(res.orphans) == 1
    probs = ktap.problems(res)
    assert any("planned 1 tests, 0 reported" in p for p in probs)
    assert any("without a parent" in p for p in probs)


def test_malformed_lines_are_ignored():
    res = parse("TAP version 13\n1..2\nokay 1 nope\nok 1 a\n garbage here\nnot ok\n"
                "1..x\nok two\n")
    assert "okay 1 nope" in res.unknown and "garbage here" in res.unknown
    # "not ok" without number and "ok two" are still results
    assert [t.ok for t in res.tests] == [True, False, True]
    assert res.tests[1].name == "test ?"
    assert res.tests[2].name == "two"


def test_bail_out():
    res = parse("1..2\nok 1 a\nBail out! out of memory\n")
    assert res.bail_out == "out of memory"
    assert ktap.problems(res)[0] == "bail out: out of memory"


def test_diagnostics_attach_to_following_result():
    res = parse("1..1\n# checksum mismatch at 4096\nnot ok 1 integrity\n")
    assert res.tests[0].diagnostics == ["# checksum mismatch at 4096"]


def test_empty_input():
    res = parse("")
    assert not res.has_output and res.counts() == (0, 0, 0, 0)
