import pytest

from lab.molab.errors import LabError
from lab.molab import kernel


def test_build_failure_names_first_compiler_error(tmp_path):
    log = tmp_path / "build.log"
    lines = [f"  CC      mm/file{i}.o" for i in range(40)]
    lines += ["/src/mm/migrate.c: In function 'migrate_folios_batch':",
              "\x1b[01m/src/mm/migrate.c:123:9: error: 'foo' undeclared (first use in this function)\x1b[m",
              "  123 |         foo = 1;", "      |         ^~~",
              "make[4]: *** [scripts/Makefile.build:229: mm/migrate.o] Error 1",
              "make[3]: *** [scripts/Makefile.build:478: mm] Error 2"]
    log.write_text("\n".join(lines) + "\n")
    cause, excerpt = kernel.build_failure(log)
    assert cause == "/src/mm/migrate.c:123:9: error: 'foo' undeclared (first use in this function)"
    assert len(excerpt) <= 20
    assert any("error:" in l for l in excerpt) and "\x1b" not in "".join(excerpt)


def test_build_failure_link_error_and_no_error(tmp_path):
    log = tmp_path / "build.log"
    log.write_text("  LD      vmlinux\nld: mm/migrate.o: in function `x':\n"
                   "migrate.c:(.text+0x1): undefined reference to `copy_batch'\n"
                   "make[2]: *** [Makefile:1] Error 1\n")
    cause, _ = kernel.build_failure(log)
    assert "undefined reference to `copy_batch'" in cause
    log.write_text("Killed\n")
    cause, excerpt = kernel.build_failure(log)
    assert cause == "kernel build failed" and excerpt == ["Killed"]


def test_fragment_order(tmp_path, monkeypatch):
    for name in ("base", "debug", "perf", "patched", "patched-debug"):
        (tmp_path / f"{name}.config").write_text("")
    monkeypatch.setattr(kernel, "CONFIGS", tmp_path)
    names = [p.name for p in kernel.fragments("patched", "debug")]
    assert names == ["base.config", "debug.config", "patched.config", "patched-debug.config"]
    assert [p.name for p in kernel.fragments("vanilla", "perf")] == ["base.config", "perf.config"]


def test_load_describes_foreign_out_dir(tmp_path):
    out = tmp_path / "patched-debug"
    (out / "include/config").mkdir(parents=True)
    (out / "include/config/kernel.release").write_text("6.12.117+\n")
    (tmp_path / "src").mkdir()
    (out / "source").symlink_to(tmp_path / "src")
    kb = kernel.KernelBuild.load(out)
    assert (kb.variant, kb.flavour, kb.release) == ("patched", "debug", "6.12.117+")
    assert kb.src == (tmp_path / "src").resolve()
    assert kb.bzimage == out.resolve() / "arch/x86/boot/bzImage"


def test_builtin_flavour_is_debug_with_engines_built_in(tmp_path, monkeypatch):
    for name in ("base", "debug", "perf", "patched", "patched-debug", "patched-builtin"):
        (tmp_path / f"{name}.config").write_text("")
    monkeypatch.setattr(kernel, "CONFIGS", tmp_path)
    names = [p.name for p in kernel.fragments("patched", "builtin")]
    assert names == ["base.config", "debug.config", "patched.config", "patched-debug.config",
                     "patched-builtin.config"]
    # debug does not pick up the builtin fragment
    assert "patched-builtin.config" not in [p.name for p in kernel.fragments("patched", "debug")]
    with pytest.raises(LabError, match="needs the series"):
        kernel.fragments("vanilla", "builtin")


def test_repo_builtin_fragment_builds_the_engines_in():
    from lab.molab import kconfig
    frags = kernel.fragments("patched", "builtin")
    merged = kconfig.merge(kconfig.parse_file(p) for p in frags)
    for opt in ("CONFIG_MIGRATE_OFFLOAD_DCBM", "CONFIG_MIGRATE_OFFLOAD_MTCOPY", "CONFIG_SWDMA"):
        assert merged[opt] == "y", opt
    assert merged["CONFIG_PROVE_LOCKING"] == "y" and merged["CONFIG_MEMORY_HOTREMOVE"] == "y"


def test_kasan_flavour_is_debug_with_kasan():
    from lab.molab import kconfig
    names = [p.name for p in kernel.fragments("patched", "kasan")]
    assert names == ["base.config", "debug.config", "kasan.config", "patched.config",
                     "patched-debug.config"]
    merged = kconfig.merge(kconfig.parse_file(p) for p in kernel.fragments("patched", "kasan"))
    assert merged["CONFIG_KASAN"] == "y" and merged["CONFIG_PROVE_LOCKING"] == "y"
    assert "CONFIG_KASAN" not in kconfig.merge(
        kconfig.parse_file(p) for p in kernel.fragments("patched", "debug"))


