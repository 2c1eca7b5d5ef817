from lab.molab import check


def test_touched_dirs():
    files = ["mm/migrate.c", "mm/migrate_copy.c", "include/linux/migrate.h",
             "drivers/dma/dmatest_sw.c", "Documentation/x.rst", "top.c",
             "tools/testing/selftests/mm/migrate_offload.c"]
    assert check.touched_dirs(files) == ["drivers/dma", "mm"]


def test_new_warnings_only_on_changed_lines():
    changed = {"mm/migrate.c": {10, 11, 12}, "mm/new.c": set(range(1, 100))}
    log = "\n".join([
        "/src/linux/mm/migrate.c:11:5: warning: no previous prototype for 'f' [-Wmissing-prototypes]",
        "/src/linux/mm/migrate.c:500:1: warning: old warning [-Wfoo]",
        "mm/new.c:3:9: warning: unused variable 'x' [-Wunused-variable]",
        "/src/linux/mm/other.c:11:5: warning: elsewhere",
        "  CC      mm/migrate.o",
    ])
    got = check.new_warnings(log, changed, "/src/linux")
    assert [(f, n) for f, n, _ in got] == [("mm/migrate.c", 11), ("mm/new.c", 3)]


def _fake_cross(monkeypatch, tmp_path, config_text, build_rc=0):
    monkeypatch.setattr(check, "OUT", tmp_path)
    monkeypatch.setattr(check.shutil, "which", lambda name: "/usr/bin/" + name)

    def run_logged(cmd, log, env, mode="a"):
        out = tmp_path / "cross-arm64"
        (out / ".config").write_text(config_text)
        with open(log, mode) as f:
            f.write("x\n")
        return build_rc if "W=1" in cmd else 0
    monkeypatch.setattr(check.kernel, "_run_logged", run_logged)


def test_cross_build_requires_the_expected_config(monkeypatch, tmp_path):
    _fake_cross(monkeypatch, tmp_path, "CONFIG_ARM64_MTE=y\n# CONFIG_MIGRATE_OFFLOAD is not set\n")
    probs = check.cross_build(tmp_path, "arm64", "aarch64-linux-gnu-", "cross-arm64.config",
                              ("mm/",), {"CONFIG_ARM64_MTE": "y", "CONFIG_MIGRATE_OFFLOAD": "y",
                                         "CONFIG_SWDMA": None}, {})
    assert probs == ["arm64: CONFIG_MIGRATE_OFFLOAD is not set, want y (configs/cross-arm64.config)"]


def test_cross_build_fails_when_an_option_that_must_drop_out_is_set(monkeypatch, tmp_path):
    _fake_cross(monkeypatch, tmp_path, "CONFIG_MIGRATE_OFFLOAD=y\n")
    probs = check.cross_build(tmp_path, "arm64", "", "cross-i386.config", ("mm/",),
                              {"CONFIG_MIGRATE_OFFLOAD": None}, {})
    assert probs == ["arm64: CONFIG_MIGRATE_OFFLOAD is y, want not set (configs/cross-i386.config)"]


def test_cross_build_reports_a_failed_build_and_a_missing_compiler(monkeypatch, tmp_path):
    _fake_cross(monkeypatch, tmp_path, "", build_rc=2)
    probs = check.cross_build(tmp_path, "arm64", "", "cross-arm64.config", ("mm/",), {}, {})
    assert len(probs) == 1 and "build of mm/ failed" in probs[0]
    monkeypatch.setattr(check.shutil, "which", lambda name: None)
    probs = check.cross_build(tmp_path, "arm64", "aarch64-linux-gnu-", "cross-arm64.config",
                              ("mm/",), {}, {})
    assert probs == ["arm64: aarch64-linux-gnu-gcc not found (run 'sh lab/setup.sh': it "
                     "installs the cross compiler)"]


def test_repo_cross_fragments_exist():
    for arch, cross, fragment, dirs, expect in check.CROSS:
        assert (check.CONFIGS / fragment).is_file()
        assert all(d.endswith("/") for d in dirs)
