"""The PNG plots."""

from lab.molab import report
from lab.tests.report_builders import rec


def test_plots_written(tmp_path):
    recs = [{"mode": "count", "config": "none", "folios": n, "gbps": 1.0 * n,
             "variant": "patched", "round": 0} for n in (1, 8)]
    recs += [{"mode": "latency", "config": "none", "pages": n, "first_usable_us": 10.0 * n,
              "max_stall_us": 5, "variant": "patched", "round": 0} for n in (1, 8)]
    recs += [rec("patched", 0, "none", 4, 1.0)]
    names = sorted(p.name for p in report.plots(report.summarize(recs), tmp_path))
    assert names == ["latency_vs_batch.png", "throughput_to1.png", "throughput_vs_count.png"]
    assert all((tmp_path / n).stat().st_size > 0 for n in names)
