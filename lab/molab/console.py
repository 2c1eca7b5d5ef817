"""Scanning a guest's serial console: failures, suite blocks, transferred files.

The guest (guest/init.sh) frames its output with markers:

    @@MO-BEGIN <suite>
    ... TAP / KTAP ...
    @@MO-END <suite> rc=<exit code> [note] [t=<seconds>]
    @@MO-FILE-BEGIN <name>
    ... base64 ...
    @@MO-FILE-END <name> [size=<bytes>] [sha256=<hex>]
    @@MO-STATE <start|end> tainted=<n> debug_locks=<0|1|-> kmemleak=<on|off|->
    @@MO-DONE

Kernel messages carry printk timestamps (``[    1.234567] ``) and may land in
the middle of a line the guest is writing; the scanner splits such lines into
the guest's text and the kernel's message.

Failure detection looks at kernel messages only (once the kernel has printed
a timestamped line), so a test that prints "WARNING:" itself does not fail the
run, plus the kmemleak report the guest cats at the end.
"""

import base64
import binascii
import hashlib
import re
from dataclasses import dataclass, field

TS_RE = re.compile(r"\[\s*\d+\.\d+\](?:\[\s*[TC]\d+\])? ?")
MARKER_RE = re.compile(r"@@MO-(FILE-BEGIN|FILE-END|BEGIN|END|STATE|DONE)\b[ \t]*(.*)$")
RELEASE_RE = re.compile(r"\bLinux version (\S+)")
# init.sh puts back the THP settings a suite left changed, and says so: the
# next suite would otherwise run with the folio sizes of the last one.
LEFT_RE = re.compile(r"molab guest: (\S+) left (\S+) at (\S+) \(boot: (\S+)\): put back")
# init.sh says which test scope it exported (mo.scope=, docs/testing.md).
SCOPE_RE = re.compile(r"molab guest: suites '.*' args '.*' scope (\S+)")

# The known QEMU fault: an int3 trap on text being patched under multi-threaded
# TCG. Only the oops line itself, nothing around it.
INT3_RE = re.compile(r"\bOops: int3\b")

# (kind, pattern) in priority order: the first that matches names the line.
FAILURE_PATTERNS = [
    ("kasan", re.compile(r"BUG: KASAN:")),
    ("kernel-bug", re.compile(r"kernel BUG at")),
    ("soft-lockup", re.compile(r"soft lockup")),
    ("hard-lockup", re.compile(r"hard LOCKUP")),
    ("bug", re.compile(r"\bBUG:")),
    ("oops", re.compile(r"\bOops:|\bgeneral protection fault\b")),
    ("lockdep", re.compile(r"possible circular locking dependency detected"
                           r"|inconsistent lock state|possible recursive locking detected"
                           r"|suspicious RCU usage")),
    # debug_locks_off(): lockdep stops checking anything after this line.
    ("lockdep-off", re.compile(r"turning off the locking correctness validator")),
    ("warning", re.compile(r"\bWARNING:")),
    ("ubsan", re.compile(r"\bUBSAN:")),
    ("kmemleak", re.compile(r"unreferenced object 0x[0-9a-f]+"
                            r"|kmemleak: \d+ new suspected memory leaks")),
    # kmemleak turned itself off (pool exhausted, allocation failure): no
    # leak can be reported after this line.
    ("kmemleak-off", re.compile(r"kmemleak: .*(?:detector disabled|Memory pool empty"
                                r"|Cannot allocate|Early log buffer exceeded)")),
    ("hung-task", re.compile(r"blocked for more than \d+ seconds")),
    ("rcu-stall", re.compile(r"rcu: INFO: rcu_\w+ self-detected stall"
                             r"|rcu: INFO: rcu_\w+ detected (?:expedited )?stalls"
                             r"|rcu_\w+ detected (?:expedited )?stalls on CPUs"
                             r"|rcu: INFO: \w+ detected expedited stalls")),
    ("panic", re.compile(r"Kernel panic")),
    # Failures the kernel reports without a splat header or a taint: an
    # allocation that warned (nothing here may fail without __GFP_NOWARN),
    # the OOM killer, duplicate sysfs/debugfs names (a module's state left
    # behind by an earlier instance).
    ("alloc-failure", re.compile(r"page allocation failure: order:")),
    ("oom", re.compile(r"invoked oom-killer|Out of memory: Killed process")),
    ("duplicate-name", re.compile(r"sysfs: cannot create duplicate filename"
                                  r"|kobject_add_internal failed"
                                  r"|debugfs: (?:Directory|File) '[^']*' .*already present")),
    # The console lost kernel messages: a splat may be among them.
    ("log-lost", re.compile(r"printk messages dropped|console messages dropped")),
]

