"""HPN7 as data: bonded dual-port NICs, and what each routing mode installs on single- and
dual-plane fabrics. No root."""
import pytest

from testbed.errors import TestbedError
from testbed.routing import plan
from testbed.topology import HPN7


@pytest.fixture(params=[1, 2], ids=["single-plane", "dual-plane"])
def topo(request):
    return HPN7(segments=2, servers=2, rails=2, aggs=2, planes=request.param)


def groups(topo, rules, role):
    """{(switch label, destination): its next-hop ports} for the switches of a role."""
    return {(s.label, dst): ports for s in topo.switches.values() if s.role == role
            for _, dst, ports in rules[s.dpid]}


def test_a_nic_has_one_address_and_one_mac_on_both_ports(topo):
    for host in topo.hosts.values():
        assert len(host.ports) == 2
        assert len({(nic.ip, nic.mac) for nic in host.ports}) == 1
    assert len(topo.addresses()) == len(topo.hosts)


def test_ecmp_aggregation_switches_choose_between_the_two_tors_only_in_single_plane(topo):
    rules = plan(topo, "ecmp").rules
    downs = groups(topo, rules, "agg")
    if topo.planes == 1:     # the third hashing stage: both ToRs of the NIC are equal-cost
        assert all(len(ports) == 2 for ports in downs.values()), downs
    else:                    # an aggregation switch sees one ToR towards a NIC's port of its plane
        assert all(len(ports) == 1 for ports in downs.values()), downs
    assert len(downs) == len(topo.addresses()) * topo.aggs * topo.planes


def test_ecmp_tors_send_attached_nics_down_and_the_rest_up_over_every_uplink(topo):
    rules = plan(topo, "ecmp").rules
    uplinks = topo.aggs                 # like with like: a ToR has A uplinks in either form
    for tor in (s for s in topo.switches.values() if s.role == "tor"):
        for _, dst, ports in rules[tor.dpid]:
            nic = topo.addresses()[dst]
            attached = any(topo.attachment(n)[0] == tor.name for n in nic)
            assert len(ports) == (1 if attached else uplinks), (tor.label, dst, ports)


def test_both_forms_have_the_same_tors_uplinks_and_capacity_only_wired_otherwise():
    single, dual = (HPN7(2, 4, 2, 3, planes=p, uplink_ratio=0.5) for p in (1, 2))
    for form in (single, dual):
        tors = [s for s in form.switches.values() if s.role == "tor"]
        ups = [link for link in form.fabric_links() if form.switches[link.a].role == "tor"]
        assert len(ups) == len(tors) * 3 and {link.rate for link in ups} == {5.0}
        assert form.uplink_capacity == 0.5 * 3 / 4
    aggs = lambda form: [s for s in form.switches.values() if s.role == "agg"]
    assert len(aggs(single)) == 3 and len(aggs(dual)) == 6
    # single plane: a NIC's two ToRs reach the same aggregation switches; dual plane: disjoint ones
    reach = lambda form, label: {link.b for link in form.fabric_links() if form.switches[link.a].label == label}
    assert reach(single, "tor.s0.r0.p0") == reach(single, "tor.s0.r0.p1")
    assert not reach(dual, "tor.s0.r0.p0") & reach(dual, "tor.s0.r0.p1")


def test_uplink_capacity_sets_the_uplink_rate_and_refuses_nonsense():
    from testbed.topology.hpn7 import HPN_UPLINK_CAPACITY, uplink_ratio
    assert HPN_UPLINK_CAPACITY == 0.9375
    topo = HPN7(2, 4, 2, 2, uplink_ratio=uplink_ratio(HPN_UPLINK_CAPACITY, 4, 2))
    assert topo.uplink_capacity == pytest.approx(0.9375)
    assert "18.75 Mbit/s" in topo.describe()
    for bad in (0, -1, float("nan"), 100):
        with pytest.raises(TestbedError, match="--uplink-capacity"):
            uplink_ratio(bad, 4, 2)


def test_the_two_planes_share_no_switch_to_switch_link():
    topo = HPN7(2, 2, 2, 2, planes=2)
    for link in topo.fabric_links():
        assert topo.switches[link.a].plane == topo.switches[link.b].plane


def test_bonded_hosts_route_by_multipath_under_ecmp_and_per_destination_when_deterministic(topo):
    h0 = topo.hosts["h0"]
    ecmp = plan(topo, "ecmp")
    assert ecmp.host_routes["h0"] == [["10.0.0.0/24", [h0.ports[0].intf, h0.ports[1].intf], 0, 0],
                                      ["10.0.0.0/24", [h0.ports[0].intf], 0, 100],
                                      ["10.0.0.0/24", [h0.ports[1].intf], 0, 101]]
    assert ecmp.host_rules["h0"] == [[20000, 25999, 100], [26000, 31999, 101]]   # round-robin's turns
    per_destination = plan(topo, "deterministic").host_routes["h0"]
    assert len(per_destination) == 2 * (len(topo.hosts) - 1)         # the chosen port, and the other
    assert all(len(devs) == 1 and prefix.endswith("/32") for prefix, devs, _, _ in per_destination)
    preferred = {prefix: devs[0] for prefix, devs, metric, _ in per_destination if metric == 0}
    assert len(preferred) == len(topo.hosts) - 1


def test_hash_seeds_are_the_same_everywhere_or_one_per_switch(topo):
    assert set(plan(topo, "ecmp", "same").seeds.values()) == {0}
    seeds = plan(topo, "ecmp", "per-switch").seeds
    assert len(set(seeds.values())) == len(topo.switches)
    with pytest.raises(TestbedError, match="same, per-switch"):
        plan(topo, "ecmp", "random")


def test_routing_around_a_failed_nic_link(topo):
    h0 = topo.hosts["h0"]
    tor, port = topo.attachment(h0.ports[0])
    failed = topo.without([topo.link_at(tor, port)])
    rules = plan(failed, "ecmp").rules
    tor0 = topo.switches[tor]
    to_h0 = {dst: ports for _, dst, ports in rules[tor0.dpid]}.get(h0.ports[0].ip)
    if topo.planes == 1:     # the ToR that lost the NIC now sends it up, and the aggregation tier to the other ToR
        assert to_h0 and port not in to_h0
        assert all(len(ports) == 1 for (_, dst), ports in groups(failed, rules, "agg").items() if dst == h0.ports[0].ip)
    else:                    # no way left in plane 0 without a core tier: the plan has no route there
        assert to_h0 is None
    routes = plan(failed, "deterministic").routes
    assert all(route.src.port == 1 for (src, _), route in routes.items() if src == h0.ports[0].ip)
