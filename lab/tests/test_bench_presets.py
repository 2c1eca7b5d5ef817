"""make bench's and make host-bench's presets (guest/bench/presets/, read by
guest/bench/preset.sh alone): what each command passes to the bench suite,
the errors, and the Makefile's variables. No kernel is built and nothing
boots: cmd_bench's build and boot steps are replaced by fakes, host_bench.sh
runs on a fake machine with run_bench.sh stubbed (lab/tests/bench_harness.py).
"""

import json
import shutil
import subprocess
from types import SimpleNamespace

import pytest

from lab.molab import bench, cli, host
from lab.molab.util import GUEST, ROOT
from lab.tests.bench_harness import BUSYBOX, run_host_bench, run_suite
from lab.tests.test_bench import _patch_bench, fake_result

PRESETS = GUEST / "bench" / "presets"
# What the lab passed to the guest before presets: MO_BENCH=quick|full,
# then NUMA balancing's 100 ms scan periods; quick over 2 rounds, full 3.
FULL_ARGS = "MO_BENCH=full MO_TIER_SCAN_MS=100"
QUICK_ARGS = "MO_BENCH=quick MO_TIER_SCAN_MS=100"
# host_bench.sh's settings before presets, on a machine whose targets are
# 1,2 and whose node 0 starts with CPU 0
HARDWARE_ARGS = ("MO_BENCH=full MO_SIZE_MB=256 MO_REPS=3 MO_TO=1,2 MO_TPUT_CPU=0 "
                 "MO_COMPACT=off MO_TIER_LEAVE_MB=2048 MO_TIER_SECONDS=30")


class Booted(Exception):
    """cmd_bench got as far as booting: the test has what it wanted."""


@pytest.fixture
def steps(monkeypatch):
    """cmd_bench's steps faked: which ran, and what the boots were asked."""
    done = []

    def alternate(builds, suite, args="", rounds=3, **kw):
        done.append(("boot", args, rounds))
        raise Booted
    monkeypatch.setattr(cli.os, "geteuid", lambda: 1000)
    monkeypatch.setattr(cli, "run_setup", lambda: done.append("setup"), raising=False)
    monkeypatch.setattr(cli.tree, "ensure_tree", lambda ksrc, **kw: done.append("tree"))
    monkeypatch.setattr(bench, "prepare", lambda *a, **k: done.append("build") or {})
    monkeypatch.setattr(bench, "alternate", alternate)
    monkeypatch.setattr(cli, "_host_facts", lambda builds: {})
    return done


def boot_of(monkeypatch, steps, argv, env=()):
    """(guest arguments, rounds) that make bench would boot with."""
    for k, v in env:
        monkeypatch.setenv(k, v)
    with pytest.raises(Booted):
        cli.cmd_bench(cli.build_parser().parse_args(["bench", *argv]))
    return steps[-1][1:]


@pytest.mark.parametrize("argv,env,want", [
    ([], (), (FULL_ARGS, 3)),
    (["--preset", "full"], (), (FULL_ARGS, 3)),
    (["--preset", "quick"], (), (QUICK_ARGS, 2)),
    (["--quick"], (), (QUICK_ARGS, 2)),                  # QUICK=1 through make
    ([], (("QUICK", "1"),), (QUICK_ARGS, 2)),
    ([], (("QUICK", "yes"),), (QUICK_ARGS, 2)),
    ([], (("QUICK", "0"),), (FULL_ARGS, 3)),             # make exports QUICK=0 too
    ([], (("QUICK", ""),), (FULL_ARGS, 3)),
    (["--preset", "quick", "--rounds", "5"], (), (QUICK_ARGS, 5)),
    # BENCH_ARGS after the preset's: the suite exports them in order
    (["--preset", "quick", "--args", "MO_BENCH=full MO_REPS=1"], (),
     (QUICK_ARGS + " MO_BENCH=full MO_REPS=1", 2)),
])
def test_a_preset_gives_the_guest_settings_and_the_rounds(monkeypatch, steps, argv, env, want):
    assert boot_of(monkeypatch, steps, argv, env) == want
    assert steps[:3] == ["setup", "tree", "build"]


@pytest.mark.parametrize("argv,preset,args,rounds", [
    ([], "full", FULL_ARGS, 3),
    (["--quick", "--args", "MO_REPS=1"], "quick", QUICK_ARGS + " MO_REPS=1", 2),
])
def test_bench_json_records_the_preset(monkeypatch, tmp_path, argv, preset, args, rounds):
    tput = {"mode": "tput", "config": "cpu", "folio_kb": 4, "to": 1, "gbps": 1.0, "pages": 16}
    runs = [fake_result("vanilla-r0", tmp_path, records=[{**tput, "config": "vanilla"}]),
            fake_result("patched-r0", tmp_path, records=[tput])]
    monkeypatch.setattr(cli.os, "geteuid", lambda: 1000)
    _patch_bench(monkeypatch, runs)
    cli.cmd_bench(cli.build_parser().parse_args(["bench", *argv]))
    run = json.loads((tmp_path / "bench.json").read_text())
    assert (run["preset"], run["args"], run["rounds"]) == (preset, args, rounds)


