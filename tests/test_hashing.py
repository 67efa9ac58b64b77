"""Where hashing puts a connection: Open vSwitch's select-group hash against choices the real
Open vSwitch made, the draw's source ports, and the placer's paths on HPN7. No root."""
import pytest

from testbed.collectives.connections import flow_connections, rank_connections
from testbed.collectives.placements import cross_segment
from testbed.collectives.schedules import Ring
from testbed.errors import TestbedError
from testbed.fidelity import predict
from testbed.routing import plan
from testbed.routing.hashing import HASH_PORTS, Connection, Draw, Placer, bucket, ovs_hash, turn_ports
from testbed.topology import HPN7

# (source, destination, source port, destination port, the group's basis, buckets, the bucket
# Open vSwitch 3.1 chose): read from captures of an HPN7 emulation (the links each connection's
# packets left by, against the group's ports), basis 0 and two per-switch bases
OVS_CHOSE = [
    ("10.0.0.1", "10.0.0.5", 47996, 5203, 0, 2, 0),
    ("10.0.0.1", "10.0.0.5", 51436, 5201, 0, 2, 0),
    ("10.0.0.3", "10.0.0.7", 5225, 60958, 0, 2, 0),
    ("10.0.0.3", "10.0.0.7", 24194, 5209, 0, 2, 0),
    ("10.0.0.3", "10.0.0.7", 38178, 5209, 0, 2, 0),
    ("10.0.0.1", "10.0.0.5", 20522, 5201, 0, 2, 1),
    ("10.0.0.1", "10.0.0.5", 23727, 5203, 0, 2, 1),
    ("10.0.0.1", "10.0.0.5", 46744, 5204, 0, 2, 1),
    ("10.0.0.3", "10.0.0.7", 24488, 5211, 0, 2, 1),
    ("10.0.0.5", "10.0.0.1", 5202, 46520, 0, 2, 1),
    ("10.0.0.5", "10.0.0.1", 39312, 5217, 0, 2, 1),
    ("10.0.0.7", "10.0.0.3", 5211, 38594, 0, 2, 1),
    ("10.0.0.1", "10.0.0.5", 16057, 5201, 2654435761, 2, 0),
    ("10.0.0.1", "10.0.0.5", 60094, 5201, 2654435761, 2, 0),
    ("10.0.0.1", "10.0.0.5", 5210, 41448, 2654435761, 2, 1),
    ("10.0.0.3", "10.0.0.7", 19549, 5206, 2654435761, 2, 1),
    ("10.0.0.5", "10.0.0.1", 39458, 5209, 774553834, 2, 0),
    ("10.0.0.7", "10.0.0.3", 11820, 5213, 774553834, 2, 0),
    ("10.0.0.5", "10.0.0.1", 5202, 38434, 774553834, 2, 1),
    ("10.0.0.5", "10.0.0.1", 41448, 5210, 774553834, 2, 1),
]


@pytest.mark.parametrize("src, dst, sport, dport, basis, buckets, chosen", OVS_CHOSE)
def test_the_hash_chooses_as_open_vswitch_did(src, dst, sport, dport, basis, buckets, chosen):
    assert bucket(ovs_hash(src, dst, sport, dport, basis), buckets) == chosen


def test_the_hash_is_symmetric_and_its_buckets_follow_the_sixteen_values():
    assert ovs_hash("10.0.0.1", "10.0.0.9", 20000, 7000) == ovs_hash("10.0.0.9", "10.0.0.1", 7000, 20000)
    assert ovs_hash("10.0.0.1", "10.0.0.9", 20000, 7000, 1) != ovs_hash("10.0.0.1", "10.0.0.9", 20000, 7000, 2)
    assert [bucket(v, 3) for v in range(16)] == [v % 3 for v in range(16)]
    assert bucket(0xFFFFFFFF, 3) == 15 % 3 and bucket(61, 60) == 1          # 60 buckets: 64 values


def test_a_draw_gives_distinct_repeatable_ports_and_round_robin_turns():
    draw, again = Draw(7, "round-robin"), Draw(7, "round-robin")
    conns = [draw.connection("h0", f"h{k}", 7000) for k in range(1, 9)]
    assert conns == [again.connection("h0", f"h{k}", 7000) for k in range(1, 9)]
    assert [c.turn for c in conns] == list(range(8)) and len({c.sport for c in conns}) == 8
    assert all(c.sport in turn_ports(c.turn % 2, 2) for c in conns)
    hashed = Draw(7).connection("h0", "h1", 7000)
    assert hashed.sport in HASH_PORTS
    with pytest.raises(TestbedError, match="unknown bond"):
        Draw(1, "spray")


def hpn7(planes, hash="same"):
    topo = HPN7(2, 2, 2, 2, planes=planes)
    return topo, plan(topo, "ecmp", hash)


def test_round_robin_alternates_a_nics_ports_and_dual_plane_keeps_a_connection_in_its_plane():
    topo, routing = hpn7(2)
    placer = Placer(topo, routing, "round-robin")
    draw = Draw(3, "round-robin")
    for group in flow_connections([(s.host, d.host) for s, d in topo.cross_segment_pairs()], 4, draw):
        for conn in group:
            path = placer.path(conn)
            assert path[0] == (conn.src, conn.turn % 2)
            planes = {topo.switches[node].plane for node, _ in path[1:]}
            assert planes == {conn.turn % 2}               # in and out of one plane, to port turn mod 2


