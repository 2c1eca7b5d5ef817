"""The guest's initramfs: busybox, /init, modules, guest programs, selftests.

Layout in the guest:
    /init                     guest/init.sh
    /bin/busybox + applets    from busybox-static
    /bin/mo-sendfile          send a file back to the lab over the console
    /usr/sbin/mkfs.xfs, mke2fs  the host's, with their shared objects
    /lib/modules/<release>/   the kernel's modules
    /opt/mo/...               everything guest/Makefile put in its OUT dir
                              (suites in /opt/mo/suites/<name>)
    /opt/mo/migration         wrapper running the upstream mm migration selftest
    /opt/mo/selftests/        upstream mm selftests built by the lab (MM_SELFTESTS)
    /etc/mo/build.json        which kernel this initramfs was made for
"""

import json
import os
import re
import struct
import subprocess
from pathlib import Path

from . import cpio
from .errors import LabError
from .util import GUEST, rel, run, say

BUSYBOX_CANDIDATES = ("/bin/busybox", "/usr/bin/busybox")

SENDFILE = r"""#!/bin/sh
# mo-sendfile FILE [NAME]: send FILE to the lab as base64 between markers.
# The lab decodes it into files/NAME in the run's results directory.
f=$1; n=${2:-$(basename "$1")}
[ -f "$f" ] || { echo "mo-sendfile: $f: no such file" >&2; exit 1; }
size=$(wc -c < "$f")
sum=$(sha256sum "$f" | cut -d' ' -f1)
echo "@@MO-FILE-BEGIN $n"
base64 "$f"
echo "@@MO-FILE-END $n size=$size sha256=$sum"
"""

MIGRATION_WRAPPER = r"""#!/bin/sh
# The upstream tools/testing/selftests/mm/migration test. Like
# run_vmtests.sh, reserve a few huge pages for its hugetlb cases.
old=$(cat /proc/sys/vm/nr_hugepages 2>/dev/null || echo 0)
echo "${MO_HUGEPAGES:-8}" > /proc/sys/vm/nr_hugepages 2>/dev/null
/opt/mo/selftests/migration "$@"
rc=$?
echo "$old" > /proc/sys/vm/nr_hugepages 2>/dev/null
exit $rc
"""


def elf_is_static(path):
    """True if an ELF file has no program interpreter (PT_INTERP)."""
    with open(path, "rb") as f:
        hdr = f.read(64)
        if hdr[:4] != b"\x7fELF" or hdr[4] != 2:
            return False
        endian = "<" if hdr[5] == 1 else ">"
        phoff, = struct.unpack_from(endian + "Q", hdr, 0x20)
        phentsize, phnum = struct.unpack_from(endian + "HH", hdr, 0x36)
        for i in range(phnum):
            f.seek(phoff + i * phentsize)
            ptype, = struct.unpack(endian + "I", f.read(4))
            if ptype == 3:
                return False
    return True


def find_busybox():
    for c in BUSYBOX_CANDIDATES:
        if os.path.exists(c) and elf_is_static(c):
            return Path(c)
    raise LabError("no static busybox found (/bin/busybox)",
                   "install busybox-static with 'sudo sh lab/setup.sh'")


def busybox_applets(busybox):
    out = subprocess.run([str(busybox), "--list-full"], capture_output=True, text=True)
    if out.returncode != 0:
        raise LabError("busybox --list-full failed", "reinstall busybox-static")
    return [l.strip() for l in out.stdout.splitlines() if l.strip()]


# Dynamically linked host programs the suites run, copied with the shared
# objects they load (folios: filesystems on a RAM disk).
HOST_PROGRAMS = (("usr/sbin/mkfs.xfs", "xfsprogs"), ("usr/sbin/mke2fs", "e2fsprogs"))


def ldd_paths(text):
    """The absolute paths of the shared objects in ldd's output."""
    paths = []
    for line in text.splitlines():
        m = re.match(r"\s*(?:\S+\s+=>\s+)?(/\S+)\s+\(0x[0-9a-f]+\)", line)
        if m:
            paths.append(m.group(1))
    return paths


def add_host_program(arc, path, package):
    """Add /``path`` and its shared objects at the same paths in the guest."""
    prog = Path("/") / path
    if not prog.is_file():
        raise LabError(f"{prog} is missing (package {package})", "run 'sudo sh lab/setup.sh'")
    out = subprocess.run(["ldd", str(prog)], capture_output=True, text=True)
    if out.returncode != 0:
        raise LabError(f"ldd {prog} failed: {out.stderr.strip()}", f"reinstall {package}")
    arc.add_host_file(path, prog, 0o755)
    for lib in ldd_paths(out.stdout):
        dest = lib.lstrip("/")
        if dest not in arc:
            arc.add_host_file(dest, Path(lib).resolve(), 0o755)