@pytest.mark.parametrize("argv,cause,hint", [
    (["--preset", "fast"], "unknown preset 'fast' (presets: full, hardware, quick)",
     "a preset is a file of guest/bench/presets/"),
    (["--preset", "../presets/full"], "unknown preset '../presets/full'", ""),
    (["--preset", "hardware"], "preset hardware is for a real machine (MO_TO=@targets, "
     "MO_TPUT_CPU=@cpu0: host_bench.sh fills them from the machine's nodes)",
     "run 'make host-bench PRESET=hardware' on that machine"),
    (["--quick", "--preset", "full"], "QUICK=1 is PRESET=quick, and PRESET=full was given too",
     ""),
])
def test_a_bad_preset_is_one_line_and_nothing_is_built(capsys, steps, argv, cause, hint):
    assert cli.main(["bench", *argv]) == cli.EXIT_ERROR
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"molab: error: {cause}") and hint in err
    assert steps == []


def test_the_preset_files_parse_as_the_lab_uses_them():
    names = sorted(p.name for p in PRESETS.iterdir())
    assert names == ["full", "hardware", "quick"]
    assert bench.read_preset("full") == (FULL_ARGS.split(), 3)
    assert bench.read_preset("quick") == (QUICK_ARGS.split(), 2)
    settings, rounds = bench.read_preset("hardware")
    assert rounds is None and " ".join(settings) == HARDWARE_ARGS.replace(
        "MO_TO=1,2 MO_TPUT_CPU=0", "MO_TO=@targets MO_TPUT_CPU=@cpu0")


def preset_reader(tmp_path, files):
    """A copy of preset.sh with these presets {name: text} beside it."""
    d = tmp_path / "bench"
    (d / "presets").mkdir(parents=True)
    shutil.copy(GUEST / "bench" / "preset.sh", d)
    for name, text in files.items():
        (d / "presets" / name).write_text(text)
    return d / "preset.sh"


def read(reader, *args):
    r = subprocess.run([BUSYBOX or "sh", *(["sh"] if BUSYBOX else []), str(reader), *args],
                       capture_output=True, text=True)
    return r.returncode, r.stdout, r.stderr


def test_the_reader_keeps_settings_in_order_and_drops_comments(tmp_path):
    reader = preset_reader(tmp_path, {"p": "# a comment\n\n  MO_B=2  # why\nMO_A=x=y\n"
                                      "ROUNDS=12\n\tMO_B=3\nMO_LAST=1"})     # no newline
    assert read(reader, "p") == (0, "MO_B=2\nMO_A=x=y\nROUNDS=12\nMO_B=3\nMO_LAST=1\n", "")


@pytest.mark.parametrize("line", ["MO_a=1", "MO_=1", "mo_x=1", "ROUNDS=0", "ROUNDS=2x",
                                  "MO_X=a b", "QUICK=1", "MO_X", "MO_TO=@nodes", "ROUNDS="])
def test_the_reader_refuses_a_line_it_does_not_know(tmp_path, line):
    reader = preset_reader(tmp_path, {"p": f"MO_OK=1\n{line}\n"})
    assert read(reader, "p") == (2, "", f"preset p, line 2: '{line}' is not MO_NAME=value "
                                        "or ROUNDS=n\n")


@pytest.mark.parametrize("args,want", [
    (("hardware", "1,2", "0"), HARDWARE_ARGS),
    (("hardware", "3", ""), HARDWARE_ARGS.replace("MO_TO=1,2 MO_TPUT_CPU=0", "MO_TO=3")),
    # a preset without the machine's nodes gets them: a real machine is no VM
    (("quick", "1,3", "4"), QUICK_ARGS + " MO_TO=1,3 MO_TPUT_CPU=4"),
    (("full", "1", ""), FULL_ARGS + " MO_TO=1"),
])
def test_the_reader_fills_a_real_machines_nodes(args, want):
    assert read(GUEST / "bench" / "preset.sh", "--host", *args) == (0, want + "\n", "")


