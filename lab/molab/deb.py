"""make deb: the kernel (vanilla or patched) as Debian packages, configured
as Debian configures its own 6.12 kernel.

The configuration is Debian's config.amd64_none_amd64 (package
linux-config-6.12, installed if missing) + configs/deb.config (the engines
as modules, the DMA providers, no debug info, our own module signing key),
then olddefconfig; every option of the fragment must come out as asked
(the series' options only on the patched tree). LSMOD=file trims the
modules to those listed (make localmodconfig; the engines are kept): for a
build on the machine that will run it (lsmod > file), or the lab's kit test.

Packages (make bindeb-pkg) land in build/deb/<variant>/: linux-image-
<release> (kernel, modules: mtcopy.ko, dcbm.ko, swdma.ko under
kernel/drivers/...) and linux-headers-<release>. The release ends in
-mo-<variant>, so that both kernels can be installed side by side.
"""

import os
import shutil
import subprocess
import time
from pathlib import Path

from . import kconfig, kernel, tree
from .errors import LabError
from .util import BUILD, CONFIGS, locked, nproc, rel, run, say

DEB_DIR = BUILD / "deb"
DEBIAN_CONFIG_DIR = Path("/usr/src/linux-config-6.12")
DEBIAN_FLAVOUR = "config.amd64_none_amd64.xz"
FRAGMENT = CONFIGS / "deb.config"
# Kept by localmodconfig whatever the list says: the engines and their providers.
# (and the CXL and dax stack, which brings a CXL machine's lower tier online:
# an lsmod taken before that memory was onlined must not drop them).
KEEP_MODULES = ("mtcopy", "dcbm", "swdma", "ptdma", "ioatdma", "idxd", "idxd_bus", "dca",
                "cxl_core", "cxl_acpi", "cxl_pci", "cxl_port", "cxl_mem", "cxl_pmem",
                "dax_hmem", "device_dax", "kmem", "dax_pmem")
SERIES_ONLY = ("CONFIG_MIGRATE_OFFLOAD_DCBM", "CONFIG_MIGRATE_OFFLOAD_MTCOPY", "CONFIG_SWDMA")
# bindeb-pkg's tools (dpkg-buildpackage and what debian/rules calls)
TOOLS = {"dpkg-buildpackage": "dpkg-dev", "fakeroot": "fakeroot", "bc": "bc",
         "rsync": "rsync", "cpio": "cpio", "flex": "flex", "bison": "bison", "kmod": "kmod",
         "dh": "debhelper",  # dpkg-buildpackage checks debhelper-compat (= 12)
         "gcc": "build-essential", "make": "build-essential", "git": "git", "xz": "xz-utils",
         "pkg-config": "pkg-config"}
# headers the build needs (Build-Depends-Arch of the generated debian/control)
HEADERS = {"/usr/include/libelf.h": "libelf-dev", "/usr/include/openssl/ssl.h": "libssl-dev"}


def debian_config():
    """Debian's amd64 configuration, installing linux-config-6.12 if needed."""
    cfg = DEBIAN_CONFIG_DIR / DEBIAN_FLAVOUR
    if not cfg.exists():
        if not shutil.which("apt-get"):
            raise LabError(f"{cfg} is missing and there is no apt-get",
                           "install Debian's linux-config-6.12 package (or copy its "
                           f"{DEBIAN_FLAVOUR} to {DEBIAN_CONFIG_DIR})")
        say("== installing linux-config-6.12 (Debian's kernel configurations)")
        run(["apt-get", "install", "-y", "-qq", "linux-config-6.12"],
            capture=True, what="apt-get install linux-config-6.12",
            hint="it is in bookworm-security and bookworm-backports: check /etc/apt/sources.list")
    if not cfg.exists():
        raise LabError(f"linux-config-6.12 has no {DEBIAN_FLAVOUR}",
                       f"list {DEBIAN_CONFIG_DIR} and report which configurations it holds")
    return cfg


