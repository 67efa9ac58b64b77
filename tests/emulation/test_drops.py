"""Random loss without netem (emulation.drops): an nftables rule on a switch port's egress drops
about its share of what the switch forwards, on the wire (the senders retransmit), and nothing of
it stays after the rule is lifted or the run ends."""
import subprocess
import sys
from pathlib import Path

import pytest

import testbed
from testbed.api import Comm
from testbed.collectives.placements import place
from testbed.emulation import drops, faults
from testbed.probes.flows import measure_flows
from testbed.routing.hashing import Draw
from testbed.topology import LeafSpine, interface
from tests.emulation.machine import leftovers

PROJECT = Path(__file__).resolve().parents[2]

SHARE = 0.05

# the slow set (./setup.sh test -m slow): lossy links and the monitor's retransmission rule, 30 s
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not drops.available(), reason="needs nft and the kernel's netdev egress hook")]


def tx_packets(ifname):
    with open(f"/sys/class/net/{ifname}/statistics/tx_packets") as f:
        return int(f.read())


def test_a_lossy_fabric_link_drops_its_share_on_the_wire_and_leaves_nothing(tmp_path):
    topo = LeafSpine(2, 2, 2)      # h0 h1 on leaf0, h2 h3 on leaf1: every flow between leaves crosses an uplink
    with testbed.emulate(topo, "ecmp", folder=tmp_path) as emu:
        uplinks = [faults.find_link(topo, f"leaf0-spine{k}") for k in (0, 1)]
        ports = [interface(node, port) for link in uplinks for node, port in link.ends()]
        before = {name: tx_packets(name) for name in ports}
        for link in uplinks:
            emu.emulation.set_link_loss(link, SHARE)
        flows, _ = measure_flows(emu.emulation, [(topo.hosts["h0"].ports[0], topo.hosts["h2"].ports[0]),
                                              (topo.hosts["h3"].ports[0], topo.hosts["h1"].ports[0])], 3, omit=0)
        lost = sum(drops.dropped(None, name) for name in ports)
        sent = sum(tx_packets(name) - before[name] for name in ports)
        assert sent > 1000, flows
        print(f"dropped {lost} of {lost + sent} packets: {lost / (lost + sent):.4f} (rule {SHARE}); retransmits "
              f"{[f['retransmits'] for f in flows]}")
        assert 0.5 * SHARE <= lost / (lost + sent) <= 2 * SHARE, (lost, sent)
        assert all(f["retransmits"] > 0 for f in flows), flows      # lost on the wire, not refused at a socket
        for link in uplinks:
            emu.emulation.set_link_loss(link, 0.0)
        assert all(drops.dropped(None, name) == 0 for name in ports)
    assert leftovers() == []


def test_the_monitor_finds_a_lossy_link_from_the_ranks_retransmissions(tmp_path):
    """A ring over both of leaf0's uplinks made lossy: no queue grows, the ranks' TCP retransmits,
    and the monitor (told nothing) names a lossy link, or links its paths cannot tell from one,
    within the loss's 4 s. Judged alarm by alarm, as faultbench scores: in 5 of 36 runs on
    2026-12-04 (1 of 11 with the code of 97ee66b, 4 of 25 with this) its first window read the
    retransmission timeouts' stalls as a slow rank and the lossy link came a window or two later,
    so the test asks for a right alarm with at most two wrong ones before it, not for the first
    alarm to be right."""
    topo = LeafSpine(2, 2, 2)
    schedule, hosts = place("ring", topo)
    with (testbed.emulate(topo, "ecmp", folder=tmp_path) as emu,
          emu.watch(Comm(schedule, tuple(hosts)), 256 << 10, draw=Draw(7)) as watch):
        uplinks = [faults.find_link(topo, f"leaf0-spine{k}") for k in (0, 1)]
        monitor = watch.monitor
        watch.wait(watch.started + monitor.cadence * (monitor.healthy.maxlen + 2))
        inject = watch.now()
        for link in uplinks:
            emu.emulation.set_link_loss(link, SHARE)
        watch.wait(inject + 4)
        for link in uplinks:
            emu.emulation.set_link_loss(link, 0.0)
        monitor.poll(watch.now())
        assert monitor.between(watch.started, inject) == [] and watch.wrong() == 0
        raised = [a.finding for a in monitor.between(inject, watch.now()) if a.new]

    def lossy(found):
        named = [found.where] + found.evidence.partition("cannot tell it from ")[2].split(", ")
        return found.kind == "link-slow" and "retransmitted" in found.evidence and \
            bool({"leaf0-spine0", "leaf0-spine1"} & set(named))
    right = next((k for k, found in enumerate(raised) if lossy(found)), None)
    assert right is not None and right <= 2, raised
    assert leftovers() == []


KILLED = """
import os, signal, sys
import testbed
from testbed.emulation import faults
from testbed.topology import LeafSpine
topo = LeafSpine(2, 2, 2)
with testbed.emulate(topo, "ecmp", folder=sys.argv[1]) as emu:
    emu.emulation.set_link_loss(faults.find_link(topo, "leaf0-spine0"), 0.02)
    print("lossy", flush=True)
    os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_killed_run_s_loss_rules_go_with_its_cleanup(tmp_path):
    done = subprocess.run([sys.executable, "-c", KILLED, str(tmp_path)], cwd=PROJECT, capture_output=True, text=True,
                          timeout=120)
    assert "lossy" in done.stdout, done.stderr
    assert drops.TABLE in subprocess.run(["nft", "list", "tables"], capture_output=True, text=True).stdout
    cleanup = subprocess.run([sys.executable, "run_scenario.py", "--cleanup"], cwd=PROJECT, capture_output=True,
                             text=True, timeout=120)
    assert cleanup.returncode == 0, cleanup.stdout + cleanup.stderr
    assert leftovers() == []
