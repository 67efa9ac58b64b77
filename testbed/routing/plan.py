"""The routing plan: what the controller installs on each switch, and the routes flows take where
they are known in advance.

A host sends port-p traffic only to port-p addresses (one subnet per port index), so routes exist
for every ordered pair of NIC ports with the same index on different hosts.

``deterministic``: every flow takes one of its equal-cost shortest paths (counted link by link, so
parallel links are distinct paths, and ordered by the OpenFlow ports taken at each switch), chosen
by ``choose``: path number (a.index + b.index) mod (number of paths) for a flow from host a to
host b. On BiGraph (c = 1) that is the unique switch path between opposite layers, and for two hosts
of one layer the relay switch (a.index + b.index) mod (n/2); between layers with c parallel links
BiGraph takes link number (j // (n/2)) mod c, j the upper endpoint's port on its switch: HDRM's
pairs that share a switch pair in one step differ exactly there, so each gets its own link (any
m <= c*n/2).

``ecmp``: every switch forwards by destination over all its equal-cost next hops (parallel links
counted separately), as an OpenFlow select group. Open vSwitch picks the bucket by a hash of the
5-tuple (its default select method: dp_hash, symmetric L4, basis 0), the same function on every
switch, as in real switches. Which link a flow takes is known only once it runs; the collision
probe measures it.
"""
from dataclasses import dataclass

from testbed.errors import TestbedError
from testbed.routing.paths import PathFinder
from testbed.topology import BiGraph

MODES = ("deterministic", "ecmp")


@dataclass
class RoutingPlan:
    """rules: {dpid: [[src ip or None, dst ip, [out ports]]]} for the controller (two or more out
    ports are a select group); routes: {(src ip, dst ip): Route}, or None where hashing decides."""
    mode: str
    rules: dict
    routes: dict | None

    @property
    def rule_count(self):
        return sum(len(r) for r in self.rules.values())

    def to_dict(self):
        return {"mode": self.mode, "rules": {str(dpid): rules for dpid, rules in self.rules.items()},
                "routes": None if self.routes is None else [r.to_dict() for _, r in sorted(self.routes.items())]}


def choose(topo, src_host, dst_host, count):
    """Which of `count` equal-cost routes (in PathFinder's order) a flow takes: the module docstring."""
    if isinstance(topo, BiGraph):
        upper = [h for h in (src_host, dst_host) if topo.is_upper(h)]
        if len(upper) == 1 and count == topo.c:
            return (upper[0].index % topo.m) // topo.half % topo.c
    return (src_host.index + dst_host.index) % count


def deterministic_routes(topo):
    """{(src ip, dst ip): Route} with the tie-break rule of the module docstring."""
    finder, routes = PathFinder(topo), {}
    for src in topo.nic_ports():
        for dst in topo.nic_ports():
            if src.host == dst.host or src.port != dst.port:
                continue
            options = finder.routes(src, dst)
            if options:
                routes[src.ip, dst.ip] = options[choose(topo, topo.hosts[src.host], topo.hosts[dst.host],
                                                        len(options))]
    return routes


def route_rules(topo, routes):
    """One rule per (source, destination) on every switch of its route."""
    rules = {s.dpid: [] for s in topo.switches.values()}
    for (src_ip, dst_ip), route in sorted(routes.items()):
        for hop in route.hops:
            rules[topo.switches[hop.switch].dpid].append([src_ip, dst_ip, [hop.out_port]])
    return rules


def ecmp_rules(topo):
    """One rule per destination NIC port on every switch that reaches it, listing every equal-cost
    next hop (two or more become a select group)."""
    finder = PathFinder(topo)
    rules = {s.dpid: [] for s in topo.switches.values()}
    for dst in topo.nic_ports():
        home, home_port = topo.attachment(dst)
        reaches = finder.distances_to(home)
        for name, switch in topo.switches.items():
            if name in reaches:
                ports = [home_port] if name == home else finder.next_hops(name, home)
                rules[switch.dpid].append([None, dst.ip, ports])
    return rules


def plan(topo, mode="deterministic"):
    """The routing plan for a mode: the controller's rules, and the routes where they are known."""
    if mode == "deterministic":
        routes = deterministic_routes(topo)
        return RoutingPlan(mode, route_rules(topo, routes), routes)
    if mode == "ecmp":
        return RoutingPlan(mode, ecmp_rules(topo), None)
    raise TestbedError(f"unknown routing {mode!r}: use one of {', '.join(MODES)}")


def link_load(routes, pairs):
    """{directed link: number of flows} when each (src ip, dst ip) in pairs sends at once."""
    load = {}
    for pair in pairs:
        for link in routes[pair].directed_links():
            load[link] = load.get(link, 0) + 1
    return load
