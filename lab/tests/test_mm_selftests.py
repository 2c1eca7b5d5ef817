"""The upstream mm selftests the lab builds, and the mm_selftests suite's
output handling (run with busybox sh on the host)."""

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from lab.molab import initramfs
from lab.molab.initramfs import MM_SELFTESTS, selftest_command
from lab.molab.util import ROOT

BUSYBOX = shutil.which("busybox")
SUITE = ROOT / "guest" / "suites" / "mm_selftests"
MO_LIB = ROOT / "guest" / "lib" / "mo_lib.sh"
LINUX = ROOT / "build" / "linux"
MM = LINUX / "tools/testing/selftests/mm"


def test_program_list():
    for name in ("migration", "compaction_test", "transhuge-stress", "split_huge_page_test",
                 "khugepaged", "ksm_functional_tests", "ksm_tests", "uffd-unit-tests"):
        assert name in MM_SELFTESTS


def test_command_links_the_makefiles_helpers(tmp_path):
    def cmd(name):
        return selftest_command("/k", tmp_path, name, tmp_path / name)
    mm = "/k/tools/testing/selftests/mm"
    for name in MM_SELFTESTS:
        c = cmd(name)
        assert c[:2] == ["gcc", "-static"] and c[-2:] == ["-o", str(tmp_path / name)]
        assert f"{mm}/{name}.c" in c and f"{mm}/vm_util.c" in c and f"{mm}/thp_settings.c" in c
        assert "-lpthread" in c and "-lrt" in c and "-lm" in c
    assert f"{mm}/uffd-common.c" in cmd("uffd-unit-tests")
    assert f"{mm}/uffd-common.c" not in cmd("khugepaged")
    assert "-lnuma" in cmd("ksm_tests") and "-lnuma" in cmd("migration")
    c = cmd("khugepaged")
    assert c[c.index("-include") + 1] == "kselftest.h"


@pytest.mark.skipif(not (MM / "Makefile").exists(), reason="no kernel tree in build/linux")
def test_helpers_match_the_kernels_makefile():
    # "$(OUTPUT)/x: uffd-common.c" and "$(OUTPUT)/x: LDLIBS += -lnuma" lines.
    mk = (MM / "Makefile").read_text()
    for name, (helpers, libs, _) in MM_SELFTESTS.items():
        assert (MM / f"{name}.c").exists(), name
        want = set()
        for m in re.finditer(r"^\$\(OUTPUT\)/(\S+?):\s*(.*)$", mk, re.M):
            targets = [t.replace("$(OUTPUT)/", "") for t in [m.group(1), *m.group(2).split()]
                       if t.startswith("$(OUTPUT)/") or t == m.group(1)]
            if name in targets:
                want.update(w for w in m.group(2).split() if w.endswith(".c") or w.startswith("-l"))
        assert {w for w in want if w.endswith(".c")} <= set(helpers), name
        assert {w for w in want if w.startswith("-l")} <= set(libs), name


class KB:
    def __init__(self, out):
        self.src = LINUX
        self.out = out
        self.hdr = out / "hdr"


def _installed_headers():
    for d in sorted((ROOT / "build" / "out").glob("patched-*/hdr/include")):
        if (d / "linux" / "userfaultfd.h").exists():
            return d
    return None


@pytest.mark.skipif(not (MM / "Makefile").exists() or not _installed_headers()
                    or not shutil.which("gcc"), reason="no kernel tree or installed headers")
def test_build_one_program(tmp_path):
    kb = KB(tmp_path)
    kb.hdr.mkdir()
    (kb.hdr / "include").symlink_to(_installed_headers())
    out = initramfs.build_mm_selftest(kb, "transhuge-stress")
    assert out == tmp_path / "selftests" / "transhuge-stress"
    assert initramfs.elf_is_static(out)
    mtime = out.stat().st_mtime_ns
    assert initramfs.build_mm_selftest(kb, "transhuge-stress").stat().st_mtime_ns == mtime


def test_missing_program_is_an_error(tmp_path):
    from lab.molab.errors import LabError
    kb = KB(tmp_path)
    kb.src = tmp_path
    with pytest.raises(LabError, match="not found"):
        initramfs.build_mm_selftest(kb, "khugepaged")


@pytest.mark.skipif(not BUSYBOX, reason="busybox not installed")
def test_suite_programs_are_built():
    text = SUITE.read_text()
    ids = re.search(r"^ALL=(\S+)$", text, re.M).group(1).split(",")
    spec = re.search(r"^spec\(\) {.*?^}\n", text, re.S | re.M).group(0)
    for i in ids + ["split_huge_page_test"]:
        r = subprocess.run([BUSYBOX, "sh", "-c", spec + f"spec {i} && echo $BIN $FMT $TMO"],
                           capture_output=True, text=True)
        assert r.returncode == 0, i
        binary, fmt, tmo = r.stdout.split()
        assert binary in MM_SELFTESTS and fmt in ("tap", "khugepaged", "uffd"), i
        assert 0 < int(tmo) <= 900, i
    assert subprocess.run([BUSYBOX, "sh", "-c", spec + "spec nosuch"]).returncode != 0


