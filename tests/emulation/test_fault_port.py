"""One port of a bonded NIC down, on a small HPN7 with a Ring running back to back: found as that
port's link down from the controller's port events, and the job goes on once it is back up."""
import pytest

import testbed
from testbed.api import Comm
from testbed.collectives.placements import place
from testbed.emulation import faults
from tests.emulation.test_faults import DURING, located


@pytest.fixture(scope="module")
def running(tmp_path_factory):
    topo = testbed.fabric("hpn7:1,2,2,1")      # 2 servers of 2 accelerators, a dual-port NIC each
    schedule, hosts = place("ring", topo)
    with (testbed.emulate(topo, "ecmp", folder=tmp_path_factory.mktemp("port")) as emu,
          emu.watch(Comm(schedule, tuple(hosts)), 256 << 10, stall_limit=15) as watch):
        yield emu, watch


def test_a_nic_port_down_is_found_as_its_link_down(running):
    emu, watch = running
    topo = emu.topo
    host = sorted(topo.hosts)[1]
    link = faults.port_link(topo, f"{host}:1")
    found = located(emu, watch, emu.fault(faults.Fault("port-down", f"{host}:1", lasting=DURING - 1), watch))
    switch = next(topo.switches[n].label for n in (link.a, link.b) if n in topo.switches)
    assert (found.kind, set(found.where.split("-"))) == ("link-down", {host, switch}), found
    assert watch.wrong() == 0
