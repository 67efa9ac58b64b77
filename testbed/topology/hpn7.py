"""HPN 7.0, scaled down: rail-optimised segments, dual-ToR, one or two planes."""
from testbed.errors import TestbedError
from testbed.topology.model import Topology, positive_int


class HPN7(Topology):
    """HPN 7.0 scaled down: S segments of H servers, R rails (one accelerator and one dual-port NIC
    per rail per server), A aggregation switches per plane. NIC(server, rail) port p goes to
    ToR(segment, rail, p); both ports carry the NIC's one address and MAC (non-stacked dual-ToR).
    planes=2: ToR(s, r, p) links to every Agg of plane p (dual-plane); planes=1: every ToR links to
    every Agg (the single-plane baseline). Each accelerator is one emulated host; its cross-rail
    traffic crosses the fabric (no NVLink here)."""
    shared_nic_address = True

    def __init__(self, segments, servers, rails, aggs, planes=2, **kw):
        self.segments = positive_int("S (segments)", segments)
        self.servers = positive_int("H (servers per segment)", servers)
        self.rails = positive_int("R (rails)", rails)
        self.aggs = positive_int("A (aggregation switches per plane)", aggs)
        if planes not in (1, 2):
            raise TestbedError(f"planes must be 1 (single-plane baseline) or 2 (dual-plane), not {planes!r}")
        self.planes = planes
        super().__init__(**kw)

    @property
    def name(self):
        return (f"HPN7(S={self.segments}, H={self.servers}, R={self.rails}, A={self.aggs}, "
                f"planes={self.planes})")

    @property
    def spec(self):
        return f"hpn7:{self.segments},{self.servers},{self.rails},{self.aggs},{self.planes}"

    def build(self):
        tors = {(s, r, p): self.add_switch(f"tor.s{s}.r{r}.p{p}", "tor", plane=p)
                for s in range(self.segments) for r in range(self.rails) for p in (0, 1)}
        aggs = {(p, a): self.add_switch(f"agg.p{p}.a{a}", "agg", plane=p if self.planes == 2 else None)
                for p in (0, 1) for a in range(self.aggs)}
        for s in range(self.segments):
            for h in range(self.servers):
                for r in range(self.rails):
                    host = self.add_host(server=s * self.servers + h, rail=r)
                    for p in (0, 1):
                        self.add_link(host, tors[s, r, p])
        for (_, _, p), tor in tors.items():
            for (q, _), agg in aggs.items():
                if self.planes == 1 or q == p:
                    self.add_link(tor, agg)

    def segment_of(self, host):
        return host.server // self.servers
