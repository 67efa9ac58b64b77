"""Every NIC reaches its peers on the Clos baseline and on HPN7 (one address per dual-port NIC)."""
import pytest

from testbed import routing
from testbed.emulation.network import Emulation
from testbed.fidelity.fabric_check import reachability
from testbed.topology import HPN7, LeafSpine


@pytest.mark.parametrize("topo", [LeafSpine(2, 2, 3), HPN7(2, 2, 2, 1), HPN7(2, 2, 2, 1, planes=1)],
                         ids=["leafspine", "hpn7", "hpn7-single-plane"])
def test_pingall_clos_and_hpn7(topo, run_dir, clean_machine):
    with Emulation(topo, routing.plan(topo), run_dir, log=lambda m: None) as emu:
        answered, failures = reachability(emu)
    assert failures == []
    assert answered == len(topo.addresses()) * (len(topo.hosts) - 1)   # HPN7: one address per bonded NIC
