"""A launched job's retransmissions as a host agent reads them (``probes.sockets``: ``ss`` in each
host's namespace) and as the monitor uses them (``runs.launch_watch``): each connection between
the job's hosts numbered as a peer, with its path from the routes and the hash of its ports, so
that the detector's vote names the link the lossy connections share."""
from types import SimpleNamespace

import testbed
from testbed.fidelity.diagnosis import link_label, loss_finding
from testbed.probes.sockets import SocketSampler, parse
from testbed.routing import plan
from testbed.routing.hashing import Connection, Placer
from testbed.runs.launch_watch import LaunchWatch

# ss -tinHO state established, as iproute2 6.1 prints it (cut short)
SS = """\
0      0      10.0.0.1:41234 10.0.0.5:29500 cubic wscale:7,7 rto:204 mss:8948 cwnd:10 retrans:0/7 bytes_sent:90
0      0      [::ffff:10.0.0.1]:52000 [::ffff:10.0.0.6]:43000 cubic rto:204 cwnd:10 bytes_sent:10
0      0      127.0.0.1:29500 127.0.0.1:40000 cubic rto:204
0      0      10.0.0.1:1000 192.0.2.9:443 cubic rto:204 retrans:0/3
"""


def test_ss_lines_give_each_fabric_connection_and_what_it_retransmitted():
    host_of = {"10.0.0.1": "h0", "10.0.0.5": "h4", "10.0.0.6": "h5", "127.0.0.1": "h0"}
    assert parse(SS, host_of) == {("h0", 41234, "h4", 29500): 7, ("h0", 52000, "h5", 43000): 0}


def test_the_counts_at_a_time_are_the_last_sample_taken_by_then():
    sampler = SocketSampler({}, {})
    sampler.samples = [(1.0, {"a": 1}), (2.0, {"a": 4})]
    assert (sampler.at(0.5), sampler.at(1.0), sampler.at(1.9), sampler.at(9.0)) == ({}, {"a": 1}, {"a": 1}, {"a": 4})


def _watch(topo, samples):
    watch = LaunchWatch.__new__(LaunchWatch)
    watch.emu = SimpleNamespace(topo=topo)
    watch.sockets = SocketSampler({}, {})
    watch.sockets.samples = samples
    watch.placer, watch.connections, watch.paths = Placer(topo, plan(topo, "ecmp")), {}, {}
    return watch


def test_the_connections_that_cross_a_lossy_link_vote_for_it():
    topo = testbed.fabric("bigraph:2,4")
    hosts = sorted(topo.hosts)
    keys = [(a, 40000 + i, b, 29500) for i, (a, b) in enumerate((a, b) for a in hosts for b in hosts
                                                                 if a != b and not topo.same_server(a, b))]
    placer = Placer(topo, plan(topo, "ecmp"))
    path = {k: {topo.link_at(n, p) for n, p in placer.path(Connection(k[0], k[2], k[1], k[3]))} for k in keys}
    fabric = [link for link in topo.links if {link.a, link.b} <= set(topo.switches)]
    lossy = max(fabric, key=lambda link: sum(link in p for p in path.values()))
    healthy = {k: int(k == keys[0]) for k in keys}                      # what TCP resends anyway
    sick = {k: healthy[k] + (10 if lossy in path[k] else 0) for k in keys}
    watch = _watch(topo, [(0.0, {k: 0 for k in keys}), (1.0, healthy), (2.0, sick)])

    resent = dict(watch.resent(1.0, 2.0))
    assert set(watch.paths) == {(0, n) for n in range(len(keys))}        # every connection has its path
    assert {watch.connections[k] for k in keys if lossy in path[k]} == set(resent)
    assert all(watch.paths[0, watch.connections[k]] == path[k] for k in keys)

    quiet = SimpleNamespace(queues={}, edges={}, earlier=[], events=[])
    window = lambda start, end: SimpleNamespace(**vars(quiet), timing=[[{"retrans": watch.resent(start, end)}]])
    before = SimpleNamespace(each=lambda: [window(0.5, 1.0)])
    found = loss_finding(topo, before, window(1.0, 2.0), watch.paths)
    assert (found.kind, found.where) == ("link-slow", link_label(topo, lossy)), found
