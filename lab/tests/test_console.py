from pathlib import Path

import pytest

from lab.molab import console

FIX = Path(__file__).parent / "fixtures"


def scan(text, accel="single"):
    return console.scan_text(text, accel)


def ts(msg, t="12.345678"):
    return f"[   {t}] {msg}"


def test_clean_log_passes():
    rep = scan((FIX / "clean.log").read_text())
    assert rep.status == console.STATUS_OK
    assert rep.findings == []
    assert rep.done
    assert [b.name for b in rep.blocks] == ["migration", "sample", "kmemleak"]
    mig = rep.block("migration")
    assert mig.ended and mig.rc == 0 and mig.seconds == pytest.approx(41.2)
    assert "ok 1 migration.private_anon" in mig.lines


# One example per failure kind: (kind, kernel message)
KINDS = [
    ("oops", "Oops: general protection fault, probably for non-canonical address 0xdead: 0000 [#1] PREEMPT SMP"),
    ("oops", "Oops: 0002 [#1] PREEMPT SMP NOPTI"),
    ("bug", "BUG: kernel NULL pointer dereference, address: 0000000000000008"),
    ("bug", "BUG: sleeping function called from invalid context at mm/migrate.c:100"),
    ("kernel-bug", "kernel BUG at mm/migrate.c:1234!"),
    ("kasan", "BUG: KASAN: slab-out-of-bounds in folio_mc_copy+0x10/0x20"),
    ("warning", "WARNING: CPU: 0 PID: 1 at mm/migrate.c:42 migrate_pages_batch+0x1/0x2"),
    ("lockdep", "WARNING: possible circular locking dependency detected"),
    ("lockdep", "inconsistent lock state"),
    ("kmemleak", "kmemleak: 3 new suspected memory leaks (see /sys/kernel/debug/kmemleak)"),
    ("hung-task", "INFO: task kworker/0:1:12 blocked for more than 120 seconds."),
    ("soft-lockup", "watchdog: BUG: soft lockup - CPU#1 stuck for 22s! [migrate:80]"),
    ("rcu-stall", "rcu: INFO: rcu_preempt self-detected stall on CPU"),
    ("rcu-stall", "rcu: INFO: rcu_sched detected stalls on CPUs/tasks:"),
    ("panic", "Kernel panic - not syncing: Fatal exception"),
    ("ubsan", "UBSAN: shift-out-of-bounds in mm/migrate.c:10:5"),
]


@pytest.mark.parametrize("kind,msg", KINDS)
def test_each_failure_kind_fails_the_run(kind, msg):
    log = "\n".join([ts("Linux version 6.12", "0.000000"), "@@MO-BEGIN s", "ok 1 a",
                     ts(msg), "@@MO-END s rc=0", "@@MO-DONE"])
    rep = scan(log)
    assert rep.status == console.STATUS_FAIL
    assert rep.first.kind == kind
    assert rep.first.line_no == 4
    assert rep.first.text == msg


def test_lockdep_wins_over_generic_warning_kind():
    # lockdep headers start with WARNING: but are named lockdep
    assert console.classify("WARNING: possible circular locking dependency detected") == "lockdep"


def test_first_finding_is_named():
    log = "\n".join([ts("Linux", "0.0"), ts("WARNING: CPU: 0 PID: 1 at a.c:1 f"),
                     ts("Kernel panic - not syncing: x")])
    rep = scan(log)
    assert rep.first.kind == "warning" and len(rep.findings) == 2


def test_userspace_warning_text_is_not_a_kernel_warning():
    rep = scan((FIX / "clean.log").read_text())
    assert rep.status == console.STATUS_OK   # "sample says WARNING:" is guest output


def test_kernel_message_inside_guest_line_is_split():
    rep = scan((FIX / "warning.log").read_text())
    assert rep.status == console.STATUS_FAIL
    assert rep.first.kind == "warning"
    assert rep.first.text.startswith("WARNING: CPU: 1 PID: 77 at mm/migrate.c:1234")
    blk = rep.block("stress")
    # the guest's line a kernel message cut in two is whole again
    assert blk.lines[2] == "ok 1 stress"
    assert any("cut here" in k for k in blk.kernel_lines)


def test_kmemleak_report_in_block():
    log = "\n".join([ts("Linux", "0.0"), "@@MO-BEGIN kmemleak",
                     "unreferenced object 0xffff888003a1b000 (size 64):",
                     '  comm "swapper/0", pid 1, jiffies 4294667296',
                     "@@MO-END kmemleak rc=0", "@@MO-DONE"])
    rep = scan(log)
    assert rep.status == console.STATUS_FAIL
    assert rep.first.kind == "kmemleak"
    assert "0xffff888003a1b000" in rep.first.text


