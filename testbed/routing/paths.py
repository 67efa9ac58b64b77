"""Equal-cost shortest paths between NIC ports, in a fixed order: the raw material of routing."""
from collections import deque
from dataclasses import dataclass
from functools import lru_cache


@dataclass(frozen=True)
class Hop:
    switch: str
    in_port: int
    out_port: int


@dataclass(frozen=True)
class Route:
    src: object          # NicPort
    dst: object          # NicPort
    hops: tuple

    @property
    def switches(self):
        return [h.switch for h in self.hops]

    def directed_links(self):
        """Every link the route crosses, named by its sending end: (node, port)."""
        return [(self.src.host, self.src.port)] + [(h.switch, h.out_port) for h in self.hops]

    def to_dict(self):
        return {"src": self.src.ip, "dst": self.dst.ip, "hops": [[h.switch, h.in_port, h.out_port] for h in self.hops]}


class PathFinder:
    """All shortest switch-to-switch paths, each a tuple of (switch, out port, next switch, in port),
    ordered by the OpenFlow ports taken at each switch."""

    def __init__(self, topo):
        self.topo = topo
        self.adjacency = topo.switch_adjacency()
        self._dist = {}
        self.paths = lru_cache(maxsize=None)(self._paths)

    def distances_to(self, *targets):
        """{switch: hops to the nearest of targets} by breadth-first search."""
        key = frozenset(targets)
        if key not in self._dist:
            dist, queue = dict.fromkeys(key, 0), deque(sorted(key))
            while queue:
                node = queue.popleft()
                for _, neighbour, _ in self.adjacency[node]:
                    if neighbour not in dist:
                        dist[neighbour] = dist[node] + 1
                        queue.append(neighbour)
            self._dist[key] = dist
        return self._dist[key]

    def next_hops_towards(self, switch, targets):
        """The ports of switch that lie on a shortest path to the nearest of targets (none if it
        cannot reach them)."""
        dist = self.distances_to(*targets)
        if switch not in dist:
            return []
        return [port for port, neighbour, _ in self.adjacency[switch] if dist.get(neighbour) == dist[switch] - 1]

    def _paths(self, src, dst):
        if src == dst:
            return ((),)
        dist = self.distances_to(dst)
        if src not in dist:
            return ()
        found = []
        for out_port, neighbour, in_port in self.adjacency[src]:
            if dist.get(neighbour) == dist[src] - 1:
                found.extend(((src, out_port, neighbour, in_port),) + rest
                             for rest in self.paths(neighbour, dst))
        return tuple(found)

    def routes(self, src, dst):
        """Every equal-cost route from NIC port src to NIC port dst, in the documented order (none
        if either port's link is gone)."""
        a, b = self.topo.attachment(src), self.topo.attachment(dst)
        if a is None or b is None:
            return []
        routes = [Route(src, dst, _hops(a, b, links)) for links in self.paths(a[0], b[0])]
        return [r for r in routes if all(self._may(h.switch, dst, h.out_port) for h in r.hops)]

    def _may(self, switch, dst, port):
        allowed = self.topo.transit(switch, dst)
        return allowed is None or port in allowed


def _hops(src_attach, dst_attach, links):
    hops, (switch, in_port) = [], src_attach
    for here, out_port, there, there_in in links:
        hops.append(Hop(here, in_port, out_port))
        switch, in_port = there, there_in
    hops.append(Hop(switch, in_port, dst_attach[1]))
    return tuple(hops)
