import os
import subprocess

import pytest

from lab.molab import tree
from lab.molab.errors import LabError

GIT_ENV = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@t")


def git(repo, *args):
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True, env=GIT_ENV).stdout


@pytest.fixture
def repo(tmp_path):
    r = tmp_path / "linux"
    (r / "mm").mkdir(parents=True)
    (r / "Makefile").write_text("VERSION = 6\nPATCHLEVEL = 12\nSUBLEVEL = 117\n")
    (r / "mm" / "migrate.c").write_text("".join(f"line {i}\n" for i in range(30)))
    git(r, "init", "-q", "-b", "master")
    # make export mails as the tree's user: whatever the machine's config says
    git(r, "config", "user.name", "t")
    git(r, "config", "user.email", "t@t")
    git(r, "add", "-A")
    git(r, "commit", "-qm", "Linux 6.12.117")
    git(r, "tag", "base")
    git(r, "tag", "base-6.12.117")
    git(r, "checkout", "-qb", "series")
    return r


def make_patch(repo, out, old, new, subject):
    git(repo, "checkout", "-q", "-B", "tmp", "base")
    f = repo / "mm" / "migrate.c"
    f.write_text(f.read_text().replace(old, new))
    git(repo, "commit", "-qam", subject)
    patch = git(repo, "format-patch", "-1", "--stdout")
    git(repo, "checkout", "-q", "series")
    git(repo, "branch", "-qD", "tmp")
    out.write_text(patch)
    return out


def test_am_series_applies_and_fails_clearly(repo, tmp_path, monkeypatch):
    series = tmp_path / "series"
    series.mkdir()
    good = make_patch(repo, series / "0001-good.patch", "line 5\n", "line five\n", "mm: good")
    # a patch against a line that the first patch changed: does not apply
    bad = make_patch(repo, series / "0002-bad.patch", "line 5\n", "line FIVE\n", "mm: bad")
    tree.am_series(repo, [good])
    assert "line five" in (repo / "mm/migrate.c").read_text()
    with pytest.raises(LabError) as e:
        tree.am_series(repo, [bad])
    msg = e.value.line()
    assert "0002-bad.patch does not apply" in msg
    assert "mm/migrate.c" in msg
    # the am was aborted: no rebase-apply left behind, tree clean
    assert not (repo / ".git" / "rebase-apply").exists()
    assert not tree.is_dirty(repo)


def test_am_failure_picks_useful_line():
    out = ["Applying: mm: bad", "error: patch failed: mm/migrate.c:3",
           "error: mm/migrate.c: patch does not apply", "Patch failed at 0001 mm: bad"]
    assert tree.am_failure(out) == "error: patch failed: mm/migrate.c:3"
    out = ["Applying: x", "Using index info to reconstruct a base tree...",
           "CONFLICT (content): Merge conflict in mm/migrate.c", "error: Failed to merge in the changes."]
    assert tree.am_failure(out) == "CONFLICT (content): Merge conflict in mm/migrate.c"
    out.insert(1, "error: patch failed: mm/migrate.c:3")
    assert tree.am_failure(out) == ("error: patch failed: mm/migrate.c:3 / "
                                    "CONFLICT (content): Merge conflict in mm/migrate.c")


def test_series_listing(tmp_path, monkeypatch):
    monkeypatch.setattr(tree, "SERIES", tmp_path)
    assert tree.series_patches() == []
    (tmp_path / "0001-a.patch").write_text("x")
    (tmp_path / "series").write_text("# comment\n0001-a.patch\n\n")
    assert [p.name for p in tree.series_patches()] == ["0001-a.patch"]
    (tmp_path / "series").write_text("0001-a.patch\n0002-gone.patch\n")
    with pytest.raises(LabError) as e:
        tree.series_patches()
    assert "0002-gone.patch" in e.value.line()


def test_base_version(repo):
    assert tree.base_version(repo) == "6.12.117"


