"""Loading the bench records: one JSON object a line from guest/mo_bench,
tagged with the kernel variant ("vanilla" or "patched") and the boot round,
and the per-record facts every part of the report reads."""

import json

VANILLA = "vanilla"
NONE = "none"           # the patched kernel with batch copying off
# The modes of mo_bench that measure something; "run", "config" and "part"
# lines are bookkeeping, and a record with "skipped" or "absent" measured nothing.
MEASURED = ("tput", "tput_hog", "count", "latency", "memcpy", "compaction", "alias", "profile",
            "tiering")
# A cell whose buffer was less than this share (percent) in folios of the
# named size did not measure that folio size: flagged with "!".
FOLIO_SHARE_LOW = 90.0


def load_records(path, variant, rnd):
    """The JSON lines of one boot's bench.jsonl, tagged; bad lines skipped."""
    out = []
    for line in path.read_text(errors="replace").splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            continue
        rec["variant"] = variant
        rec["round"] = rnd
        # tput under a hog on every CPU is its own measurement, never a
        # throughput cell
        if rec.get("mode") == "tput" and rec.get("hog") is True:
            rec["mode"] = "tput_hog"
        out.append(rec)
    return out


def usable(rec, mode):
    """A record of ``mode`` that measured something (not skipped, not absent)."""
    return rec.get("mode") == mode and not rec.get("skipped") and not rec.get("absent")


def config_of(rec):
    """The engine configuration: "vanilla" for every vanilla-kernel record."""
    return VANILLA if rec["variant"] == VANILLA else rec.get("config") or rec.get("engine")


def moved_gbps(rec):
    """GB/s of the bytes that really moved.

    mo_bench's "gbps" divides the whole buffer by the time, moved or not;
    "stayed_behind" (pages not on the target node by a move_pages() query
    after the move) is the truth about what moved, whatever the per-page
    status said (6.12 reports -EBUSY for pages that did move). Records
    without those fields (older runs) keep their figure.
    """
    g, pages, stayed = rec.get("gbps"), rec.get("pages"), rec.get("stayed_behind")
    if not isinstance(g, (int, float)):
        return None
    if isinstance(pages, int) and pages > 0 and isinstance(stayed, (int, float)):
        return g * max(pages - stayed, 0) / pages
    return g
