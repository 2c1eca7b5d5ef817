"""make export as mail: prefix and version from the cover letter's source,
the exporter's From: and Signed-off-by, the changelog rule, base-commit."""

import os
import subprocess
import sys

import pytest

from lab.molab import cli, mail, tree
from lab.molab.errors import LabError
from lab.molab.util import ROOT

AUTHOR_ENV = dict(GIT_AUTHOR_NAME="Ann Author", GIT_AUTHOR_EMAIL="ann@example.org",
                  GIT_COMMITTER_NAME="Ann Author", GIT_COMMITTER_EMAIL="ann@example.org")
ME = "Ed Exporter <ed@example.org>"
DEBIAN_SUBJECT = "Linux 6.12.117 (Debian linux-source-6.12 6.12.117-1~deb12u1)"


def git(repo, *args):
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True, env={**os.environ, **AUTHOR_ENV}).stdout


@pytest.fixture
def identity(tmp_path, monkeypatch):
    """No system config, a global one of our own, a lab checkout with none:
    the exporter is whoever the test says."""
    glob = tmp_path / "gitconfig"
    glob.write_text("")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(glob))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    subprocess.run(["git", "init", "-q", str(checkout)], check=True)
    monkeypatch.setattr(mail, "CHECKOUT", checkout)
    monkeypatch.delenv("BASE_COMMIT", raising=False)

    def set_global(name="Ed Exporter", email="ed@example.org"):
        glob.write_text(f"[user]\n\tname = {name}\n\temail = {email}\n")
    set_global.checkout = checkout
    set_global.file = glob
    return set_global


@pytest.fixture
def repo(tmp_path, monkeypatch, identity):
    """A tree like make tree's: base-6.12.117 (Debian's import), base, two
    commits by Ann on the series branch; series/ in tmp_path."""
    identity()
    r = tmp_path / "linux"
    (r / "mm").mkdir(parents=True)
    (r / "Makefile").write_text("VERSION = 6\nPATCHLEVEL = 12\nSUBLEVEL = 117\n")
    f = r / "mm" / "migrate.c"
    f.write_text("".join(f"line {i}\n" for i in range(30)))
    git(r, "init", "-q", "-b", "master")
    git(r, "add", "-A")
    git(r, "commit", "-qm", DEBIAN_SUBJECT)
    git(r, "tag", "base-6.12.117")
    git(r, "tag", "base")
    git(r, "checkout", "-qb", "series")
    f.write_text(f.read_text().replace("line 1\n", "line one\n"))
    git(r, "commit", "-qam", "mm: one\n\nWhy one.\n\nSigned-off-by: Ann Author <ann@example.org>")
    f.write_text(f.read_text().replace("line 2\n", "line two\n"))
    git(r, "commit", "-qam", "mm: two\n\nWhy two.\n\nSigned-off-by: Ed Exporter "
                             "<ed@example.org>\nReviewed-by: Rita <rita@example.org>")
    series = tmp_path / "series"
    series.mkdir()
    monkeypatch.setattr(tree, "SERIES", series)
    return r


def cover_source(text):
    (tree.SERIES / "cover-letter.txt").write_text(text)


def exported():
    return {p.name: p.read_text() for p in sorted(tree.SERIES.glob("*.patch"))}


def refused(call, *args, **kw):
    """The one line a LabError from call() prints."""
    with pytest.raises(LabError) as e:
        call(*args, **kw)
    return e.value.line()


# --- the cover letter's source ---------------------------------------------

@pytest.mark.parametrize("first,prefix,version", [
    ("mm: plain", "PATCH", 1),
    ("[PATCH] mm: plain", "PATCH", 1),
    ("[RFC PATCH] mm: rfc", "RFC PATCH", 1),
    ("[RFC PATCH v7] mm: rfc", "RFC PATCH v7", 7),
    ("[PATCH V3 mm-unstable] mm: x", "PATCH mm-unstable v3", 3),   # vN last, lower case
])
def test_prefix_and_version_from_the_first_line(first, prefix, version):
    body = "\n\nChanges in v7:\n- this\nChanges in v3:\n- that\n"
    c = mail.parse_cover(first + body)
    assert (c.prefix, c.version, c.subject) == (prefix, version, first.split("] ")[-1])


@pytest.mark.parametrize("first,why", [
    ("[PATCH v2 0/3] mm: x", "numbers the letter"),
    ("[RFC] mm: x", "is not a subject prefix"),
    ("[PATCH v2 v3] mm: x", "is not a subject prefix"),
    ("[PATCH v0] mm: x", "is not a subject prefix"),
    ("[PATCH v2]", "holds no subject"),
])
def test_bad_first_lines_are_refused(first, why):
    assert why in refused(mail.parse_cover, first + "\n\nChanges in v2:\n- x\n")


