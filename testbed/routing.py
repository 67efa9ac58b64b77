"""Routes as data: for every source and destination NIC port, the hops through the switches.

A host sends port-p traffic only to port-p addresses (one subnet per port index), so routes exist
for every ordered pair of NIC ports with the same index on different hosts.

``deterministic``: the equal-cost shortest paths (counted link by link, so parallel links are
distinct paths) are ordered by the OpenFlow port numbers taken at each switch, and the topology's
``pick_route`` says which one a flow takes: by default path number (a.index + b.index) mod (number
of paths) for a flow from host a to host b. On BiGraph (c = 1) that is the unique switch path
between opposite layers, and for two hosts of one layer the relay switch (a.index + b.index)
mod (n/2); BiGraph chooses among parallel links as its ``pick_route`` explains.

``ecmp``: every switch forwards by destination over all its equal-cost next hops (parallel links
counted separately), as an OpenFlow select group. Open vSwitch picks the bucket by a hash of the
5-tuple (its default select method: dp_hash, symmetric L4, basis 0), the same function on every
switch, as in real switches. Which link a flow takes is therefore known only once it runs; the
collision probe measures it.
"""
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


def _distances_to(adjacency, target):
    dist, queue = {target: 0}, deque([target])
    while queue:
        node = queue.popleft()
        for _, neighbour, _ in adjacency[node]:
            if neighbour not in dist:
                dist[neighbour] = dist[node] + 1
                queue.append(neighbour)
    return dist


class PathFinder:
    """All shortest switch-to-switch paths, each a tuple of (switch, out port, next switch, in port)."""

    def __init__(self, topo):
        self.adjacency = topo.switch_adjacency()
        self._dist = {}
        self.paths = lru_cache(maxsize=None)(self._paths)

    def distances_to(self, target):
        if target not in self._dist:
            self._dist[target] = _distances_to(self.adjacency, target)
        return self._dist[target]

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


def _hops(src_attach, dst_attach, links):
    hops, (switch, in_port) = [], src_attach
    for here, out_port, there, there_in in links:
        hops.append(Hop(here, in_port, out_port))
        switch, in_port = there, there_in
    hops.append(Hop(switch, in_port, dst_attach[1]))
    return tuple(hops)


def candidate_routes(topo, finder, src, dst):
    """Every equal-cost route from NIC port src to NIC port dst, in the documented order."""
    a, b = topo.attachment(src), topo.attachment(dst)
    return [Route(src, dst, _hops(a, b, links)) for links in finder.paths(a[0], b[0])]


def deterministic_routes(topo):
    """{(src ip, dst ip): Route} with the tie-break rule of the module docstring."""
    finder, routes = PathFinder(topo), {}
    for src in topo.nic_ports():
        for dst in topo.nic_ports():
            if src.host == dst.host or src.port != dst.port:
                continue
            options = candidate_routes(topo, finder, src, dst)
            if options:
                choice = topo.pick_route(topo.hosts[src.host], topo.hosts[dst.host], len(options))
                routes[src.ip, dst.ip] = options[choice]
    return routes


ROUTING_MODES = ("deterministic", "ecmp")


def flow_rules(topo, routes):
    """What the controller installs for `deterministic` routes:
    {dpid: [[src ip, dst ip, [out port]], ...]}."""
    rules = {s.dpid: [] for s in topo.switches.values()}
    for (src_ip, dst_ip), route in sorted(routes.items()):
        for hop in route.hops:
            rules[topo.switches[hop.switch].dpid].append([src_ip, dst_ip, [hop.out_port]])
    return rules


def ecmp_rules(topo):
    """What the controller installs for `ecmp`: {dpid: [[None, dst ip, [out ports]], ...]}, one
    rule per destination NIC port on every switch that reaches it, listing every equal-cost next
    hop (two or more become a select group)."""
    finder, adjacency = PathFinder(topo), topo.switch_adjacency()
    rules = {s.dpid: [] for s in topo.switches.values()}
    for dst in topo.nic_ports():
        home, home_port = topo.attachment(dst)
        dist = finder.distances_to(home)
        for name, switch in topo.switches.items():
            if name == home:
                ports = [home_port]
            elif name in dist:
                ports = [port for port, neighbour, _ in adjacency[name] if dist.get(neighbour) == dist[name] - 1]
            else:
                continue
            rules[switch.dpid].append([None, dst.ip, ports])
    return rules


def rules_for(topo, mode):
    """The controller's rules for a routing mode, and the routes a flow takes where they are known
    in advance (None for ecmp)."""
    if mode == "deterministic":
        routes = deterministic_routes(topo)
        return flow_rules(topo, routes), routes
    if mode == "ecmp":
        return ecmp_rules(topo), None
    raise ValueError(f"routing mode {mode!r}: use one of {', '.join(ROUTING_MODES)}")


def link_load(routes, pairs):
    """{directed link: number of flows} when each (src ip, dst ip) in pairs sends at once."""
    load = {}
    for pair in pairs:
        for link in routes[pair].directed_links():
            load[link] = load.get(link, 0) + 1
    return load
