import gzip
import stat

from lab.molab import cpio
import pytest

from lab.molab.errors import LabError
from lab.molab.initramfs import add_host_program, elf_is_static, ldd_paths, overlay


def test_roundtrip_and_determinism(tmp_path):
    def make():
        a = cpio.Archive()
        a.add_file("opt/mo/suites/x", "#!/bin/sh\necho hi\n", 0o755)
        a.add_symlink("bin/sh", "busybox")
        a.add_chardev("dev/console", 5, 1)
        a.add_dir("tmp", 0o1777)
        return a
    data = make().to_bytes()
    assert data == make().to_bytes()
    assert len(data) % 512 == 0
    ents = cpio.read_newc(data)
    assert ents["opt/mo/suites/x"][1] == b"#!/bin/sh\necho hi\n"
    assert stat.S_IMODE(ents["opt/mo/suites/x"][0]) == 0o755
    assert stat.S_ISLNK(ents["bin/sh"][0]) and ents["bin/sh"][1] == b"busybox"
    assert stat.S_ISCHR(ents["dev/console"][0])
    assert stat.S_IMODE(ents["tmp"][0]) == 0o1777
    # parents exist and come first
    names = list(ents)
    assert names.index("opt") < names.index("opt/mo") < names.index("opt/mo/suites/x")
    gz = make().write_gz(tmp_path / "a.cpio.gz")
    assert gzip.decompress(gz.read_bytes()) == data


def test_add_tree(tmp_path):
    src = tmp_path / "src"
    (src / "suites").mkdir(parents=True)
    (src / "suites" / "s").write_text("x")
    (src / "suites" / "s").chmod(0o755)
    (src / "link").symlink_to("suites/s")
    a = cpio.Archive()
    a.add_tree(src, "opt/mo")
    ents = cpio.read_newc(a.to_bytes())
    assert stat.S_IMODE(ents["opt/mo/suites/s"][0]) == 0o755
    assert ents["opt/mo/link"][1] == b"suites/s"


def test_overlay_appends_aligned_archive(tmp_path):
    base = tmp_path / "base.gz"
    base.write_bytes(b"\x1f\x8b" + b"x" * 5)   # 7 bytes, not aligned
    out = overlay(base, {"etc/mo/params": "a=1\n"}, tmp_path / "out")
    data = out.read_bytes()
    assert data[:7] == base.read_bytes() and data[7] == 0
    assert data[8:14] == b"070701"
    assert cpio.read_newc(data[8:])["etc/mo/params"][1] == b"a=1\n"


def test_bad_paths_rejected():
    import pytest
    a = cpio.Archive()
    with pytest.raises(ValueError):
        a.add_file("", "x")


def test_elf_is_static(tmp_path):
    import sys
    assert not elf_is_static(sys.executable)   # python is dynamically linked
    f = tmp_path / "notelf"
    f.write_text("#!/bin/sh\n")
    assert not elf_is_static(f)


def test_ldd_paths_takes_every_loaded_object():
    out = ("\tlinux-vdso.so.1 (0x00007ffd)\n"
           "\tlibblkid.so.1 => /lib/x86_64-linux-gnu/libblkid.so.1 (0x00007f7c4b908000)\n"
           "\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f7c4b70d000)\n"
           "\t/lib64/ld-linux-x86-64.so.2 (0x00007f7c4b9db000)\n")
    assert ldd_paths(out) == ["/lib/x86_64-linux-gnu/libblkid.so.1",
                              "/lib/x86_64-linux-gnu/libc.so.6", "/lib64/ld-linux-x86-64.so.2"]


def test_host_program_with_its_libraries():
    a = cpio.Archive()
    add_host_program(a, "usr/bin/env", "coreutils")
    assert "usr/bin/env" in a
    assert any(p.endswith("libc.so.6") for p in a.entries)
    assert any("ld-linux" in p for p in a.entries)


def test_missing_host_program_names_its_package():
    with pytest.raises(LabError, match="package nosuch-pkg"):
        add_host_program(cpio.Archive(), "usr/sbin/no-such-mkfs", "nosuch-pkg")
