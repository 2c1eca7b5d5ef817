"""The series as mail (make export, tree.export): the cover letter's source,
the exporter's identity and sign-off, the base the series applies to.

series/cover-letter.txt is the cover letter's source. Its first line is the
subject, led by the mail's subject prefix in brackets unless it is plain
[PATCH]:

    [RFC PATCH v7] mm/migrate: copy migration batches in one step

gives "[RFC PATCH v7 00/25] mm/migrate: ..." on the cover letter and
"[RFC PATCH v7 01/25] ..." on each patch (git numbers them: leave n/m out).
The bracket's words are kept in their order, the version "vN" moved last;
"PATCH" must be one of them. No brackets: [PATCH], version 1. From v2 on
the body must hold a changelog: a line that starts with "Changes" or
"Changelog" ("Changes in v7:" as b4 writes it, "Changes since v6", an
underlined "Changelog" heading), whose section names this version ("v7")
and says something. The rest of the body is the cover letter's text.
"""

import re
import subprocess
import textwrap
from dataclasses import dataclass

from .errors import LabError
from .util import ROOT, rel

COVER_SOURCE = "cover-letter.txt"
SOURCE_HINT = f"see the format at the top of lab/molab/mail.py (series/{COVER_SOURCE})"


@dataclass
class CoverSource:
    prefix: str      # format-patch's --subject-prefix: "PATCH", "RFC PATCH v7"
    version: int
    subject: str
    body: str


def parse_cover(text, name=COVER_SOURCE):
    """The CoverSource of a cover letter source's TEXT; LabError if the
    prefix is malformed or a v2+ letter has no changelog."""
    first, _, body = text.strip("\n").partition("\n")
    prefix, version, subject = "PATCH", 1, first.strip()
    m = re.match(r"\[([^\]]*)\]\s*(.*)$", subject)
    if m:
        words, subject = m.group(1).split(), m.group(2).strip()
        if any(re.fullmatch(r"\d+/\d+", w) for w in words):
            raise LabError(f"{name}: '[{m.group(1)}]' numbers the letter",
                           f"leave n/m out, git numbers the mails; {SOURCE_HINT}")
        versions = [w for w in words if re.fullmatch(r"[vV]\d+", w)]
        if "PATCH" not in words or len(versions) > 1 or \
                (versions and int(versions[0][1:]) < 1):
            raise LabError(f"{name}: '[{m.group(1)}]' is not a subject prefix (PATCH and at "
                           f"most one version v1, v2, ...)", SOURCE_HINT)
        version = int(versions[0][1:]) if versions else 1
        prefix = " ".join([w for w in words if w not in versions] +
                          [v.lower() for v in versions])
    if not subject:
        raise LabError(f"{name}: the first line holds no subject", SOURCE_HINT)
    body = body.strip("\n")
    if version >= 2 and not has_changelog(body, version):
        raise LabError(f"{name}: v{version} has no changelog",
                       f"add a section 'Changes in v{version}:' saying what changed since "
                       f"v{version - 1} ({SOURCE_HINT})")
    return CoverSource(prefix=prefix, version=version, subject=subject, body=body)


def _is_underline(line):
    return re.fullmatch(r"\s*(=+|-+)\s*", line) is not None and len(line.strip()) >= 3


def has_changelog(body, version):
    """True if BODY has a changelog section that names v<VERSION> and says
    something: from a line starting with Changes/Changelog to the next
    underlined heading."""
    lines = body.splitlines()
    for i, line in enumerate(lines):
        if not re.match(r"\s*change(s|log|\s+log)\b", line, re.I):
            continue
        end = len(lines)
        for k in range(i + 2, len(lines) - 1):
            if lines[k].strip() and _is_underline(lines[k + 1]):
                end = k
                break
        section = lines[i:end]
        text = [l for l in section[1:] if l.strip() and not _is_underline(l)]
        if text and any(re.search(rf"\bv{version}\b", l, re.I) for l in section):
            return True
    return False


def _config(where, *args):
    r = subprocess.run(["git", "-C", str(where), "config", *args], capture_output=True,
                       text=True, stdin=subprocess.DEVNULL)
    return r.stdout.strip() if r.returncode == 0 else ""


# The lab's checkout, whose own git identity counts when the kernel tree
# (build/linux, a repository of its own) has none.
CHECKOUT = ROOT


