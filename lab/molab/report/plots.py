"""PNG plots of the report (none without matplotlib)."""


def plots(summary, outdir):
    """PNG plots; returns the files written (none without matplotlib)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    written = []
    tput = summary["throughput"]
    for to in sorted({r["to"] for r in tput if r["to"] is not None}):
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for cfg in sorted({r["config"] for r in tput}):
            pts = sorted((r["folio_kb"], r["gbps"], r["gbps_sd"] or 0) for r in tput
                         if r["config"] == cfg and r["to"] == to and r["gbps"] is not None)
            if pts:
                ax.errorbar([p[0] for p in pts], [p[1] for p in pts], yerr=[p[2] for p in pts],
                            marker="o", capsize=3, label=cfg)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("folio size (KiB)")
        ax.set_ylabel("move_pages() GB/s")
        ax.set_title(f"Throughput vs folio size, node 0 -> {to} (emulated: compare ratios)")
        ax.legend(fontsize=8)
        p = outdir / f"throughput_to{to}.png"
        fig.tight_layout()
        fig.savefig(p, dpi=110)
        plt.close(fig)
        written.append(p)
    def line_plot(rows, x, y, xlabel, ylabel, title, name, ylog=False):
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for cfg in sorted({r["config"] for r in rows}):
            pts = sorted((r[x], r[y]) for r in rows if r["config"] == cfg and r[y] is not None)
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=cfg)
        ax.set_xscale("log", base=2)
        if ylog:
            ax.set_yscale("log")
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        ax.legend(fontsize=8)
        path = outdir / name
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)

    if summary["count"]:
        line_plot(summary["count"], "folios", "gbps", "2M folios moved", "GB/s",
                  "Throughput vs folio count (2M)", "throughput_vs_count.png")
    tier = summary.get("tiering") or []
    if tier:
        cfgs = list(dict.fromkeys(r["config"] for r in tier))
        fig, axes = plt.subplots(1, 2, figsize=(11, 4.5))
        for hog, off in ((False, -0.2), (True, 0.2)):
            rows = {r["config"]: r for r in tier if r["hog"] == hog}
            xs = [i + off for i, c in enumerate(cfgs) if c in rows]
            label = "with hog" if hog else "alone"
            axes[0].bar(xs, [rows[c]["touch_per_s"] or 0 for c in cfgs if c in rows],
                        width=0.4, label=label)
            axes[1].bar(xs, [(rows[c]["demote_per_s"] or 0) + (rows[c]["promote_per_s"] or 0)
                             for c in cfgs if c in rows], width=0.4, label=label)
        for ax, yl in ((axes[0], "pages touched / s (task progress)"),
                       (axes[1], "pages demoted + promoted / s")):
            ax.set_xticks(range(len(cfgs)))
            ax.set_xticklabels(cfgs, rotation=30, fontsize=8)
            ax.set_ylabel(yl)
            ax.legend(fontsize=8)
        fig.suptitle("Tiering (medians over rounds; emulated: compare within a run)")
        path = outdir / "tiering.png"
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    lat = [r for r in summary["latency"] if r["folio_kb"] == 4]
    if lat:
        line_plot(lat, "batch", "first_usable_us", "4K pages per move_pages() call",
                  "first folio usable after (us)", "Latency vs batch size",
                  "latency_vs_batch.png", ylog=True)
    return written
