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
    known_failed: int = 0     # failed tests that lab/known-failures explains

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


@dataclass
class KnownFailure:
    """A test that fails on the vanilla base kernel too (lab/known-failures)."""
    suite: str
    test: str
    seen_on: str        # kernel release it was seen failing on, e.g. 6.12.117
    text: str           # a substring of its failure diagnostics
    why: str = ""

    def texts(self):
        """The substrings that must all be in the diagnostics ("a && b")."""
        return [t.strip() for t in self.text.split(" && ") if t.strip()]

    def applies_to(self, release):
        """True if ``release`` (uname -r) is the release the entry was seen on."""
        return release is not None and (release == self.seen_on or
                                        release.startswith(self.seen_on + "-") or
                                        release.startswith(self.seen_on + "+"))


def load_known_failures(path):
    """{suite: {test: KnownFailure}} from a known-failures file.

    One entry a line, fields separated by " | ":
    ``<suite> | <test name> | <kernel release seen on> | <failure text> | <why>``;
    blank lines and lines starting with # are ignored. A line of another shape
    is an error: a typo must not silently stop matching.
    """
    known = {}
    try:
        text = open(path).read()
    except OSError:
        return known
    for no, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        parts = [p.strip() for p in line.split(" | ")]
        if len(parts) != 5 or not all(parts[:4]):
            from .errors import LabError
            raise LabError(f"{path}:{no}: a known failure needs 5 fields "
                           f"'suite | test | release | failure text | why'",
                           "fix that line of lab/known-failures")
        kf = KnownFailure(*parts)
        known.setdefault(kf.suite, {})[kf.test] = kf
    return known


# kselftest harness lines for a test that did not fail by itself: a known
# failure's text next to them excuses nothing.
_ABNORMAL = re.compile(r"terminated by timeout|terminated unexpectedly|by signal \d+"
                       r"|timed out|Segmentation fault|core dumped")


def _diagnostic_text(tc):
    return "\n".join([tc.reason, *tc.diagnostics])


def _match_known(name, tc, known, release):
    """(True, '') if the failed test ``name`` is this known failure; else
    (False, why the entry does not apply, or '' without an entry)."""
    kf = known.get(name)
    if kf is None:
        return False, ""
    if not kf.applies_to(release):
        return False, (f"listed as a known failure of {kf.seen_on}, but this kernel is "
                       f"{release or 'unknown'}: check it there and update lab/known-failures")
    text = _diagnostic_text(tc)
    if _ABNORMAL.search(text):
        return False, "listed as a known failure, but this time it crashed or timed out"
    missing = [t for t in kf.texts() if t not in text]
    if missing:
        return False, (f"listed as a known failure with the text '{missing[0]}', but it "
                       f"failed otherwise")
    return True, ""


def _skip_known(tc, known):
    """Whether lab/known-failures lists this skip (name and skip reason)."""
    kf = known.get(tc.name)
    return kf is not None and all(t in tc.reason for t in kf.texts())


