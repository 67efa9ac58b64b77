"""Pinned CPU placement: ovs-vswitchd on the last core, the hosts' receive processing on the others,
and everything as it was after the run."""
import os
from pathlib import Path

import pytest

from testbed import routing
from testbed.emulation import cores, ovs
from testbed.emulation.network import Emulation
from testbed.fidelity.fabric_check import reachability
from testbed.topology import BiGraph


@pytest.mark.skipif(not cores.possible(), reason="pinning needs 2 cores")
def test_pinned_placement_pins_ovs_steers_the_hosts_and_puts_everything_back(run_dir, clean_machine):
    vswitchd = ovs.vswitchd_pid()
    before = {tid: os.sched_getaffinity(tid) for tid in cores.threads(vswitchd)}
    topo, mounts = BiGraph(1, 4), Path("/proc/self/mounts").read_text()
    with Emulation(topo, routing.plan(topo), run_dir, log=lambda m: None, cpu_placement="pinned") as emu:
        if emu.datapath != "user":
            pytest.skip("placement is for the userspace datapath")
        assert {tid: os.sched_getaffinity(tid) for tid in cores.threads(vswitchd)} == \
            dict.fromkeys(cores.threads(vswitchd), {cores.switch_core()})
        for host in topo.hosts.values():
            for nic in host.ports:
                seen = emu.host(host.name).cmd(cores.read_command(nic.intf)).strip()
                assert int(seen.replace(",", ""), 16) == int(cores.host_mask(), 16), (host.name, seen)
        # the private sysfs mounts left the root namespace's /sys as it was
        assert Path("/proc/self/mounts").read_text() == mounts
        assert Path(f"/sys/class/net/{topo.switch_ports()[0][0]}").exists()
        answered, failures = reachability(emu)
        assert failures == [] and answered
    # every thread that was there before and still is has its affinity back (ovs-vswitchd ends and
    # starts some of its threads as it runs: one that ended is not compared)
    still = [tid for tid in before if tid in cores.threads(vswitchd)]
    assert still and {tid: os.sched_getaffinity(tid) for tid in still} == {tid: before[tid] for tid in still}