def test_unreferenced_object_outside_kmemleak_block_is_guest_text():
    log = "\n".join([ts("Linux", "0.0"), "@@MO-BEGIN s",
                     "# test prints unreferenced object 0x1234 in its own output",
                     "@@MO-END s rc=0", "@@MO-DONE"])
    assert scan(log).status == console.STATUS_OK


INT3 = "Oops: int3: 0000 [#1] PREEMPT SMP"


RIP = "RIP: 0010:migrator_register+0x4/0x80"
SITES = console.PatchSites({0x1003}, {"migrator_register": [0x1000]})


def test_int3_at_a_patch_site_under_multithreaded_tcg_is_an_emulator_fault():
    log = "\n".join([ts("Linux", "0.0"), ts(INT3), ts("CPU: 1 UID: 0 PID: 80 Comm: x"), ts(RIP),
                     ts("Kernel panic - not syncing: Fatal exception in interrupt")])
    rep = console.excuse_int3(scan(log, accel="multi"), SITES)
    assert rep.status == console.STATUS_EMULATOR
    assert rep.first.kind == "emulator-fault" and rep.first.text == INT3
    assert rep.first.rip == "migrator_register+0x4/0x80"
    assert "jump-label site 0x1003" in rep.first.excuse


def test_int3_without_evidence_is_a_failure():
    log = "\n".join([ts("Linux", "0.0"), ts(INT3), ts(RIP)])
    # not at a patch site (RIP - 1 is no jump-label instruction)
    rep = console.excuse_int3(scan(log, accel="multi"),
                              console.PatchSites({0x2000}, {"migrator_register": [0x1000]}))
    assert rep.status == console.STATUS_FAIL and rep.first.kind == "int3"
    assert "not at a jump-label site" in rep.first.excuse
    # no vmlinux to check against, no RIP line: no excuse either
    assert console.excuse_int3(scan(log, "multi"), None).status == console.STATUS_FAIL
    rep = console.excuse_int3(scan("\n".join([ts("Linux", "0.0"), ts(INT3)]), "multi"), SITES)
    assert rep.status == console.STATUS_FAIL and rep.first.excuse == "no RIP line"


def test_int3_under_single_threaded_tcg_is_a_failure():
    log = "\n".join([ts("Linux", "0.0"), ts(INT3), ts(RIP)])
    rep = console.excuse_int3(scan(log, accel="single"), SITES)
    assert rep.status == console.STATUS_FAIL
    assert rep.first.kind == "oops"


def test_every_finding_is_judged_not_only_the_first():
    # an excused int3 first, then a KASAN report and a WARNING: a failure
    log = "\n".join([ts("Linux", "0.0"), ts(INT3), ts(RIP),
                     ts("BUG: KASAN: use-after-free in dcbm_wait+0x10/0x20"),
                     ts("WARNING: CPU: 0 PID: 1 at mm/migrate.c:42 f+0x1/0x2")])
    rep = console.excuse_int3(scan(log, accel="multi"), SITES)
    assert rep.first.kind == "emulator-fault"
    assert rep.status == console.STATUS_FAIL
    assert [f.kind for f in rep.failures] == ["kasan", "warning"]
    # a panic that is not the excused oops's own ending is not excused
    log = "\n".join([ts("Linux", "0.0"), ts(INT3), ts(RIP), ts("Kernel panic - not syncing: VFS")])
    assert console.excuse_int3(scan(log, "multi"), SITES).status == console.STATUS_FAIL


def test_int3_rule_is_narrow():
    # another oops under MTTCG is a real failure
    rep = scan("\n".join([ts("Linux", "0.0"), ts("Oops: general protection fault: 0000 [#1] SMP")]),
               accel="multi")
    assert rep.status == console.STATUS_FAIL
    # "int3" mentioned elsewhere is not the signature
    assert console.classify("traps: int3 handler called", "multi") is None


