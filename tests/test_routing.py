"""Routes and the rules the controller installs: plain data, no root."""
from testbed.routing import deterministic_routes, flow_rules, link_load
from testbed.topologies import BiGraph, LeafSpine


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
    rules = flow_rules(topo, routes)
    assert sum(len(r) for r in rules.values()) == sum(len(r.hops) for r in routes.values())
    for dpid, entries in rules.items():
        assert len({(s, d) for s, d, _ in entries}) == len(entries)   # one rule per flow per switch


def test_link_load_counts_shared_links():
    topo = LeafSpine(2, 1, 2)        # one spine: both cross-leaf flows share its links
    routes = deterministic_routes(topo)
    load = link_load(routes, [("10.0.0.1", "10.0.0.3"), ("10.0.0.2", "10.0.0.4")])
    assert max(load.values()) == 2