def test_export_roundtrip(repo, tmp_path, monkeypatch):
    series = tmp_path / "series"
    monkeypatch.setattr(tree, "SERIES", series)
    f = repo / "mm" / "migrate.c"
    f.write_text(f.read_text().replace("line 1\n", "line one\n"))
    git(repo, "commit", "-qam", "mm: one")
    f.write_text(f.read_text().replace("line 2\n", "line two\n"))
    git(repo, "commit", "-qam", "mm: two")
    series.mkdir()
    (series / "0009-stale.patch").write_text("old")
    paths = tree.export(repo)
    assert [p.name for p in paths] == ["0001-mm-one.patch", "0002-mm-two.patch"]
    assert (series / "series").read_text() == "0001-mm-one.patch\n0002-mm-two.patch\n"
    assert not (series / "0009-stale.patch").exists()
    first = (series / "0001-mm-one.patch").read_text()
    assert first.startswith("From 0000000000000000000000000000000000000000 ")
    assert "-- \n" not in first   # no signature
    again = [p.read_text() for p in tree.export(repo)]
    assert again[0] == first      # deterministic
    # the exported series re-applies onto base
    git(repo, "checkout", "-q", "-B", "series", "base")
    tree.am_series(repo, tree.series_patches())
    assert "line two" in f.read_text()


def test_create_tree_from_tarball(tmp_path, monkeypatch):
    """The whole 'make tree' path on a tiny stand-in for linux-source-6.12."""
    import tarfile
    src = tmp_path / "pkg" / "linux-source-6.12"
    (src / "mm").mkdir(parents=True)
    (src / "debian").mkdir()
    (src / "Makefile").write_text("VERSION = 6\nPATCHLEVEL = 12\nSUBLEVEL = 117\n")
    (src / ".gitignore").write_text("# Debian\n/*\n!/debian/\n*.o\n")
    (src / "mm" / "migrate.c").write_text("".join(f"line {i}\n" for i in range(30)))
    (src / "debian" / "x").write_text("d\n")
    tarball = tmp_path / "linux-source-6.12.tar.xz"
    with tarfile.open(tarball, "w:xz") as tf:
        tf.add(src, arcname="linux-source-6.12")
    build = tmp_path / "build"
    monkeypatch.setattr(tree, "TARBALL", tarball)
    monkeypatch.setattr(tree, "DEFAULT_TREE", build / "linux")
    monkeypatch.setattr(tree, "VANILLA_TREE", build / "vanilla")
    monkeypatch.setattr(tree, "deb_version", lambda: "6.12.117-1~deb12u1")
    series = tmp_path / "series"
    series.mkdir()
    monkeypatch.setattr(tree, "SERIES", series)
    # a series of one patch, made against an equivalent repo
    other = tmp_path / "other"
    (other / "mm").mkdir(parents=True)
    (other / "mm" / "migrate.c").write_text((src / "mm" / "migrate.c").read_text())
    git(other, "init", "-q", "-b", "master")
    git(other, "add", "-A")
    git(other, "commit", "-qm", "base")
    git(other, "tag", "base")
    git(other, "checkout", "-qb", "series")
    make_patch(other, series / "0001-mm-x.patch", "line 3\n", "line three\n", "mm: x")
    (series / "series").write_text("0001-mm-x.patch\n")

    t = tree.ensure_tree()
    assert t == build / "linux"
    assert "line three" in (t / "mm" / "migrate.c").read_text()
    assert git(t, "rev-parse", "--abbrev-ref", "HEAD").strip() == "series"
    assert git(t, "log", "-1", "--format=%s", "base-6.12.117").strip() == \
        "Linux 6.12.117 (Debian linux-source-6.12 6.12.117-1~deb12u1)"
    assert "/*" not in (t / ".gitignore").read_text().splitlines()
    assert not tree.is_dirty(t)
    assert (build / "vanilla" / "mm" / "migrate.c").read_text().count("line three") == 0
    assert not list(build.glob("linux-unpack.*"))
    # existing tree: left alone; reset: re-applied, old branch kept
    tree.ensure_tree()
    (t / "mm" / "new.c").write_text("x\n")
    with pytest.raises(LabError):
        tree.ensure_tree(reset=True)
    (t / "mm" / "new.c").unlink()
    tree.ensure_tree(reset=True)
    assert "series-before-reset-" in git(t, "branch")
    assert "line three" in (t / "mm" / "migrate.c").read_text()


