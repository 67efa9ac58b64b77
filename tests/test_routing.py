"""Routes and the rules the controller installs: plain data, no root."""
import pytest

from testbed.errors import TestbedError
from testbed.routing import deterministic_routes, link_load, plan
from testbed.routing.plan import ecmp_rules, route_rules
from testbed.topology import BiGraph, LeafSpine


def test_routes_cover_every_pair_and_chain_ports():
    topo = LeafSpine(2, 2, 2)
    routes = deterministic_routes(topo)
    nics = topo.nic_ports()
    assert len(routes) == len(nics) * (len(nics) - 1)
    for route in routes.values():
        assert route.hops[0].switch == topo.attachment(route.src)[0]
        assert route.hops[0].in_port == topo.attachment(route.src)[1]
        assert route.hops[-1].out_port == topo.attachment(route.dst)[1]


def test_tie_break_is_documented_rule():
    topo = BiGraph(2, 8)        # h0 and h2 sit on U0 and U1: relay = (0 + 2) mod 4 = L2
    route = deterministic_routes(topo)["10.0.0.1", "10.0.0.3"]
    assert [topo.switches[s].label for s in route.switches] == ["U0", "L2", "U1"]


def test_flow_rules_one_per_hop():
    topo = BiGraph(1, 4)
    routes = deterministic_routes(topo)
    rules = route_rules(topo, routes)
    assert sum(len(r) for r in rules.values()) == sum(len(r.hops) for r in routes.values())
    for entries in rules.values():
        assert len({(s, d) for s, d, _ in entries}) == len(entries)   # one rule per flow per switch


def test_link_load_counts_shared_links():
    topo = LeafSpine(2, 1, 2)        # one spine: both cross-leaf flows share its links
    routes = deterministic_routes(topo)
    load = link_load(routes, [("10.0.0.1", "10.0.0.3"), ("10.0.0.2", "10.0.0.4")])
    assert max(load.values()) == 2


def test_ecmp_rules_list_every_equal_cost_next_hop():
    topo = LeafSpine(4, 4, 4)
    rules = ecmp_rules(topo)
    leaf0 = topo.switches[topo.attachment(topo.hosts["h0"].ports[0])[0]]
    by_dst = {dst: ports for src, dst, ports in rules[leaf0.dpid]}
    assert all(src is None for src, _, _ in rules[leaf0.dpid])
    assert len(by_dst) == 16                          # one rule per destination
    assert len(by_dst["10.0.0.2"]) == 1               # a host on the same leaf: its port
    assert len(by_dst["10.0.0.16"]) == 4              # another leaf: one uplink per spine
    spines = [s for s in topo.switches.values() if s.label.startswith("spine")]
    assert len(spines) == 4
    for spine in spines:                              # one way down to every host
        assert len(rules[spine.dpid]) == 16 and all(len(p) == 1 for _, _, p in rules[spine.dpid])


def test_routing_modes():
    topo = BiGraph(1, 4)
    deterministic = plan(topo, "deterministic")
    assert deterministic.routes and deterministic.rules == route_rules(topo, deterministic.routes)
    assert plan(topo, "ecmp").routes is None
    with pytest.raises(TestbedError, match="deterministic, ecmp"):
        plan(topo, "random")


def test_pinned_routing_sends_each_destination_one_way_chosen_by_its_index():
    topo = LeafSpine(2, 2, 2)
    rules = plan(topo, "pinned").rules
    assert all(len(ports) == 1 for entries in rules.values() for _, _, ports in entries)
    leaf0 = topo.switches["tb1"].dpid
    up = {dst: ports[0] for _, dst, ports in rules[leaf0] if dst not in ("10.0.0.1", "10.0.0.2")}
    assert sorted(up.values()) == [3, 4]          # h2 and h3 (indices 2 and 3) pinned to the two spines
