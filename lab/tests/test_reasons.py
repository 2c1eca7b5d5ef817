"""The reasons suite's CMA bitmap reading (cma_held), run with busybox sh
on the host against bitmaps laid out as debugfs prints them: u32 words,
"%u " each, bit b of the area in word b / 32, bit b % 32."""

import shutil
import subprocess

import pytest

from lab.molab.util import ROOT

BUSYBOX = shutil.which("busybox")
SUITE = ROOT / "guest" / "suites" / "reasons"


def cma_held(tmp_path, base, opb, set_bits, nbits, pfns):
    words = [sum(1 << i for i in range(32) if w * 32 + i in set_bits)
             for w in range((nbits + 31) // 32)]
    (tmp_path / "base_pfn").write_text(f"{base}\n")
    (tmp_path / "order_per_bit").write_text(f"{opb}\n")
    (tmp_path / "bitmap").write_text("".join(f"{w} " for w in words) + "\n")
    (tmp_path / "pfns").write_text("".join(f"{p}\n" for p in pfns))
    src = SUITE.read_text()
    fn = src[src.index("cma_held() {"):]
    fn = fn[:fn.index("\n}\n") + 3]
    out = subprocess.run([BUSYBOX, "sh", "-c", f"CMA={tmp_path}\n{fn}cma_held {tmp_path}/pfns"],
                         capture_output=True, text=True, check=True).stdout.split()
    return int(out[0]), int(out[1])


@pytest.mark.skipif(not BUSYBOX, reason="busybox not installed")
@pytest.mark.parametrize("opb", [0, 1, 3])
def test_cma_held_counts_frames_in_allocated_bits(tmp_path, opb):
    base, per = 1 << 20, 1 << opb
    held = {0, 1, 31, 32, 63, 200, 4095}     # word edges, the last bit
    free = {2, 30, 33, 64, 199, 201, 4094}
    pfns = [base + b * per + (b % per) for b in sorted(held | free)]
    assert cma_held(tmp_path, base, opb, held, 4096, pfns) == (len(held), len(held) * per)


@pytest.mark.skipif(not BUSYBOX, reason="busybox not installed")
def test_cma_held_top_bit_and_empty_list(tmp_path):
    # Word 0xffffffff: exact in awk's doubles; no frame listed: 0 held.
    assert cma_held(tmp_path, 4096, 0, set(range(32)), 64, []) == (0, 32)
    assert cma_held(tmp_path, 4096, 0, set(range(32)), 64, [4096 + 31, 4096 + 32]) == (1, 32)