@pytest.mark.skipif(not BUSYBOX, reason="busybox not installed")
@pytest.mark.parametrize("args,preset,want", [
    ((), "hardware", HARDWARE_ARGS + " "),               # as before presets
    (("MO_REPS=1",), "hardware", HARDWARE_ARGS + " MO_REPS=1"),
    (("--preset", "quick", "MO_TO=2"), "quick", QUICK_ARGS + " MO_TO=1,2 MO_TPUT_CPU=0 MO_TO=2"),
    (("--preset", "full"), "full", FULL_ARGS + " MO_TO=1,2 MO_TPUT_CPU=0 "),
])
def test_host_bench_runs_the_suite_with_the_preset(tmp_path, args, preset, want):
    rc, out, err, facts, got = run_host_bench(tmp_path, args)
    assert rc == 0, out + err
    assert facts["preset"] == preset and facts["args"] == want and got == want.strip()


@pytest.mark.skipif(not BUSYBOX, reason="busybox not installed")
@pytest.mark.parametrize("args", [("--preset", "fast"), ("--preset",), ("--preset", "../x")])
def test_host_bench_and_the_lab_refuse_a_preset_alike(tmp_path, capsys, args):
    rc, out, err, facts, _ = run_host_bench(tmp_path, args)
    assert rc == 2 and out == "" and facts is None and not (tmp_path / "out").exists()
    name = args[1] if len(args) > 1 else ""
    cause = f"unknown preset '{name}' (presets: full, hardware, quick)"
    assert err == f"host_bench: {cause}\n"
    assert cli.main(["host-bench", "--preset", name]) == cli.EXIT_ERROR
    assert capsys.readouterr().err.startswith(f"molab: error: {cause};")


@pytest.mark.parametrize("argv,want", [
    (["--preset", "quick", "--args", "MO_REPS=1"], ["--preset", "quick", "MO_REPS=1"]),
    ([], ["--preset", "hardware"]),
])
def test_make_host_bench_gives_host_bench_sh_the_preset(monkeypatch, tmp_path, argv, want):
    # the lab's side of what test_host_bench_runs_the_suite_with_the_preset runs
    ran = []

    def fake_run(cmd, **kw):
        ran.append(cmd)
        return SimpleNamespace(returncode=0, stdout="")
    monkeypatch.setattr(cli.os, "geteuid", lambda: 0)
    monkeypatch.setattr(host, "build_mo_bench", lambda d: tmp_path / "mo_bench")
    monkeypatch.setattr(host.subprocess, "run", fake_run)
    assert cli.main(["host-bench", "--out", str(tmp_path / "out"), *argv]) == cli.EXIT_OK
    assert ran[-1] == ["sh", str(host.HOST_BENCH), str(tmp_path / "out"), *want]


@pytest.mark.skipif(not BUSYBOX, reason="busybox not installed")
def test_bench_args_override_the_preset_in_the_guest(tmp_path):
    # the preset's settings, then BENCH_ARGS: the suite keeps the last
    rc, out, _, recs, _ = run_suite(tmp_path, args=[*QUICK_ARGS.split(), "MO_BENCH=full"],
                                    env={"MO_FOLIO": "4", "MO_REPS": "1", "MO_TIER": "0",
                                         "MO_PROFILE": "0", "MO_ENGINES": "none,cpu",
                                         "MO_COUNT": "1", "MO_LAT_PAGES": "1",
                                         "MO_LAT_FOLIOS": "1", "MO_COMPACT": "off"})
    assert rc == 0, out
    assert [r["bench"] for r in recs if r["mode"] == "run"] == ["full"]
    assert {r["mode"] for r in recs} >= {"count", "latency"}     # full's parts


def make_n(*args):
    r = subprocess.run(["make", "-s", "-n", "-C", str(ROOT), *args], capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr
    return " ".join(r.stdout.split())


@pytest.mark.parametrize("args,has,lacks", [
    (("bench", "PRESET=quick"), "bench --preset 'quick'", "--quick"),
    (("bench", "QUICK=1"), "bench --quick", "--preset"),
    (("bench", "QUICK=0"), "lab.molab bench", "--quick"),
    (("bench",), "lab.molab bench", "--preset"),        # the CLI's default: full
    (("bench", "PRESET=full", "BENCH_ARGS=MO_REPS=1"), "--preset 'full'", "--quick"),
    (("host-bench", "PRESET=quick"), "host-bench --preset 'quick'", "--quick"),
    (("host-bench",), "lab.molab host-bench", "--preset"),
])
def test_make_passes_the_preset_down(args, has, lacks):
    cmd = make_n(*args)
    assert has in cmd and lacks not in cmd, cmd


def test_make_help_names_the_presets():
    r = subprocess.run(["make", "-s", "-C", str(ROOT), "help"], capture_output=True, text=True)
    bench_line = next(x for x in r.stdout.splitlines() if x.startswith("make bench "))
    host_line = next(x for x in r.stdout.splitlines() if x.startswith("make host-bench "))
    assert "PRESET=full|quick" in bench_line and "PRESET=hardware" in host_line
    assert "QUICK=1 is PRESET=quick" in r.stdout
