"""The kernel git tree: create it from Debian's linux-source, apply and export the series."""

import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from . import mail
from .errors import LabError
from .util import (BROKEN_TREE, DEFAULT_TREE, SERIES, VANILLA_TREE, git, read_makefile_version,
                   rel, run, say)

TARBALL = Path("/usr/src/linux-source-6.12.tar.xz")
DEB_PACKAGE = "linux-source-6.12"
BRANCH = "series"


def check_ksrc(path):
    """Validate a user-given kernel tree (KSRC); returns its resolved Path."""
    p = Path(path).expanduser()
    if not p.is_dir():
        raise LabError(f"KSRC={path} is not a directory",
                       "point KSRC at a Linux 6.12 source tree or leave it unset to use build/linux")
    ver = read_makefile_version(p)
    if ver is None:
        raise LabError(f"KSRC={path} has no kernel Makefile with VERSION/PATCHLEVEL",
                       "point KSRC at the top of a Linux 6.12 source tree")
    if ver[:2] != (6, 12):
        raise LabError(f"KSRC={path} is Linux {ver[0]}.{ver[1]}.{ver[2]}, not 6.12",
                       "the series is for Linux 6.12; use a 6.12 tree")
    return p.resolve()


def base_version(tree):
    """The base version (e.g. 6.12.117): from a base-* tag, else the Makefile."""
    tree = Path(tree)
    if (tree / ".git").exists():
        tags = git(tree, "tag", "--list", "base-*", check=False) or ""
        for t in tags.splitlines():
            if re.fullmatch(r"base-\d+\.\d+\.\d+", t.strip()):
                return t.strip()[5:]
    v = read_makefile_version(tree)
    return ".".join(map(str, v)) if v else ""


def series_patches():
    """Patch paths listed in series/series (quilt style: comments and blanks ignored)."""
    listing = SERIES / "series"
    if not listing.exists():
        return []
    out = []
    for line in listing.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        name = line.split()[0]
        p = SERIES / name
        if not p.exists():
            raise LabError(f"series/series lists {name} but series/{name} does not exist",
                           "run 'make export' or fix series/series")
        out.append(p)
    return out


def _git_identity_env(tree):
    env = {}
    if not git(tree, "config", "user.name", check=False):
        env.update(GIT_AUTHOR_NAME="molab", GIT_COMMITTER_NAME="molab")
    if not git(tree, "config", "user.email", check=False):
        env.update(GIT_AUTHOR_EMAIL="molab@localhost", GIT_COMMITTER_EMAIL="molab@localhost")
    return env


def deb_version():
    try:
        out = subprocess.run(["dpkg-query", "-W", "-f=${Version}", DEB_PACKAGE],
                             capture_output=True, text=True)
        return out.stdout.strip() if out.returncode == 0 else ""
    except FileNotFoundError:
        return ""


def create_tree(dest=DEFAULT_TREE):
    """Unpack Debian's linux-source-6.12 into a new git tree with base tags."""
    if not TARBALL.exists():
        raise LabError(f"{TARBALL} not found", "install it with 'sudo sh lab/setup.sh'")
    debver = deb_version()
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="linux-unpack.", dir=dest.parent))
    try:
        say(f"  unpacking {TARBALL} (Debian {debver or '?'})")
        run(["tar", "-xf", TARBALL, "-C", tmp], what="tar -xf linux-source-6.12",
            hint="check disk space in build/")
        tops = [p for p in tmp.iterdir() if p.is_dir()]
        if len(tops) != 1:
            raise LabError(f"{TARBALL} has {len(tops)} top-level directories, expected 1",
                           "check the linux-source-6.12 package")
        # Make the git tree in the scratch dir and move it into place only
        # when it is complete: an interrupted run leaves no half-made tree.
        _init_git(tops[0], debver, rel(dest))
        tops[0].rename(dest)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return dest


