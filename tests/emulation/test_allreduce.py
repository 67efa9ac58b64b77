"""Real socket allreduce on BiGraph(2, 8) in the emulation: ratios measured in one run, through the
public API (testbed.emulate). HDRM's own figures (at the link rate, against plain HD and the Ring)
are bigraph_allreduce's claims, which its smoke run checks (tests/emulation/test_claims.py)."""
import pytest

import testbed
from testbed.runs.sweep import compare_variants

SMALL, LARGE = 1024, 1 << 20


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    with testbed.emulate(testbed.fabric("bigraph:2,8"), folder=tmp_path_factory.mktemp("allreduce")) as emu:
        return emu.sweep(["ring", "ring_topo", "hd"], [SMALL, LARGE], warmup=1, iters=3, model=False)


def test_every_result_matches_numpy(sweep):
    assert len(sweep) == 6
    assert [c.wrong for c in sweep] == [0] * 6


def test_topology_aware_ring_reaches_the_link_rate_at_large_size(sweep):
    assert sweep.get("ring_topo", LARGE).busbw_over_link >= 0.8, sweep.get("ring_topo", LARGE)


def test_hd_beats_ring_on_small_messages(sweep):
    # 2 log2(16) = 8 steps against Ring's 30
    assert sweep.ratio("hd", "ring", SMALL, "time_us") < 1, (sweep.get("hd", SMALL), sweep.get("ring", SMALL))


def test_summary_names_winners(sweep):
    cmp = compare_variants([c.row for c in sweep])
    assert cmp["small_winner"] == "hd"
    assert cmp["wrong"] == 0