def _elf(sections):
    """A minimal little-endian ELF64 file: [(name, type, addr, data, link)]."""
    import struct
    names = b"\0" + b"".join(n.encode() + b"\0" for n, *_ in sections) + b".shstrtab\0"
    body, offs = b"", []
    for _, _, _, data, _ in sections:
        offs.append(64 + len(body))
        body += data
    shstr_off = 64 + len(body)
    body += names
    shoff = 64 + len(body)
    hdr = b"\x7fELF\x02\x01\x01" + b"\0" * 9 + struct.pack(
        "<HHIQQQIHHHHHH", 2, 62, 1, 0, 0, shoff, 0, 64, 0, 0, 64, len(sections) + 2,
        len(sections) + 1)
    shdrs = b"\0" * 64
    pos = 1
    for (n, typ, addr, data, link), off in zip(sections, offs):
        shdrs += struct.pack("<IIQQQQIIQQ", pos, typ, 0, addr, off, len(data), link, 0, 8, 0)
        pos += len(n) + 1
    shdrs += struct.pack("<IIQQQQIIQQ", pos, 3, 0, 0, shstr_off, len(names), 0, 0, 1, 0)
    return hdr + body + shdrs


def test_patch_sites_from_a_vmlinux(tmp_path):
    import struct
    # two jump entries at 0x5000 and 0x5010: code fields relative to themselves
    jt = struct.pack("<iiq", 0x1003 - 0x5000, 0, 0) + struct.pack("<iiq", 0x2000 - 0x5010, 0, 0)
    strtab = b"\0migrator_register\0some_data\0"
    sym = b"\0" * 24 + struct.pack("<IBBHQQ", 1, 0x12, 0, 1, 0x1000, 0x80) + \
        struct.pack("<IBBHQQ", 19, 0x11, 0, 1, 0x3000, 8)
    # a module: the table is a section of its own
    path = tmp_path / "mod.ko"
    path.write_bytes(_elf([("__jump_table", 1, 0x5000, jt, 0), (".symtab", 2, 0, sym, 3),
                           (".strtab", 3, 0, strtab, 0)]))
    sites = console.PatchSites.from_vmlinux(path)
    assert sites.sites == {0x1003, 0x2000}
    assert sites.symbols == {"migrator_register": [0x1000]}     # functions only
    assert sites.reason("migrator_register+0x4/0x80")
    assert not sites.reason("migrator_register+0x5/0x80")
    assert not sites.reason("other+0x4/0x80")
    # a vmlinux: the table sits inside .data between __start/__stop symbols
    strtab2 = strtab + b"__start___jump_table\0__stop___jump_table\0"
    n0 = len(strtab)
    sym2 = sym + struct.pack("<IBBHQQ", n0, 0x10, 0, 1, 0x5010, 0) + \
        struct.pack("<IBBHQQ", n0 + 21, 0x10, 0, 1, 0x5030, 0)
    jt_at_5010 = struct.pack("<iiq", 0x1003 - 0x5010, 0, 0) + \
        struct.pack("<iiq", 0x2000 - 0x5020, 0, 0)
    data = b"\0" * 16 + jt_at_5010 + b"\0" * 16
    path.write_bytes(_elf([(".data", 1, 0x5000, data, 0), (".symtab", 2, 0, sym2, 3),
                           (".strtab", 3, 0, strtab2, 0)]))
    assert console.PatchSites.from_vmlinux(path).sites == {0x1003, 0x2000}


SCANNER_GAPS = [
    ("rcu-stall", "rcu: INFO: rcu_preempt detected expedited stalls on CPUs/tasks: { 1-... }"),
    ("kmemleak-off", "kmemleak: Kernel memory leak detector disabled"),
    ("kmemleak-off", "kmemleak: Memory pool empty, consider increasing CONFIG_DEBUG_KMEMLEAK_MEM_POOL_SIZE"),
    ("lockdep-off", "turning off the locking correctness validator."),
    ("alloc-failure", "dcbm: page allocation failure: order:4, mode:0x40cc0(GFP_KERNEL|__GFP_COMP)"),
    ("oom", "mo_migrate invoked oom-killer: gfp_mask=0x140dca, order=0, oom_score_adj=0"),
    ("oom", "Out of memory: Killed process 901 (mo_migrate) total-vm:70000kB"),
    ("duplicate-name", "sysfs: cannot create duplicate filename '/kernel/mm/migrate_offload'"),
    ("duplicate-name", "kobject_add_internal failed for dcbm with -EEXIST, don't try to register"),
    ("duplicate-name", "debugfs: Directory 'dcbm' with parent '/' already present!"),
]


@pytest.mark.parametrize("kind,msg", SCANNER_GAPS)
def test_scanner_gaps_fail_the_run(kind, msg):
    rep = scan("\n".join([ts("Linux", "0.0"), ts(msg), "@@MO-DONE"]))
    assert rep.status == console.STATUS_FAIL and rep.first.kind == kind


