"""A tolerant TAP 13 / KTAP 1 parser.

It reads what the kernel's KUnit prints during boot (timestamped, indented
subtests) and what kselftest-harness programs print (TAP 13 with ``#``
diagnostics). Lines it does not understand are kept as ``unknown`` and
otherwise ignored, as TAP consumers must.
"""

import re
from dataclasses import dataclass, field

# "[    1.234567] " or "[    1.234567][    T1] " printk prefixes.
_TS = re.compile(r"^\[\s*\d+\.\d+\](?:\[\s*[TC]\d+\])? ?")
_RESULT = re.compile(
    r"^(?P<ok>not ok|ok)(?:\s+(?P<num>\d+))?(?:\s*-)?(?:\s+(?P<desc>.*?))?\s*$")
_DIRECTIVE = re.compile(r"\s#\s*(?P<kind>SKIP|TODO|XFAIL|XPASS)\b:?\s*(?P<reason>.*)$", re.I)
_PLAN = re.compile(r"^(?P<first>\d+)\.\.(?P<last>\d+)\s*(?:#\s*(?P<rest>.*))?$")
_VERSION = re.compile(r"^(?:KTAP|TAP) version \d+")
_SUBTEST = re.compile(r"^#\s*Subtest:\s*(?P<name>.*)$")
_BAIL = re.compile(r"^Bail out!\s*(?P<reason>.*)$", re.I)


def strip_timestamp(line):
    """Remove a kernel printk timestamp prefix (and the carriage return)."""
    line = line.rstrip("\r\n")
    return _TS.sub("", line, count=1)


def looks_like_tap(text):
    """True for a line (timestamp already stripped) that is KTAP/TAP syntax."""
    s = text.strip()
    return bool(_VERSION.match(s) or _RESULT.match(s) or _PLAN.match(s)
                or s.startswith("#") or _BAIL.match(s))


@dataclass
class TestCase:
    name: str
    number: int | None
    ok: bool
    directive: str | None = None      # "SKIP", "TODO", "XFAIL", "XPASS"
    reason: str = ""
    subtests: list = field(default_factory=list)
    diagnostics: list = field(default_factory=list)
    depth: int = 0
    planned: int | None = None        # plan of the subtests, if any

    @property
    def skipped(self):
        # An expected failure (TODO, XFAIL) tested nothing that passed: it
        # counts as a skip, so a suite of them is "nothing was tested".
        return self.directive in ("SKIP", "TODO", "XFAIL")

    @property
    def failed(self):
        # "not ok ... # TODO" is an expected failure, "ok ... # SKIP" a skip.
        return not self.ok and self.directive not in ("SKIP", "TODO", "XFAIL")

    def leaves(self):
        if not self.subtests:
            return [self]
        out = []
        for t in self.subtests:
            out.extend(t.leaves())
        return out


@dataclass
class TapResult:
    tests: list = field(default_factory=list)   # top-level results
    planned: int | None = None
    plan_skip: str | None = None                # "1..0 # SKIP reason"
    version: str | None = None
    bail_out: str | None = None
    orphans: list = field(default_factory=list)  # nested results whose parent never reported
    unknown: list = field(default_factory=list)
    plan_errors: list = field(default_factory=list)
    trailing: list = field(default_factory=list)  # diagnostics after the last result

    def leaves(self):
        out = []
        for t in self.tests + self.orphans:
            out.extend(t.leaves())
        return out

    def failures(self):
        """Leaf and parent results that failed (parents only if no leaf explains it)."""
        bad = []

        def walk(t, path):
            name = f"{path}.{t.name}" if path else t.name
            child_bad = False
            for s in t.subtests:
                child_bad |= walk(s, name)
            if t.failed and not child_bad:
                bad.append((name, t))
                return True
            return child_bad or t.failed
        for t in self.tests + self.orphans:
            walk(t, "")
        return bad

    @property
    def has_output(self):
        return bool(self.tests or self.orphans or self.version or self.planned is not None
                    or self.plan_skip is not None)

    def counts(self):
        """(total, passed, failed, skipped) over leaf tests."""
        leaves = self.leaves()
        skipped = sum(1 for t in leaves if t.skipped)
        failed = sum(1 for t in leaves if t.failed)
        return len(leaves), len(leaves) - skipped - failed, failed, skipped


def _indent(raw):
    expanded = raw.expandtabs(4)
    return len(expanded) - len(expanded.lstrip(" "))


