"""HPN7's bonded dual-port NIC on real packets: one address on both ports, flows spread over both by
the host's layer-3+4 hash, a flow kept on its port, a port whose link is down carrying none while
the controller routes around it."""
import time

import pytest

from testbed import routing
from testbed.emulation.network import Emulation
from testbed.fidelity.fabric_check import run_flows
from testbed.topology import HPN7


@pytest.fixture(scope="module")
def fabric(tmp_path_factory):
    # Two NICs, each under the same two ToRs; single-plane, so that the ToR that loses a NIC can still
    # reach it through the aggregation tier and the other ToR.
    topo = HPN7(segments=1, servers=2, rails=1, aggs=1, planes=1)
    folder = tmp_path_factory.mktemp("hpn7")
    with Emulation(topo, routing.plan(topo, "ecmp"), folder, log=lambda m: None) as emu:
        emu.folder = folder
        yield emu


def sent_per_port(emu, host, flows):
    """Bytes each NIC port of host sent while flows() ran, counted from the moment the ports are idle
    (a previous test's queues may still be draining)."""
    before = None
    for _ in range(50):
        now = [emu.counters(nic)["tx_bytes"] for nic in host.ports]
        if now == before:
            break
        before = now
        time.sleep(0.2)
    result = flows()
    return [emu.counters(nic)["tx_bytes"] - b for nic, b in zip(host.ports, before)], result


def test_one_address_answers_on_both_ports_and_flows_use_both(fabric):
    h0, h1 = fabric.topo.hosts["h0"], fabric.topo.hosts["h1"]
    sent, (flows, cpu) = sent_per_port(fabric, h0, lambda: run_flows(
        fabric, [(h0.ports[0], h1.ports[0])], None, duration=3, streams=16))
    assert flows[0]["error"] is None, flows
    # 16 connections hashed at random land all on one port once in 2**15 runs (8 did once in 128: a
    # CI run failed so); one connection of 16 on a port carries about 1/16 of the bytes
    assert min(sent) > 0.03 * sum(sent), sent
    assert flows[0]["received_mbit"] > 1.2 * fabric.topo.rate, (flows, cpu)   # more than one port's rate


def test_a_flow_keeps_its_port(fabric):
    h0, h1 = fabric.topo.hosts["h0"], fabric.topo.hosts["h1"]
    sent, (flows, _) = sent_per_port(fabric, h0, lambda: run_flows(
        fabric, [(h0.ports[0], h1.ports[0])], None, duration=2, streams=1))
    assert flows[0]["error"] is None
    assert max(sent) > 0.99 * sum(sent), sent


def test_a_port_whose_link_is_down_carries_nothing_and_the_nic_keeps_working(fabric):
    topo = fabric.topo
    h0, h1 = topo.hosts["h0"], topo.hosts["h1"]
    link = next(link for link in topo.links if (link.a, link.a_port) == ("h0", 0))
    fabric.set_link(link, up=False)
    try:
        sent, (flows, _) = sent_per_port(fabric, h0, lambda: run_flows(
            fabric, [(h0.ports[0], h1.ports[0])], None, duration=2, streams=8))
    finally:
        fabric.set_link(link, up=True)
    log = (fabric.folder / "controller.log").read_text()
    assert flows[0]["error"] is None and flows[0]["ratio"] >= 0.85, (flows, log)
    assert sent[0] == 0 and sent[1] > 0, sent