def evaluate_tap(name, tap, rc=None, seconds=None, known=None, release=None):
    """Verdict for one suite from its parsed TAP and exit code.

    ``known`` ({test name: KnownFailure}) lists failures that are expected on
    kernel ``release`` (they fail on the vanilla kernel too): a failed test
    whose name, release and failure text match is reported, not failed. The
    exit code is never reset: a known failure explains exit code 1 (the
    kselftest harness's "a test failed"), nothing else, so a crash or a
    timeout of the same test still fails the suite. A suite that tested
    nothing (no TAP, every test skipped, a skip plan) fails.
    """
    known = known or {}
    total, passed, failed, skipped = tap.counts()
    res = SuiteResult(name=name, status=PASS, tests=total, passed=passed, failed=failed,
                      skipped=skipped, rc=rc, seconds=seconds)
    leaves = tap.leaves()
    res.skipped_names = [t.name for t in leaves if t.skipped]
    fails, expected, notes = [], [], []
    for n, t in tap.failures():
        ok, why = _match_known(n, t, known, release)
        if ok:
            expected.append(n)
        else:
            fails.append((n, t))
            if why:
                notes.append(f"{n}: {why}")
    res.failed_names = [n for n, _ in fails]
    res.known_failed = len(expected)
    res.failed = len(fails)
    res.passed = total - skipped - len(fails) - len(expected)
    probs = ktap.problems(tap)
    if fails:
        first = fails[0][1]
        why = failure_reason(first.diagnostics)
        res.status = FAIL
        res.reason = f"not ok: {_names(fails)}" + (f" ({why})" if why else "")
        if rc not in (None, 0):
            res.reason += f"; exit code {rc}"
        if notes:
            res.reason += "; " + "; ".join(notes)
        return res
    if expected:
        res.reason = "known failure: " + ", ".join(
            f"{n} ({known[n].why})" if known[n].why else n for n in expected)
    fixed = [n for n in known if any(t.name == n and not t.failed and not t.skipped
                                     for t in leaves)]
    if fixed:
        res.reason = (res.reason + "; " if res.reason else "") + \
            "known failure now passes: " + ", ".join(fixed) + " (update lab/known-failures)"
    if tap.bail_out is not None or probs:
        res.status = FAIL
        res.reason = probs[0] if probs else f"bail out: {tap.bail_out}"
        return res
    # Diagnostics attach to the next result: with a failed (or known failed)
    # result in the suite, an inner failure may be that result's, judged.
    nested = ktap.nested_failures(tap) if not tap.failures() else []
    if nested:
        where, line = nested[0]
        res.status = FAIL
        res.reason = (f"a nested failure under " + (f"'{where}', an ok result" if where else
                                                     "no result (after the last one)")
                      + f": '{line.lstrip('#| ').strip()}': the wrapper lost the inner verdict")
        return res
    if not tap.has_output or total == 0 and tap.plan_skip is None:
        res.status = FAIL
        res.reason = "no TAP results: nothing was tested" + (
            f"; exit code {rc}" if rc not in (None, 0) else "")
        return res
    if tap.plan_skip is not None or skipped == total:
        res.status = FAIL
        why = tap.plan_skip or (leaves[0].reason if leaves else "")
        res.reason = (f"all {total} tests skipped" if total else "skipped") + \
            (f": {why}" if why else "") + ": nothing was tested"
        return res
    # A skip is a test that did not run: only a listed one is allowed.
    unexcused = [t for t in leaves if t.skipped and not _skip_known(t, known)]
    if unexcused:
        res.status = FAIL
        first = unexcused[0]
        res.reason = (f"{len(unexcused)} test(s) skipped: {_names([(t.name, t) for t in unexcused])}"
                      + (f" ({first.directive}: {first.reason})" if first.reason else "")
                      + ": a skipped test did not run; make its precondition hold or list "
                        "it in lab/known-failures")
        return res
    explained = 1 if expected else 0
    if rc not in (None, 0, explained):
        res.status = FAIL
        res.reason = f"exit code {rc}" + (" (a known failure explains exit code 1 only)"
                                          if expected else " (all TAP results ok)")
        return res
    return res


def evaluate_block(name, block, known=None, release=None):
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
    if block.rc is None:
        return SuiteResult(name, FAIL, f"ended without an exit code (console line "
                                       f"{block.end_line}: '@@MO-END {name} {block.note}' "
                                       f"garbled?)",
                           tests=len(tap.leaves()), seconds=block.seconds)
    res = evaluate_tap(name, tap, rc=block.rc, seconds=block.seconds, known=known,
                       release=release)
    totals = kselftest_totals(block.lines)
    # Known failures are failed TAP results too: the harness counts them.
    shown = res.failed + res.known_failed
    if res.status == PASS and totals and (totals["fail"] + totals["error"] > shown or
                                          totals["xpass"]):
        res.status = FAIL
        res.reason = (f"the kselftest harness counted fail:{totals['fail']} "
                      f"error:{totals['error']} xpass:{totals['xpass']}, "
                      f"which its TAP results do not show")
    if res.status == PASS:
        for pat, where in EXPECTED_ONLY_IN:
            hit = next((m for m in block.kernel_lines if pat.search(m)), None)
            if hit is not None and name not in where:
                res.status = FAIL
                res.reason = (f"kernel said '{hit.strip()}' during {name}, where nothing "
                              f"provokes it (expected only in {', '.join(where)})")
                break
    return res


