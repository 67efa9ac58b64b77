"""The baseline: a two-tier leaf-spine Clos."""
from testbed.errors import TestbedError
from testbed.topology.base import Topology, positive_int


class LeafSpine(Topology):
    """Two-tier Clos: every leaf links to every spine, at uplink_ratio times the hosts' link rate;
    hosts_per_leaf single-NIC hosts per leaf."""

    def __init__(self, leaves, spines, hosts_per_leaf, uplink_ratio=1.0, **kw):
        self.leaves = positive_int("leaves", leaves)
        self.spines = positive_int("spines", spines)
        self.hosts_per_leaf = positive_int("hosts_per_leaf", hosts_per_leaf)
        if not (isinstance(uplink_ratio, (int, float)) and 0.1 <= uplink_ratio <= 16):
            raise TestbedError(f"a leaf's uplinks run at 0.1 to 16 times a host link's rate (got {uplink_ratio!r})")
        self.uplink_ratio = float(uplink_ratio)
        super().__init__(**kw)

    @property
    def name(self):
        ratio = f", uplinks x{self.uplink_ratio:g}" if self.uplink_ratio != 1 else ""
        return f"LeafSpine(leaves={self.leaves}, spines={self.spines}, hosts_per_leaf={self.hosts_per_leaf}{ratio})"

    @property
    def spec(self):
        ratio = f",{self.uplink_ratio:g}" if self.uplink_ratio != 1 else ""
        return f"leafspine:{self.leaves},{self.spines},{self.hosts_per_leaf}{ratio}"

    def build(self):
        leaves = [self.add_switch(f"leaf{i}", "leaf") for i in range(self.leaves)]
        spines = [self.add_switch(f"spine{i}", "spine") for i in range(self.spines)]
        for i, leaf in enumerate(leaves):
            for _ in range(self.hosts_per_leaf):
                self.add_link(self.add_host(server=i), leaf)
        for leaf in leaves:
            for spine in spines:
                self.add_link(leaf, spine, rate=self.rate * self.uplink_ratio)