def _init_git(src, debver, shown):
    """git init + base commit, .gitignore commit, tags and branch in ``src``."""
    ver = read_makefile_version(src)
    if ver is None or ver[:2] != (6, 12):
        raise LabError(f"unpacked tree {shown} is not Linux 6.12", "check the linux-source-6.12 package")
    version = ".".join(map(str, ver))
    say(f"  git init {shown} (Linux {version})")
    env = dict(os.environ)

    def g(*args):
        r = subprocess.run(["git", "-C", str(src), *args], env=env, capture_output=True, text=True)
        if r.returncode != 0:
            raise LabError(f"git {args[0]} in {shown} failed: "
                           f"{(r.stderr or r.stdout).strip().splitlines()[-1:]}",
                           "run 'make tree' again")
        return r.stdout
    g("init", "-q", "-b", "master")
    env.update(_git_identity_env(src))
    g("config", "core.autocrlf", "false")
    g("config", "gc.auto", "0")
    g("add", "-A", "-f")
    msg = f"Linux {version}" + (f" (Debian {DEB_PACKAGE} {debver})" if debver else "")
    g("commit", "-q", "--no-verify", "-m", msg)
    g("tag", "-a", f"base-{version}", "-m", msg)
    # Debian's top-level .gitignore ignores everything but debian/, so git
    # would not see the files patches add. Drop that rule in a commit of its
    # own below the series: "base" is that commit, base-<version> the
    # pristine source. The series never touches .gitignore, so it applies
    # to either.
    gi = src / ".gitignore"
    lines = gi.read_text().splitlines(keepends=True)
    kept = [l for l in lines if l.strip() not in ("/*", "!/debian/")]
    if kept != lines:
        gi.write_text("".join(kept))
        g("commit", "-q", "--no-verify", "-a", "-m",
          "lab: drop Debian's ignore-everything rule from .gitignore\n\n"
          "Debian's linux-source tree ignores every top-level path, so git would\n"
          "not see files that patches add. Not part of the series.")
    g("tag", "base")
    g("checkout", "-q", "-b", BRANCH)


def am_series(tree, patches):
    """git am --3way each patch onto the checked-out branch; clear error on failure."""
    env = _git_identity_env(tree)
    for p in patches:
        r = subprocess.run(["git", "-C", str(tree), "am", "--3way", str(p)],
                           capture_output=True, text=True, env={**os.environ, **env})
        if r.returncode != 0:
            out = (r.stdout + "\n" + r.stderr).splitlines()
            subprocess.run(["git", "-C", str(tree), "am", "--abort"], capture_output=True)
            raise LabError(f"patch {rel(p)} does not apply: {am_failure(out)}",
                           "rebase the series (make tree RESET=1 after fixing the patch) "
                           "or fix the patch")
        say(f"  applied {p.name}")


def am_failure(lines):
    """The most useful line(s) of a failed git am's output: the failing hunk
    (file:line) and, after the 3-way fallback, the conflicting file."""
    lines = [l.strip() for l in lines]
    hunk = next((l for l in lines if l.startswith("error: patch failed: ")), None)
    conflict = next((l for l in lines if l.startswith("CONFLICT")), None)
    picked = [x for x in (hunk, conflict) if x]
    if picked:
        return " / ".join(picked)
    for pat in (r"^error: .*", r"^fatal: .*", r"^Patch failed at .*"):
        for l in lines:
            if re.match(pat, l):
                return l
    nonempty = [l for l in lines if l]
    return nonempty[-1] if nonempty else "git am failed"


def is_dirty(tree):
    return bool(git(tree, "status", "--porcelain", check=False))


def ensure_vanilla(tree):
    """The detached worktree build/vanilla at tag base (created if missing)."""
    if VANILLA_TREE.exists():
        return VANILLA_TREE
    if not (Path(tree) / ".git").exists():
        raise LabError(f"{tree} is not a git tree, cannot make the vanilla worktree",
                       "use a git tree with a 'base' tag (make tree)")
    if not git(tree, "rev-parse", "-q", "--verify", "base^{commit}", check=False):
        raise LabError(f"{tree} has no 'base' tag", "tag the vanilla base commit as 'base'")
    git(tree, "worktree", "prune", check=False)
    git(tree, "worktree", "add", "--detach", str(VANILLA_TREE), "base",
        what="git worktree add build/vanilla")
    say(f"  vanilla worktree {rel(VANILLA_TREE)} at base")
    return VANILLA_TREE


def _patch_ids(tree, patch_texts):
    """git patch-id --stable of each patch text (None where git finds none)."""
    out = []
    for text in patch_texts:
        r = subprocess.run(["git", "-C", str(tree), "patch-id", "--stable"], input=text,
                           capture_output=True, text=True)
        out.append(r.stdout.split()[0] if r.returncode == 0 and r.stdout.split() else None)
    return out


def series_mismatch(tree, patches):
    """Why build/linux does not hold exactly series/ ('' if it does).

    make test and make bench judge the series; a tree with uncommitted
    changes, another branch checked out, or commits that differ from
    series/*.patch would make them judge something else."""
    if is_dirty(tree):
        return "it has uncommitted changes"
    head = git(tree, "symbolic-ref", "-q", "--short", "HEAD", check=False)
    if head != BRANCH:
        return f"HEAD is {head or 'detached'}, not the {BRANCH} branch"
    shas = git(tree, "rev-list", "--reverse", f"base..{BRANCH}", check=False).split()
    if len(shas) != len(patches):
        return f"{len(shas)} commit(s) on base, series/series lists {len(patches)}"
    mine = _patch_ids(tree, [git(tree, "format-patch", "--stdout", "-1", c) + "\n"
                             for c in shas])
    theirs = _patch_ids(tree, [Path(p).read_text() for p in patches])
    for i, (a, b) in enumerate(zip(mine, theirs)):
        if a != b:
            return f"commit {i + 1} differs from series/{Path(patches[i]).name}"
    return ""


