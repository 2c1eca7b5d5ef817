"""The guest programs split into several files (guest/mo_bench/,
guest/mo_folios/, each with lib/mo_state.c, the files guest/Makefile and
make host-bench's host.build_mo_bench take): built file by file on the
host, no file-local variable defined in two files of one program (the
split's classic bug: a 'static' that was one variable is then one per
file, and each file sees only its own), linked, and --help runs."""

import shutil
import subprocess
from collections import defaultdict
from pathlib import Path

import pytest

from lab.molab import host
from lab.molab.util import GUEST

CC = shutil.which("cc") or shutil.which("gcc")
NM = shutil.which("nm")


def makefile_sources(tmp_path, prog):
    """The .c files guest/Makefile compiles into PROG (make -n, a stub
    kernel tree: these programs need none of it)."""
    ksrc = tmp_path / "ksrc"
    (ksrc / "tools/testing/selftests").mkdir(parents=True, exist_ok=True)
    (ksrc / "tools/testing/selftests/kselftest_harness.h").write_text("")
    out = tmp_path / "out"
    r = subprocess.run(["make", "-n", "-C", str(GUEST), f"KSRC={ksrc}", "KHDR=/usr/include",
                        f"OUT={out}", str(out / prog)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return [Path(w) for w in r.stdout.split() if w.endswith(".c")]


def host_sources(monkeypatch, tmp_path):
    """The .c files make host-bench compiles into mo_bench."""
    cmds = []
    monkeypatch.setattr(host, "run", lambda cmd, **kw: cmds.append(cmd))
    monkeypatch.setattr(host, "_have_libnuma", lambda: True)
    host.build_mo_bench(tmp_path / "host")
    [cmd] = cmds
    return [Path(GUEST, w) for w in cmd if w.endswith(".c")]


def local_variables(obj):
    """The file-local variables an object file defines (bss, data, rodata),
    but a function's own statics (gcc names them name.N)."""
    out = subprocess.run([NM, "--defined-only", str(obj)], capture_output=True, text=True,
                         check=True).stdout
    return {f[2] for f in (line.split() for line in out.splitlines())
            if len(f) == 3 and f[1] in "bdr" and "." not in f[2]}


@pytest.mark.skipif(not CC or not NM, reason="no C compiler")
@pytest.mark.parametrize("prog", ["mo_bench", "mo_folios"])
def test_a_split_program_has_one_copy_of_each_variable(tmp_path, monkeypatch, prog):
    srcs = makefile_sources(tmp_path, prog)
    assert GUEST / "lib" / "mo_state.c" in srcs and \
        set(srcs) >= set((GUEST / prog).glob("*.c")), srcs
    if prog == "mo_bench":
        assert sorted(host_sources(monkeypatch, tmp_path)) == sorted(srcs)
    where = defaultdict(list)
    objs = []
    for src in srcs:
        obj = tmp_path / f"{src.parent.name}-{src.stem}.o"
        r = subprocess.run([CC, "-O0", "-c", "-Wall", "-Wextra", "-o", str(obj), str(src)],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        objs.append(obj)
        for name in local_variables(obj):
            where[name].append(src.relative_to(GUEST).as_posix())
    twice = {name: files for name, files in where.items() if len(files) > 1}
    assert not twice, f"file-local variables defined in more than one file: {twice}"
    exe = tmp_path / prog
    r = subprocess.run([CC, "-o", str(exe), *map(str, objs), "-lnuma", "-lpthread", "-lm"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([str(exe), "--help"], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.startswith(f"usage: {prog} "), r.stdout + r.stderr