def test_suite_is_posix_sh_syntax():
    sh = [BUSYBOX, "sh", "-n", str(SUITE)] if BUSYBOX else ["sh", "-n", str(SUITE)]
    r = subprocess.run(sh, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def _funcs():
    out = []
    for path, names in ((MO_LIB, ("tap_passed",)), (SUITE, ("to_tap", "judge", "upstream_line"))):
        text = path.read_text()
        for n in names:
            m = re.search(rf"^{n}\(\) {{.*?^}}\n", text, re.S | re.M)
            assert m, n
            out.append(m.group(0))
    return "".join(out)


def _sh(tmp_path, script, log):
    (tmp_path / "log").write_text(log)
    return subprocess.run([BUSYBOX, "sh", "-c", _funcs() + script], capture_output=True,
                          text=True, cwd=tmp_path)


E = "\033"
KHUGEPAGED = f"""Save THP and khugepaged settings... {E}[32mOK{E}[0m

Run test: collapse_full (madvise:anon)
Collapse multiple fully populated PTE table... {E}[32mOK{E}[0m

Run test: collapse_empty (madvise:anon)
Do not collapse empty PTE table... {E}[32mOK{E}[0m

Run test: collapse_swapin_single_pte (madvise:anon)
Swapout one page... {E}[31mFail{E}[0m

Run test: collapse_max_ptes_none (madvise:anon)
Maybe collapse with max_ptes_none exceeded... {E}[33mSkip{E}[0m
Restore THP and khugepaged settings... {E}[32mOK{E}[0m
"""

UFFD = """Testing UFFDIO_API (with syscall)... done
Testing UFFDIO_API (with /dev/userfaultfd)... done
Testing register-ioctls on anon... done
Testing minor on hugetlb... skipped [reason: feature missing]
Testing sigbus on shmem... some noise
failed [reason: Signal test failed, userfaults: 0]
Testing move on anon... done
Userfaults unit tests: pass=4, skip=1, fail=1 (total=6)
"""


@pytest.mark.skipif(not BUSYBOX, reason="busybox not installed")
def test_khugepaged_report_as_tap(tmp_path):
    r = _sh(tmp_path, "to_tap khugepaged log > tap; cat tap; upstream_line 1 tap", KHUGEPAGED)
    lines = r.stdout.splitlines()
    assert lines[:6] == [
        "ok 1 Save THP and khugepaged settings",
        "ok 2 collapse_full (madvise:anon): Collapse multiple fully populated PTE table",
        "ok 3 collapse_empty (madvise:anon): Do not collapse empty PTE table",
        "not ok 4 collapse_swapin_single_pte (madvise:anon): Swapout one page (Fail)",
        "ok 5 collapse_max_ptes_none (madvise:anon): Maybe collapse with max_ptes_none "
        "exceeded # SKIP Skip",
        "ok 6 Restore THP and khugepaged settings"], r.stdout
    assert lines[6] == "1..6"
    assert lines[7] == ("# upstream: exit 1, 6/6 results, 1 failed: [collapse_swapin_single_pte "
                        "(madvise:anon): Swapout one page (Fail)], 1 skipped: "
                        "[collapse_max_ptes_none (madvise:anon): Maybe collapse with "
                        "max_ptes_none exceeded]")


@pytest.mark.skipif(not BUSYBOX, reason="busybox not installed")
def test_khugepaged_cut_short_has_no_plan(tmp_path):
    cut = KHUGEPAGED.split("Run test: collapse_empty")[0]
    r = _sh(tmp_path, "to_tap khugepaged log > tap; judge tap ''", cut)
    assert r.returncode != 0 and "plan none" in r.stdout


@pytest.mark.skipif(not BUSYBOX, reason="busybox not installed")
def test_uffd_report_as_tap(tmp_path):
    r = _sh(tmp_path, "to_tap uffd log", UFFD)
    assert r.stdout.splitlines() == [
        "ok 1 UFFDIO_API (with syscall)", "ok 2 UFFDIO_API (with /dev/userfaultfd)",
        "ok 3 register-ioctls on anon", "ok 4 minor on hugetlb # SKIP feature missing",
        "not ok 5 sigbus on shmem", "# failed [reason: Signal test failed, userfaults: 0]",
        "ok 6 move on anon", "1..6"]


@pytest.mark.skipif(not BUSYBOX, reason="busybox not installed")
@pytest.mark.parametrize("log,skips_ok,passed", [
    ("1..2\nok 1 a\nok 2 b\n", "", True),
    ("1..2\nok 1 a\nok 2 b # SKIP no xfs\n", "", False),
    ("1..2\nok 1 a\nok 2 b # SKIP no xfs\n", "no xfs", True),
    ("1..2\nok 1 a\nok 2 b # SKIP other\n", "no xfs", False),
    ("1..2\nok 1 a # SKIP no xfs\nok 2 b # SKIP no xfs\n", "no xfs", False),
    ("1..3\nok 1 a\nok 2 b # SKIP no xfs\n", "no xfs", False),
    ("1..2\nnot ok 1 a\nok 2 b # SKIP no xfs\n", "no xfs", False),
    ("1..0 # SKIP Prerequisites unsatisfied\n", "Prereq", False),
])
def test_judge(tmp_path, log, skips_ok, passed):
    r = _sh(tmp_path, f"judge log '{skips_ok}'", log)
    assert (r.returncode == 0) == passed, r.stdout + r.stderr


@pytest.mark.skipif(not BUSYBOX, reason="busybox not installed")
def test_upstream_line_names_exactly_the_failures(tmp_path):
    # A known failure matched on this line no longer matches once another
    # test fails too, or the exit code or the count of results changes.
    one = _sh(tmp_path, "upstream_line 1 log", "1..3\nok 1 a\nnot ok 2 b\nok 3 c\n").stdout
    two = _sh(tmp_path, "upstream_line 1 log", "1..3\nnot ok 1 a\nnot ok 2 b\nok 3 c\n").stdout
    cut = _sh(tmp_path, "upstream_line 139 log", "1..3\nok 1 a\nnot ok 2 b\n").stdout
    assert one.strip() == "# upstream: exit 1, 3/3 results, 1 failed: [b], 0 skipped:"
    known = "exit 1, 3/3 results, 1 failed: [b],"
    assert known in one and known not in two and known not in cut
