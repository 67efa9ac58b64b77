"""Single- against dual-plane HPN7 under ECMP with the same hash at every switch, measured on every
link in one run, through the public API (testbed.emulate)."""
import testbed
from testbed.routing.hashing import Draw
from testbed.topology import HPN7

# One hash draw, the same 5-tuples in both forms. Polarisation depends on the draw: with the source
# ports the kernel chose, one CI run measured agg->tor 2.35 single against 1.89 dual (1.24x). By
# the hashing model 98% of 200 draws give single plane more than 1.3x dual's max/mean; this one
# gives 2.0 against 1.08.
DRAW_SEED = 187


def flows_on(planes, folder):
    """Every host sends to its counterpart on the other segment, 4 connections each, on
    HPN7(2,2,2,2) with ECMP and the same hash at every switch, every link captured."""
    topo = HPN7(2, 2, 2, 2, planes=planes)
    with testbed.emulate(topo, "ecmp", hash="same", folder=folder) as emu:
        return emu.flows(topo.cross_segment_pairs(), seconds=3, streams=4, draw=Draw(DRAW_SEED))


def test_single_plane_polarises_a_tier_that_dual_plane_keeps_even(tmp_path):
    single, dual = flows_on(1, tmp_path / "single"), flows_on(2, tmp_path / "dual")
    # The aggregation switch's two-way choice between a NIC's ToRs follows the ToR's uplink choice
    # (the same hash): measured agg->tor max/mean 4.5 single-plane against 1.6 dual-plane.
    worse = {tier: (single.tiers[tier], dual.tiers[tier]) for tier in single.tiers
             if single.tiers[tier] > 1.3 * dual.tiers[tier]}
    assert worse, (single.tiers, dual.tiers)
    assert 0.9 <= single.capture_over_port_counters <= 1.01 and 0.9 <= dual.capture_over_port_counters <= 1.01
