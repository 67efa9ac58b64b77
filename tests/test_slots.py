"""Fabrics split into slots, without root: who goes where, which links are cut, refusals."""
import json

import pytest

from testbed.errors import TestbedError
from testbed.topology import HPN7, BiGraph, LeafSpine
from testbed.topology.partition import partition


def slot_of(part, *labels):
    names = {s.label: s.name for s in part.topo.switches.values()}
    return [part.slot_of[names[label]] for label in labels]


def test_bigraph_puts_upper_lower_pairs_in_slots():
    part = partition(BiGraph(2, 8), 2)
    assert slot_of(part, "U0", "L0", "U1", "L1") == [0, 0, 0, 0]
    assert slot_of(part, "U2", "L2", "U3", "L3") == [1, 1, 1, 1]
    assert part.hosts(0) == [f"h{i}" for i in (0, 1, 2, 3, 8, 9, 10, 11)]   # U0, U1, L0, L1's endpoints
    # 16 Upper-Lower links, 2 x 2 x 2 inside the slots.
    assert len(part.cut_links()) == 8
    assert all(part.slot_of[c.link.a] != part.slot_of[c.link.b] for c in part.cut_links())


def test_one_pair_per_slot_and_one_vni_per_cut_link():
    part = partition(BiGraph(1, 8, c=2), 4)
    assert [len(part.switches(s)) for s in range(4)] == [2] * 4
    cut = part.cut_links()
    assert len(cut) == 2 * (16 - 4)
    assert [c.vni for c in cut] == list(range(1, len(cut) + 1))
    assert not any(part.topo.is_host_link(c.link) for c in cut)


def test_one_slot_cuts_nothing():
    part = partition(BiGraph(2, 8), 1)
    assert part.count == 1 and part.cut_links() == []


def test_a_bonded_hosts_ports_and_both_tors_share_its_slot():
    topo = HPN7(2, 2, 2, 2)                        # 4 (segment, rail) units, dual ToR, dual plane
    part = partition(topo, 4)
    for s in range(2):
        for r in range(2):
            tors = slot_of(part, f"tor.s{s}.r{r}.p0", f"tor.s{s}.r{r}.p1")
            assert tors == [2 * s + r] * 2
            assert {part.slot_of[topo.host_at(s, h, r).name] for h in range(2)} == {2 * s + r}
    aggs = [part.slot_of[n] for n, sw in topo.switches.items() if sw.role == "agg"]
    assert sorted(aggs) == [0, 1, 2, 3]            # dealt out, one each
    # A ToR's uplinks leave its slot unless its agg is in it: 16 ToR-agg links, 4 inside.
    assert len(part.cut_links()) == 12


def test_other_fabrics_are_split_by_metis_evenly_and_the_same_way_every_time():
    topo = LeafSpine(4, 4, 5)
    part = partition(topo, 2)
    assert sorted(len(part.hosts(s)) for s in range(2)) == [10, 10]
    assert partition(LeafSpine(4, 4, 5), 2).slot_of == part.slot_of
    for link in topo.links:
        if topo.is_host_link(link):
            assert part.slot_of[link.a] == part.slot_of[link.b]


@pytest.mark.parametrize("topo, slots, fix", [
    (BiGraph(2, 8), 5, "--slots 4 or fewer"),
    (HPN7(1, 2, 2, 1), 3, "--slots 2 or fewer"),
    (LeafSpine(2, 1, 2), 4, "--slots 3 or fewer"),
])
def test_more_slots_than_the_fabric_splits_into_is_refused(topo, slots, fix):
    with pytest.raises(TestbedError, match=fix):
        partition(topo, slots)


@pytest.mark.parametrize("slots", [0, -1, 1.5, "2"])
def test_slots_must_be_a_positive_whole_number(slots):
    with pytest.raises(TestbedError, match="--slots"):
        partition(BiGraph(1, 4), slots)


def test_underlay_and_record():
    part = partition(BiGraph(1, 4), 2)
    assert part.underlay_mtu(9000) == 9050
    record = json.loads(json.dumps(part.to_dict()))
    assert record["slots"] == 2 and len(record["cut_links"]) == 2
    assert "2 slot(s)" in part.describe() and "2 link(s) cut of 4" in part.describe()


def test_the_fabric_check_crosses_every_direction_of_every_cut_link_without_sharing():
    from testbed import routing
    from testbed.fidelity.fabric_check import cut_link_rounds
    topo = BiGraph(2, 8)
    part, routes = partition(topo, 2), routing.plan(topo).routes
    rounds = cut_link_rounds(routes, part.cut_links())
    wanted = {end for cut in part.cut_links() for end in cut.link.ends()}
    crossed = {end for chosen in rounds for r in chosen for end in r.directed_links()}
    assert wanted <= crossed
    for chosen in rounds:
        links = [end for r in chosen for end in r.directed_links()]
        assert len(links) == len(set(links))


def test_the_check_reports_cut_links_and_fails_on_underlay_losses():
    from testbed.fidelity.fabric_check import cut_link_lines
    verdict = {True: "PASS", False: "FAIL"}
    cut = {"cut_links": 8, "directions": 16, "covered": 16, "flows": [{}] * 14, "min": 0.99, "cpu": None,
           "latency": {"switches": 2, "tunnelled_ms": 1.0, "local_ms": 0.4},
           "underlay_errors": {"vxlan_errors": 0, "udp_rcvbuf_errors": 3}, "pass": False}
    text = "\n".join(cut_link_lines(cut, verdict))
    assert "16/16 directions of 8 VXLAN links crossed by 14 flows" in text and "FAIL" in text
    assert "udp_rcvbuf_errors 3" in text and "(+0.600 ms)" in text
    assert cut_link_lines(None, verdict) == []