def _tools():
    missing = sorted({pkg for t, pkg in TOOLS.items() if not shutil.which(t)}
                     | {pkg for h, pkg in HEADERS.items() if not Path(h).exists()}
                     | ({"linux-source-6.12"} if not Path("/usr/src/linux-source-6.12.tar.xz")
                        .exists() and not (BUILD / "linux").exists() else set()))
    if missing:
        say(f"== installing {' '.join(missing)}")
        run(["apt-get", "install", "-y", "-qq", *missing], capture=True, what="apt-get install",
            hint=f"install {' '.join(missing)}, then run again")


def wanted(variant):
    """The fragment's options this variant's tree must honour."""
    req = kconfig.parse_file(FRAGMENT)
    if variant != "patched":
        req = {k: v for k, v in req.items() if k not in SERIES_ONLY}
    return req


def configure(variant, src, obj, lsmod=None):
    """Write obj/.config: Debian's + deb.config (+ localmodconfig)."""
    obj.mkdir(parents=True, exist_ok=True)
    log = obj / "molab-config.log"
    env = {**os.environ, "KBUILD_BUILD_USER": "molab", "KBUILD_BUILD_HOST": "molab"}
    req = wanted(variant)
    frag = obj / "deb.config"
    frag.write_text("".join(f"{k}={v}\n" for k, v in req.items())
                    + f'CONFIG_LOCALVERSION="-mo-{variant}"\n'
                    + "# CONFIG_LOCALVERSION_AUTO is not set\n")
    with open(log, "w") as lf:
        def step(cmd, what, stdin=subprocess.DEVNULL):
            lf.write(f"$ {' '.join(map(str, cmd))}\n")
            lf.flush()
            rc = subprocess.run([str(c) for c in cmd], stdout=lf, stderr=subprocess.STDOUT,
                                stdin=stdin, env=env).returncode
            if rc != 0:
                raise LabError(f"{what} failed (exit {rc})", f"see {rel(log)}")
        with open(obj / ".config", "wb") as f:
            f.write(subprocess.run(["xzcat", str(debian_config())], check=True,
                                   capture_output=True).stdout)
        mk = ["make", "-C", str(src), f"O={obj}", "-s", "LOCALVERSION="]
        step([str(src / "scripts/kconfig/merge_config.sh"), "-m", "-O", str(obj),
              str(obj / ".config"), str(frag)], "merge_config.sh")
        step(locked([*mk, "olddefconfig"]), "make olddefconfig")
        if lsmod:
            keep = obj / "lsmod"
            text = Path(lsmod).read_text()
            keep.write_text(text + "".join(f"{m} 0 0\n" for m in KEEP_MODULES))
            # new questions it asks get their defaults
            yes = subprocess.Popen(["yes", ""], stdout=subprocess.PIPE)
            try:
                step(locked([*mk, "localmodconfig", f"LSMOD={keep}"]), "make localmodconfig",
                     stdin=yes.stdout)
            finally:
                yes.kill()
                yes.wait()
            # localmodconfig may drop an option the fragment asks for: again
            step([str(src / "scripts/kconfig/merge_config.sh"), "-m", "-O", str(obj),
                  str(obj / ".config"), str(frag)], "merge_config.sh")
            step(locked([*mk, "olddefconfig"]), "make olddefconfig")
    bad = kconfig.verify(req, kconfig.parse_file(obj / ".config"))
    if bad:
        raise LabError(f"deb config {rel(obj)}: {len(bad)} option(s) not as "
                       f"configs/deb.config asks: {'; '.join(bad[:3])}",
                       "fix configs/deb.config (a dependency Debian's configuration lacks)")
    return obj / ".config"


