"""HPN 7.0, scaled down: rail-optimised segments, dual-ToR (or the single-ToR baseline), one or two
planes, and optionally a core tier above the aggregation switches."""
import math

from testbed.errors import TestbedError
from testbed.topology.base import Topology, positive_int

# HPN 7.0's ToR: 60 x 400G up for 128 x 200G active ports down (SIGCOMM 2024, section 6).
HPN_UPLINK_CAPACITY = 60 * 400 / (128 * 200)


class HPN7(Topology):
    """HPN 7.0 scaled down: S segments of H servers, R rails (one accelerator and one dual-port NIC
    per rail per server), A aggregation switches per plane. NIC(server, rail) port p goes to
    ToR(segment, rail, p); both ports carry the NIC's one address and MAC (non-stacked dual-ToR).
    Every ToR has A uplinks, one to each aggregation switch of its plane. planes=2: plane p has A
    aggregation switches of its own and ToR(s, r, p) is in plane p (dual-plane); planes=1: one
    plane of A aggregation switches that every ToR links to, so both ToRs of a NIC reach the same
    aggregation switches (HPN's "typical Clos", the single-plane baseline): the same ToRs with the
    same uplinks, wired otherwise; each aggregation switch then has twice the ToR ports. tors=1:
    the single-ToR baseline, each NIC with one port on ToR(s, r, 0) (single plane). cores=C: C core
    switches, each linked to every aggregation switch, as HPN's Agg-Core layer; the shortest paths
    never use it, but a plane that loses a NIC reaches it through the core and the other plane.
    ToR-Agg links run at uplink_ratio times the NIC links' rate (see uplink_capacity). Each
    accelerator is one emulated host; its cross-rail traffic crosses the fabric (no NVLink here)."""
    shared_nic_address = True
    source_spec = None     # where the fabric was read from (a SimAI file), if not from its numbers

    def __init__(self, segments, servers, rails, aggs, planes=2, tors=2, cores=0, uplink_ratio=1.0, **kw):
        self.segments = positive_int("S (segments)", segments)
        self.servers = positive_int("H (servers per segment)", servers)
        self.rails = positive_int("R (rails)", rails)
        self.aggs = positive_int("A (aggregation switches per plane)", aggs)
        if planes not in (1, 2):
            raise TestbedError(f"planes must be 1 (single-plane baseline) or 2 (dual-plane), not {planes!r}")
        if tors not in (1, 2):
            raise TestbedError(f"tors must be 1 (single-ToR baseline) or 2 (dual-ToR), not {tors!r}")
        if tors == 1 and planes == 2:
            raise TestbedError("a single-ToR HPN7 has one plane: use hpn7:S,H,R,A,1,1")
        if not isinstance(cores, int) or cores < 0:
            raise TestbedError(f"cores must be 0 or more (got {cores!r})")
        self.planes, self.tors, self.cores, self.uplink_ratio = planes, tors, cores, uplink_ratio
        super().__init__(**kw)

    @property
    def name(self):
        extra = (", single ToR" if self.tors == 1 else "") + (f", cores={self.cores}" if self.cores else "")
        return (f"HPN7(S={self.segments}, H={self.servers}, R={self.rails}, A={self.aggs}, "
                f"planes={self.planes}{extra})")

    @property
    def spec(self):
        return self.source_spec or (f"hpn7:{self.segments},{self.servers},{self.rails},{self.aggs},{self.planes},"
                                    f"{self.tors},{self.cores}")

    def build(self):
        ports = range(self.tors)
        tors = {(s, r, p): self.add_switch(f"tor.s{s}.r{r}.p{p}", "tor", plane=p)
                for s in range(self.segments) for r in range(self.rails) for p in ports}
        aggs = {(p, a): self.add_switch(self.agg_label(p, a), "agg", plane=p if self.planes == 2 else None)
                for p in range(self.planes) for a in range(self.aggs)}
        cores = [self.add_switch(f"core{c}", "core") for c in range(self.cores)]
        for s in range(self.segments):
            for h in range(self.servers):
                for r in range(self.rails):
                    host = self.add_host(server=s * self.servers + h, rail=r)
                    for p in ports:
                        self.add_link(host, tors[s, r, p])
        for (_, _, p), tor in tors.items():
            for (q, _), agg in aggs.items():
                if self.planes == 1 or q == p:
                    self.add_link(tor, agg, rate=self.rate * self.uplink_ratio)
        for core in cores:
            for agg in aggs.values():
                self.add_link(agg, core, rate=self.rate * self.uplink_ratio)

    def agg_label(self, plane, agg):
        return f"agg.p{plane}.a{agg}" if self.planes == 2 else f"agg.a{agg}"

    @property
    def uplink_capacity(self):
        """A ToR's uplink capacity over its capacity towards the NICs (HPN 7.0: 0.9375)."""
        return self.uplink_ratio * self.aggs / self.servers

    def describe(self):
        if getattr(self, "origin", None):        # where a fabric read from a file came from (topology.simai)
            return f"{super().describe()}, {self.origin}"
        if self.uplink_ratio != 1:
            return (f"{super().describe()}, ToR uplinks at {self.rate * self.uplink_ratio:g} Mbit/s "
                    f"({self.uplink_capacity:.4g} of a ToR's NIC-facing capacity)")
        return super().describe()

    def segment_of(self, host):
        return host.server // self.servers

    def cross_segment_pairs(self, servers=None):
        """Each host of segments 0 and 1 (on the given servers of each, default all) to its
        counterpart (same server index and rail) on the other: a permutation whose every flow
        crosses the aggregation tier."""
        servers = range(self.servers) if servers is None else servers
        return [(self.host_at(s, h, r).ports[0], self.host_at(1 - s, h, r).ports[0])
                for s in (0, 1) for h in servers for r in range(self.rails)]

    def host_at(self, segment, server, rail):
        """The accelerator (host) of rail `rail` on server `server` of segment `segment`."""
        return self.hosts[f"h{(segment * self.servers + server) * self.rails + rail}"]


def uplink_ratio(capacity, servers, aggs):
    """The ToR-Agg link rate, over the NIC links' rate, that gives a ToR of `servers` NIC-facing
    ports and `aggs` uplinks an uplink capacity of `capacity` times its NIC-facing capacity."""
    if not (isinstance(capacity, (int, float)) and math.isfinite(capacity) and 0.1 <= capacity <= 4):
        raise TestbedError(f"--uplink-capacity must be between 0.1 and 4 (got {capacity!r}): "
                           f"HPN 7.0's ToR has {HPN_UPLINK_CAPACITY:g}")
    return capacity * servers / aggs


def plane_forms(base, capacity=HPN_UPLINK_CAPACITY, **kw):
    """[single plane, dual plane] of the HPN7 base: the same ToRs, uplinks per ToR and uplink rate
    (a ToR's uplinks carry `capacity` times its NIC-facing capacity); only the wiring differs."""
    ratio = uplink_ratio(capacity, base.servers, base.aggs)
    kw = {"rate": base.rate, "queue": base.queue, "delay": base.delay, "scaleup_domain": base.scaleup_domain, **kw}
    return [HPN7(base.segments, base.servers, base.rails, base.aggs, planes=p, tors=2, cores=base.cores,
                 uplink_ratio=ratio, **kw) for p in (1, 2)]
