"""EFLOPS' claim on BiGraph: halving-doubling with rank mapping (HDRM) puts at most one flow on
each link in every step, so at a large message it reaches the link rate, and beats plain HD in
rank order, whose largest steps put two flows on a link. Copy this file and change the fabric,
the sizes or the bounds. Run: sudo .venv/bin/python -m pytest examples/test_hdrm_vs_hd.py"""
import pytest

LARGE = 1 << 20


@pytest.fixture
def sweep(emulation):
    return emulation.sweep(["hd", "hdrm"], [LARGE], iters=3)


@pytest.mark.fabric("bigraph:2,8", routing="deterministic")
def test_hdrm_beats_hd_on_bigraph(sweep):
    assert sweep.wrong == 0                                  # every result checked against numpy
    # the routes allow 2: HD's largest steps share links, HDRM's never do (measured: docs/api.md)
    assert sweep.ratio("hdrm", "hd", LARGE) > 1.3, sweep
    hdrm = sweep.get("hdrm", LARGE)
    print(f"HDRM over HD at 1 MiB: {sweep.ratio('hdrm', 'hd', LARGE):.2f}; {hdrm}")
    assert hdrm.busbw_over_link > 0.8, hdrm                 # near the link rate (docs/api.md)
    assert not hdrm.emulator_bottleneck, hdrm               # else the emulator, not the fabric, set the pace
