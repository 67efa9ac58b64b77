"""A server's scale-up domain as data (no root): which hosts it joins, their addresses, its links in
the model, and NCCL's ring order, which keeps a ring's hops between servers on one rail."""
import pytest

import testbed
from testbed.collectives.connections import Connection
from testbed.collectives.placements import nccl_ring
from testbed.errors import TestbedError
from testbed.fidelity import predict
from testbed.routing import deterministic_routes, plan
from testbed.routing.hashing import Placer


def test_the_domain_joins_each_two_accelerators_of_a_server_and_nothing_else():
    topo = testbed.fabric("hpn7:2,2,2,2", scaleup=9)
    pairs = topo.scaleup_pairs()
    assert len(pairs) == 4 and all(topo.hosts[a].server == topo.hosts[b].server for a, b in pairs)
    assert topo.same_server("h0", "h1") and not topo.same_server("h0", "h2") and not topo.same_server("h0", "h0")
    assert topo.scaleup_ip("h3") == "10.0.250.4"
    assert {link.rate for link in topo.scaleup_links()} == {90.0} and not set(topo.scaleup_links()) & set(topo.links)
    assert topo.to_dict()["scaleup_domain"] == 9.0
    assert "scaleup_domain" not in testbed.fabric("hpn7:2,2,2,2").to_dict()    # none: the fabric's data as before
    assert not testbed.fabric("hpn7:2,2,2,2").same_server("h0", "h1")


@pytest.mark.parametrize("spec, scaleup, said", [
    ("hpn7:2,2,2,2", 0.5, "--scaleup must be 0"),
    ("hpn7:2,2,2,2", 100, "--scaleup must be 0"),
    ("railonly:4,2", 4, "scale-up bridge of their own"),
])
def test_a_scale_up_domain_it_cannot_have_is_refused_in_one_line(spec, scaleup, said):
    with pytest.raises(TestbedError, match=said):
        testbed.fabric(spec, scaleup=scaleup)


def test_the_model_sends_a_servers_traffic_over_its_scale_up_link_and_nowhere_else():
    topo = testbed.fabric("hpn7:2,2,2,2", scaleup=9)
    conn = Connection("h0", "h1", 40000, 7000)
    placer = Placer(topo, plan(topo, "ecmp"), "round-robin")
    assert placer.path(conn) == [("h0", "su1")]
    assert predict.route_paths(topo, plan(topo), [conn])[conn] == [("h0", "su1")]
    assert predict.link_rates(topo)["h0", "su1"] == topo.bytes_per_s * 9


def test_a_rail_aligned_ring_on_one_segment_never_crosses_an_aggregation_switch():
    topo = testbed.fabric("hpn7:2,4,2,2", scaleup=9)
    segment = [h for h in topo.hosts if topo.segment_of(topo.hosts[h]) == 0]
    ring = nccl_ring(topo, segment)
    routes, ip = deterministic_routes(topo), {h: topo.hosts[h].ports[0].ip for h in topo.hosts}
    for a, b in zip(ring, ring[1:] + ring[:1]):
        if topo.same_server(a, b):
            continue
        roles = {topo.switches[s].role for s in routes[ip[a], ip[b]].switches}
        assert roles == {"tor"}, (a, b, roles)
    # in rank order every hop changes rail: each one between servers crosses the aggregation tier
    crossing = [(a, b) for a, b in zip(segment, segment[1:] + segment[:1]) if not topo.same_server(a, b)]
    assert all("agg" in {topo.switches[s].role for s in routes[ip[a], ip[b]].switches} for a, b in crossing)