def _newer(target, sources):
    if not target.exists():
        return True
    t = target.stat().st_mtime
    return any(Path(s).stat().st_mtime > t for s in sources if Path(s).exists())


# Upstream tools/testing/selftests/mm programs built for the guest, with
# what their Makefile links them with: every program gets vm_util.c and
# thp_settings.c; the uffd ones uffd-common.c; -lnuma where it adds it.
# name: (extra helper sources, extra libraries, extra compiler flags)
MM_SELFTESTS = {
    "migration": ((), ("-lnuma",), ()),
    "compaction_test": ((), (), ()),
    "transhuge-stress": ((), (), ()),
    "split_huge_page_test": ((), (), ()),
    # 6.12.117's khugepaged.c returns KSFT_SKIP without including
    # kselftest.h (it does not build upstream either): include it.
    "khugepaged": ((), (), ("-include", "kselftest.h")),
    "ksm_functional_tests": ((), (), ()),
    "ksm_tests": ((), ("-lnuma",), ()),
    "uffd-unit-tests": (("uffd-common.c",), (), ()),
    # Needs the test_hmm module (CONFIG_TEST_HMM, configs/debug.config).
    "hmm-tests": ((), (), ()),
}
MM_HELPERS = ("vm_util.c", "thp_settings.c")
MM_LIBS = ("-lrt", "-lpthread", "-lm")


def selftest_command(src, hdr_inc, name, dest):
    """The gcc command line building mm selftest ``name`` statically."""
    st = Path(src) / "tools/testing/selftests"
    mm = st / "mm"
    helpers, libs, cflags = MM_SELFTESTS[name]
    srcs = [mm / f"{name}.c", *(mm / h for h in (*MM_HELPERS, *helpers))]
    return ["gcc", "-static", "-O2", "-Wall", "-Wno-unused-result", "-U_FORTIFY_SOURCE",
            f"-I{st}", f"-I{mm}", f"-I{src}", "-isystem", str(hdr_inc), *cflags,
            *map(str, srcs), *libs, *MM_LIBS, "-o", str(dest)]


def build_mm_selftest(kb, name):
    """Compile tools/testing/selftests/mm/<name>.c statically; returns the binary."""
    st = kb.src / "tools/testing/selftests"
    mm = st / "mm"
    if not (mm / f"{name}.c").exists():
        raise LabError(f"{rel(mm / (name + '.c'))} not found", "check the kernel tree (KSRC)")
    hdr_inc = kb.hdr / "include"
    if not hdr_inc.is_dir():
        raise LabError(f"{rel(hdr_inc)} missing (no headers_install)",
                       "build the kernel first (python3 -m lab.molab kernel)")
    dest_dir = kb.out / "selftests"
    dest_dir.mkdir(exist_ok=True)
    dest = dest_dir / name
    cmd = selftest_command(kb.src, hdr_inc, name, dest)
    deps = [Path(a) for a in cmd if a.endswith(".c")] + [
        st / "kselftest_harness.h", st / "kselftest.h", *mm.glob("*.h")]
    if not _newer(dest, deps):
        return dest
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        errs = [l for l in r.stderr.splitlines() if "error" in l] or r.stderr.splitlines()[-3:]
        for l in r.stderr.splitlines()[-20:]:
            say(f"    | {l}")
        raise LabError(f"compiling the {name} selftest failed: {errs[0] if errs else '?'}",
                       "check libnuma-dev (lab/setup.sh) and the kernel headers")
    return dest


def build_migration_selftest(kb):
    """Compile tools/testing/selftests/mm/migration.c statically; returns the binary."""
    return build_mm_selftest(kb, "migration")


def build_mm_selftests(kb, names=None):
    """Build the MM_SELFTESTS (or ``names``); returns {name: binary}."""
    return {n: build_mm_selftest(kb, n) for n in (names or MM_SELFTESTS)}


def build_guest(kb):
    """Run guest/Makefile into <out>/guest; returns that dir (or None if no Makefile)."""
    mk = GUEST / "Makefile"
    if not mk.exists():
        return None
    out = kb.out / "guest"
    out.mkdir(exist_ok=True)
    cmd = ["make", "-C", str(GUEST), f"KSRC={kb.src}", f"KOUT={kb.out}",
           f"KHDR={kb.hdr / 'include'}", f"OUT={out}"]
    say(f"  make -C guest OUT={rel(out)}")
    # Userspace programs only: no kernel build lock (a guest Makefile that
    # builds kernel modules must take /tmp/mo-kbuild.lock itself).
    run(cmd, what="make -C guest",
        hint="fix guest/Makefile or the guest programs (see the output above)")
    return out


