"""The routing plan: what the controller installs on each switch, what the hosts route where their
NIC is bonded, and the routes flows take where they are known in advance.

Where every NIC port has a subnet of its own, a host sends port-p traffic only to port-p addresses,
so flows run between NIC ports of the same index. Where a host's NIC ports share one address
(HPN7's dual-ToR NIC), the host itself chooses the port: by a hash of the 5-tuple under ``ecmp``
(Linux multipath routing, layer-3+4 policy, over the ports whose link is up, as a LACP bond does),
by the rule below under ``deterministic``. Under ``ecmp`` a connection whose source port lies in
``hashing.turn_ports(p)`` leaves by port p instead (a policy-routing rule and a table per port:
round-robin's turns, ``hashing.Draw``); the kernel skips that table while port p's link is down.

``deterministic``: every flow takes one of its equal-cost shortest paths (counted link by link, so
parallel links are distinct paths, and ordered by the OpenFlow ports taken at each switch), chosen
by ``choose``: path number (a.index + b.index) mod (number of paths) for a flow from host a to
host b. On BiGraph (c = 1) that is the unique switch path between opposite layers, and for two hosts
of one layer the relay switch (a.index + b.index) mod (n/2); between layers with c parallel links
BiGraph takes link number (j // (n/2)) mod c, j the upper endpoint's port on its switch: HDRM's
pairs that share a switch pair in one step differ exactly there, so each gets its own link (any
m <= c*n/2). A bonded host sends to host b from NIC port (a.index + b.index) mod (ports), to b's port
of the same index.

``ecmp``: every switch forwards by destination over all its equal-cost next hops (parallel links
counted separately), as an OpenFlow select group; a destination reachable through two switches (a
bonded NIC under two ToRs) has next hops towards both. Open vSwitch picks the bucket by a hash of
the 5-tuple: with ``hash="same"`` its dp_hash method, symmetric L4, basis 0, the same function on
every switch, as in real switches (successive stages then make correlated choices: polarisation);
with ``hash="per-switch"`` the same method with a basis of each switch's own, which decorrelates the
stages as per-switch hash seeds do. Which link a flow takes is known only once it runs; the collision
probe measures it.

``planned``: as deterministic, but the flows a plan is given (host pairs, in the order they choose:
a job scheduler's, such as Crux's jobs by GPU intensity) each take, one after the other, the
equal-cost path whose busiest link carries the fewest of the flows placed before it (then the
fewest in total, then the first): paths apart as far as the fabric allows, installed as
deterministic rules. Where NICs are bonded, a given pair gets a route from each port of its source
NIC to the same port of its destination's, each placed so (as C4P spreads a connection's queue pairs
over both ports): its connections then take the ports in turn, as under ECMP's round-robin (the
hosts' turn rules below send connection i by port i mod ports). The switches' rules match
addresses, so a pair is split only where its routes never meet at a switch with different next
hops (HPN's dual plane: always); otherwise it keeps its one route, from the port of its pair.
Pairs not given keep the deterministic choice. Given no flows, the controller learns the long ones
from its rules' counters while traffic runs and plans them so (``controllers/path_installer.py``),
each pair on one route (the hosts' routes are set before any traffic).

``pinned``: every switch forwards by destination over one of its equal-cost next hops, number
(destination host's index) mod (next hops): static path pinning by destination, as Meta pinned
paths before it spread flows over queue pairs. No hash: two flows to one destination always share
a path, two to different destinations spread as their indices do. Bonded hosts choose their port
as under ``ecmp``.
"""
from dataclasses import dataclass, field

from testbed.errors import TestbedError
from testbed.routing.hashing import turn_ports
from testbed.routing.paths import PathFinder
from testbed.topology import BiGraph

MODES = ("deterministic", "ecmp", "planned", "pinned")
HASHES = ("same", "per-switch")
TURN_TABLE = 100      # routing table of round-robin's NIC port p: TURN_TABLE + p


