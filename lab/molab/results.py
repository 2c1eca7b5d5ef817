"""Turning a scanned console into per-suite verdicts and a run summary."""

import re
from dataclasses import dataclass, field

from . import ktap
from .console import STATUS_EMULATOR, STATUS_FAIL, STATUS_OK, split_kernel

PASS, FAIL, SKIP = "PASS", "FAIL", "SKIP"
KSFT_SKIP = 4


@dataclass
class SuiteResult:
    name: str
    status: str
    reason: str = ""
    tests: int = 0
    passed: int = 0
    failed: int = 0
    skipped: int = 0
    rc: int | None = None
    seconds: float | None = None
    skipped_names: list = field(default_factory=list)
    failed_names: list = field(default_factory=list)

    def line(self):
        if self.status == PASS:
            extra = f"{self.tests} test{'s' if self.tests != 1 else ''}"
            if self.skipped:
                shown = ", ".join(self.skipped_names[:4])
                more = f", +{len(self.skipped_names) - 4} more" if len(self.skipped_names) > 4 else ""
                extra += f", {self.skipped} skipped: {shown}{more}"
            if self.reason:
                extra += f"; {self.reason}"
            text = f"PASS  {self.name}  ({extra})"
        else:
            text = f"{self.status}  {self.name}  {self.reason}".rstrip()
        if self.seconds is not None:
            text += f"  [{self.seconds:.1f}s]"
        return text


def _names(tests, limit=3):
    shown = ", ".join(n for n, _ in tests[:limit])
    return shown + (f" (+{len(tests) - limit} more)" if len(tests) > limit else "")


_BOILERPLATE = re.compile(r"^#\s*(RUN|OK|FAIL|SKIP|Subtest:|Starting|PASSED|FAILED|Totals|module:)\b"
                          r"|^#\s+\S+: (pass|fail):\d+")
_TELLING = re.compile(r"fail|error|expect|assert|mismatch|terminated|timed? ?out|!=|==|bug",
                      re.I)


def failure_reason(diagnostics):
    """The most telling diagnostic line of a failed test ('' if none)."""
    cands = [d for d in diagnostics if not _BOILERPLATE.match(d)]
    for d in cands:
        if _TELLING.search(d):
            return d.lstrip("# ").strip()
    return cands[-1].lstrip("# ").strip() if cands else ""


def load_known_failures(path):
    """{suite: {test: reason}} from a known-failures file.

    One entry a line: ``<suite> <test name> [# why]``; blank lines and lines
    starting with # are ignored.
    """
    known = {}
    try:
        text = open(path).read()
    except OSError:
        return known
    for line in text.splitlines():
        body, _, why = line.partition("#")
        words = body.split()
        if len(words) < 2 or line.lstrip().startswith("#"):
            continue
        known.setdefault(words[0], {})[" ".join(words[1:])] = why.strip()
    return known


def evaluate_tap(name, tap, rc=None, seconds=None, known=None):
    """Verdict for one suite from its parsed TAP and exit code.

    ``known`` ({test name: reason}) lists failures that are expected (they
    fail on the vanilla kernel too); they are reported but do not fail the
    suite, as long as nothing else fails.
    """
    known = known or {}
    total, passed, failed, skipped = tap.counts()
    res = SuiteResult(name=name, status=PASS, tests=total, passed=passed, failed=failed,
                      skipped=skipped, rc=rc, seconds=seconds)
    leaves = tap.leaves()
    res.skipped_names = [t.name for t in leaves if t.skipped]
    all_fails = tap.failures()
    fails = [(n, t) for n, t in all_fails if n not in known]
    expected = [n for n, _ in all_fails if n in known]
    res.failed_names = [n for n, _ in fails]
    probs = ktap.problems(tap)
    if fails:
        first = fails[0][1]
        why = failure_reason(first.diagnostics)
        res.status = FAIL
        res.reason = f"not ok: {_names(fails)}" + (f" ({why})" if why else "")
        if rc not in (None, 0):
            res.reason += f"; exit code {rc}"
        return res
    if expected:
        res.reason = "known failure: " + ", ".join(
            f"{n} ({known[n]})" if known[n] else n for n in expected)
        if rc not in (None, 0):
            rc = 0   # the exit code reflects the known failures
    fixed = [n for n in known if any(t.name == n and not t.failed for t in leaves)]
    if fixed:
        res.reason = (res.reason + "; " if res.reason else "") + \
            "known failure now passes: " + ", ".join(fixed) + " (update lab/known-failures)"
    if tap.bail_out is not None or probs:
        res.status = FAIL
        res.reason = probs[0] if probs else f"bail out: {tap.bail_out}"
        return res
    all_skipped = (tap.plan_skip is not None) or (total > 0 and skipped == total)
    if rc not in (None, 0) and not (rc == KSFT_SKIP and (all_skipped or total == 0)):
        res.status = FAIL
        res.reason = f"exit code {rc}" + (" (all TAP results ok)" if total else "")
        return res
    if all_skipped or rc == KSFT_SKIP:
        res.status = SKIP
        why = tap.plan_skip
        if not why and leaves:
            why = leaves[0].reason
        res.reason = f"all {total} tests skipped" if total else "skipped"
        if why:
            res.reason += f": {why}"
        return res
    if not tap.has_output:
        res.reason = "no TAP output"
    return res


