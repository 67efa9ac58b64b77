"""Real socket allreduce on BiGraph(2, 8) in the emulation: ratios measured in one run."""
import pytest

from testbed import routing
from testbed.collectives.sweep import compare_variants, place_variants, run_sweep
from testbed.emulation.network import Emulation
from testbed.topology import BiGraph

SMALL, LARGE = 1024, 1 << 20


@pytest.fixture(scope="module")
def rows(tmp_path_factory):
    topo = BiGraph(2, 8)
    with Emulation(topo, routing.plan(topo), tmp_path_factory.mktemp("allreduce"), log=lambda m: None) as emu:
        return run_sweep(emu, place_variants(topo, ["ring", "ring_topo", "hd", "hdrm"]), [SMALL, LARGE],
                         warmup=1, iters=5, progress=lambda line: None)


def row(rows, algorithm, size):
    return next(r for r in rows if r["algorithm"] == algorithm and r["size"] == size)


def test_every_result_matches_numpy(rows):
    assert len(rows) == 8
    assert [r["wrong"] for r in rows] == [0] * 8


def test_hdrm_beats_plain_hd_at_large_size(rows):
    # plain HD in rank order puts 2 flows on a link in its largest steps, HDRM never more than 1
    # (route model: 1.9x; measured 1.98-2.05 with rendezvous)
    hdrm, hd = row(rows, "hdrm", LARGE), row(rows, "hd", LARGE)
    assert hdrm["busbw_MBps"] >= 1.3 * hd["busbw_MBps"], (hdrm, hd)


def test_hdrm_reaches_the_link_rate_at_large_size(rows):
    # one flow per directed link in every step (measured: 0.98 of the link)
    hdrm = row(rows, "hdrm", LARGE)
    assert hdrm["busbw_over_link"] >= 0.8, hdrm


def test_topology_aware_ring_reaches_the_link_rate_at_large_size(rows):
    ring_topo = row(rows, "ring_topo", LARGE)
    assert ring_topo["busbw_over_link"] >= 0.8, ring_topo


def test_hd_family_beats_ring_on_small_messages(rows):
    # 2 log2(16) = 8 steps against Ring's 30 (measured: HDRM 0.29-0.58 of Ring's time)
    ring = row(rows, "ring", SMALL)
    assert row(rows, "hdrm", SMALL)["time_us"] <= 0.6 * ring["time_us"], (row(rows, "hdrm", SMALL), ring)
    assert row(rows, "hd", SMALL)["time_us"] < ring["time_us"]


def test_summary_names_winners(rows):
    cmp = compare_variants(rows)
    assert cmp["small_winner"] in ("hd", "hdrm")
    assert cmp["wrong"] == 0