@dataclass
class RoutingPlan:
    """rules: {dpid: [[src ip or None, dst ip, [out ports]]]} for the controller (two or more out
    ports are a select group); seeds: {dpid: the basis of its select groups' hash};
    host_routes: {host: [[destination prefix, [interfaces], metric, table]]} for bonded NICs (two
    or more interfaces: a multipath route; table 0: the main one); host_rules: {host: [[first
    source port, last, table]]} (TCP); routes: {(src ip, dst ip): Route}, or None where hashing
    decides; port_routes (planned, bonded NICs): {(src ip, dst ip): {NIC port: Route}} for the pairs
    split over their ports (``routes`` holds the first)."""
    mode: str
    rules: dict
    routes: dict | None
    hash: str = "same"
    seeds: dict = field(default_factory=dict)
    host_routes: dict = field(default_factory=dict)
    host_rules: dict = field(default_factory=dict)
    flows: list = field(default_factory=list)     # planned: the (host, host) pairs placed, in order
    port_routes: dict = field(default_factory=dict)

    @property
    def rule_count(self):
        return sum(len(r) for r in self.rules.values())

    def to_dict(self):
        return {"mode": self.mode, "hash": self.hash,
                "rules": {str(dpid): rules for dpid, rules in self.rules.items()},
                "seeds": {str(dpid): seed for dpid, seed in self.seeds.items()},
                "host_routes": self.host_routes, "host_rules": self.host_rules, "flows": self.flows,
                "routes": None if self.routes is None else [r.to_dict() for _, r in sorted(self.routes.items())],
                **({"port_routes": [[src, dst, {str(port): r.to_dict() for port, r in sorted(by_port.items())}]
                                    for (src, dst), by_port in sorted(self.port_routes.items())]}
                   if self.port_routes else {})}

    def route(self, src_ip, dst_ip, sport=0):
        """The route a connection takes where it is known: a split pair's for the port whose turn
        ports hold its source port (as the hosts' turn rules send it), otherwise the pair's; None
        where hashing decides."""
        by_port = self.port_routes.get((src_ip, dst_ip))
        for port, route in sorted((by_port or {}).items()):
            if sport in turn_ports(port, len(by_port)):
                return route
        return (self.routes or {}).get((src_ip, dst_ip))


def choose(topo, src_host, dst_host, count):
    """Which of `count` equal-cost routes (in PathFinder's order) a flow takes: the module docstring."""
    if isinstance(topo, BiGraph):
        upper = [h for h in (src_host, dst_host) if topo.is_upper(h)]
        if len(upper) == 1 and count == topo.c:
            return (upper[0].index % topo.m) // topo.half % topo.c
    return (src_host.index + dst_host.index) % count


def port_pairs(topo, a, b):
    """The (a's NIC port, b's NIC port) pairs that may carry traffic from host a to host b, in the
    order of preference: a bonded NIC prefers port (a.index + b.index) mod (ports) at both ends,
    then the other ports (when a link is gone)."""
    if topo.shared_nic_address:
        n = min(len(a.ports), len(b.ports))
        first = (a.index + b.index) % n
        order = [first] + [p for p in range(n) if p != first]
        return [(a.ports[p], b.ports[q]) for p in order for q in [p] + [q for q in order if q != p]]
    theirs = {nic.subnet: nic for nic in b.ports}
    return [(nic, theirs[nic.subnet]) for nic in a.ports if nic.subnet in theirs]


def deterministic_routes(topo):
    """{(src ip, dst ip): Route} with the tie-break rules of the module docstring."""
    finder, routes = PathFinder(topo), {}
    for a in topo.hosts.values():
        for b in topo.hosts.values():
            if a is b:
                continue
            for src, dst in port_pairs(topo, a, b):
                if (src.ip, dst.ip) in routes:
                    continue
                options = finder.routes(src, dst)
                if options:
                    routes[src.ip, dst.ip] = options[choose(topo, a, b, len(options))]
    return routes


