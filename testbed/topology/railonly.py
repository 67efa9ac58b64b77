"""Rail-only (Wang et al., HotI 2024): a rail switch per accelerator position and no spine; traffic
between rails crosses the server's own scale-up domain instead of the network.

An accelerator (a host) hangs off its server's scale-up bridge (``su<s>``, its links at `scaleup`
times the NIC rate, as NVLink outruns a NIC), and the bridge holds the server's NICs: the link from
``su<s>`` to ``rail<r>`` is accelerator r's NIC, at the fabric's rate. A message to a peer on the same
rail leaves by the sender's own NIC; one to a peer on another rail r' first crosses the scale-up
domain to the sender's accelerator on rail r', then leaves by that one's NIC (NCCL's PXN does this
on rail-optimised fabrics too), so it meets the network only on rail r'. ``Topology.transit`` gives
routing that rule (for any fabric whose switches have these roles, a fabric file's too); without it
every rail would be an equal-cost way between two servers.
"""
from testbed.errors import TestbedError
from testbed.topology.base import Topology, positive_int

SCALEUP = 4.0        # a scale-up link's rate over a NIC's, by default


class RailOnly(Topology):
    """`servers` servers of `rails` accelerators (one NIC each); one switch per rail; host
    h<s * rails + r> is server s's accelerator on rail r."""

    def __init__(self, servers, rails, scaleup=SCALEUP, **kw):
        self.servers = positive_int("H (servers)", servers)
        self.rails = positive_int("R (rails)", rails)
        if not (isinstance(scaleup, (int, float)) and 1 <= scaleup <= 64):
            raise TestbedError(f"the scale-up links' rate over a NIC's must be between 1 and 64 (got {scaleup!r})")
        self.scaleup = float(scaleup)
        super().__init__(**kw)

    @property
    def name(self):
        return f"RailOnly(H={self.servers}, R={self.rails}, scale-up x{self.scaleup:g})"

    @property
    def spec(self):
        return f"railonly:{self.servers},{self.rails},{self.scaleup:g}"

    def build(self):
        rails = [self.add_switch(f"rail{r}", "rail", plane=r) for r in range(self.rails)]
        for s in range(self.servers):
            bridge = self.add_switch(f"su{s}", "scaleup")
            for r in range(self.rails):
                self.add_link(self.add_host(server=s, rail=r), bridge, rate=self.rate * self.scaleup)
            for r in range(self.rails):
                self.add_link(bridge, rails[r])          # accelerator r's NIC

    def host_at(self, server, rail):
        return self.hosts[f"h{server * self.rails + rail}"]

    def describe(self):
        return (f"{super().describe()} (NICs at {self.rate:g} Mbit/s, scale-up links at "
                f"{self.rate * self.scaleup:g} Mbit/s)")