def parse(lines, strip_ts=True):
    """Parse TAP/KTAP lines (an iterable of str) into a TapResult."""
    res = TapResult()
    # pending[d] = results seen at depth d not yet attached to a parent
    pending = {}
    plans = {}
    indents = []       # stack of indentation widths, one per depth
    diag = {}          # diagnostics waiting for the next result at a depth
    for raw in lines:
        line = strip_timestamp(raw) if strip_ts else raw.rstrip("\r\n")
        s = line.strip()
        if not s:
            continue
        if not looks_like_tap(s):
            res.unknown.append(s)
            # A test's own output (printf, perror) between its "# RUN" and
            # its result: part of its diagnostics, at the current depth.
            diag.setdefault(len(indents) - 1 if indents else 0, []).append(s)
            continue
        width = _indent(line)
        # Map the indentation width to a nesting depth.
        while indents and width < indents[-1]:
            indents.pop()
        if not indents or width > indents[-1]:
            indents.append(width)
        depth = len(indents) - 1

        if _VERSION.match(s):
            if depth == 0 and res.version is None:
                res.version = s
            continue
        m = _BAIL.match(s)
        if m:
            res.bail_out = m.group("reason") or "Bail out!"
            continue
        m = _PLAN.match(s)
        if m:
            count = int(m.group("last")) - int(m.group("first")) + 1
            if depth == 0:
                if res.planned is None:
                    res.planned = max(count, 0)
                    rest = m.group("rest") or ""
                    if count <= 0 and rest.upper().startswith("SKIP"):
                        res.plan_skip = rest[4:].strip(" :") or "skipped"
                else:
                    res.plan_errors.append(f"second plan '{s}'")
            else:
                plans[depth] = max(count, 0)
            continue
        m = _RESULT.match(s)
        if m:
            desc = m.group("desc") or ""
            directive, reason = None, ""
            d = _DIRECTIVE.search(" " + desc)
            if d:
                directive = d.group("kind").upper()
                reason = d.group("reason").strip()
                desc = (" " + desc)[:d.start()].strip()
            tc = TestCase(name=desc or f"test {m.group('num') or '?'}",
                          number=int(m.group("num")) if m.group("num") else None,
                          ok=m.group("ok") == "ok", directive=directive,
                          reason=reason, depth=depth)
            # Everything deeper than this result belongs to it.
            for k in sorted(k for k in pending if k > depth):
                tc.subtests.extend(pending.pop(k))
            if depth + 1 in plans:
                tc.planned = plans.pop(depth + 1)
            for k in [k for k in plans if k > depth + 1]:
                plans.pop(k)
            for k in sorted(k for k in diag if k >= depth):
                tc.diagnostics.extend(diag.pop(k))
            pending.setdefault(depth, []).append(tc)
            continue
        if _SUBTEST.match(s):
            continue
        diag.setdefault(depth, []).append(s)   # a "# ..." diagnostic

    for k in sorted(diag):
        res.trailing.extend(diag[k])
    res.tests = pending.pop(0, [])
    for k in sorted(pending):
        res.orphans.extend(pending[k])
    return res


def parse_text(text, strip_ts=True):
    return parse(text.splitlines(), strip_ts=strip_ts)


def _numbering(where, tests):
    """Results numbered other than 1, 2, ..., N in order (duplicates, gaps)."""
    nums = [t.number for t in tests if t.number is not None]
    if nums and nums != list(range(1, len(nums) + 1)):
        bad = next(i + 1 for i, n in enumerate(nums) if n != i + 1)
        return [f"{where + ': ' if where else ''}results not numbered 1..{len(nums)} "
                f"(result {bad} is numbered {nums[bad - 1]}): duplicated or lost results"]
    return []


# A wrapped program's verdict echoed as a diagnostic: "# not ok 2 x",
# "# | not ok 2 x", "# Bail out!", a harness's "# # Totals: ... fail:1", and
# the guest's tap_passed summary "# tap: 5 passed, 1 failed, 0 skipped,
# plan 6" (mm_selftests follows it with "# N skip(s) allowed ..." where
# its judge excuses the skips).
_NESTED_BAD = re.compile(r"^#[\s|#]*(not ok\b|Bail out!)")
_NESTED_TOTALS = re.compile(r"^#[\s|]*#\s*Totals:.*\bfail:(?P<fail>\d+).*\berror:(?P<error>\d+)")
_NESTED_TALLY = re.compile(r"^#\s*tap:\s*(?P<passed>\d+) passed,\s*(?P<failed>\d+) failed,"
                           r"\s*(?P<skipped>\d+) skipped,\s*plan (?P<plan>\S+)")
_SKIPS_ALLOWED = re.compile(r"^#\s*\d+ skip\(s\) allowed")


def _tally_bad(m, allowed):
    """What guest/lib/mo_lib.sh tap_passed rejects: a failure, no plan,
    nothing passed, results short of the plan, a skip (unless allowed)."""
    p, f, s, plan = (int(m.group("passed")), int(m.group("failed")),
                     int(m.group("skipped")), m.group("plan"))
    if f or not p or not plan.isdigit():
        return True
    return (p + s != int(plan)) or (s and not allowed)


def nested_failures(res):
    """(outer result name or '', line) of every failure a wrapped program
    reported inside an ok result or after the last result. A failed outer
    result already fails on its own and is not listed."""
    out = []

    def scan(name, lines):
        allowed = any(_SKIPS_ALLOWED.match(d) for d in lines)
        for d in lines:
            tally, totals = _NESTED_TALLY.match(d), _NESTED_TOTALS.match(d)
            if (_NESTED_BAD.match(d) or (tally and _tally_bad(tally, allowed)) or
                    (totals and (int(totals.group("fail")) or int(totals.group("error"))))):
                out.append((name, d))

    def walk(t, path):
        name = f"{path}.{t.name}" if path else t.name
        if not t.failed:
            scan(name, t.diagnostics)
        for s in t.subtests:
            walk(s, name)
    for t in res.tests + res.orphans:
        walk(t, "")
    scan("", res.trailing)
    return out


def problems(res):
    """Structural problems that make a TAP stream untrustworthy (list of str)."""
    out = []
    if res.bail_out is not None:
        out.append(f"bail out: {res.bail_out}")
    if res.planned is not None and res.plan_skip is None and len(res.tests) != res.planned:
        out.append(f"planned {res.planned} tests, {len(res.tests)} reported")
    if res.planned is None and res.tests:
        out.append(f"{len(res.tests)} results without a plan (1..N): the stream may be "
                   f"cut short")
    out.extend(_numbering("", res.tests))
    if res.orphans:
        out.append(f"{len(res.orphans)} subtest result(s) without a parent result "
                   f"(suite cut short?)")

    def walk(t, path):
        name = f"{path}.{t.name}" if path else t.name
        if t.planned is not None and len(t.subtests) != t.planned:
            out.append(f"{name}: planned {t.planned} subtests, {len(t.subtests)} reported")
        out.extend(_numbering(name, t.subtests))
        for s in t.subtests:
            walk(s, name)
    for t in res.tests:
        walk(t, "")
    return out
