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
deterministic rules. Rules match addresses, so a pair's connections share its one route: where
NICs are bonded, every connection between two hosts leaves by the port of its pair (above), where
ECMP's round-robin puts a host's connections on its ports in turn. Pairs not given keep the
deterministic choice. Given no flows, the controller learns the long ones from its rules' counters
while traffic runs and plans them so (``controllers/path_installer.py``).

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
    decides."""
    mode: str
    rules: dict
    routes: dict | None
    hash: str = "same"
    seeds: dict = field(default_factory=dict)
    host_routes: dict = field(default_factory=dict)
    host_rules: dict = field(default_factory=dict)
    flows: list = field(default_factory=list)     # planned: the (host, host) pairs placed, in order

    @property
    def rule_count(self):
        return sum(len(r) for r in self.rules.values())

    def to_dict(self):
        return {"mode": self.mode, "hash": self.hash,
                "rules": {str(dpid): rules for dpid, rules in self.rules.items()},
                "seeds": {str(dpid): seed for dpid, seed in self.seeds.items()},
                "host_routes": self.host_routes, "host_rules": self.host_rules, "flows": self.flows,
                "routes": None if self.routes is None else [r.to_dict() for _, r in sorted(self.routes.items())]}


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
    """The deterministic routes, with each of `flows` ([(host, host)] in order) on the least-loaded
    of its equal-cost paths as the module docstring says."""
    return {**deterministic_routes(topo), **place_flows(topo, flows)}


def place_flows(topo, flows):
    """{(src ip, dst ip): Route} for `flows` alone ([(host, host)] in order), each on the
    least-loaded of its equal-cost paths (the planned mode's rule), without working out every
    other pair's route: what a model of a large fabric needs."""
    finder, routes, load, placed = PathFinder(topo), {}, {}, set()
    for a, b in flows:
        if a not in topo.hosts or b not in topo.hosts:
            raise TestbedError(f"a planned flow names {a if a not in topo.hosts else b}, no host of {topo.name}")
        src, dst = port_pairs(topo, topo.hosts[a], topo.hosts[b])[0]
        if (src.ip, dst.ip) in placed or a == b:
            continue
        options = finder.routes(src, dst)
        if not options:
            continue
        links = lambda route: [(h.switch, h.out_port) for h in route.hops[:-1]]   # between switches
        best = min(range(len(options)), key=lambda k: (max((load.get(x, 0) for x in links(options[k])), default=0),
                                                       sum(load.get(x, 0) for x in links(options[k])), k))
        routes[src.ip, dst.ip] = options[best]
        placed.add((src.ip, dst.ip))
        for x in links(options[best]):
            load[x] = load.get(x, 0) + 1
    return routes


def route_rules(topo, routes):
    """One rule per (source, destination) on every switch of its route."""
    rules = {s.dpid: [] for s in topo.switches.values()}
    for (src_ip, dst_ip), route in sorted(routes.items()):
        for hop in route.hops:
            rules[topo.switches[hop.switch].dpid].append([src_ip, dst_ip, [hop.out_port]])
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


def host_routes(topo, routes=None):
    """Routes on bonded hosts, [[prefix, [interfaces], metric, table]]: a multipath route over every
    NIC port for the fabric's subnet, and one through each port in that port's round-robin table
    (ecmp); or per destination a /32 through the port `routes` chose, and a second one, of higher
    metric, through each other port (deterministic): the kernel skips a route whose link is down."""
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
        routes = deterministic_routes(topo) if mode == "deterministic" else planned_routes(topo, flows)
        return RoutingPlan(mode, route_rules(topo, routes), routes, hash, host_routes=host_routes(topo, routes),
                           flows=[list(f) for f in flows] if mode == "planned" else [])
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
