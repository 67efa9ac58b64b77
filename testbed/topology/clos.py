"""The baseline: a two-tier leaf-spine Clos."""
from testbed.topology.base import Topology, positive_int


class LeafSpine(Topology):
    """Two-tier Clos: every leaf links to every spine; hosts_per_leaf single-NIC hosts per leaf."""

    def __init__(self, leaves, spines, hosts_per_leaf, **kw):
        self.leaves = positive_int("leaves", leaves)
        self.spines = positive_int("spines", spines)
        self.hosts_per_leaf = positive_int("hosts_per_leaf", hosts_per_leaf)
        super().__init__(**kw)

    @property
    def name(self):
        return f"LeafSpine(leaves={self.leaves}, spines={self.spines}, hosts_per_leaf={self.hosts_per_leaf})"

    @property
    def spec(self):
        return f"leafspine:{self.leaves},{self.spines},{self.hosts_per_leaf}"

    def build(self):
        leaves = [self.add_switch(f"leaf{i}", "leaf") for i in range(self.leaves)]
        spines = [self.add_switch(f"spine{i}", "spine") for i in range(self.spines)]
        for i, leaf in enumerate(leaves):
            for _ in range(self.hosts_per_leaf):
                self.add_link(self.add_host(server=i), leaf)
        for leaf in leaves:
            for spine in spines:
                self.add_link(leaf, spine)
