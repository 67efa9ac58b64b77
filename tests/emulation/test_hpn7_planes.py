"""Single- against dual-plane HPN7 under ECMP with the same hash at every switch, measured on every
link in one run."""
from testbed import routing
from testbed.emulation.network import Emulation
from testbed.probes.flows import measure_flows
from testbed.probes.loads import Observation
from testbed.topology import HPN7


def tier_loads_under_cross_segment_flows(planes, folder):
    """max/mean bytes per tier while every host sends to its counterpart on the other segment,
    4 connections each, on HPN7(2,2,2,2) with ECMP and the same hash at every switch."""
    topo = HPN7(2, 2, 2, 2, planes=planes)
    with Emulation(topo, routing.plan(topo, "ecmp", "same"), folder, log=lambda m: None) as emu:
        seen = Observation(emu, folder / "capture")
        flows, _ = measure_flows(emu, topo.cross_segment_pairs(), duration=3, streams=4, during=[seen])
    assert all(f["error"] is None for f in flows), flows
    return {tier: cell["max_over_mean"] for tier, cell in seen.tiers.items()}, seen


def test_single_plane_polarises_a_tier_that_dual_plane_keeps_even(tmp_path):
    single, seen_single = tier_loads_under_cross_segment_flows(1, tmp_path / "single")
    dual, seen_dual = tier_loads_under_cross_segment_flows(2, tmp_path / "dual")
    # The aggregation switch's two-way choice between a NIC's ToRs follows the ToR's uplink choice
    # (the same hash): measured agg->tor max/mean 4.5 single-plane against 1.6 dual-plane.
    worse = {tier: (single[tier], dual[tier]) for tier in single if single[tier] > 1.3 * dual[tier]}
    assert worse, (single, dual)
    assert 0.9 <= seen_single.capture_over_counters <= 1.01 and 0.9 <= seen_dual.capture_over_counters <= 1.01