# A stack dump belongs to the report above it; one with no finding in the
# STACK_WINDOW console lines before it (dump_stack() from a driver, a
# fault-injection report) is a finding of its own.
STACK_RE = re.compile(r"\bCall Trace:")
STACK_WINDOW = 300

# The oops report names the faulting instruction a few lines later.
RIP_RE = re.compile(r"\bRIP: [0-9a-f]{4}:(?P<where>[\w.$]+\+0x[0-9a-f]+/0x[0-9a-f]+)")

STATUS_OK = "OK"
STATUS_FAIL = "FAIL"
STATUS_EMULATOR = "EMULATOR-FAULT"


def classify(kernel_text, accel="single"):
    """Failure kind of one kernel message, or None.

    Under multi-threaded TCG an int3 oops is "int3": a candidate for the known
    emulator fault, which excuse_int3() confirms only with evidence that the
    trap hit a text-patching site. Anywhere else it is an ordinary "oops".
    """
    if INT3_RE.search(kernel_text):
        return "int3" if accel == "multi" else "oops"
    for kind, pat in FAILURE_PATTERNS:
        if pat.search(kernel_text):
            return kind
    return None


def split_kernel(line):
    """Split a console line into (guest text, [kernel messages])."""
    m = TS_RE.search(line)
    if not m:
        return line, []
    guest = line[:m.start()]
    rest = line[m.start():]
    msgs = []
    # A line may hold several kernel messages only if newlines were lost;
    # treat everything after the first timestamp as kernel text.
    for part in TS_RE.split(rest):
        if part or msgs:
            msgs.append(part)
    if not msgs:
        msgs = [""]
    return guest, msgs


@dataclass
class Finding:
    kind: str
    line_no: int
    text: str
    rip: str = ""       # "func+0x12/0x80": the RIP line of an oops report
    excuse: str = ""    # why an int3 under MTTCG was judged an emulator fault

    def describe(self):
        at = f" at {self.rip}" if self.rip else ""
        return f"{self.text.strip()}{at} (console line {self.line_no})"


@dataclass
class Block:
    """One suite's output between @@MO-BEGIN and @@MO-END."""
    name: str
    start_line: int
    lines: list = field(default_factory=list)         # guest output
    kernel_lines: list = field(default_factory=list)  # kernel messages meanwhile
    rc: int | None = None
    note: str = ""
    seconds: float | None = None
    ended: bool = False
    end_line: int | None = None


@dataclass
class FileXfer:
    name: str
    start_line: int
    chunks: list = field(default_factory=list)
    data: bytes | None = None
    error: str | None = None
    ended: bool = False


@dataclass
class ConsoleReport:
    findings: list
    blocks: list
    files: list
    done: bool
    boot_lines: list       # every line (timestamps kept) before the first @@MO-BEGIN
    line_count: int
    accel: str
    protocol_errors: list
    states: dict = field(default_factory=dict)   # {"start"|"end": {key: value}}
    release: str | None = None                   # "Linux version X" of the boot
    scope: str | None = None                     # the test scope init.sh exported

    @property
    def status(self):
        """OK without findings; EMULATOR-FAULT only if every finding is an
        excused emulator fault; FAIL if anything else was found."""
        if not self.findings:
            return STATUS_OK
        if all(f.kind == "emulator-fault" for f in self.findings):
            return STATUS_EMULATOR
        return STATUS_FAIL

    @property
    def failures(self):
        """The findings that are not excused emulator faults."""
        return [f for f in self.findings if f.kind != "emulator-fault"]

    @property
    def first(self):
        return self.findings[0] if self.findings else None

    def block(self, name):
        """The last block of that suite name, or None."""
        for b in reversed(self.blocks):
            if b.name == name:
                return b
        return None


def safe_name(name):
    """A transferred file name made safe to use below the results dir."""
    parts = [p for p in name.replace("\\", "/").split("/") if p not in ("", ".", "..")]
    clean = "/".join(re.sub(r"[^A-Za-z0-9._+-]", "_", p) for p in parts)
    return clean or "unnamed"


_B64_JUNK = re.compile(r"[^A-Za-z0-9+/=]")