def ensure_tree(ksrc=None, reset=False, match_series=False):
    """Make sure the patched tree exists (see 'make tree'); returns its path.

    With ``match_series`` the lab's own tree must hold exactly series/
    (see series_mismatch()); a KSRC tree is the user's and is used as is."""
    if ksrc:
        t = check_ksrc(ksrc)
        if reset:
            raise LabError("RESET=1 only works on the lab's own build/linux",
                           "re-apply the series in your KSRC tree yourself")
        head = git(t, "log", "-1", "--format=%h %s", check=False) if (t / ".git").exists() else ""
        say(f"  using KSRC={t}" + (f" at {head}" if head else " (not a git tree)"))
        return t
    t = DEFAULT_TREE
    patches = series_patches()
    if not t.exists():
        create_tree(t)
        am_series(t, patches)
    else:
        if not (t / ".git").exists():
            raise LabError(f"{rel(t)} exists but is not a git tree",
                           f"move it away and run 'make tree' again")
        if reset:
            if is_dirty(t):
                raise LabError(f"{rel(t)} has uncommitted changes, refusing to reset",
                               "commit or stash them (git -C build/linux status)")
            if not git(t, "rev-parse", "-q", "--verify", "base^{commit}", check=False):
                raise LabError(f"{rel(t)} has no 'base' tag", "recreate the tree: move it away and run 'make tree'")
            cur = git(t, "rev-parse", "-q", "--verify", f"refs/heads/{BRANCH}", check=False)
            if cur:
                backup = f"{BRANCH}-before-reset-{time.strftime('%Y%m%d%H%M%S', time.gmtime())}"
                git(t, "branch", "-f", backup, cur)
                say(f"  old {BRANCH} branch saved as {backup}")
            git(t, "checkout", "-q", "-B", BRANCH, "base", what="git checkout -B series base")
            am_series(t, patches)
        elif match_series:
            why = series_mismatch(t, patches)
            if why:
                raise LabError(f"{rel(t)} is not the series in series/: {why}",
                               "after changing the tree: commit and 'make export'; to test "
                               "series/ as it is: 'make tree RESET=1' (keeps a backup branch)")
    ensure_vanilla(t)
    head = git(t, "log", "-1", "--format=%h %s", check=False)
    n = git(t, "rev-list", "--count", f"base..{BRANCH}", check=False)
    say(f"  {rel(t)}: HEAD {head} ({n} patch(es) on base {base_version(t)})")
    return t


