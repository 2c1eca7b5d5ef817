"""The emulator check (mo_bench alias): how much slower a copy between
buffers 2M apart is than one shifted by 37 pages, on one CPU and on two at
once. About 1 on hardware; QEMU's software TLB makes 2M copies slow."""

import statistics
from collections import defaultdict

from .records import usable
from .stats import median_range

# The alias check's ratio above which 2M figures measure the emulator (about
# 1.0 on hardware, 4-13 under QEMU TCG).
ALIAS_ARTEFACT = 1.5


def alias_penalty(records):
    """The emulator check (mo_bench alias): per boot, the median time of a
    word copy whose source and destination are 2M apart over that of one
    shifted by 37 pages; median [min..max] over boots. About 1 on hardware."""
    acc = defaultdict(lambda: defaultdict(list))
    for r in records:
        if usable(r, "alias") and isinstance(r.get("ns_per_word"), (int, float)) \
                and (r.get("threads") or 1) == 1:
            acc[(r["variant"], r["round"])][r.get("layout")].append(r["ns_per_word"])
    ratios = [statistics.median(d["2m_apart"]) / statistics.median(d["shifted"])
              for d in acc.values() if d.get("2m_apart") and d.get("shifted")
              and statistics.median(d["shifted"]) > 0]
    st = median_range(ratios)
    return st and {**st, "boots": len(ratios)}


def alias_two(records):
    """The emulator check's two-CPU copies (mo_bench alias, "threads":2: two
    CPUs at once, half of every 2M period each), per kernel (vanilla and
    patched boots apart: a figure that differs between them is not the
    emulator's alone): per boot and layout, the gain, the median time of
    one CPU's copy over that of the two CPUs'; the penalty, the shifted
    gain over the 2M-apart gain; and at 2M apart the slower CPU's half over
    the faster's. Each: median [min..max] over boots. On hardware: gains
    about 2, penalty and halves about 1."""
    acc = defaultdict(lambda: defaultdict(list))
    halves = defaultdict(list)
    for r in records:
        if not (usable(r, "alias") and isinstance(r.get("seconds"), (int, float))
                and r["seconds"] > 0):
            continue
        threads = r.get("threads") or 1
        acc[(r["variant"], r["round"], r.get("layout"))][threads].append(r["seconds"])
        a, b = r.get("first_seconds"), r.get("second_seconds")
        if threads == 2 and r.get("layout") == "2m_apart" and \
                isinstance(a, (int, float)) and isinstance(b, (int, float)) and min(a, b) > 0:
            halves[(r["variant"], r["round"])].append(max(a, b) / min(a, b))
    boot = defaultdict(dict)
    for (variant, rnd, layout), by in acc.items():
        if by.get(1) and by.get(2):
            boot[(variant, rnd)][layout] = statistics.median(by[1]) / statistics.median(by[2])
    out = {}
    for variant in sorted({v for v, _ in boot}):
        bs = {rnd: b for (v, rnd), b in boot.items() if v == variant}
        far = [b["2m_apart"] for b in bs.values() if "2m_apart" in b]
        if not far:
            continue
        out[variant] = {
            "boots": len(far), "2m_apart": median_range(far),
            "shifted": median_range([b["shifted"] for b in bs.values() if "shifted" in b]),
            "penalty": median_range([b["shifted"] / b["2m_apart"] for b in bs.values()
                                     if "shifted" in b and "2m_apart" in b]),
            "halves": median_range([statistics.median(h) for (v, _), h in halves.items()
                                    if v == variant])}
    return out or None


def aliased(summary):
    """Whether the one-CPU check shows the emulator's artefact: 2M cells
    then measure the emulator."""
    alias = summary.get("alias")
    return bool(alias and alias["median"] >= ALIAS_ARTEFACT)


def two_aliased(summary):
    """Whether the patched boots' two-CPU check (alias_two()) shows the
    emulator's artefact for two copiers of one 2M folio: in the median
    patched boot, two CPUs gained ALIAS_ARTEFACT times less 2M apart than
    37 pages off. A flag on the 2M figures of parallel copies, never a
    verdict: a slow parallel copy at 2M may still be the kernel's."""
    pen = ((summary.get("alias_two") or {}).get("patched") or {}).get("penalty")
    return bool(pen and pen["median"] >= ALIAS_ARTEFACT)


def alias_two_lines(summary):
    out = []
    for variant, a in sorted((summary.get("alias_two") or {}).items()):
        far = a["2m_apart"]
        line = (f"emulator check, two CPUs ({variant}, {a['boots']} boot(s)): copying the two "
                f"halves of every 2M period at once was {far['median']:.2f}x as fast as one CPU "
                f"2M apart [{far['min']:.2f}..{far['max']:.2f}]")
        if sh := a.get("shifted"):
            line += f", {sh['median']:.2f}x 37 pages off [{sh['min']:.2f}..{sh['max']:.2f}]"
        if h := a.get("halves"):
            line += (f"; 2M apart the slower CPU's half took {h['median']:.1f}x the faster's "
                     f"[{h['min']:.1f}..{h['max']:.1f}]")
        out.append(line + " (on hardware about 2x in both layouts, halves alike)")
    if two_aliased(summary):
        out.append("the patched boots' two-CPU check shows the emulator's artefact: 2M figures of "
                   "parallel copies (mtcopy-2, dcbm-N, the split) measure it as much as the "
                   "kernel; they are judged as they are")
    return out


def alias_line(summary):
    a = summary.get("alias")
    if not a:
        return None
    return (f"emulator check: a word copy between buffers 2M apart took {a['median']:.1f}x the "
            f"time of one 37 pages off [{a['min']:.1f}..{a['max']:.1f}] over {a['boots']} "
            f"boot(s) (about 1.0x on hardware): 2M folio copies here measure the emulator's "
            f"software TLB as much as the kernel")
