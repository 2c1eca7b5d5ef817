"""The tiering table, the host runs' merge (host-report) and make deb's config."""

import json

import pytest

from lab.molab import report
from lab.molab import cli, deb, host, kconfig
from lab.molab.errors import LabError


def tier(variant, rnd, config, touch, hog=False, demoted=100, promoted=50, **kw):
    r = {"mode": "tiering", "config": config, "variant": variant, "round": rnd, "hog": hog,
         "touch_per_s": touch, "demoted": demoted, "pgpromote_success": promoted,
         "demote_per_s": demoted / 10, "promote_per_s": promoted / 10, "seconds": 10.0,
         "kswapd_cpu_s": 1.0, "app_user_s": 6.0, "app_sys_s": 2.0, "hot_on_fast_pct": 70.0,
         "size_bytes": 384 << 20, "fast_free_mb": 256, "bad_bytes": 0, "verified": True,
         "machine_busy_s": 15.0, "hog_per_s": 1e6 if hog else None}
    r.update(kw)
    return r


def test_tiering_rows_ratios_per_round_and_shares():
    recs = []
    for rnd, base in enumerate([100.0, 200.0, 400.0]):    # drift between rounds
        recs += [tier("vanilla", rnd, "vanilla", base), tier("patched", rnd, "none", base),
                 tier("patched", rnd, "mtcopy-2", 1.5 * base),
                 tier("vanilla", rnd, "vanilla", base / 2, hog=True),
                 tier("patched", rnd, "mtcopy-2", base / 4, hog=True)]
    s = report.summarize(recs)
    rows = {(r["config"], r["hog"]): r for r in s["tiering"]}
    assert set(rows) == {("vanilla", False), ("none", False), ("mtcopy-2", False),
                         ("vanilla", True), ("mtcopy-2", True)}
    m = rows[("mtcopy-2", False)]
    assert m["ratio_median"] == 1.5 and m["vs_none_median"] == 1.5 and m["n"] == 3
    assert rows[("mtcopy-2", True)]["ratio_median"] == 0.5   # against vanilla with the hog
    assert m["kswapd_share"] == 0.1 and m["app_share"] == 0.8 and m["app_sys_share"] == 0.2
    assert s["tiering_idle"] == [] and s["measurements_by_mode"]["tiering"] == 15
    text = "\n".join(report.text_tables(s))
    assert "== tiering: a working set of 384 MiB on a fast node with 256 MiB free" in text
    assert "mtcopy-2   hog=no  n=3 touched 300/s 1.50x [1.50..1.50] vs none 1.50x" in text
    md = "\n".join(report.markdown_tables(s))
    assert "| mtcopy-2 | yes | 3 | 50 | 0.50 [0.50..0.50] | - |" in md
    assert "| 10% | 80% (20%) | 1.50 | 1e+06 | 70% |" in md     # busy CPUs, hog rate


def test_tiering_without_migrations_fails_the_run():
    recs = [tier("vanilla", 0, "vanilla", 100.0),
            tier("patched", 0, "none", 100.0, demoted=0, promoted=0),
            tier("patched", 0, "cpu", 100.0, promoted=0),
            # under the hog, tiering may stall: that is a result, not idle
            tier("patched", 0, "cpu", 90.0, hog=True, promoted=0),
            tier("patched", 0, "none", 90.0, hog=True, demoted=0, promoted=0,
                 demote_per_s=0, promote_per_s=0)]
    s = report.summarize(recs)
    assert [(i["config"], i["hog"]) for i in s["tiering_idle"]] == [("none", False),
                                                                    ("cpu", False)]
    fails = cli._bench_failures({"records": recs}, s)
    assert any("2 tiering measurement(s) saw no demotion or no promotion" in f for f in fails)
    text = "\n".join(report.text_tables(s))
    assert "NO TIERING in patched round 0 none hog=no" in text
    assert "hot on fast 70% (stalled: no migration either way)" in text