def evaluate_block(name, block, known=None):
    """Verdict for a guest suite from its console block (None: never started)."""
    if block is None:
        return SuiteResult(name, FAIL, "did not run (no @@MO-BEGIN: the guest died "
                                       "or stopped before it)")
    if not block.ended:
        tap = ktap.parse(block.lines)
        total = len(tap.leaves())
        return SuiteResult(name, FAIL, f"did not finish (no @@MO-END after {total} "
                                       f"result(s): crash, hang or timeout)", tests=total)
    if block.rc == 127 and "missing" in block.note:
        return SuiteResult(name, FAIL, "missing: no /opt/mo/suites/%s or /opt/mo/%s "
                                       "in the initramfs" % (name, name), rc=127)
    tap = ktap.parse(block.lines)
    return evaluate_tap(name, tap, rc=block.rc, seconds=block.seconds, known=known)


def kunit_lines(boot_lines):
    """KTAP lines KUnit printed during boot (kernel messages, timestamps stripped)."""
    out = []
    started = False
    for line in boot_lines:
        _, msgs = split_kernel(line)
        for msg in msgs:
            s = msg.strip()
            if not started:
                if re.match(r"^(KTAP|TAP) version \d+$", s) and msg == msg.lstrip():
                    started = True
                else:
                    continue
            if ktap.looks_like_tap(s):
                out.append(msg)
    return out


def evaluate_kunit(report, known=None):
    """Verdict for the built-in KUnit tests from the boot part of the console."""
    lines = kunit_lines(report.boot_lines)
    reached_init = bool(report.blocks) or report.done
    if not lines:
        if reached_init:
            return SuiteResult("kunit", SKIP, "no KUnit output in the boot log "
                                              "(kernel built without CONFIG_KUNIT?)")
        return SuiteResult("kunit", FAIL, "no KUnit output and the guest never reached "
                                          "user space")
    tap = ktap.parse(lines, strip_ts=False)
    if tap.planned == 0 and not tap.tests:
        return SuiteResult("kunit", SKIP, "no KUnit suites built into this kernel")
    res = evaluate_tap("kunit", tap, known=known)
    if res.status == FAIL and not reached_init and "planned" in res.reason:
        res.reason += " (kernel died during KUnit?)"
    return res


@dataclass
class RunSummary:
    suites: list
    console_status: str = STATUS_OK
    console_reason: str = ""
    boot_problem: str = ""
    file_problems: list = field(default_factory=list)
    accel: str = "single"
    all_findings: list = field(default_factory=list)

    @property
    def passed(self):
        return sum(1 for s in self.suites if s.status == PASS)

    @property
    def skipped(self):
        return sum(1 for s in self.suites if s.status == SKIP)

    @property
    def failed(self):
        n = sum(1 for s in self.suites if s.status == FAIL)
        n += self.console_status != STATUS_OK
        n += bool(self.boot_problem)
        n += len(self.file_problems)
        return n

    @property
    def ok(self):
        return self.failed == 0

    @property
    def status(self):
        if self.console_status == STATUS_EMULATOR:
            return STATUS_EMULATOR
        return "PASS" if self.ok else "FAIL"

    def lines(self):
        out = [s.line() for s in self.suites]
        if self.console_status == STATUS_EMULATOR:
            out.append(f"EMULATOR-FAULT  console  {self.console_reason}")
        elif self.console_status == STATUS_FAIL:
            out.append(f"FAIL  console  {self.console_reason}")
        if self.boot_problem:
            out.append(f"FAIL  boot  {self.boot_problem}")
        for p in self.file_problems:
            out.append(f"FAIL  files  {p}")
        tally = f"{self.passed} passed, {self.failed} failed"
        if self.skipped:
            tally += f", {self.skipped} skipped"
        out.append(tally)
        return out


MODE_NAMES = {"single": "single-threaded TCG", "multi": "multi-threaded TCG", "kvm": "KVM"}


def summarize(report, suites, boot_problem="", known=None):
    """Evaluate every requested suite and the console of one boot.

    ``known`` is {suite: {test: reason}} (see load_known_failures)."""
    known = known or {}
    results = []
    for name in suites:
        if name == "kunit":
            results.append(evaluate_kunit(report, known.get("kunit")))
        else:
            results.append(evaluate_block(name, report.block(name), known.get(name)))
    summ = RunSummary(suites=results, accel=report.accel, boot_problem=boot_problem,
                      all_findings=list(report.findings))
    summ.console_status = report.status
    if report.first is not None:
        f = report.first
        others = len(report.findings) - 1
        more = f"; {others} more finding(s)" if others else ""
        if report.status == STATUS_EMULATOR:
            summ.console_reason = (f"{f.describe()} under {MODE_NAMES.get(report.accel, report.accel)}: "
                                   f"known QEMU fault while patching kernel text, not a "
                                   f"verdict on the kernel; rerun with ACCEL=single{more}")
        else:
            summ.console_reason = f"{f.kind}: {f.describe()}{more}"
    for xf in report.files:
        if xf.error:
            summ.file_problems.append(f"{xf.name}: {xf.error}")
    if not boot_problem and not report.done and not summ.boot_problem:
        summ.boot_problem = "the guest did not finish (no @@MO-DONE)"
    return summ