@pytest.mark.parametrize("body,ok", [
    ("Why.\n\nChanges in v7:\n- engines pinned\n- Link to v6: https://lore/x\n", True),
    ("Why.\n\nChangelog\n=========\n\nv6 -> v7: engines pinned\n\nTesting\n=======\n", True),
    ("Why.\n\nChanges since v6\n- engines pinned (v7)\n", True),
    ("Why, no changelog at all.\n", False),
    ("Why.\n\nChanges in v6:\n- an old one only\n", False),           # stale: no v7
    ("Why.\n\nChanges in v7:\n\n", False),                            # says nothing
    # v7 named only in the next section, not in the changelog's
    ("Why.\n\nChangelog\n=========\n\nv6: x\n\nTesting v7\n==========\nrun\n", False),
])
def test_a_changelog_is_required_from_v2(body, ok):
    text = "[RFC PATCH v7] mm: x\n\n" + body
    if ok:
        assert mail.parse_cover(text).version == 7
    else:
        assert "v7 has no changelog; add a section 'Changes in v7:'" in \
            refused(mail.parse_cover, text)
    assert mail.parse_cover("[RFC PATCH] mm: x\n\n" + body).version == 1   # v1 needs none


# --- identity and sign-off --------------------------------------------------

def earlier_export():
    """series/ as an earlier export left it: a refused one must keep it."""
    (tree.SERIES / "0001-old.patch").write_text("kept\n")
    (tree.SERIES / "series").write_text("0001-old.patch\n")
    return {p.name: p.read_text() for p in tree.SERIES.iterdir()}


def test_an_exporter_without_identity_is_refused(repo, identity):
    identity.file.write_text("")
    cover_source("mm: x\n\nWhy.\n")
    before = earlier_export()
    line = refused(tree.export, repo)
    assert "git config user.name and user.email not set" in line
    assert "git config --global user.name" in line
    # nothing written, nothing removed
    assert {p.name: p.read_text() for p in tree.SERIES.iterdir()} == before
    identity.file.write_text("[user]\n\tname = Ed Exporter\n")
    assert "git config user.email not set" in refused(tree.export, repo)


def test_identity_the_tree_first_then_the_checkout_then_global(repo, identity):
    assert mail.exporter_identity(repo) == ME
    git(identity.checkout, "config", "user.name", "Lab Checkout")
    assert mail.exporter_identity(repo) == "Lab Checkout <ed@example.org>"
    git(repo, "config", "user.name", "Tree Own")
    git(repo, "config", "user.email", "tree@example.org")
    assert mail.exporter_identity(repo) == "Tree Own <tree@example.org>"


def test_patches_are_from_the_exporter_and_signed_off_once(repo):
    cover_source("[RFC PATCH v2] mm: the subject\n\nThe body.\n\nChanges in v2:\n- two\n")
    paths = tree.export(repo)
    assert [p.name for p in paths] == ["0001-mm-one.patch", "0002-mm-two.patch"]
    one, two = (p.read_text() for p in paths)
    # b4 / send-email form: From: the sender, the author kept in the body
    assert one.split("\n\n")[0].splitlines()[1] == f"From: {ME}"
    assert "Subject: [RFC PATCH v2 1/2] mm: one\n\nFrom: Ann Author <ann@example.org>\n\n" in one
    assert ("Why one.\n\nSigned-off-by: Ann Author <ann@example.org>\n"
            f"Signed-off-by: {ME}\n---\n") in one
    # already signed off by the exporter, though not last: not again
    assert ("Why two.\n\nSigned-off-by: Ed Exporter <ed@example.org>\n"
            "Reviewed-by: Rita <rita@example.org>\n---\n") in two
    assert two.count("Signed-off-by:") == 1
    # git am keeps Ann as the author
    git(repo, "checkout", "-q", "-B", "series", "base")
    tree.am_series(repo, tree.series_patches())
    assert git(repo, "log", "-2", "--format=%an|%s").splitlines() == [
        "Ann Author|mm: two", "Ann Author|mm: one"]
    # a second export of the re-applied series: the same files, byte for byte
    before = exported()
    tree.export(repo)
    assert exported() == before