def test_broken_worktree_is_the_series_plus_the_patch(repo, tmp_path, monkeypatch):
    broken = tmp_path / "broken"
    monkeypatch.setattr(tree, "BROKEN_TREE", broken)
    (repo / "mm" / "migrate.c").write_text((repo / "mm" / "migrate.c").read_text()
                                           .replace("line 7\n", "line seven\n"))
    git(repo, "commit", "-qam", "mm: the series")
    patch = tmp_path / "break.patch"
    patch.write_text("A note git apply skips.\n\n" + git(repo, "diff", "HEAD~1", "HEAD")
                     .replace("line seven", "line SEVEN"))
    with pytest.raises(LabError, match="does not apply to the series"):
        tree.ensure_broken(repo, patch)          # written against base, not the series
    good = tmp_path / "good.patch"
    (repo / "mm" / "migrate.c").write_text((repo / "mm" / "migrate.c").read_text()
                                           .replace("line seven\n", "line seven broken\n"))
    good.write_text(git(repo, "diff"))
    git(repo, "checkout", "-q", "--", ".")
    assert tree.ensure_broken(repo, good) == broken
    assert "line seven broken\n" in (broken / "mm" / "migrate.c").read_text()
    assert "line seven broken" not in (repo / "mm" / "migrate.c").read_text()
    # a second run starts again from the series, not from the last broken tree
    (broken / "mm" / "stray.c").write_text("x")
    tree.ensure_broken(repo, good)
    assert not (broken / "mm" / "stray.c").exists()


def test_export_writes_the_cover_letter_outside_the_series(repo, tmp_path, monkeypatch):
    series = tmp_path / "series"
    monkeypatch.setattr(tree, "SERIES", series)
    f = repo / "mm" / "migrate.c"
    f.write_text(f.read_text().replace("line 1\n", "line one\n"))
    git(repo, "commit", "-qam", "mm: one")
    series.mkdir()
    (series / "cover-letter.txt").write_text("mm: the subject\n\nThe body,\nwhy and how.\n")
    paths = tree.export(repo)
    assert [p.name for p in paths] == ["0001-mm-one.patch"]
    assert (series / "series").read_text() == "0001-mm-one.patch\n"
    cover = (series / "0000-cover-letter.patch").read_text()
    assert "Subject: [PATCH 0/1] mm: the subject\n" in cover
    assert "The body,\nwhy and how.\n" in cover and "***" not in cover
    assert "mm: one" in cover                      # git's shortlog
    date = git(repo, "log", "-1", "--format=%aD", "series").strip()
    assert f"\nDate: {date}\n" in cover           # the series head's, not now
    tree.export(repo)
    assert (series / "0000-cover-letter.patch").read_text() == cover   # deterministic


def test_make_test_refuses_a_tree_that_is_not_the_series(repo, tmp_path, monkeypatch):
    series = tmp_path / "series"
    monkeypatch.setattr(tree, "SERIES", series)
    f = repo / "mm" / "migrate.c"
    f.write_text(f.read_text().replace("line 1\n", "line one\n"))
    git(repo, "commit", "-qam", "mm: one")
    tree.export(repo)
    patches = tree.series_patches()
    assert tree.series_mismatch(repo, patches) == ""
    # a commit message change alone keeps the patch-id: still the series
    git(repo, "commit", "-q", "--amend", "-m", "mm: one, reworded")
    assert tree.series_mismatch(repo, patches) == ""
    # an uncommitted edit
    f.write_text(f.read_text().replace("line 3\n", "line three\n"))
    assert "uncommitted" in tree.series_mismatch(repo, patches)
    # a fixup committed but not exported
    git(repo, "commit", "-qam", "fixup! mm: one")
    assert "2 commit(s) on base, series/series lists 1" in tree.series_mismatch(repo, patches)
    git(repo, "reset", "-q", "--soft", "HEAD~2")
    git(repo, "commit", "-qm", "mm: one")
    assert "commit 1 differs from series/0001-mm-one.patch" in \
        tree.series_mismatch(repo, patches)
    # another branch checked out
    git(repo, "checkout", "-q", "base")
    assert "not the series branch" in tree.series_mismatch(repo, patches)