def write_run(top, name, variant, started, records, rc=0, host_name="box", cpu="CPU X"):
    d = top / name
    d.mkdir(parents=True)
    (d / "facts.json").write_text(json.dumps({
        "kind": "host-bench", "variant": variant, "release": f"6.12-mo-{variant}",
        "hostname": host_name, "cpu_model": cpu, "cpus": 64, "started": started, "rc": rc,
        "nodes": [{"node": 0, "mem_mb": 65536, "cpus": "0-31", "tier": 4},
                  {"node": 2, "mem_mb": 131072, "cpus": "", "tier": 22}],
        "dma_channels": [{"chan": "dma0chan0", "driver": "ptdma", "in_use": "0"}]}))
    (d / "bench.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return d


def tput(config, gbps):
    return {"mode": "tput", "config": config, "folio_kb": 2048, "to": 2, "gbps": gbps,
            "bad_bytes": 0, "verified": True}


def test_merge_pairs_the_kth_run_of_each_variant(tmp_path):
    dirs = [write_run(tmp_path, "v0", "vanilla", "20261124T100000Z", [tput("vanilla", 1.0)]),
            write_run(tmp_path, "p0", "patched", "20261124T110000Z", [tput("dcbm-4", 3.0)]),
            write_run(tmp_path, "v1", "vanilla", "20261124T120000Z", [tput("vanilla", 2.0)]),
            write_run(tmp_path, "p1", "patched", "20261124T130000Z", [tput("dcbm-4", 4.0)])]
    run = host.merge(reversed(dirs))      # the order given does not matter
    assert run["rounds"] == 2 and not run["problems"]
    assert [(h["variant"], h["round"]) for h in run["facts"]["host_runs"]] == \
        [("vanilla", 0), ("patched", 0), ("vanilla", 1), ("patched", 1)]
    s = report.summarize(run["records"])
    row = next(r for r in s["throughput"] if r["config"] == "dcbm-4")
    assert row["ratio_min"] == 2.0 and row["ratio_max"] == 3.0   # 3/1 and 4/2
    lines = cli._facts_lines(run["facts"])
    assert "DMA channels 1 (ptdma)" in lines[0] and "node 2 131072 MiB tier 22" in lines[0]
    # the reports name the machine
    out = tmp_path / "report"
    out.mkdir()
    cli._bench_outputs(out, run)
    assert "on box (CPU X, 64 CPUs" in (out / "report.md").read_text()


def test_merge_refuses_what_does_not_compare(tmp_path):
    v = write_run(tmp_path, "v", "vanilla", "1", [tput("vanilla", 1.0)])
    with pytest.raises(LabError, match="needs a vanilla and a patched run; have: vanilla"):
        host.merge([v])
    other = write_run(tmp_path, "p", "patched", "2", [tput("none", 1.0)], host_name="other")
    with pytest.raises(LabError, match="2 different machines"):
        host.merge([v, other])
    (tmp_path / "empty").mkdir()
    with pytest.raises(LabError, match="not a host-bench result \\(no facts.json, bench.jsonl\\)"):
        host.merge([v, tmp_path / "empty"])
    failed = write_run(tmp_path, "p2", "patched", "3", [tput("none", 1.0)], rc=1)
    assert "run_bench.sh exited 1" in host.merge([v, failed])["problems"][0]


def test_host_report_without_runs_says_what_to_do(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(host, "HOST_DIR", tmp_path)
    assert cli.main(["host-report"]) == cli.EXIT_ERROR
    assert "no host-bench results under" in capsys.readouterr().err


def test_deb_fragment_series_options_only_for_patched():
    patched, vanilla = deb.wanted("patched"), deb.wanted("vanilla")
    assert patched["CONFIG_MIGRATE_OFFLOAD_DCBM"] == "m" and patched["CONFIG_SWDMA"] == "m"
    assert not set(deb.SERIES_ONLY) & set(vanilla)
    assert vanilla["CONFIG_DEBUG_INFO_NONE"] == "y" and vanilla["CONFIG_AMD_PTDMA"] == "m"
    # what Debian's config says and the fragment must override
    assert patched["CONFIG_MODULE_COMPRESS"] == "n"
    assert kconfig.verify({"CONFIG_MODULE_COMPRESS": "n"}, {"CONFIG_MODULE_COMPRESS": "y"})


def test_deb_refuses_bad_input(tmp_path):
    with pytest.raises(LabError, match="make deb builds patched or vanilla"):
        deb.build("broken")
    with pytest.raises(LabError, match="LSMOD=.*no such file"):
        deb.build("patched", lsmod=tmp_path / "nope")


def test_tiering_plot(tmp_path):
    pytest.importorskip("matplotlib")     # lab/setup.sh installs it
    s = report.summarize([tier("vanilla", 0, "vanilla", 100.0), tier("patched", 0, "none", 90.0),
                          tier("patched", 0, "none", 50.0, hog=True)])
    assert tmp_path / "tiering.png" in report.plots(s, tmp_path)
    assert (tmp_path / "tiering.png").stat().st_size > 1000


def test_tiering_asked_but_skipped_or_missing_fails():
    recs = [{"mode": "run", "tier": 1, "variant": "vanilla", "round": 0},
            {"mode": "run", "tier": 1, "variant": "patched", "round": 0},
            {"mode": "tiering", "config": "none", "variant": "patched", "round": 0,
             "skipped": True, "reason": "no memory tier below node 0's"},
            tier("patched", 0, "cpu", 90.0, hog=True, demoted=0, promoted=0)]
    s = report.summarize(recs)
    fails = "\n".join(cli._bench_failures({"records": recs}, s))
    assert "tiering was asked for but not measured 2 time(s)" in fails
    assert "patched-r0 none: no memory tier below node 0's" in fails
    assert "vanilla-r0: no tiering record in this boot" in fails
    assert s["tiering_idle"] == []     # the hog run stalled: shown, not failed
    # tiering off (MO_TIER=0): nothing asked, nothing missing
    assert report.summarize([{"mode": "run", "tier": 0, "variant": "vanilla",
                              "round": 0}])["tiering_missing"] == []


def test_merge_refuses_different_settings_and_counts_each_dir_once(tmp_path):
    v = write_run(tmp_path, "v", "vanilla", "1", [tput("vanilla", 1.0)])
    p = write_run(tmp_path, "p", "patched", "2", [tput("dcbm-4", 2.0)])
    facts = json.loads((p / "facts.json").read_text())
    (p / "facts.json").write_text(json.dumps({**facts, "args": "MO_SIZE_MB=64"}))
    with pytest.raises(LabError, match="different settings"):
        host.merge([v, p])
    (p / "facts.json").write_text(json.dumps({**facts, "not_put_back": "/x=1(was 0)"}))
    with open(p / "bench.jsonl", "a") as f:
        f.write('{"mode":"tput","cut sh\n')
    run = host.merge([v, p, v, tmp_path / "v" / "." ])
    assert [h["variant"] for h in run["facts"]["host_runs"]] == ["vanilla", "patched"]
    assert any("1 line(s) of bench.jsonl are not JSON" in x for x in run["problems"])
    assert any("settings not put back after the run: /x=1(was 0)" in x for x in run["problems"])