def planned_routes(topo, flows):
    """(routes, port_routes): the deterministic routes, with each of `flows` ([(host, host)] in
    order) on the least-loaded of its equal-cost paths, split over a bonded NIC's ports, as the
    module docstring says."""
    placed, split = place_flows(topo, flows, split=True)
    return {**deterministic_routes(topo), **placed}, split


def place_flows(topo, flows, split=False):
    """{(src ip, dst ip): Route} for `flows` alone ([(host, host)] in order), each on the
    least-loaded of its equal-cost paths (the planned mode's rule), without working out every
    other pair's route: what a model of a large fabric needs. With split, (routes, port_routes):
    where NICs are bonded each pair also gets a route from every port (the module docstring)."""
    finder, routes, ported, load = PathFinder(topo), {}, {}, {}
    links = lambda route: [(h.switch, h.out_port) for h in route.hops[:-1]]   # between switches
    for a, b in flows:
        if a not in topo.hosts or b not in topo.hosts:
            raise TestbedError(f"a planned flow names {a if a not in topo.hosts else b}, no host of {topo.name}")
        pairs = port_pairs(topo, topo.hosts[a], topo.hosts[b])
        src, dst = pairs[0]
        if (src.ip, dst.ip) in routes or a == b:
            continue
        ends = [(s, d) for s, d in pairs if s.port == d.port] if split and topo.shared_nic_address else pairs[:1]
        chosen = []
        for s, d in ends:
            taken = {h.switch: h.out_port for r in chosen for h in r.hops}
            options = [r for r in finder.routes(s, d) if all(taken.get(h.switch, h.out_port) == h.out_port
                                                              for h in r.hops)]
            if not options:
                break
            chosen.append(min(options, key=lambda r: (max((load.get(x, 0) for x in links(r)), default=0),
                                                      sum(load.get(x, 0) for x in links(r)), options.index(r))))
        if len(chosen) < len(ends):
            chosen = chosen[:1]                       # the ports' routes would meet: one route, as before
        if not chosen:
            continue
        routes[src.ip, dst.ip] = chosen[0]
        if len(chosen) > 1:
            ported[src.ip, dst.ip] = {r.src.port: r for r in chosen}
        for x in (x for r in chosen for x in links(r)):
            load[x] = load.get(x, 0) + 1
    return (routes, ported) if split else routes


def route_rules(topo, routes):
    """One rule per (source, destination) on every switch of its route ({(src ip, dst ip, ...):
    Route}: a split pair's routes add their own switches' rules)."""
    rules, seen = {s.dpid: [] for s in topo.switches.values()}, set()
    for (src_ip, dst_ip, *_), route in sorted(routes.items()):
        for hop in route.hops:
            dpid = topo.switches[hop.switch].dpid
            if (dpid, src_ip, dst_ip) not in seen:        # a split pair's routes may share a switch, same port
                seen.add((dpid, src_ip, dst_ip))
                rules[dpid].append([src_ip, dst_ip, [hop.out_port]])
    return rules


def ecmp_rules(topo, pinned=False):
    """One rule per destination address on every switch that reaches it, listing every equal-cost
    next hop (two or more become a select group), or, pinned, one of them (the module docstring);
    a switch a NIC port of the address hangs off sends it there."""
    finder = PathFinder(topo)
    rules = {s.dpid: [] for s in topo.switches.values()}
    for ip, nics in topo.addresses().items():
        homes = dict(filter(None, (topo.attachment(nic) for nic in nics)))   # {switch: its port to the NIC}
        for name, switch in topo.switches.items():
            if name in homes:
                ports = [homes[name]]
            else:
                ports = sorted(finder.next_hops_towards(name, set(homes)))
                allowed = topo.transit(name, nics[0])
                ports = [p for p in ports if allowed is None or p in allowed]
                if pinned and ports:
                    ports = [ports[topo.hosts[nics[0].host].index % len(ports)]]
            if ports:
                rules[switch.dpid].append([None, ip, ports])
    return rules