def build(variant="patched", lsmod=None, ksrc=None):
    """Configure and build the packages; returns the list of .deb files."""
    if variant not in ("patched", "vanilla"):
        raise LabError(f"VARIANT={variant}: make deb builds patched or vanilla", "give one of them")
    if lsmod and not Path(lsmod).is_file():
        raise LabError(f"LSMOD={lsmod}: no such file", "write one with 'lsmod > FILE' on the "
                       "machine that will run the kernel")
    _tools()
    tree.ensure_tree(ksrc, match_series=True)
    src = Path(tree.source_for(variant, ksrc)).resolve()
    top = DEB_DIR / variant
    obj = top / "obj"
    say(f"== deb {variant}: Debian's amd64 config + configs/deb.config"
        f"{' + localmodconfig ' + str(lsmod) if lsmod else ''} ({rel(obj)})")
    configure(variant, src, obj, lsmod)
    for old in top.glob("*.deb"):
        old.unlink()
    for old in top.glob("*.changes"):
        old.unlink()
    log = obj / "molab-deb.log"
    env = {**os.environ, "KBUILD_BUILD_USER": "molab", "KBUILD_BUILD_HOST": "molab",
           "CCACHE_DIR": str(BUILD / "ccache"), "KDEB_COMPRESS": "gzip"}
    say(f"  make bindeb-pkg -j{nproc()} (log {rel(log)})")
    t0 = time.monotonic()
    with open(log, "w") as lf:
        # LOCALVERSION= (empty, but set): the release is <version>-mo-<variant>,
        # without the "+" setlocalversion adds to a git tree not at a tag.
        cc = ["CC=ccache gcc"] if shutil.which("ccache") else []
        rc = subprocess.run(locked(["make", "-C", str(src), f"O={obj}", *cc, "LOCALVERSION=",
                                    f"-j{nproc()}", "bindeb-pkg"]),
                            stdout=lf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            env=env).returncode
    if rc != 0:
        cause, excerpt = kernel.build_failure(log)
        for line in excerpt:
            say(f"    | {line}")
        raise LabError(f"make bindeb-pkg of {variant} failed: {cause}", f"see {rel(log)}")
    debs = sorted(top.glob("*.deb"))
    want = f"linux-image-{kernel_version(src)}-mo-{variant}_"
    if not any(d.name.startswith(want) for d in debs):
        raise LabError(f"make bindeb-pkg left no {want}*.deb in {rel(top)} (have: "
                       f"{', '.join(d.name for d in debs) or 'none'})", f"see {rel(log)}")
    say(f"  built in {time.monotonic() - t0:.0f}s:")
    for d in debs:
        say(f"    {rel(d)} ({d.stat().st_size / 2**20:.1f} MiB)")
    return debs


def kernel_version(src):
    """"6.12.117" from the tree's top Makefile."""
    from .util import read_makefile_version
    v = read_makefile_version(src)
    if not v:
        raise LabError(f"{src}: no kernel version in its Makefile", "check the tree")
    return ".".join(map(str, v))


def image_deb(variant):
    debs = sorted((DEB_DIR / variant).glob("linux-image-*.deb"))
    debs = [d for d in debs if "-dbg_" not in d.name]
    if not debs:
        raise LabError(f"no linux-image package in {rel(DEB_DIR / variant)}",
                       f"build it: make deb VARIANT={variant}")
    return debs[-1]


def extract(deb, dest):
    """Unpack a package (dpkg-deb -x); returns (vmlinuz, release, root)."""
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    run(["dpkg-deb", "-x", str(deb), str(dest)], what=f"dpkg-deb -x {deb.name}")
    kernels = sorted((dest / "boot").glob("vmlinuz-*"))
    if len(kernels) != 1:
        raise LabError(f"{deb.name}: {len(kernels)} kernels under boot/", "rebuild with make deb")
    release = kernels[0].name[len("vmlinuz-"):]
    if not any((dest / d / release).is_dir() for d in ("lib/modules", "usr/lib/modules")):
        raise LabError(f"{deb.name}: no lib/modules/{release}", "rebuild with make deb")
    return kernels[0], release, dest