# Kernel messages that are a failure in every suite but those that provoke
# them on purpose: an engine giving up on itself where the suite expects it
# to copy means the suite tested the cpu fallback instead.
EXPECTED_ONLY_IN = [
    (re.compile(r"dcbm: .*falling back to the cpu copy"), ("dma_faults", "dcbm_late")),
    (re.compile(r"dcbm: not using DMA channels of"), ("dcbm_late",)),
]


_TOTALS = re.compile(r"^#\s*Totals:\s*pass:(?P<pass>\d+)\s+fail:(?P<fail>\d+)\s+"
                     r"xfail:(?P<xfail>\d+)\s+xpass:(?P<xpass>\d+)\s+skip:(?P<skip>\d+)"
                     r"\s+error:(?P<error>\d+)")


def kselftest_totals(lines):
    """Summed '# Totals:' lines of kselftest programs in a block ({} if none)."""
    out = {}
    for line in lines:
        m = _TOTALS.match(line.strip())
        if m:
            for k, v in m.groupdict().items():
                out[k] = out.get(k, 0) + int(v)
    return out


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


def evaluate_kunit(report, known=None, expect=()):
    """Verdict for the built-in KUnit tests from the boot part of the console.

    ``expect`` names KUnit suites that must have run: one that is absent (not
    built, or the kernel died first) fails, and so does a boot without KUnit.
    """
    lines = kunit_lines(report.boot_lines)
    reached_init = bool(report.blocks) or report.done
    if not lines:
        return SuiteResult("kunit", FAIL, "no KUnit output in the boot log (kernel built "
                                          "without CONFIG_KUNIT?)" if reached_init else
                                          "no KUnit output and the guest never reached "
                                          "user space")
    tap = ktap.parse(lines, strip_ts=False)
    res = evaluate_tap("kunit", tap, known=known, release=report.release)
    ran = {t.name: t for t in tap.tests}
    missing = [s for s in expect if s not in ran]
    # An expected suite whose every case skipped tested nothing, even if
    # other suites passed.
    idle = [s for s in expect if s in ran and
            not any(not t.failed and not t.skipped for t in ran[s].leaves())]
    if missing or idle:
        res.status = FAIL
        why = []
        if missing:
            why.append(f"KUnit suite(s) absent: {', '.join(missing)}")
        if idle:
            why.append(f"KUnit suite(s) with no passed case (all skipped): {', '.join(idle)}")
        res.reason = "; ".join(why) + (f"; {res.reason}" if res.reason else "")
    if res.status == FAIL and not reached_init and "planned" in res.reason:
        res.reason += " (kernel died during KUnit?)"
    return res


# Taint flags (Documentation/admin-guide/tainted-kernels.rst), bit 0 first.
TAINT_LETTERS = "PFSRMBUDAWCIOELKXTN"
TAINT_TEST = 18      # 'N': set by KUnit whenever a test runs; not a problem


def taint_problem(value):
    """'' for an acceptable /proc/sys/kernel/tainted value, else what it says."""
    try:
        v = int(value)
    except (TypeError, ValueError):
        return f"tainted={value!r} is not a number"
    bad = v & ~(1 << TAINT_TEST)
    if not bad:
        return ""
    letters = "".join(c for i, c in enumerate(TAINT_LETTERS) if bad >> i & 1)
    return f"kernel tainted: {v} ({letters or 'unknown flags'})"


def health_problems(report, require_debug=False):
    """What the guest's @@MO-STATE lines say is wrong with the kernel.

    Any taint but KUnit's 'N' fails, at the start or the end; with
    ``require_debug`` (the debug flavour) lockdep must still be on at the end
    (debug_locks 1) and kmemleak must still scan.
    """
    out = []
    end = report.states.get("end")
    if end is None:
        if report.done:
            out.append("the guest reported no end state (@@MO-STATE end)")
        return out
    start = report.states.get("start", {})
    keys = ("tainted", "debug_locks", "kmemleak")
    for phase, st in (("start", start), ("end", end)):
        if phase == "start" and not start:
            continue
        missing = [k for k in keys if k not in st]
        if missing:
            out.append(f"the guest's {phase} state lacks {', '.join(missing)} "
                       f"(@@MO-STATE garbled?)")
            continue
        p = taint_problem(st.get("tainted"))
        if p and not (phase == "end" and st.get("tainted") == start.get("tainted") and start):
            out.append(f"{p} at the {phase} of the run")
    if require_debug:
        if end.get("debug_locks") != "1":
            out.append(f"lockdep is off at the end of the run (debug_locks="
                       f"{end.get('debug_locks')}): lock bugs after that went unchecked")
        if end.get("kmemleak") != "on":
            out.append(f"kmemleak is not scanning at the end of the run (kmemleak="
                       f"{end.get('kmemleak')}): leaks went unreported")
    return out