def host_routes(topo, routes=None, port_routes=None):
    """Routes on bonded hosts, [[prefix, [interfaces], metric, table]]: a multipath route over every
    NIC port for the fabric's subnet, and one through each port in that port's round-robin table
    (ecmp); or per destination a /32 through the port `routes` chose, and a second one, of higher
    metric, through each other port (deterministic): the kernel skips a route whose link is down.
    A pair split over its ports (port_routes) also has a /32 through port p in port p's table, which
    the turn rules (``host_rules``) send that port's connections to; a table without the
    destination leaves the lookup to the main one."""
    if not topo.shared_nic_address:
        return {}
    out = {}
    for host in topo.hosts.values():
        if routes is None:
            subnet = host.ports[0].ip.rsplit(".", 1)[0] + ".0/24"
            out[host.name] = [[subnet, [nic.intf for nic in host.ports], 0, 0]]
            out[host.name] += [[subnet, [nic.intf], 0, TURN_TABLE + nic.port] for nic in host.ports]
            continue
        out[host.name] = []
        for (src, dst), route in sorted(routes.items()):
            if src == host.ports[0].ip:
                out[host.name] += [[f"{dst}/32", [nic.intf], 0 if nic is route.src else 1 + nic.port, 0]
                                   for nic in host.ports]
        for (src, dst), by_port in sorted((port_routes or {}).items()):
            if src == host.ports[0].ip:
                out[host.name] += [[f"{dst}/32", [host.ports[p].intf], 0, TURN_TABLE + p] for p in sorted(by_port)]
    return out


def host_rules(topo):
    """Round-robin's rules on bonded hosts: TCP from port p's turn ports looks up port p's table."""
    if not topo.shared_nic_address:
        return {}
    return {host.name: [[turn_ports(nic.port, len(host.ports))[0], turn_ports(nic.port, len(host.ports))[-1],
                         TURN_TABLE + nic.port] for nic in host.ports] for host in topo.hosts.values()}


def seed(dpid):
    """A switch's own hash basis: its datapath id scrambled (Knuth's multiplicative hash)."""
    return (dpid * 2654435761) & 0xFFFFFFFF


def plan(topo, mode="deterministic", hash="same", flows=()):
    """The routing plan for a mode: the controller's rules, the hosts' routes, and the routes where
    they are known. flows: the planned mode's (host, host) pairs, in the order they choose."""
    if hash not in HASHES:
        raise TestbedError(f"unknown hash {hash!r}: use one of {', '.join(HASHES)}")
    if mode in ("deterministic", "planned"):
        routes, split = (deterministic_routes(topo), {}) if mode == "deterministic" else planned_routes(topo, flows)
        every = {**routes, **{(s, d, p): r for (s, d), by_port in split.items() for p, r in by_port.items()}}
        return RoutingPlan(mode, route_rules(topo, every), routes, hash,
                           host_routes=host_routes(topo, routes, split),
                           host_rules=host_rules(topo) if split else {},
                           flows=[list(f) for f in flows] if mode == "planned" else [], port_routes=split)
    if mode in ("ecmp", "pinned"):
        seeds = {s.dpid: seed(s.dpid) if hash == "per-switch" else 0 for s in topo.switches.values()}
        return RoutingPlan(mode, ecmp_rules(topo, pinned=mode == "pinned"), None, hash, seeds, host_routes(topo),
                           host_rules(topo))
    raise TestbedError(f"unknown routing {mode!r}: use one of {', '.join(MODES)}")


def link_load(routes, pairs):
    """{directed link: number of flows} when each (src ip, dst ip) in pairs sends at once."""
    load = {}
    for pair in pairs:
        for link in routes[pair].directed_links():
            load[link] = load.get(link, 0) + 1
    return load