def exporter_identity(tree):
    """'Name <email>' of whoever exports, from git config user.name and
    user.email: the kernel tree's own, else the lab checkout's, else the
    global ones. LabError if either is unset: the mails go out under it."""
    got = {}
    for key in ("user.name", "user.email"):
        for where, scope in ((tree, ["--local"]), (CHECKOUT, ["--local"]), (tree, [])):
            value = _config(where, *scope, key)
            if value:
                got[key] = value
                break
    missing = [k for k in ("user.name", "user.email") if k not in got]
    if missing:
        raise LabError(f"git config {' and '.join(missing)} not set in {rel(tree)} or this "
                       f"checkout: make export sends the series under your name",
                       "set them: git config --global user.name 'Your Name' && "
                       "git config --global user.email you@example.org")
    return f"{got['user.name']} <{got['user.email']}>"


def add_signoff(body, me):
    """BODY (a commit message or letter body) with 'Signed-off-by: ME' after
    its trailers, unless that very line is among them already (git
    interpret-trailers --if-exists addIfDifferent)."""
    line = f"Signed-off-by: {me}"
    if not body.strip():
        return line + "\n"
    r = subprocess.run(["git", "interpret-trailers", "--no-divider", "--if-exists",
                        "addIfDifferent", "--if-missing", "add", "--where", "end",
                        "--trailer", line], input=body if body.endswith("\n") else body + "\n",
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise LabError(f"git interpret-trailers failed: {r.stderr.strip()}",
                       "check the git installation (git 2.22 or newer)")
    return r.stdout


def sign_off_patch(text, me):
    """A format-patch mail with ME's sign-off added to its commit message
    (between the headers' blank line, after an in-body From:, and '---')."""
    head, sep, rest = text.partition("\n\n")
    m = re.search(r"^---$", rest, re.M)
    if not sep or not m:
        raise LabError("format-patch wrote a mail without a '---' line",
                       "check the git version")
    msg, tail = rest[:m.start()], rest[m.start():]
    inbody = re.match(r"From: [^\n]*\n\n", msg)
    keep = inbody.group(0) if inbody else ""
    return head + sep + keep + add_signoff(msg[len(keep):], me) + tail


def check_base_commit(tree, sha, branch):
    """BASE_COMMIT as given: a full commit id, lowercased. One the tree holds
    must be below BRANCH (the upstream ones of the lab's tree are not in it)."""
    if not re.fullmatch(r"[0-9a-fA-F]{40}", sha or ""):
        raise LabError(f"BASE_COMMIT={sha} is not a full commit id",
                       "give the 40-hex id of the upstream commit the series applies to "
                       "(git rev-parse v6.12.117^{commit} in a clone of Linux)")
    sha = sha.lower()
    known = subprocess.run(["git", "-C", str(tree), "cat-file", "-e", f"{sha}^{{commit}}"],
                           capture_output=True).returncode == 0
    if known and subprocess.run(["git", "-C", str(tree), "merge-base", "--is-ancestor", sha,
                                 branch], capture_output=True).returncode != 0:
        raise LabError(f"BASE_COMMIT={sha[:12]} is in {rel(tree)} but not below the "
                       f"{branch} branch", "give the commit the series was made on")
    return sha


def base_note(base_subject, version):
    """What the cover letter says of a base that BASE_COMMIT did not name:
    its release, and that base-commit is then the lab's own import of it.
    BASE_SUBJECT: the subject of the tree's base-<version> commit."""
    m = re.fullmatch(r"Linux (\S+) \(Debian (\S+) (\S+)\)", base_subject or "")
    if m:
        text = (f"The base is Linux {m.group(1)} as Debian's {m.group(2)} {m.group(3)} "
                f"ships it (upstream v{m.group(1)} plus Debian's patches): base-commit "
                f"names the lab's import of it, not an upstream commit.")
    else:
        text = f"The base is Linux {version}: base-commit names this tree's 'base' commit."
    return textwrap.fill(text, width=72)


def finish_base(cover, upstream=None, note=""):
    """The cover letter with git's 'base-commit: <local base>' line naming
    UPSTREAM instead, or led by NOTE when no upstream commit was given."""
    m = re.search(r"^base-commit: [0-9a-f]{40}$", cover, re.M)
    if not m:
        raise LabError("format-patch wrote no base-commit line", "check the git version")
    if upstream:
        return cover[:m.start()] + f"base-commit: {upstream}" + cover[m.end():]
    return cover[:m.start()] + note + "\n" + cover[m.start():]
