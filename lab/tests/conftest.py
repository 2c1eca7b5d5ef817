"""Host tests run the same whatever make passes down: `make test SUITES=x`
puts SUITES (and any other command-line variable) into the environment,
where the lab's option defaults would read it.

A test that needs a tool lab/setup.sh installs (busybox, a C compiler,
matplotlib) skips without it on a developer's machine; where setup.sh has run (make
test, so CI) such a skip would read as a pass and hide what it tests:
there MOLAB_REQUIRE_TOOLS=1 (cli.cmd_test sets it) makes it a failure."""
import os
import re

import pytest

LAB_ENV = ("ACCEL", "BENCH_ARGS", "BREAK", "FLAVOUR", "KSRC", "MOLAB_DEBUG", "QUICK", "SMP",
           "SUITES", "ROUNDS", "LABEL", "ARGS", "VARIANT", "RESET")

# the skip reasons of a missing tool: "busybox not installed", "no C
# compiler", pytest.importorskip("matplotlib")
TOOL_MISSING = re.compile(r"\bnot installed\b|\bno C compiler\b|"
                          r"could not import '(matplotlib|scipy)'")


@pytest.fixture(autouse=True)
def _no_make_variables(monkeypatch):
    for name in LAB_ENV:
        monkeypatch.delenv(name, raising=False)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if rep.skipped and os.environ.get("MOLAB_REQUIRE_TOOLS") == "1":
        why = rep.longrepr[2] if isinstance(rep.longrepr, tuple) else str(rep.longrepr)
        if TOOL_MISSING.search(why):
            rep.outcome = "failed"
            rep.longrepr = (f"{why}, but lab/setup.sh installs it (MOLAB_REQUIRE_TOOLS=1): "
                            "a skip here would hide what the test checks")
