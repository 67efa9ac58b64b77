"""Real packets through Mininet + Open vSwitch + the os-ken controller."""
import subprocess

import pytest

from testbed import routing
from testbed.emulation.network import Emulation
from testbed.fidelity.fabric_check import longest_route, reachability, run_flows, spread_pairs
from testbed.probes.queues import QueueSampler
from testbed.topology import BiGraph, interface


@pytest.fixture(scope="module")
def bigraph(tmp_path_factory):
    topo = BiGraph(2, 8)
    with Emulation(topo, routing.plan(topo), tmp_path_factory.mktemp("bigraph"), log=lambda m: None) as emu:
        yield emu


def test_bigraph_every_host_reaches_every_other(bigraph):
    answered, failures = reachability(bigraph)
    assert failures == [] and answered == 16 * 15


def test_single_flow_over_longest_path_gets_link_rate(bigraph):
    routes = bigraph.routing.routes
    route = longest_route(routes)
    assert len(route.hops) == 3
    (flow,), cpu = run_flows(bigraph, [(route.src, route.dst)], routes, duration=4)
    assert flow["error"] is None
    assert flow["ratio"] >= 0.9, (flow, cpu)


def test_parallel_flows_get_link_rate(bigraph):
    routes = bigraph.routing.routes
    flows, cpu = run_flows(bigraph, spread_pairs(bigraph.topo, routes), routes, duration=4)
    assert len(flows) == 16
    assert min(f["ratio"] for f in flows) >= 0.85, (flows, cpu)


def test_forgetting_flows_empties_the_datapath_s_cache_and_keeps_the_routes(bigraph):
    """A sweep empties the cache between variants, so each starts as the first did (runs.sweep)."""
    def cached():
        return subprocess.run(["ovs-appctl", "dpctl/dump-flows"], capture_output=True, text=True).stdout.count("\n")
    reachability(bigraph)
    assert cached() > 0
    bigraph.forget_flows()
    assert cached() == 0
    answered, failures = reachability(bigraph)
    assert failures == [] and cached() > 0


def test_flows_sharing_a_switch_link_share_its_rate(bigraph):
    """h0 -> h8 and h1 -> h9 both cross U0 -> L0: the switch-to-switch link is shaped too
    (OVS deletes a port's qdisc when it adds the port, so shaping must come after)."""
    topo = bigraph.topo
    pairs = [(topo.hosts["h0"].ports[0], topo.hosts["h8"].ports[0]),
             (topo.hosts["h1"].ports[0], topo.hosts["h9"].ports[0])]
    routes = [bigraph.routing.routes[s.ip, d.ip] for s, d in pairs]
    assert routes[0].hops[0].switch == routes[1].hops[0].switch
    assert routes[0].hops[0].out_port == routes[1].hops[0].out_port
    flows, cpu = run_flows(bigraph, pairs, bigraph.routing.routes, duration=4)
    total = sum(f["received_mbit"] for f in flows)
    assert all(f["expected_mbit"] == topo.rate / 2 for f in flows)
    assert 0.85 * topo.rate <= total <= 1.02 * topo.rate, (flows, cpu)


def test_a_shared_switch_queue_fills_to_its_limit_and_drops_there(bigraph):
    """Two senders at the link rate into one switch port (h0 -> h8, h1 -> h9 over U0 -> L0) fill
    its FIFO to the configured limit, and the FIFO counts the drops. Before ovs-vswitchd's send
    buffer was sized for the queues, the backlog stopped near 12 jumbo frames and OVS dropped the
    rest where no counter saw it; on the kernel datapath, before the host links freed each frame as
    it left its host (emulation.txcompletion), the senders' socket buffers held it at 8 (lab VM)."""
    topo = bigraph.topo
    route = bigraph.routing.routes[topo.hosts["h0"].ports[0].ip, topo.hosts["h8"].ports[0].ip]
    shared = interface(route.hops[0].switch, route.hops[0].out_port)
    payload = bigraph.mtu - 28
    with QueueSampler([shared], interval=0.01) as queue:
        floods = [bigraph.spawn(["ping", "-q", "-i", "0.002", "-c", "1000", "-s", str(payload),
                                 topo.hosts[dst].ports[0].ip], src, stdout=subprocess.DEVNULL)
                  for src, dst in [("h0", "h8"), ("h1", "h9")]]
        for proc in floods:
            proc.wait(timeout=30)
    limit = topo.links[0].queue
    assert queue.max_qlen(shared) >= 0.9 * limit, queue.max_qlen(shared)
    assert queue.drops(shared) > 0