def test_state_lines_and_release_are_read():
    rep = scan((FIX / "clean.log").read_text())
    assert rep.release == "6.12.117"
    assert rep.states["end"] == {"tainted": "262144", "debug_locks": "1", "kmemleak": "on"}


def test_no_timestamps_kernel_still_scanned():
    rep = scan("Linux version 6.12\nBUG: unable to handle page fault\n")
    assert rep.status == console.STATUS_FAIL and rep.first.kind == "bug"


def test_file_transfer_decoding():
    rep = scan((FIX / "clean.log").read_text())
    assert len(rep.files) == 1
    xf = rep.files[0]
    assert xf.name == "sample/data.txt"
    assert xf.error is None
    assert xf.data == b"hello from the guest\n"


def test_file_transfer_tolerates_kernel_messages_and_wrapping():
    import base64
    payload = bytes(range(256)) * 3
    enc = base64.b64encode(payload).decode()
    lines = [enc[i:i + 76] for i in range(0, len(enc), 76)]
    # a kernel message lands in the middle of a base64 line
    lines[2] = lines[2][:30] + ts("random: crng reseeded") + "\n" + lines[2][30:]
    body = "\n".join(lines)
    log = (ts("Linux", "0.0") + "\n@@MO-FILE-BEGIN ../../etc/out.bin\n" + body +
           f"\n@@MO-FILE-END ../../etc/out.bin size={len(payload)}\n@@MO-DONE\n")
    rep = scan(log)
    xf = rep.files[0]
    assert xf.error is None, xf.error
    assert xf.data == payload
    assert xf.name == "etc/out.bin"     # no escaping the results dir


def test_file_transfer_errors():
    log = ts("Linux", "0.0") + "\n@@MO-FILE-BEGIN a\naGVsbG8K\n@@MO-FILE-END a size=99\n"
    assert "size" in scan(log).files[0].error
    log = ts("Linux", "0.0") + "\n@@MO-FILE-BEGIN a\naGVsbG8K\n@@MO-FILE-END a sha256=00ff\n"
    assert "sha256" in scan(log).files[0].error
    log = ts("Linux", "0.0") + "\n@@MO-FILE-BEGIN a\naGVsbG8K\n"
    assert "cut short" in scan(log).files[0].error


def test_safe_name():
    assert console.safe_name("../../x") == "x"
    assert console.safe_name("/abs/p a") == "abs/p_a"
    assert console.safe_name("..") == "unnamed"


def test_missing_end_and_protocol_errors():
    rep = scan(ts("Linux", "0.0") + "\n@@MO-BEGIN a\nok 1 x\n@@MO-BEGIN b\n@@MO-END c rc=0\n")
    assert not rep.block("a").ended
    assert len(rep.protocol_errors) == 2
    assert not rep.done


def test_boot_lines_stop_at_first_suite():
    rep = scan((FIX / "clean.log").read_text())
    assert any("KTAP version 1" in l for l in rep.boot_lines)
    assert not any("@@MO-BEGIN" in l for l in rep.boot_lines)


def test_dropped_kernel_messages_fail_the_run():
    rep = scan(ts("Linux", "0.0") + "\n" + ts("** 12 printk messages dropped **") + "\n")
    assert rep.status == console.STATUS_FAIL and rep.first.kind == "log-lost"


def test_a_guest_line_cut_by_a_dying_kernel_is_kept():
    rep = scan("\n".join([ts("Linux", "0.0"), "@@MO-BEGIN s", "1..1",
                          "not ok 1 a" + ts("Kernel panic - not syncing: x")]))
    assert rep.block("s").lines[-1] == "not ok 1 a"


def test_a_stack_dump_without_a_report_is_a_finding():
    # dump_stack() with no splat header (a driver's own, a fault injection's)
    lines = [ts("Linux", "0.0"), ts("FAULT_INJECTION: forcing a failure."), ts("CPU: 1 PID: 9"),
             ts("Call Trace:"), ts(" <TASK>"), "@@MO-DONE"]
    rep = scan("\n".join(lines))
    assert rep.status == console.STATUS_FAIL and rep.first.kind == "stack-dump"
    # the stack of a report already found is part of that finding
    lines = [ts("Linux", "0.0"), ts("WARNING: CPU: 0 PID: 1 at mm/migrate.c:10 f+0x1/0x2"),
             ts("Call Trace:"), ts(" <TASK>"), "@@MO-DONE"]
    rep = scan("\n".join(lines))
    assert [f.kind for f in rep.findings] == ["warning"]
