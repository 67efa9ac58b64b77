"""The fabrics of DESIGN.md: EFLOPS' BiGraph, a leaf-spine Clos baseline, HPN 7.0 (scaled down)."""
from testbed.errors import TestbedError
from testbed.topology import Topology, positive_int


class BiGraph(Topology):
    """n switches in two layers of n/2; every Upper links to every Lower with c parallel links;
    m endpoints (one accelerator, one NIC each) per switch. Switch x is U<x> for x < n/2, else
    L<x - n/2>; host h<x*m + j> sits on port j+1 of switch x, and the m endpoints of a switch
    form one server."""

    def __init__(self, m, n, c=1, **kw):
        self.m, self.n, self.c = (positive_int("m (endpoints per switch)", m),
                                  positive_int("n (switches)", n), positive_int("c (parallel links)", c))
        if n % 2:
            raise TestbedError(f"BiGraph needs an even switch count n (got {n}): use n={n - 1} or n={n + 1}")
        super().__init__(**kw)

    @property
    def name(self):
        return f"BiGraph(m={self.m}, n={self.n}, c={self.c})"

    @property
    def half(self):
        return self.n // 2

    def build(self):
        k = self.half
        switches = [self.add_switch(f"U{x}" if x < k else f"L{x - k}", "upper" if x < k else "lower")
                    for x in range(self.n)]
        for x, switch in enumerate(switches):
            for _ in range(self.m):
                self.add_link(self.add_host(server=x), switch)
        for upper in switches[:k]:
            for lower in switches[k:]:
                for _ in range(self.c):
                    self.add_link(upper, lower)

    def pick_route(self, src_host, dst_host, count):
        """Between layers the c routes are the parallel links: take number (j // (n/2)) mod c, j the
        upper endpoint's port on its switch. HDRM's pairs that share a switch pair in one step differ
        exactly there, so each gets its own link (any m <= c*n/2)."""
        upper = [h for h in (src_host, dst_host) if h.server < self.half]
        if len(upper) == 1 and count == self.c:
            return (upper[0].index % self.m) // self.half % self.c
        return super().pick_route(src_host, dst_host, count)

    def host_at(self, switch_index, port_j):
        return self.hosts[f"h{switch_index * self.m + port_j}"]


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

    def build(self):
        leaves = [self.add_switch(f"leaf{i}", "leaf") for i in range(self.leaves)]
        spines = [self.add_switch(f"spine{i}", "spine") for i in range(self.spines)]
        for i, leaf in enumerate(leaves):
            for _ in range(self.hosts_per_leaf):
                self.add_link(self.add_host(server=i), leaf)
        for leaf in leaves:
            for spine in spines:
                self.add_link(leaf, spine)


class HPN7(Topology):
    """HPN 7.0 scaled down: S segments of H servers, R rails (one accelerator and one dual-port NIC
    per rail per server), A aggregation switches per plane. NIC(server, rail) port p goes to
    ToR(segment, rail, p). planes=2: ToR(s, r, p) links to every Agg of plane p (dual-plane);
    planes=1: every ToR links to every Agg (the single-plane baseline). Each accelerator is one
    emulated host; its cross-rail traffic crosses the fabric (no NVLink here)."""

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
        for (s, r, p), tor in tors.items():
            for (q, a), agg in aggs.items():
                if self.planes == 1 or q == p:
                    self.add_link(tor, agg)

    def segment_of(self, host):
        return host.server // self.servers


KINDS = {"bigraph": (BiGraph, "m,n[,c]"), "leafspine": (LeafSpine, "leaves,spines,hosts_per_leaf"),
         "hpn7": (HPN7, "S,H,R,A[,planes]")}


def from_spec(spec, **kw):
    """'bigraph:2,8' -> BiGraph(2, 8, **kw); see KINDS for each kind's numbers."""
    kind, _, numbers = spec.partition(":")
    if kind not in KINDS:
        raise TestbedError(f"unknown topology {kind!r}: use one of " +
                           ", ".join(f"{k}:{form}" for k, (_, form) in KINDS.items()))
    cls, form = KINDS[kind]
    try:
        args = [int(x) for x in numbers.split(",")] if numbers else []
        return cls(*args, **kw)
    except (ValueError, TypeError):
        raise TestbedError(f"topology {spec!r} should read {kind}:{form} with whole numbers") from None
