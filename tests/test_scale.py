"""Scale on paper, without root: passes per packet, slots, cores, machines and underlay."""
import pytest

from testbed.fidelity import scale
from testbed.topology import HPN7, BiGraph, LeafSpine


def test_diameters_in_switches():
    assert scale.diameter(BiGraph(1, 4)) == 3           # Lower -> Upper -> Lower
    assert scale.diameter(HPN7(2, 2, 2, 2)) == 3        # ToR -> aggregation -> ToR
    assert scale.diameter(HPN7(2, 2, 2, 2, cores=1)) == 3
    assert scale.diameter(LeafSpine(1, 1, 4)) == 1


def test_the_calibration_flows_cross_two_to_three_switches():
    assert 2 <= scale.calibration_passes() <= 3


def test_a_fabric_past_one_slot_is_split_and_its_cut_links_cross_the_underlay():
    topo = BiGraph(2, 8, rate=10)                       # 16 ports x 10 Mbit/s x 3 passes = 480
    one = scale.plan(topo, slot_capacity=480, machine_cores=8)
    assert (one.slots, one.cut_links, one.cores, one.machines, one.underlay_mbit, one.fits) == (1, 0, 2, 1, 0, True)
    two = scale.plan(topo, slot_capacity=300, machine_cores=4)
    assert (two.slots, two.cut_links, two.cores, two.machines, two.underlay_mbit) == (2, 8, 4, 1, 0)
    # One slot per machine of 2 cores: each machine sends its 8 cut links' 10 Mbit/s.
    apart = scale.plan(topo, slot_capacity=300, machine_cores=2)
    assert (apart.machines, apart.underlay_mbit) == (2, 80)


def test_more_than_the_fabric_splits_into_does_not_fit():
    topo = BiGraph(2, 8, rate=10)
    p = scale.plan(topo, slot_capacity=100, machine_cores=64)   # 480 / 100: 5 slots, 4 pairs
    assert (p.slots, p.max_slots, p.fits) == (4, 4, False)
    assert scale.highest_rate(topo, 100) == pytest.approx(4 * 100 / (16 * 3))
