"""Kconfig fragments: parse, merge (later wins) and verify against a .config."""

import re
from pathlib import Path

_SET = re.compile(r"^(CONFIG_[A-Za-z0-9_]+)=(.*)$")
_UNSET = re.compile(r"^#\s*(CONFIG_[A-Za-z0-9_]+) is not set\s*$")


def parse(text):
    """Map CONFIG_X -> value ('y', 'm', 'n', '123', '"str"') from config text.

    ``# CONFIG_X is not set`` reads as 'n'. Order is kept.
    """
    out = {}
    for line in text.splitlines():
        line = line.strip()
        m = _SET.match(line)
        if m:
            out[m.group(1)] = m.group(2).strip()
            continue
        m = _UNSET.match(line)
        if m:
            out[m.group(1)] = "n"
    return out


def parse_file(path):
    return parse(Path(path).read_text(errors="replace"))


def merge(fragments):
    """Merge parsed fragments in order; a later fragment's value wins."""
    out = {}
    for frag in fragments:
        for k, v in frag.items():
            out.pop(k, None)   # keep the later position
            out[k] = v
    return out


def _norm(v):
    v = v.strip()
    if len(v) >= 2 and v[0] == v[-1] == '"':
        return v
    if re.fullmatch(r"0[xX][0-9a-fA-F]+", v):
        return v.lower()
    return v


def verify(requested, actual):
    """Requested options that the final config did not honour.

    ``requested`` and ``actual`` map CONFIG_X -> value. ``=n`` is honoured by
    'is not set' or by absence. Returns a list of human-readable mismatches.
    """
    bad = []
    for k, want in requested.items():
        got = actual.get(k)
        if want == "n":
            if got not in (None, "n"):
                bad.append(f"{k}: requested n, got {got}")
            continue
        if got is None:
            bad.append(f"{k}: requested {want}, absent (unmet dependency?)")
        elif got == "n":
            bad.append(f"{k}: requested {want}, got not set (unmet dependency?)")
        elif _norm(got) != _norm(want):
            bad.append(f"{k}: requested {want}, got {got}")
    return bad


def verify_files(fragment_paths, config_path):
    requested = merge(parse_file(p) for p in fragment_paths)
    return verify(requested, parse_file(config_path))