def guest_suites(kb):
    """Names of the suites guest/Makefile installed (executables in <out>/guest/suites)."""
    d = kb.out / "guest" / "suites"
    if not d.is_dir():
        return []
    return sorted(p.name for p in d.iterdir()
                  if p.is_file() and os.access(p, os.X_OK) and not p.name.startswith("."))


def build(kb, dest=None, with_guest=True, with_selftests=True):
    """Write <out>/initramfs.cpio.gz for a KernelBuild; returns its path."""
    from . import kernel
    if not kb.hdr.is_dir() or not kb.modroot.is_dir():
        say(f"  {rel(kb.out)}: installing modules and headers")
        kernel.install(kb)
    arc = cpio.Archive()
    for d in ("bin", "sbin", "usr/bin", "usr/sbin", "dev", "proc", "sys", "tmp", "run",
              "etc", "root", "lib/modules", "opt/mo/suites", "mnt"):
        arc.add_dir(d)
    arc.add_dir("tmp", 0o1777)
    arc.add_chardev("dev/console", 5, 1, 0o600)
    arc.add_chardev("dev/null", 1, 3, 0o666)
    arc.add_chardev("dev/ttyS0", 4, 64, 0o600)

    bb = find_busybox()
    arc.add_host_file("bin/busybox", bb, 0o755)
    for applet in busybox_applets(bb):
        a = applet.lstrip("/")
        if a in ("bin/busybox", "init", "linuxrc"):
            continue
        arc.add_symlink(a, "/bin/busybox")
    if "bin/sh" not in arc:
        arc.add_symlink("bin/sh", "busybox")

    init = GUEST / "init.sh"
    if not init.exists():
        raise LabError("guest/init.sh is missing", "restore it from git")
    arc.add_host_file("init", init, 0o755)
    arc.add_file("bin/mo-sendfile", SENDFILE, 0o755)
    arc.add_file("etc/passwd", "root:x:0:0:root:/root:/bin/sh\n")
    arc.add_file("etc/group", "root:x:0:\n")

    for path, package in HOST_PROGRAMS:
        add_host_program(arc, path, package)
    if Path("/etc/mke2fs.conf").is_file():
        arc.add_host_file("etc/mke2fs.conf", Path("/etc/mke2fs.conf"))

    mods = kb.modroot / "lib/modules"
    if mods.is_dir():
        arc.add_tree(mods, "lib/modules")

    n_guest = 0
    if with_guest:
        gout = build_guest(kb)
        if gout is not None:
            arc.add_tree(gout, "opt/mo")
            n_guest = sum(1 for _ in gout.rglob("*") if _.is_file())
    if with_selftests:
        for name, binary in build_mm_selftests(kb).items():
            arc.add_host_file(f"opt/mo/selftests/{name}", binary, 0o755)
        if "opt/mo/migration" not in arc:
            arc.add_file("opt/mo/migration", MIGRATION_WRAPPER, 0o755)

    info = {"variant": kb.variant, "flavour": kb.flavour, "release": kb.release,
            "base": kb.base, "commit": kb.commit}
    arc.add_file("etc/mo/build.json", json.dumps(info, indent=1) + "\n")
    dest = Path(dest or kb.initramfs)
    arc.write_gz(dest)
    say(f"  initramfs {rel(dest)}: {len(arc.entries)} entries, "
        f"{dest.stat().st_size // 1024} KiB ({n_guest} guest file(s), "
        f"suites: {', '.join(guest_suites(kb)) or 'none from guest/'})")
    return dest


def overlay(base_initrd, files, dest):
    """A copy of ``base_initrd`` with extra files ({guest path: bytes|str|Path}).

    For per-boot inputs (benchmark parameters, data) without rebuilding the
    initramfs: the kernel unpacks the appended archive over the base one.
    """
    arc = cpio.Archive()
    for path, content in files.items():
        if isinstance(content, Path):
            arc.add_host_file(path, content)
        else:
            mode = 0o755 if isinstance(content, (str, bytes)) and str(path).startswith(
                ("bin/", "/bin/", "opt/mo/suites/", "/opt/mo/suites/")) else 0o644
            arc.add_file(path, content, mode)
    return cpio.append_overlay(base_initrd, arc, dest)
