"""EFLOPS' BiGraph: two layers of switches, every Upper switch linked to every Lower switch."""
from testbed.errors import TestbedError
from testbed.topology.base import Topology, positive_int


class BiGraph(Topology):
    """n switches in two layers of n/2; every Upper links to every Lower with c parallel links;
    m endpoints (one accelerator, one NIC each) per switch. Switch x is U<x> for x < n/2, else
    L<x - n/2>; host h<x*m + j> sits on port j+1 of switch x, and the m endpoints of a switch
    form one server."""

    def __init__(self, m, n, c=1, **kw):
        self.m, self.n, self.c = (positive_int("m (endpoints per switch)", m),
                                  positive_int("n (switches)", n), positive_int("c (parallel links)", c))
        if n % 2:
            raise TestbedError(f"BiGraph needs an even switch count n (got {n}): use n={n - 1 or 2} or n={n + 1}")
        super().__init__(**kw)

    @classmethod
    def eflops(cls, ranks, per_server=4, whole=False, **kw):
        """The BiGraph EFLOPS runs `ranks` accelerators on: its servers of `per_server` accelerators
        on one switch where the ranks fill two switches of them (a tensor-parallel group of up to
        `per_server` stays in its server), with c parallel links so that HDRM's m <= c*n/2 holds;
        below that one accelerator per switch, or with `whole` (a job whose tensor-parallel groups
        must stay in a server at every N) EFLOPS' servers still, one per switch, where the ranks
        fill two of them."""
        if ranks < (2 if whole else 4) * per_server:
            return cls(1, ranks, 1, **kw)
        n = ranks // per_server
        return cls(per_server, n, -(-2 * per_server // n), **kw)

    @property
    def name(self):
        return f"BiGraph(m={self.m}, n={self.n}, c={self.c})"

    @property
    def spec(self):
        return f"bigraph:{self.m},{self.n},{self.c}"

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

    def is_upper(self, host):
        return host.server < self.half

    def host_at(self, switch_index, port_j):
        return self.hosts[f"h{switch_index * self.m + port_j}"]
