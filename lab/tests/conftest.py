"""Host tests run the same whatever make passes down: `make test SUITES=x`
puts SUITES (and any other command-line variable) into the environment,
where the lab's option defaults would read it."""
import pytest

LAB_ENV = ("ACCEL", "BENCH_ARGS", "BREAK", "FLAVOUR", "KSRC", "MOLAB_DEBUG", "QUICK", "SMP",
           "SUITES", "ROUNDS", "LABEL", "ARGS", "VARIANT", "RESET")


@pytest.fixture(autouse=True)
def _no_make_variables(monkeypatch):
    for name in LAB_ENV:
        monkeypatch.delenv(name, raising=False)
