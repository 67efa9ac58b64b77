"""Topology invariants: plain data, no root."""
import pytest

from testbed.errors import TestbedError
from testbed.routing import PathFinder, deterministic_routes
from testbed.topology import HPN7, BiGraph, LeafSpine, from_spec


@pytest.mark.parametrize("m,n,c", [(1, 2, 1), (2, 8, 1), (4, 16, 1), (3, 6, 2), (8, 8, 2)])
def test_bigraph_counts(m, n, c):
    topo = BiGraph(m, n, c)
    assert len(topo.switches) == n
    assert len(topo.hosts) == m * n
    assert len(topo.fabric_links()) == c * (n // 2) ** 2
    assert len(topo.links) == m * n + c * (n // 2) ** 2
    roles = [s.role for s in topo.switches.values()]
    assert roles.count("upper") == roles.count("lower") == n // 2
    for link in topo.fabric_links():   # no link inside a layer
        assert {topo.switches[link.a].role, topo.switches[link.b].role} == {"upper", "lower"}
    if c * n // 2 >= m:
        assert len(topo.fabric_links()) >= m * n // 2


def test_bigraph_paths():
    topo = BiGraph(2, 8)
    finder, k = PathFinder(topo), topo.half
    for src in topo.nic_ports():
        for dst in topo.nic_ports():
            if src.host == dst.host:
                continue
            options = finder.routes(src, dst)
            layer_a, layer_b = (topo.hosts[p.host].server < k for p in (src, dst))
            if topo.hosts[src.host].server == topo.hosts[dst.host].server:
                assert [len(r.hops) for r in options] == [1]
            elif layer_a != layer_b:
                assert [len(r.hops) for r in options] == [2]        # unique 2-switch path
            else:
                assert len(options) == k and all(len(r.hops) == 3 for r in options)
    assert max(len(r.hops) for r in deterministic_routes(topo).values()) == 3


def test_bigraph_rejects_odd_and_nonpositive():
    with pytest.raises(TestbedError, match="even switch count"):
        BiGraph(2, 7)
    for bad in [(0, 8), (2, 0), (2, -2), (2, 8, 0)]:
        with pytest.raises(TestbedError, match="positive"):
            BiGraph(*bad)
    with pytest.raises(TestbedError, match="rate must be positive"):
        BiGraph(2, 8, rate=0)


def test_leafspine_equal_cost_paths_equal_spines():
    topo = LeafSpine(leaves=3, spines=4, hosts_per_leaf=2)
    finder = PathFinder(topo)
    a, b = topo.hosts["h0"].ports[0], topo.hosts["h2"].ports[0]     # on leaf0 and leaf1
    options = finder.routes(a, b)
    assert len(options) == 4
    assert sorted(topo.switches[r.switches[1]].label for r in options) == [f"spine{i}" for i in range(4)]


def test_hpn7_same_rail_one_tor_apart_and_planes_disjoint():
    topo = HPN7(segments=2, servers=2, rails=2, aggs=2)
    routes = deterministic_routes(topo)
    hosts = list(topo.hosts.values())
    assert all(len(h.ports) == 2 for h in hosts)
    for a in hosts:
        for b in hosts:
            if a is b:
                continue
            same_rail = a.rail == b.rail and topo.segment_of(a) == topo.segment_of(b)
            route = routes[a.ports[0].ip, b.ports[0].ip]
            p = (a.index + b.index) % 2               # the documented port rule of a bonded NIC
            assert (route.src.port, route.dst.port) == (p, p)
            assert (len(route.switches) == 1) == same_rail
            assert {topo.switches[s].plane for s in route.switches} == {p}
    for link in topo.fabric_links():
        assert topo.switches[link.a].plane == topo.switches[link.b].plane


def test_hpn7_single_plane_mixes_planes():
    topo = HPN7(1, 2, 2, 2, planes=1)
    agg = next(s for s in topo.switches.values() if s.role == "agg")
    tor_planes = {topo.switches[link.a].plane for link in topo.fabric_links() if link.b == agg.name}
    assert tor_planes == {0, 1}


def test_from_spec():
    assert from_spec("bigraph:2,8").name == "BiGraph(m=2, n=8, c=1)"
    assert len(from_spec("hpn7:1,2,2,1,1").hosts) == 4
    with pytest.raises(TestbedError, match="unknown topology"):
        from_spec("torus:4")
    with pytest.raises(TestbedError, match="should read bigraph"):
        from_spec("bigraph:two,8")
    with pytest.raises(TestbedError, match="even switch count"):
        from_spec("bigraph:2,7")


@pytest.mark.parametrize("topo", [BiGraph(2, 8), LeafSpine(4, 2, 2), HPN7(2, 2, 2, 2)], ids=lambda t: t.name)
def test_link_delay_sits_at_switch_egress_and_every_path_keeps_it(topo):
    topo.delay = 3.0
    for route in deterministic_routes(topo).values():
        held = sum(topo.switch_delay(topo.link_at(hop.switch, hop.out_port)) for hop in route.hops)
        assert held == pytest.approx(3.0 * (len(route.hops) + 1)), route   # links = switches + 1


@pytest.mark.parametrize("ranks, shape", [(4, (1, 4, 1)), (8, (1, 8, 1)), (16, (4, 4, 2)), (32, (4, 8, 1)),
                                          (64, (4, 16, 1))])
def test_eflops_bigraph_puts_four_accelerators_on_a_switch_from_16_ranks(ranks, shape):
    topo = BiGraph.eflops(ranks)
    assert (topo.m, topo.n, topo.c) == shape and len(topo.hosts) == ranks
    assert topo.m <= topo.c * topo.n // 2       # HDRM's condition
