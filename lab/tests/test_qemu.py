"""The boot loop, driven by a fake QEMU that replays a console log."""

import os
import stat
import sys
from pathlib import Path

import pytest

from lab.molab import qemu
from lab.molab.errors import LabError

FIX = Path(__file__).parent / "fixtures"

FAKE = """#!{python}
import os, sys, time
log = os.environ["FAKE_CONSOLE"]
stall = float(os.environ.get("FAKE_STALL", "0"))
with open(os.environ["FAKE_ARGV"], "w") as f:
    f.write("\\n".join(sys.argv[1:]))
for i, line in enumerate(open(log)):
    sys.stdout.write(line.replace("\\n", "\\r\\n"))
    sys.stdout.flush()
    if stall and "@@MO-BEGIN" in line:
        time.sleep(stall)
if os.environ.get("FAKE_HANG_AFTER"):
    time.sleep(60)
"""


@pytest.fixture
def fake(tmp_path, monkeypatch):
    exe = tmp_path / "qemu-fake"
    exe.write_text(FAKE.format(python=sys.executable))
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    kern = tmp_path / "bzImage"
    kern.write_bytes(b"k")
    initrd = tmp_path / "initrd"
    initrd.write_bytes(b"i")
    monkeypatch.setenv("FAKE_ARGV", str(tmp_path / "argv"))

    def make(log, suites, **kw):
        monkeypatch.setenv("FAKE_CONSOLE", str(FIX / log))
        return qemu.BootSpec(kernel=kern, initrd=initrd, suites=suites, qemu=str(exe),
                             results_dir=tmp_path / "results", echo="none", **kw)
    make.tmp = tmp_path
    return make


def test_boot_clean_log(fake):
    spec = fake("clean.log", ["kunit", "migration", "sample"], args="--size 4M --runs 3")
    res = qemu.boot(spec)
    assert res.ok, res.summary.lines()
    assert res.report.done
    assert res.console_log.read_text().startswith("SeaBIOS")
    assert res.files["sample/data.txt"].read_bytes() == b"hello from the guest\n"
    assert (res.results_dir / "suites" / "migration.log").exists()
    assert (res.results_dir / "result.json").exists()
    assert res.block("migration").rc == 0
    argv = (fake.tmp / "argv").read_text().split("\n")
    append = argv[argv.index("-append") + 1]
    assert "mo.run=kunit,migration,sample" in append
    assert 'mo.args="--size 4M --runs 3"' in append
    assert argv[argv.index("-accel") + 1] == "tcg,thread=single"


def test_boot_idle_timeout_is_a_hang(fake, monkeypatch):
    monkeypatch.setenv("FAKE_STALL", "5")
    spec = fake("clean.log", ["migration"], idle_timeout=1.5, timeout=30)
    res = qemu.boot(spec)
    assert not res.ok
    assert res.hang.startswith("hang: no console output for 1.5s")
    assert any(l.startswith("FAIL  boot  hang") for l in res.summary.lines())


def test_boot_total_timeout(fake, monkeypatch):
    monkeypatch.setenv("FAKE_STALL", "3")
    spec = fake("clean.log", ["migration"], idle_timeout=100, timeout=1.0)
    res = qemu.boot(spec)
    assert res.hang.startswith("hang: still running after 1.0s")
    assert not res.ok


def test_guest_that_dies_is_reported(fake):
    spec = fake("warning.log", ["stress", "after"])
    res = qemu.boot(spec)
    lines = res.summary.lines()
    assert "FAIL  after  did not run" in lines[1]
    assert lines[2].startswith("FAIL  console  1 finding(s): warning: WARNING: CPU: 1")


def test_numa_topology_arguments():
    args = qemu.numa_args(2, 1024)
    joined = " ".join(args)
    assert "node,nodeid=0,cpus=0,memdev=mem0" in joined
    assert "node,nodeid=1,cpus=1,memdev=mem1" in joined
    assert "node,nodeid=2,memdev=mem2" in joined
    for d in ("src=0,dst=1,val=20", "src=0,dst=2,val=30", "src=1,dst=2,val=30"):
        assert f"dist,{d}" in joined
    assert joined.count("memory-backend-ram") == 3
    four = " ".join(qemu.numa_args(4, 512))
    assert "nodeid=0,cpus=0,cpus=2," in four and "nodeid=1,cpus=1,cpus=3," in four
    assert "prealloc" not in joined
    pre = " ".join(qemu.numa_args(2, 1024, prealloc=True))
    assert pre.count("size=1024M,prealloc=on") == 3


