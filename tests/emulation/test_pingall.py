"""Every NIC port reaches its peers on the Clos baseline and on HPN7 (both NIC ports, both planes)."""
import pytest

from testbed import routing
from testbed.emulation.network import Emulation
from testbed.fidelity.fabric_check import reachability
from testbed.topology import HPN7, LeafSpine


@pytest.mark.parametrize("topo", [LeafSpine(2, 2, 3), HPN7(2, 2, 2, 1)], ids=["leafspine", "hpn7"])
def test_pingall_clos_and_hpn7(topo, run_dir, clean_machine):
    with Emulation(topo, routing.plan(topo), run_dir, log=lambda m: None) as emu:
        answered, failures = reachability(emu)
    assert failures == []
    assert answered == sum(len(h.ports) for h in topo.hosts.values()) * (len(topo.hosts) - 1)