def test_single_plane_with_one_hash_polarises_the_aggregation_tier():
    """With A = 2 the ToR picks uplink v mod 2 and the aggregation switch ToR v mod 2 of the same
    hash value v: aggregation switch a only ever sends to the NIC's port-a ToR."""
    delivered = {"same": set(), "per-switch": set()}
    for hash in delivered:
        topo, routing = hpn7(1, hash)
        placer = Placer(topo, routing, "round-robin")
        draw = Draw(5, "round-robin")
        for group in flow_connections([(s.host, d.host) for s, d in topo.cross_segment_pairs()], 8, draw):
            for conn in group:
                path = placer.path(conn)
                agg = topo.switches[path[2][0]].label
                tor = topo.switches[topo.link_at(*path[2]).b if topo.link_at(*path[2]).a == path[2][0]
                                    else topo.link_at(*path[2]).a].label
                delivered[hash].add((agg, tor[-2:]))
    assert delivered["same"] == {("agg.a0", "p0"), ("agg.a1", "p1")}
    assert len(delivered["per-switch"]) == 4


def test_rank_connections_follow_the_ranks_order_of_peers_and_streams():
    topo = HPN7(2, 2, 2, 2)
    hosts = cross_segment(topo)
    conns = rank_connections(Ring(), hosts, [7000] * len(hosts), 2, Draw(1, "round-robin"))
    assert sorted(conns[0]) == [1, len(hosts) - 1]
    assert [c.turn for c in conns[0][1] + conns[0][len(hosts) - 1]] == [0, 1, 2, 3]
    assert all(c.src == hosts[0] and c.dport == 7000 for cs in conns[0].values() for c in cs)


def test_a_connection_without_a_route_is_refused():
    topo, _ = hpn7(2)
    failed = topo.without([topo.link_at(*topo.attachment(topo.hosts["h0"].ports[0]))])
    placer = Placer(failed, plan(failed, "ecmp"), "round-robin")
    with pytest.raises(TestbedError, match="no route"):      # plane 0 lost h0, and has no core tier
        placer.path(Connection("h4", "h0", 20000, 7000, turn=0))
    assert placer.path(Connection("h4", "h0", 26000, 7000, turn=1))[-1][0].startswith("tb")
    with pytest.raises(TestbedError, match="no such host"):
        placer.path(Connection("h0", "h99", 20000, 7000))


def test_captured_paths_are_matched_to_their_connections_and_checked_against_the_placer():
    topo, routing = hpn7(1)
    placer = Placer(topo, routing, "round-robin")
    groups = flow_connections([(s.host, d.host) for s, d in topo.cross_segment_pairs()], 2, Draw(9, "round-robin"))
    conns = [c for group in groups for c in group]
    ip = {h.name: h.ports[0].ip for h in topo.hosts.values()}
    key = lambda c: (ip[c.src], c.sport, ip[c.dst], c.dport)
    captured = {key(c): {link: 9000 for link in placer.path(c)} for c in conns[1:]}
    moved = placer.path(conns[1])
    captured[key(conns[1])] = {(conns[1].src, 1 - moved[0][1]): 9000, **{link: 9000 for link in moved[1:]}}
    paths = predict.captured_paths(topo, conns, captured)
    assert set(paths) == set(conns[1:])                       # conns[0] never seen: left out
    assert predict.paths_as_placed(placer, paths) == len(conns) - 2


def test_a_capture_is_read_as_its_packets_headers_say(tmp_path):
    """read_packets unpacks Ethernet, IPv4 and TCP headers itself (scapy dissecting each packet took
    9 s a trial): each TCP packet's time, 5-tuple, bytes on the wire and whether it carries data, as
    scapy's layers read them; ARP, UDP and other link types are not TCP packets."""
    from scapy.layers.inet import IP, TCP, UDP, IPOption_NOP
    from scapy.layers.l2 import ARP, Ether
    from scapy.utils import wrpcap

    from testbed.probes.collisions import read_packets
    data = Ether() / IP(src="10.0.0.1", dst="10.0.0.2") / TCP(sport=7001, dport=40000, options=[("NOP", None)] * 4) \
        / (b"x" * 1000)
    ack = Ether() / IP(src="10.0.0.2", dst="10.0.0.1", options=[IPOption_NOP()] * 4) / TCP(sport=40000, dport=7001,
                                                                                    flags="A")
    frames = [data, ack, Ether() / ARP(), Ether() / IP() / UDP() / b"u"]
    for t, frame in enumerate(frames):
        frame.time = 100 + t / 4
    wrpcap(str(tmp_path / "c.pcap"), frames)
    assert read_packets(tmp_path / "c.pcap") == [
        (100.0, ("10.0.0.1", 7001, "10.0.0.2", 40000), len(data), True),
        (100.25, ("10.0.0.2", 40000, "10.0.0.1", 7001), len(ack), False)]
    wrpcap(str(tmp_path / "raw.pcap"), [IP() / TCP()])        # link type raw IP, not Ethernet
    with pytest.raises(TestbedError, match="not Ethernet"):
        read_packets(tmp_path / "raw.pcap")