def decode_file(xfer, size=None, sha256=None):
    """Decode a FileXfer's base64 chunks; sets .data or .error."""
    raw = _B64_JUNK.sub("", "".join(xfer.chunks))
    try:
        data = base64.b64decode(raw + "=" * (-len(raw) % 4), validate=False)
    except (binascii.Error, ValueError) as e:
        xfer.error = f"bad base64: {e}"
        return xfer
    if size is not None and len(data) != size:
        xfer.error = f"size {len(data)} != announced {size} (console output lost?)"
    elif sha256 is not None and hashlib.sha256(data).hexdigest() != sha256.lower():
        xfer.error = "sha256 mismatch (console output corrupted?)"
    xfer.data = data
    return xfer


class ConsoleScanner:
    """Incremental console scanner: feed() lines as they arrive, then finish()."""

    def __init__(self, accel="single"):
        self.accel = accel
        self.findings = []
        self.blocks = []
        self.files = []
        self.done = False
        self.boot_lines = []
        self.protocol_errors = []
        self.line_no = 0
        self._ts_seen = False
        self._block = None
        self._file = None
        self._begun = False
        self._oops = None      # the oops whose RIP line is still to come
        self._frag = None      # guest text a kernel message cut off
        self.states = {}
        self.release = None
        self.scope = None

    # -- events returned by feed(): list of (kind, payload) tuples
    def feed(self, line):
        self.line_no += 1
        line = line.rstrip("\r\n").replace("\r", "")
        events = []
        guest, kmsgs = split_kernel(line)
        # A kernel message that lands inside a guest line ends that line: the
        # guest's text before it and the rest on a later line are one line
        # ("not o" + "k 3 ..." must not lose the "not ok").
        if self._frag is not None and not (kmsgs and not guest):
            guest, self._frag = self._frag + guest, None
        if kmsgs and guest:
            self._frag, guest = (self._frag or "") + guest, ""
        if kmsgs:
            self._ts_seen = True
        elif not self._ts_seen:
            # No timestamp seen yet (firmware, or a kernel without
            # PRINTK_TIME): treat the line as possibly kernel text too.
            kmsgs = [line] if not MARKER_RE.search(line) else []
        m = MARKER_RE.search(guest)
        if not self._begun and not (m and m.group(1) == "BEGIN"):
            self.boot_lines.append(line)

        found_here = False
        if self.release is None:
            rel_m = RELEASE_RE.search(line)
            if rel_m:
                self.release = rel_m.group(1)
        for msg in kmsgs:
            kind = classify(msg, self.accel)
            if not kind and STACK_RE.search(msg) and (
                    not self.findings or self.line_no - self.findings[-1].line_no > STACK_WINDOW):
                kind = "stack-dump"
            if kind:
                found_here = True
                f = Finding(kind, self.line_no, msg.strip())
                self.findings.append(f)
                events.append(("finding", f))
                if kind in ("int3", "oops"):
                    self._oops = f
            elif self._oops is not None:
                rip = RIP_RE.search(msg)
                if rip:
                    self._oops.rip = rip.group("where")
                    self._oops = None
                elif self.line_no - self._oops.line_no > 60:
                    self._oops = None
            if self._block is not None:
                self._block.kernel_lines.append(msg)

        sc = SCOPE_RE.search(guest) if self.scope is None else None
        if sc:
            self.scope = sc.group(1)
        left = LEFT_RE.search(guest)
        if left:
            self.protocol_errors.append(
                f"line {self.line_no}: suite {left.group(1)} left {left.group(2)} at "
                f"{left.group(3)} (boot: {left.group(4)}): a suite must put back the "
                f"settings it changes")
        if m:
            events.extend(self._marker(m.group(1), m.group(2).strip(), guest[:m.start()]))
        elif self._file is not None:
            self._file.chunks.append(guest)
        elif self._block is not None:
            if guest or not kmsgs:
                self._block.lines.append(guest)
            if self._block.name == "kmemleak":
                mm = re.search(r"unreferenced object 0x[0-9a-f]+.*", guest)
                if mm and not found_here:
                    f = Finding("kmemleak", self.line_no, mm.group(0).strip())
                    self.findings.append(f)
                    events.append(("finding", f))
        return events

    def _marker(self, kind, args, before):
        events = []
        words = args.split()
        name = words[0] if words else ""
        if kind == "BEGIN":
            self._begun = True
            if self._block is not None and not self._block.ended:
                self.protocol_errors.append(
                    f"line {self.line_no}: {name} began inside {self._block.name}")
            self._block = Block(name=name, start_line=self.line_no)
            if before.strip():
                self._block.lines.append(before)
            self.blocks.append(self._block)
            events.append(("begin", self._block))
        elif kind == "END":
            blk = self._block
            if blk is None or blk.name != name:
                self.protocol_errors.append(f"line {self.line_no}: END {name} without BEGIN")
                blk = Block(name=name, start_line=self.line_no)
                self.blocks.append(blk)
            if before.strip():
                blk.lines.append(before)
            notes = []
            for w in words[1:]:
                if w.startswith("rc="):
                    try:
                        blk.rc = int(w[3:])
                    except ValueError:
                        notes.append(w)
                elif w.startswith("t="):
                    try:
                        blk.seconds = float(w[2:])
                    except ValueError:
                        notes.append(w)
                else:
                    notes.append(w)
            blk.note = " ".join(notes)
            blk.ended = True
            blk.end_line = self.line_no
            self._block = None
            events.append(("end", blk))
        elif kind == "FILE-BEGIN":
            if self._file is not None:
                self.protocol_errors.append(
                    f"line {self.line_no}: file {name} began inside file {self._file.name}")
            self._file = FileXfer(name=safe_name(name), start_line=self.line_no)
            self.files.append(self._file)
        elif kind == "FILE-END":
            xf = self._file
            if xf is None:
                self.protocol_errors.append(f"line {self.line_no}: FILE-END {name} without BEGIN")
            else:
                if before:
                    xf.chunks.append(before)
                size = sha = None
                for w in words[1:]:
                    if w.startswith("size="):
                        try:
                            size = int(w[5:])
                        except ValueError:
                            pass
                    elif w.startswith("sha256="):
                        sha = w[7:]
                decode_file(xf, size, sha)
                xf.ended = True
                self._file = None
                events.append(("file", xf))
        elif kind == "STATE":
            self.states[name] = dict(w.split("=", 1) for w in words[1:] if "=" in w)
        elif kind == "DONE":
            self.done = True
            events.append(("done", None))
        return events

    def finish(self):
        if self._frag is not None:
            # The guest's last line never got its rest (it died mid-line).
            frag, self._frag = self._frag, None
            self.line_no -= 1
            self.feed(frag)
        if self._file is not None and not self._file.ended:
            self._file.error = "transfer cut short (no @@MO-FILE-END)"
        return ConsoleReport(findings=self.findings, blocks=self.blocks, files=self.files,
                             done=self.done, boot_lines=self.boot_lines,
                             line_count=self.line_no, accel=self.accel,
                             protocol_errors=self.protocol_errors, states=self.states,
                             release=self.release, scope=self.scope)