def test_the_cover_letter(repo):
    cover_source("[RFC PATCH v2] mm: the subject\n\nThe body.\n\nChanges in v2:\n- two\n")
    tree.export(repo)
    cover = (tree.SERIES / "0000-cover-letter.patch").read_text()
    head = cover.split("\n\n")[0]
    assert f"\nFrom: {ME}\n" in f"\n{head}\n".replace("\n <", " <")   # git may fold it
    assert "\nSubject: [RFC PATCH v2 0/2] mm: the subject\n" in cover
    assert "Changes in v2:\n- two\n\nAnn Author (2):\n" in cover
    assert "Signed-off-by" not in cover.split("\n---\n")[0]    # a letter certifies nothing
    base = git(repo, "rev-parse", "base").strip()
    # the last lines: which release the base is, then base-commit
    assert cover.endswith("The base is Linux 6.12.117 as Debian's linux-source-6.12\n"
                          "6.12.117-1~deb12u1 ships it (upstream v6.12.117 plus Debian's "
                          "patches):\nbase-commit names the lab's import of it, not an "
                          f"upstream commit.\nbase-commit: {base}\n")
    date = git(repo, "log", "-1", "--format=%aD", "series").strip()
    assert f"\nDate: {date}\n" in cover


def test_base_commit_names_the_upstream_commit(repo):
    cover_source("mm: x\n\nWhy.\n")
    upstream = "AbCdEf0123456789abcdef0123456789ABCDEF01"
    tree.export(repo, base_commit=upstream)
    cover = (tree.SERIES / "0000-cover-letter.patch").read_text()
    assert cover.endswith(f"\n\nbase-commit: {upstream.lower()}\n")
    assert "The base is" not in cover
    assert "Subject: [PATCH 0/2] mm: x\n" in cover


@pytest.mark.parametrize("sha,why", [("abcdef012345", "is not a full commit id"),
                                     ("g" * 40, "is not a full commit id"),
                                     (None, "not below the series branch")])
def test_bad_base_commits_are_refused(repo, sha, why):
    cover_source("mm: x\n\nWhy.\n")
    if sha is None:          # a commit the tree holds, beside the series
        git(repo, "checkout", "-q", "-b", "other", "base")
        (repo / "other").write_text("x\n")
        git(repo, "add", "other")
        git(repo, "commit", "-qm", "other")
        sha = git(repo, "rev-parse", "HEAD").strip()
        git(repo, "checkout", "-q", "series")
    before = earlier_export()
    assert why in refused(tree.export, repo, base_commit=sha)
    assert {p.name: p.read_text() for p in tree.SERIES.iterdir()} == before


def test_export_refuses_a_v2_without_changelog_and_writes_nothing(repo):
    (tree.SERIES / "0001-old.patch").write_text("kept\n")
    cover_source("[PATCH v2] mm: x\n\nWhy.\n")
    assert "cover-letter.txt: v2 has no changelog" in refused(tree.export, repo)
    assert [p.name for p in tree.SERIES.glob("*.patch")] == ["0001-old.patch"]


def test_user_format_settings_stay_out(repo, identity):
    identity.file.write_text("[user]\n\tname = Ed Exporter\n\temail = ed@example.org\n"
                             "[format]\n\tcc = list@example.org\n\tsignature = sig\n"
                             "\theaders = X-Extra: 1\n\tsubjectPrefix = NOPE\n")
    cover_source("mm: x\n\nWhy.\n")
    for text in (p.read_text() for p in tree.export(repo)):
        assert "list@example.org" not in text and "X-Extra" not in text
        assert "NOPE" not in text and "\n-- \nsig" not in text


def test_sign_off_patch_without_a_body():
    mail_text = ("From 0 Mon Sep 17 00:00:00 2001\nFrom: A <a@x>\nSubject: [PATCH] x\n\n"
                 "---\n f | 1 +\n")
    assert mail.sign_off_patch(mail_text, ME) == mail_text.replace(
        "\n\n---", f"\n\nSigned-off-by: {ME}\n---")


def test_cli_and_make_pass_base_commit(monkeypatch):
    seen = {}
    monkeypatch.setattr(cli.tree, "export", lambda ksrc, base_commit=None:
                        seen.update(ksrc=ksrc, base=base_commit))
    monkeypatch.delenv("BASE_COMMIT", raising=False)
    assert cli.main(["export", "--base-commit", "a" * 40]) == 0
    assert seen["base"] == "a" * 40
    monkeypatch.setenv("BASE_COMMIT", "b" * 40)
    assert cli.main(["export"]) == 0 and seen["base"] == "b" * 40
    r = subprocess.run(["make", "-n", "export", f"BASE_COMMIT={'c' * 40}",
                        f"PYTHON={sys.executable}"], cwd=ROOT, capture_output=True, text=True)
    assert f"--base-commit '{'c' * 40}'" in r.stdout, r.stdout + r.stderr
