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


def test_planned_flows_take_paths_apart():
    """Each given pair takes the equal-cost path whose busiest link carries the fewest flows placed
    before it: two pairs between the same leaves take different spines."""
    topo = LeafSpine(2, 2, 2)
    placed = plan(topo, "planned", flows=[("h0", "h2"), ("h1", "h3")])
    first, second = (placed.routes[topo.hosts[a].ports[0].ip, topo.hosts[b].ports[0].ip]
                     for a, b in (("h0", "h2"), ("h1", "h3")))
    assert first.switches[1] != second.switches[1]
    assert placed.port_routes == {} and placed.host_rules == {}     # no bonded NIC: nothing to split


def consistent(rules):
    """No switch holds two rules for one (source, destination) with different next hops."""
    seen = {}
    for dpid, entries in rules.items():
        for src, dst, ports in entries:
            if seen.setdefault((dpid, src, dst), ports) != ports:
                return False
    return True


@pytest.mark.parametrize("planes", [2, 1])
def test_planned_pairs_use_both_ports_of_a_bonded_nic(planes):
    """As C4P spreads a connection's queue pairs, a planned pair on HPN's bonded NICs gets a route
    from each port, and a connection from port p's turn ports (the hosts' turn rules) takes port
    p's route; on the dual plane the two never meet at a switch. Where they would meet with
    different next hops (single plane), the pair keeps one route."""
    from testbed.routing.hashing import Connection, Placer, turn_ports
    from testbed.routing.plan import TURN_TABLE
    from testbed.topology import HPN7
    topo = HPN7(2, 2, 2, 2, planes=planes)
    pairs = [(a, b) for a in topo.hosts for b in topo.hosts if a != b and not topo.same_server(a, b)]
    placed = plan(topo, "planned", flows=pairs)
    assert consistent(placed.rules)
    if planes == 2:
        assert len(placed.port_routes) == len(pairs)
    ip = {h: topo.hosts[h].ports[0].ip for h in topo.hosts}
    placer = Placer(topo, placed, "round-robin")
    for (src, dst), by_port in placed.port_routes.items():
        assert sorted(by_port) == [0, 1]
        assert not set(by_port[0].switches) & set(by_port[1].switches)
        a, b = next((a, b) for a, b in pairs if (ip[a], ip[b]) == (src, dst))
        for port in (0, 1):
            conn = Connection(a, b, turn_ports(port, 2)[5], 7000, turn=port)
            assert placer.path(conn)[0] == (a, port)                    # the host's port
            assert [s for s, _ in placer.path(conn)[1:]] == by_port[port].switches
            assert placed.route(src, dst, conn.sport) is by_port[port]
            assert [f"{dst}/32", [topo.hosts[a].ports[port].intf], 0, TURN_TABLE + port] in placed.host_routes[a]
        assert placed.route(src, dst, 40000) is placed.routes[src, dst]  # the kernel's own port: the main table
    if placed.port_routes:
        assert placed.host_rules and all(len(rules) == 2 for rules in placed.host_rules.values())