class PatchSites:
    """Where kernel text is patched at run time: every jump-label site of a vmlinux.

    Selecting a copy engine flips a static key, which rewrites these sites
    with text_poke_bp(): an int3 is written over the instruction's first
    byte first, so a trap taken there reports RIP = site + 1.
    """

    def __init__(self, sites, symbols):
        self.sites = set(sites)          # instruction addresses
        self.symbols = symbols           # {name: [addresses]}

    @classmethod
    def from_vmlinux(cls, path):
        from . import elfsyms
        return cls(elfsyms.jump_label_sites(path), elfsyms.function_symbols(path))

    def reason(self, rip):
        """Why an int3 at ``rip`` ("func+0xoff/0xsize") is at a patch site, or ''."""
        name, _, rest = rip.partition("+")
        try:
            off = int(rest.split("/")[0], 16)
        except ValueError:
            return ""
        for base in self.symbols.get(name, ()):
            site = base + off - 1
            if site in self.sites:
                return f"int3 at {rip}: jump-label site 0x{site:x} (text being patched)"
        return ""


def excuse_int3(report, sites):
    """Turn int3 findings under MTTCG into "emulator-fault" where ``sites``
    (a PatchSites, or None when the vmlinux is unknown) shows that the trap
    hit a text-patching site; every other int3 stays a failure. A
    "Kernel panic ... Fatal exception" right after an excused int3 is that
    oops's own ending and is excused with it."""
    prev_excused = False
    for f in report.findings:
        if f.kind == "int3":
            why = sites.reason(f.rip) if (sites is not None and f.rip) else ""
            if why:
                f.kind, f.excuse, prev_excused = "emulator-fault", why, True
                continue
            f.excuse = ("no vmlinux to check the address against" if sites is None else
                        "no RIP line" if not f.rip else "not at a jump-label site")
        elif (f.kind == "panic" and prev_excused and "Fatal exception" in f.text):
            f.kind, f.excuse = "emulator-fault", "panic ending the excused int3 oops"
            continue
        prev_excused = False
    return report


def scan_lines(lines, accel="single"):
    sc = ConsoleScanner(accel)
    for line in lines:
        sc.feed(line)
    return sc.finish()


def scan_text(text, accel="single"):
    return scan_lines(text.splitlines(), accel)
