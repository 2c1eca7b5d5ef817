"""A host test skipped for want of a tool lab/setup.sh installs (busybox,
a C compiler, matplotlib) fails where make test runs the unit tests:
there a skip would read as a pass and hide a regression
(lab/tests/conftest.py)."""

import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

from lab.molab import cli

SKIPPING = '''
import pytest
@pytest.mark.skipif(True, reason="busybox not installed")
def test_needs_busybox(): pass
def test_needs_cc(): pytest.skip("no C compiler")
def test_needs_a_kernel_tree(): pytest.skip("no kernel tree in build/linux")
def test_runs(): pass
def test_needs_matplotlib(): pytest.importorskip("matplotlib")
'''


def run_pytest(tmp_path, env):
    """pytest on a test file that skips, beside a copy of lab/tests' conftest."""
    shutil.copy(Path(__file__).parent / "conftest.py", tmp_path / "conftest.py")
    (tmp_path / "test_skipping.py").write_text(SKIPPING)
    (tmp_path / "matplotlib.py").write_text("raise ModuleNotFoundError('hidden by the test')\n")
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rA",
                        str(tmp_path)], capture_output=True, text=True, env=env, cwd=tmp_path)
    return r.returncode, r.stdout


def test_a_missing_tool_skips_on_a_developers_machine(tmp_path, monkeypatch):
    monkeypatch.delenv("MOLAB_REQUIRE_TOOLS", raising=False)
    rc, out = run_pytest(tmp_path, None)
    assert rc == 0 and "1 passed, 4 skipped" in out, out


def test_a_missing_tool_fails_where_make_test_runs_them(tmp_path, monkeypatch):
    monkeypatch.setenv("MOLAB_REQUIRE_TOOLS", "1")
    rc, out = run_pytest(tmp_path, None)
    assert rc == 1, out
    # a skipif is reported at setup (an error), a skip in the body as a failure
    assert "ERROR test_skipping.py::test_needs_busybox" in out
    assert "FAILED test_skipping.py::test_needs_cc" in out
    assert "FAILED test_skipping.py::test_needs_matplotlib" in out
    assert "busybox not installed, but lab/setup.sh installs it" in out
    # what the unit step cannot have (the tree comes later) still skips
    assert "SKIPPED [1] test_skipping.py:6: no kernel tree in build/linux" in out
    assert "PASSED test_skipping.py::test_runs" in out


def test_make_test_runs_the_unit_tests_requiring_the_tools(monkeypatch):
    seen = {}

    def fake_run(cmd, **kw):          # the unit tests, failing: nothing after them runs
        seen.update(cmd=cmd, env=kw.get("env"))
        return SimpleNamespace(returncode=1)
    monkeypatch.setattr(cli.subprocess, "run", fake_run)
    monkeypatch.setattr(cli, "_pytest_python", lambda: sys.executable)
    assert cli.main(["test", "--skip-setup"]) == cli.EXIT_FAIL
    assert seen["cmd"][-1] == "lab/tests" and seen["env"]["MOLAB_REQUIRE_TOOLS"] == "1"