@dataclass
class RunSummary:
    suites: list
    console_status: str = STATUS_OK
    console_reason: str = ""
    boot_problem: str = ""
    file_problems: list = field(default_factory=list)
    health: list = field(default_factory=list)
    accel: str = "single"
    all_findings: list = field(default_factory=list)
    protocol: list = field(default_factory=list)

    # The tally counts test cases. A suite that failed without a failed case
    # (crash, exit code, missing) counts as one failure, and so does each
    # problem outside the suites (console, boot, files, health). Known
    # failures are counted as skipped (the per-suite line names them).
    @property
    def passed(self):
        return sum(s.passed for s in self.suites)

    @property
    def skipped(self):
        return sum(s.skipped + s.known_failed for s in self.suites)

    @property
    def failed(self):
        n = sum(max(s.failed, 1) if s.status == FAIL else s.failed for s in self.suites)
        n += self.console_status != STATUS_OK
        n += bool(self.boot_problem)
        n += len(self.file_problems)
        n += len(self.health)
        n += len(self.protocol)
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
        for p in self.health:
            out.append(f"FAIL  kernel  {p}")
        for p in self.protocol:
            out.append(f"FAIL  protocol  {p}")
        tally = f"{self.passed} passed, {self.failed} failed"
        if self.skipped:
            tally += f", {self.skipped} skipped"
        out.append(tally)
        return out


MODE_NAMES = {"single": "single-threaded TCG", "multi": "multi-threaded TCG", "kvm": "KVM"}


def describe_findings(report, limit=6):
    """Every finding of a console, one clause each: the verdict names them all."""
    parts = []
    for f in report.findings[:limit]:
        why = f" [{f.excuse}]" if f.excuse else ""
        parts.append(f"{f.kind}: {f.describe()}{why}")
    if len(report.findings) > limit:
        parts.append(f"+{len(report.findings) - limit} more")
    return f"{len(report.findings)} finding(s): " + "; ".join(parts)


def summarize(report, suites, boot_problem="", known=None, kunit_suites=(),
              require_debug=False):
    """Evaluate every requested suite and the console of one boot.

    ``known`` is {suite: {test: KnownFailure}} (see load_known_failures);
    ``kunit_suites`` the KUnit suites that must have run; ``require_debug``
    makes lockdep and kmemleak being on at the end a requirement."""
    known = known or {}
    results = []
    for name in suites:
        if name == "kunit":
            results.append(evaluate_kunit(report, known.get("kunit"), kunit_suites))
        else:
            results.append(evaluate_block(name, report.block(name), known.get(name),
                                          report.release))
    summ = RunSummary(suites=results, accel=report.accel, boot_problem=boot_problem,
                      all_findings=list(report.findings),
                      health=health_problems(report, require_debug))
    summ.console_status = report.status
    if report.findings:
        text = describe_findings(report)
        if report.status == STATUS_EMULATOR:
            summ.console_reason = (f"{text} under {MODE_NAMES.get(report.accel, report.accel)}: "
                                   f"known QEMU fault while patching kernel text, not a "
                                   f"verdict on the kernel; rerun with ACCEL=single")
        else:
            summ.console_reason = text
    for xf in report.files:
        if xf.error:
            summ.file_problems.append(f"{xf.name}: {xf.error}")
    # Only the last block of a suite is judged: a second one (a rerun, a
    # replayed console) could hide a failed first run.
    for name in dict.fromkeys(b.name for b in report.blocks):
        runs = sum(1 for b in report.blocks if b.name == name)
        if runs > 1:
            summ.protocol.append(f"suite {name} ran {runs} times: each run must be judged")
    summ.protocol.extend(report.protocol_errors)
    if not boot_problem and not report.done and not summ.boot_problem:
        summ.boot_problem = "the guest did not finish (no @@MO-DONE)"
    return summ