def ensure_broken(tree, patch):
    """The detached worktree build/broken: the series' head plus ``patch``.

    Recreated from the series every time, so that only this patch differs.
    """
    patch = Path(patch).resolve()
    if not patch.is_file():
        raise LabError(f"BREAK={patch}: no such patch file", "give a patch file path")
    head = git(tree, "rev-parse", "HEAD", what="git rev-parse HEAD")
    if not (BROKEN_TREE / ".git").exists():
        git(tree, "worktree", "prune", check=False)
        git(tree, "worktree", "add", "--detach", str(BROKEN_TREE), head,
            what="git worktree add build/broken")
    git(BROKEN_TREE, "checkout", "-q", "--detach", "-f", head, what="git checkout (build/broken)")
    git(BROKEN_TREE, "clean", "-fdq", check=False)
    r = subprocess.run(["git", "-C", str(BROKEN_TREE), "apply", str(patch)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        last = (r.stderr.strip().splitlines() or ["git apply failed"])[-1]
        raise LabError(f"{rel(patch)} does not apply to the series: {last}",
                       "regenerate it against build/linux (git diff > patch)")
    say(f"  broken worktree {rel(BROKEN_TREE)}: series {head[:12]} + {patch.name}")
    return BROKEN_TREE


def source_for(variant, ksrc=None):
    """Source tree for a variant: the patched tree, or the vanilla or broken worktree."""
    t = check_ksrc(ksrc) if ksrc else DEFAULT_TREE
    if not t.exists():
        raise LabError(f"kernel tree {rel(t)} does not exist", "run 'make tree' first")
    if variant == "vanilla":
        return ensure_vanilla(t)
    if variant == "broken":
        if not (BROKEN_TREE / ".git").exists():
            raise LabError(f"{rel(BROKEN_TREE)} does not exist",
                           "make it with 'make test BREAK=<patch>'")
        return BROKEN_TREE
    return t


# series/cover-letter.txt: the cover letter's subject (first line, with
# the subject prefix and version: lab/molab/mail.py) and body; make export
# turns it into series/0000-cover-letter.patch around git's shortlog and
# diffstat.
COVER_SOURCE = mail.COVER_SOURCE


def fill_cover_letter(path, cover, date=None, upstream=None, note=""):
    """Put a mail.CoverSource's subject and body into git's cover letter
    template at PATH and name the base (mail.finish_base). No Signed-off-by:
    a cover letter certifies nothing (b4 adds none either).

    DATE (the series head's) replaces git's "now", so that an export of the
    same series writes the same file."""
    text = Path(path).read_text()
    if date:
        text = re.sub(r"^Date: .*$", f"Date: {date}", text, count=1, flags=re.M)
    if "*** SUBJECT HERE ***" not in text or "*** BLURB HERE ***" not in text:
        raise LabError(f"{path.name}: not git's cover letter template",
                       "check the git version (format-patch --cover-letter)")
    text = text.replace("*** SUBJECT HERE ***", cover.subject)
    text = text.replace("*** BLURB HERE ***", cover.body.strip("\n"))
    if upstream or note:
        text = mail.finish_base(text, upstream, note)
    Path(path).write_text(text)


def export(ksrc=None, base_commit=None):
    """Write base..series as series/NNNN-*.patch and series/series, as mail
    from the exporter (git config user.*), each signed off by them; the
    cover letter (from series/cover-letter.txt) ends with base-commit:
    BASE_COMMIT if given, else the tree's base, said to be the lab's."""
    t = check_ksrc(ksrc) if ksrc else DEFAULT_TREE
    if not (t / ".git").exists():
        raise LabError(f"{rel(t)} is not a git tree", "run 'make tree' first")
    for ref in ("base", BRANCH):
        if not git(t, "rev-parse", "-q", "--verify", f"{ref}^{{commit}}", check=False):
            raise LabError(f"{rel(t)} has no '{ref}' ref", "create the tree with 'make tree'")
    me = mail.exporter_identity(t)
    name, email = me[:me.rindex(" <")], me[me.rindex(" <") + 2:-1]
    source = SERIES / COVER_SOURCE
    cover = mail.parse_cover(source.read_text()) if source.exists() else None
    upstream = mail.check_base_commit(t, base_commit, BRANCH) if base_commit else None
    base = git(t, "rev-parse", "base^{commit}")
    version = base_version(t)
    note = "" if upstream else mail.base_note(
        git(t, "log", "-1", "--format=%s", f"base-{version}", check=False), version)
    SERIES.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="export.", dir=SERIES) as tmp:
        # Every option that shapes the mails is given, so that the user's
        # format.* settings (To:, Cc:, headers, signature) stay out.
        # git's cover letter is From: the committer: the exporter too.
        run(["git", "-C", t, "-c", "core.abbrev=12", "-c", "diff.noprefix=false",
             "-c", "diff.mnemonicPrefix=false", "-c", "diff.renames=true",
             "-c", "format.signOff=false", "-c", "format.coverLetter=false",
             "-c", "format.useAutoBase=false",
             "format-patch", "-q", "--no-signature", "--zero-commit", f"--from={me}",
             f"--subject-prefix={cover.prefix if cover else 'PATCH'}",
             "--no-to", "--no-cc", "--no-add-header", "--suffix=.patch",
             *(["--cover-letter", "--cover-from-description=none", f"--base={base}"]
               if cover else ["--no-cover-letter"]),
             "--no-thread", "--no-encode-email-headers",
             "-o", tmp, f"base..{BRANCH}"],
            what="git format-patch", capture=True,
            env={"GIT_COMMITTER_NAME": name, "GIT_COMMITTER_EMAIL": email})
        new = sorted(Path(tmp).glob("*.patch"))
        for p in new:
            if p.name.startswith("0000-"):
                fill_cover_letter(p, cover, git(t, "log", "-1", "--format=%aD", BRANCH),
                                  upstream, note)
            else:
                p.write_text(mail.sign_off_patch(p.read_text(), me))
        for old in SERIES.glob("*.patch"):
            old.unlink()
        for p in new:
            shutil.move(str(p), SERIES / p.name)
    # The cover letter goes to reviewers, not to git am.
    new = [p for p in new if not p.name.startswith("0000-")]
    (SERIES / "series").write_text("".join(f"{p.name}\n" for p in new))
    say(f"  exported {len(new)} patch(es) to series/ as [{cover.prefix if cover else 'PATCH'} "
        f"n/{len(new)}], from and signed off by {me}")
    for p in new:
        say(f"    {p.name}")
    if cover:
        say(f"  base-commit: {upstream}" if upstream else
            f"  base-commit: the lab's base {base[:12]} (Linux {version}); name the upstream "
            f"commit with BASE_COMMIT=<sha>")
    return [SERIES / p.name for p in new]