def test_undefined_symbols_are_those_no_kconfig_defines(tmp_path):
    import subprocess
    from lab.molab import kernel
    (tmp_path / "drivers").mkdir()
    (tmp_path / "drivers" / "Kconfig").write_text(
        "config SWDMA\n\ttristate \"x\"\nmenuconfig DMADEVICES\n\tbool \"y\"\n"
        "config SWDMA_EXTRA\n\tbool \"z\"\n")
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(["git", "-C", str(tmp_path), "add", "."], check=True)
    got = kernel.undefined_symbols(tmp_path, {"CONFIG_SWDMA", "CONFIG_DMADEVICES",
                                              "CONFIG_MIGRATE_OFFLOAD_DCBM", "CONFIG_SWDM"})
    assert got == {"CONFIG_MIGRATE_OFFLOAD_DCBM", "CONFIG_SWDM"}


def test_builtin_is_built_in_debugs_directory_and_others_apart():
    assert kernel.out_dir("patched", "builtin") == kernel.out_dir("patched", "debug")
    assert kernel.out_dir("patched", "kasan") != kernel.out_dir("patched", "debug")
    assert kernel.out_dir("patched", "perf").name == "patched-perf"


@pytest.mark.parametrize("flavour,w1", [("debug", True), ("builtin", True), ("perf", False),
                                        ("kasan", False)])
def test_debug_kernels_build_with_w1_as_make_check_does(tmp_path, monkeypatch, flavour, w1):
    cmds = []
    monkeypatch.setattr(kernel, "_run_logged", lambda cmd, log, env, mode="a": cmds.append(cmd) or 0)
    monkeypatch.setattr(kernel, "install", lambda kb, env=None, log=None: None)
    monkeypatch.setattr(kernel, "CCACHE", tmp_path / "ccache")
    kb = kernel.KernelBuild(variant="patched", flavour=flavour, src=tmp_path, out=tmp_path)
    kernel.build(kb, jobs=2)
    assert ("W=1" in cmds[0]) == w1 and "bzImage" in cmds[0]


def test_a_directory_holding_the_other_flavour_is_not_booted_as_this_one(tmp_path, monkeypatch):
    from types import SimpleNamespace
    from lab.molab import cli
    out = tmp_path / "patched-debug"
    out.mkdir()
    monkeypatch.setattr(kernel, "OUT", tmp_path)
    kernel.KernelBuild(variant="patched", flavour="builtin", src=tmp_path, out=out).save()
    assert kernel.recorded_flavour(out) == "builtin"
    a = SimpleNamespace(out=None, variant="patched", flavour="debug", ksrc=None)
    with pytest.raises(LabError, match="holds the builtin kernel now"):
        cli._load_build(a)
    a.flavour = "builtin"
    assert cli._load_build(a).flavour == "builtin"


def test_configuring_the_other_flavour_drops_the_record_and_initramfs(tmp_path, monkeypatch):
    """A shared directory's record and initramfs describe the flavour built
    last; configuring the other one drops both, so nothing boots a mix."""
    from types import SimpleNamespace
    from lab.molab import cli
    out = tmp_path / "patched-debug"
    out.mkdir()
    monkeypatch.setattr(kernel, "OUT", tmp_path)
    monkeypatch.setattr(kernel, "CCACHE", tmp_path / "ccache")
    monkeypatch.setattr(kernel.subprocess, "run", lambda *a, **k: SimpleNamespace(returncode=0))
    monkeypatch.setattr(kernel.kconfig, "verify_files", lambda frags, cfg: [])
    kernel.KernelBuild(variant="patched", flavour="builtin", src=tmp_path, out=out).save()
    (out / "initramfs.cpio.gz").write_text("builtin's")
    kernel.configure("patched", "builtin", tmp_path, out)     # same flavour: kept
    assert kernel.recorded_flavour(out) == "builtin" and (out / "initramfs.cpio.gz").exists()
    kernel.configure("patched", "debug", tmp_path, out)       # e.g. its build then fails
    assert kernel.recorded_flavour(out) == "" and not (out / "initramfs.cpio.gz").exists()
    a = SimpleNamespace(out=None, variant="patched", flavour="debug", ksrc=None)
    with pytest.raises(LabError, match="has no complete debug build"):
        cli._load_build(a)


def test_kernel_doc_errors_of_w1_are_not_the_cause_of_a_failure(tmp_path):
    log = tmp_path / "build.log"
    log.write_text("  CC      mm/a.o\nmm/a.c:10: error: Cannot parse struct or union!\n"
                   "  LD      vmlinux\nld: undefined reference to `x'\n")
    cause, _ = kernel.build_failure(log)
    assert "undefined reference" in cause


def test_make_check_builds_with_w1_like_the_debug_kernels():
    import inspect
    from lab.molab import check
    assert '"W=1"' in inspect.getsource(check.run_check)
    assert set(kernel.W1_FLAVOURS) == {"debug", "builtin"}
