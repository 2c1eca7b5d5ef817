"""How figures print in the text and Markdown tables."""


def num(v, fmt="{:.3f}"):
    """A figure in ``fmt``, '-' when there is none."""
    return "-" if v is None else fmt.format(v)


def span(lo, hi):
    """'[1.00..1.40]', '' without both ends."""
    return f"[{lo:.2f}..{hi:.2f}]" if lo is not None and hi is not None else ""


def ratio_cell(r, prefix="ratio_", sep="x "):
    """'1.20x [1.00..1.40]' (median [min..max] over rounds), '-' if none."""
    m = r.get(prefix + "median")
    if m is None:
        return "-"
    return f"{m:.2f}{sep}{span(r.get(prefix + 'min'), r.get(prefix + 'max'))}"


def p_text(p):
    """A p-value in two significant digits ('0.0022', '0.31', '1'), '-' if none."""
    return "-" if p is None else f"{p:.2g}"


def with_p(text, r, prefix):
    """text, then ' p 0.0022' when the row has a p-value for that ratio."""
    p = r.get(prefix + "p")
    return text if p is None else f"{text} p {p_text(p)}"


def ratios_text(r, always=False):
    """' 1.20x [..] p 0.31 vs none 1.10x [..] p 0.0022': a text row's ratio
    against vanilla (left out when there is none, unless ``always``: then
    '-') and against none in the same boot (left out when there is none),
    each with its p-value where the row has one."""
    out = f" {with_p(ratio_cell(r), r, 'ratio_')}" \
        if always or r.get("ratio_median") is not None else ""
    if r.get("vs_none_median") is not None:
        out += f" vs none {with_p(ratio_cell(r, 'vs_none_'), r, 'vs_none_')}"
    return out


def folio_cell(r):
    """The lowest folio share of a cell, '!' when below FOLIO_SHARE_LOW."""
    share = r.get("folio_share_min")
    if share is None:
        return "-"
    return f"{share:.0f}%" + ("!" if r.get("folio_share_low") else "")


def unmoved_cell(r):
    share = r.get("not_moved_share")
    if share is None:
        return "-"
    # A few pages out of thousands must not print as "0.0%".
    return "<0.1%" if 0 < share < 0.001 else f"{100 * share:.1f}%"


def kb_label(kb):
    """4 -> '4K', 1024 -> '1M'."""
    return f"{kb // 1024}M" if kb >= 1024 and kb % 1024 == 0 else f"{kb}K"