def test_hmat_makes_node2_slower_memory():
    args = qemu.numa_args(3, 1024)
    nodes = [a for a in args if a.startswith("node,")]
    # HMAT needs an initiator for every node; node 2's is a node with CPUs.
    assert [n.rsplit(",", 1)[1] for n in nodes] == ["initiator=0", "initiator=1", "initiator=0"]
    lb = {}
    for a in args:
        if a.startswith("hmat-lb,"):
            kv = dict(x.split("=") for x in a.split(",")[1:])
            key = (int(kv["initiator"]), int(kv["target"]), kv["data-type"])
            assert key not in lb
            lb[key] = kv.get("latency") or kv.get("bandwidth")
    # Every initiator sees every target, latency and bandwidth.
    assert len(lb) == 2 * 3 * 2
    gb = lambda v: float(v.rstrip("G"))
    for i in (0, 1):
        lat = {t: int(lb[(i, t, "access-latency")]) for t in range(3)}
        bw = {t: gb(lb[(i, t, "access-bandwidth")]) for t in range(3)}
        assert lat[2] > max(lat[0], lat[1]) and bw[2] < min(bw[0], bw[1])
        assert lat[i] < lat[1 - i] and bw[i] > bw[1 - i]
    # The DRAM nodes look alike from their own initiators (memory-tiers'
    # reference check), and node 2 alike from both.
    assert lb[(0, 0, "access-latency")] == lb[(1, 1, "access-latency")]
    assert lb[(0, 0, "access-bandwidth")] == lb[(1, 1, "access-bandwidth")]
    assert lb[(0, 2, "access-latency")] == lb[(1, 2, "access-latency")]
    # SLIT distances unchanged.
    joined = " ".join(args)
    for d in ("src=0,dst=1,val=20", "src=0,dst=2,val=30", "src=1,dst=2,val=30"):
        assert f"dist,{d}" in joined


def test_command_line():
    spec = qemu.BootSpec(kernel=Path("k"), initrd=Path("i"), suites=["a", "b"], accel="multi")
    cmd = qemu.qemu_command(spec)
    assert cmd[:5] == ["qemu-system-x86_64", "-machine", "pc,hmat=on", "-accel",
                       "tcg,thread=multi"]
    assert cmd[cmd.index("-m") + 1] == "3072M"
    assert "-no-reboot" in cmd and "-nographic" in cmd
    assert cmd[cmd.index("-smp") + 1] == "2,sockets=2,cores=1,threads=1"
    assert cmd[cmd.index("-append") + 1] == "console=ttyS0 panic=-1 loglevel=7 mo.run=a,b"


@pytest.mark.parametrize("suites,args", [(["a b"], ""), (["a,b"], ""), (["a"], 'x "y"')])
def test_bad_suite_names_and_args(suites, args):
    spec = qemu.BootSpec(kernel=Path("k"), initrd=Path("i"), suites=suites, args=args)
    with pytest.raises(LabError):
        qemu.cmdline(spec)


def test_missing_kernel_is_a_clear_error(tmp_path):
    spec = qemu.BootSpec(kernel=tmp_path / "nope", initrd=tmp_path / "nope2", suites=[])
    with pytest.raises(LabError) as e:
        qemu.boot(spec)
    assert "not found" in e.value.line()


def test_bench_alternate_boots_in_abba_order(fake, monkeypatch):
    from lab.molab import bench
    spec = fake("clean.log", ["sample"])
    monkeypatch.setattr(qemu, "QEMU", spec.qemu)
    monkeypatch.setattr(bench, "RESULTS", fake.tmp / "res")
    real_boot = qemu.boot

    def boot(s):
        s.qemu = spec.qemu
        s.echo = "none"
        return real_boot(s)
    monkeypatch.setattr(qemu, "boot", boot)
    builds = {"vanilla": (spec.kernel, spec.initrd), "patched": (spec.kernel, spec.initrd)}
    runs = bench.alternate(builds, "sample", args="--size 4M", rounds=2,
                           files={"etc/mo/params": "x=1\n"})
    assert [r.label for r in runs] == ["vanilla-r0", "patched-r0", "patched-r1", "vanilla-r1"]
    assert all(r.ok for r in runs)
    assert runs[0].files["sample/data.txt"].read_bytes() == b"hello from the guest\n"
    argv = (fake.tmp / "argv").read_text().split("\n")
    assert argv[argv.index("-accel") + 1] == "tcg,thread=multi"
    assert argv[argv.index("-initrd") + 1].endswith("initrd-vanilla.cpio")


def test_old_qemu_is_refused(tmp_path, monkeypatch):
    from lab.molab.errors import LabError
    old = tmp_path / "qemu-old"
    old.write_text("#!/bin/sh\necho 'QEMU emulator version 7.2.15 (Debian 1:7.2+dfsg-7)'\n")
    old.chmod(0o755)
    with pytest.raises(LabError, match="needs QEMU 10 or newer"):
        qemu.check_qemu_version(str(old))
    new = tmp_path / "qemu-new"
    new.write_text("#!/bin/sh\necho 'QEMU emulator version 10.0.2 (Debian)'\n")
    new.chmod(0o755)
    assert qemu.check_qemu_version(str(new)).startswith("QEMU emulator version 10")
