"""Records as guest/mo_bench writes them (tagged as load_records() tags
them), for the report's tests."""


def rec(variant, rnd, config, kb, gbps, mode="tput", to=1, **kw):
    r = {"mode": mode, "config": config, "folio_kb": kb, "to": to, "gbps": gbps,
         "variant": variant, "round": rnd}
    r.update(kw)
    return r


def ratio_row(cfg, kb, to, rmed, rmin, rmax, nmed, nmin, nmax):
    """A throughput row of summarize() with its ratios over 3 rounds."""
    return {"config": cfg, "folio_kb": kb, "to": to, "ratio_median": rmed, "ratio_min": rmin,
            "ratio_max": rmax, "ratio_pairs": 3, "vs_none_pairs": 3, "vs_none_median": nmed,
            "vs_none_min": nmin,
            "vs_none_max": nmax}


def rounds(cfg, kb, to, van, none, eng, **kw):
    """Records of len(van) rounds: vanilla, none and one engine per round."""
    out = []
    for rnd, (v, n, e) in enumerate(zip(van, none, eng)):
        out += [rec("vanilla", rnd, "vanilla", kb, v, to=to, **kw),
                rec("patched", rnd, "none", kb, n, to=to, **kw),
                rec("patched", rnd, cfg, kb, e, to=to, **kw)]
    return out


def alias_recs(penalty, boots=2):
    """One-CPU emulator check records: 2M apart ``penalty`` times slower
    than 37 pages off, in each of ``boots`` patched boots."""
    out = []
    for rnd in range(boots):
        out += [{"mode": "alias", "layout": "2m_apart", "ns_per_word": 5.0 * penalty,
                 "variant": "patched", "round": rnd},
                {"mode": "alias", "layout": "shifted", "ns_per_word": 5.0,
                 "variant": "patched", "round": rnd}]
    return out
