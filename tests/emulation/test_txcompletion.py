"""The kernel datapath's transmit completion (see testbed.emulation.txcompletion). Whether it frees
the sender's frames shows on the kernel datapath, in test_fabric's shared-queue test (lab VM); here:
the program loads and attaches in driver mode to a jumbo-MTU veth, the kind a host link has."""
from testbed.emulation import shaping, txcompletion

XDP_DRIVER_MODE = "xdp"      # pyroute2's name for XDP_ATTACHED_DRV ("xdpgeneric" is the generic mode)


def test_the_pass_program_attaches_to_a_jumbo_veth_in_driver_mode():
    with shaping.netlink() as ipr:
        ipr.link("add", ifname="tbxdp-a", kind="veth", peer="tbxdp-b")
        try:
            for name in ("tbxdp-a", "tbxdp-b"):
                ipr.link("set", index=shaping.index_of(ipr, name), mtu=9000, state="up")
            txcompletion.free_on_send(["tbxdp-b"])
            (link,) = ipr.get_links(shaping.index_of(ipr, "tbxdp-b"))
            assert link.get_attr("IFLA_XDP").get_attr("IFLA_XDP_ATTACHED") == XDP_DRIVER_MODE
        finally:
            ipr.link("del", index=shaping.index_of(ipr, "tbxdp-a"))
