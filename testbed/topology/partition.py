"""A fabric split into slots, as plain data: each slot is the share of the fabric one ovs-vswitchd
forwards (its switches and the hosts cabled to them); a link whose ends lie in two slots is cut, and
carried between them by a VXLAN tunnel, one VNI per link.

    part = partition(BiGraph(2, 8), 2)
    part.slot_of["h0"], [cut.vni for cut in part.cut_links()]

A host always sits in the slot of its switch(es), so that a bonded NIC's two ports, dual-ToR failover
and a host's whole path to its first switch stay inside one slot. BiGraph puts Upper-Lower pairs
(U<i>, L<i>) in the slots, HPN 7.0 (segment, rail) units (a rail's ToRs of both planes and their
hosts) with the aggregation and core switches dealt out in turn; any other fabric is partitioned by
METIS (pymetis), every switch weighted by one plus its hosts, every switch pair by its links.
"""
from dataclasses import dataclass

from testbed.errors import TestbedError
from testbed.topology.base import Link, positive_int
from testbed.topology.bigraph import BiGraph
from testbed.topology.hpn7 import HPN7

VXLAN_OVERHEAD = 50     # bytes a VXLAN tunnel adds to a frame on an IPv4 underlay


@dataclass(frozen=True)
class CutLink:
    """A link between two slots: VXLAN device at each end, named as the port it replaces."""
    link: Link
    vni: int
    slots: tuple


class Partition:
    def __init__(self, topo, switch_slot):
        """switch_slot: {switch name: slot index}, slots numbered from 0 without gaps."""
        self.topo = topo
        self.slot_of = dict(switch_slot)
        for name, switches in attachments(topo).items():
            where = {switch_slot[sw] for sw in switches}
            if len(where) != 1:
                raise AssertionError(f"host {name} is cabled to switches in slots {sorted(where)}")
            self.slot_of[name] = where.pop()
        self.count = max(switch_slot.values()) + 1
        empty = set(range(self.count)) - set(switch_slot.values())
        if empty:
            raise TestbedError(f"{topo.name} split into {self.count} slots leaves slot(s) {sorted(empty)} empty: "
                               "use fewer --slots")

    def switches(self, slot):
        return [s for s in self.topo.switches if self.slot_of[s] == slot]

    def hosts(self, slot):
        return [h for h in self.topo.hosts if self.slot_of[h] == slot]

    def cut_links(self):
        """Every link between two slots, VNIs 1, 2, ... in the topology's link order."""
        cut = [link for link in self.topo.links if self.slot_of[link.a] != self.slot_of[link.b]]
        return [CutLink(link, vni, (self.slot_of[link.a], self.slot_of[link.b]))
                for vni, link in enumerate(cut, start=1)]

    @staticmethod
    def underlay_mtu(mtu):
        """The smallest underlay MTU that carries the fabric's full frames unfragmented."""
        return mtu + VXLAN_OVERHEAD

    def describe(self):
        sizes = ", ".join(f"{len(self.switches(s))}+{len(self.hosts(s))}" for s in range(self.count))
        return (f"{self.count} slot(s) (switches+hosts: {sizes}), {len(self.cut_links())} link(s) cut "
                f"of {len(self.topo.fabric_links())} between switches")

    def to_dict(self):
        return {"slots": self.count,
                "slot_of": self.slot_of,
                "cut_links": [{"a": c.link.a, "a_port": c.link.a_port, "b": c.link.b, "b_port": c.link.b_port,
                               "vni": c.vni, "slots": list(c.slots)} for c in self.cut_links()]}


def partition(topo, slots):
    """topo split into `slots` slots (see the module's docstring)."""
    positive_int("--slots", slots)
    if slots == 1:
        return Partition(topo, {s: 0 for s in topo.switches})
    if isinstance(topo, BiGraph):
        return Partition(topo, _bigraph(topo, slots))
    if isinstance(topo, HPN7):
        return Partition(topo, _hpn7(topo, slots))
    split = Partition(topo, _metis(topo, slots))
    idle = _idle_cut_links(topo, split.cut_links())
    if idle:
        link = idle[0].link
        raise TestbedError(f"{topo.name} split into {slots} slots cuts link {topo.switches[link.a].label}-"
                           f"{topo.switches[link.b].label}, which no shortest path between hosts crosses, so the "
                           "slots would carry nothing between them: use fewer --slots")
    return split


def _idle_cut_links(topo, cut):
    """The cut links that lie on no shortest path between two hosts' switches."""
    neighbours = {s: [] for s in topo.switches}
    for link in topo.fabric_links():
        neighbours[link.a].append(link.b)
        neighbours[link.b].append(link.a)
    edges = sorted({sw for switches in attachments(topo).values() for sw in switches})
    distance = {}
    for start in edges:
        d, todo = {start: 0}, [start]
        for node in todo:
            for other in neighbours[node]:
                if other not in d:
                    d[other] = d[node] + 1
                    todo.append(other)
        distance[start] = d
    inf = float("inf")

    def used(u, v):
        return any(distance[s].get(u, inf) + 1 + distance[t].get(v, inf) == distance[s].get(t, inf)
                   for s in edges for t in edges)
    return [c for c in cut if not (used(c.link.a, c.link.b) or used(c.link.b, c.link.a))]


def max_slots(topo):
    """The most slots topo splits into: BiGraph's Upper-Lower pairs, HPN 7.0's (segment, rail)
    units, or any other fabric's groups of switches that share a host."""
    if isinstance(topo, BiGraph):
        return topo.half
    if isinstance(topo, HPN7):
        return len(_hpn7_units(topo))
    return len(_switch_groups(topo))


def _hpn7_units(topo):
    return sorted({(topo.segment_of(h), h.rail) for h in topo.hosts.values()})


def _in_blocks(index, items, slots):
    """Item `index` of `items` in `slots` contiguous blocks whose sizes differ by one at most."""
    return index * slots // items


def _bigraph(topo, slots):
    half = max_slots(topo)
    if slots > half:
        raise TestbedError(f"{topo.name} has {half} Upper-Lower switch pairs, one slot each at most: "
                           f"use --slots {half} or fewer")
    names = list(topo.switches)          # U0..U<half-1>, then L0..L<half-1>
    return {name: _in_blocks(x % half, half, slots) for x, name in enumerate(names)}


def _hpn7(topo, slots):
    units = _hpn7_units(topo)
    if slots > len(units):
        raise TestbedError(f"{topo.name} has {len(units)} (segment, rail) units, one slot each at most: "
                           f"use --slots {len(units)} or fewer")
    unit_slot = {unit: _in_blocks(i, len(units), slots) for i, unit in enumerate(units)}
    out, others = {}, []
    for name, switch in topo.switches.items():
        if switch.role == "tor":
            s, r, _ = (int(part[1:]) for part in switch.label.split(".")[1:])
            out[name] = unit_slot[s, r]
        else:
            others.append(name)
    for i, name in enumerate(others):     # aggregation, then core switches, dealt out in turn
        out[name] = i % slots
    return out


def _metis(topo, slots):
    import pymetis  # only fabrics other than BiGraph and HPN7 need it

    groups = _switch_groups(topo)
    if slots > len(groups):
        raise TestbedError(f"{topo.name} has {len(groups)} switch group(s) that must stay together "
                           f"(a host's switches share its slot): use --slots {len(groups)} or fewer")
    group_of = {s: g for g, members in enumerate(groups) for s in members}
    weights = [[0] * len(groups) for _ in groups]
    for link in topo.fabric_links():
        a, b = group_of[link.a], group_of[link.b]
        if a != b:
            weights[a][b] += 1
            weights[b][a] += 1
    adjacency = [[b for b in range(len(groups)) if weights[a][b]] for a in range(len(groups))]
    host_count = {s: 0 for s in topo.switches}
    for link in topo.links:
        for end in (link.a, link.b):
            if end in topo.switches and topo.is_host_link(link):
                host_count[end] += 1
    options = pymetis.Options(seed=1)   # the same fabric splits the same way in every run
    _, parts = pymetis.part_graph(
        slots, adjacency=adjacency,
        vweights=[len(members) + sum(host_count[s] for s in members) for members in groups],
        eweights=[weights[a][b] for a in range(len(groups)) for b in adjacency[a]], options=options)
    # Slots numbered in the order their first switch appears, so the split reads in fabric order.
    order = {}
    for g in range(len(groups)):
        order.setdefault(parts[g], len(order))
    if len(order) < slots:
        raise TestbedError(f"METIS split {topo.name} into {len(order)} non-empty slots, not {slots}: "
                           f"use --slots {len(order)}")
    return {s: order[parts[group_of[s]]] for s in topo.switches}


def attachments(topo):
    """{host: [the switches its NIC ports are cabled to]}."""
    out = {}
    for link in topo.links:
        if topo.is_host_link(link):
            host, switch = (link.a, link.b) if link.a in topo.hosts else (link.b, link.a)
            out.setdefault(host, []).append(switch)
    return out


def _switch_groups(topo):
    """Switches that share a host, joined (union-find); [[switch, ...]] in fabric order."""
    parent = {s: s for s in topo.switches}

    def root(s):
        while parent[s] != s:
            parent[s] = parent[parent[s]]
            s = parent[s]
        return s

    for switches in attachments(topo).values():
        for other in switches[1:]:
            parent[root(other)] = root(switches[0])
    groups = {}
    for s in topo.switches:
        groups.setdefault(root(s), []).append(s)
    return list(groups.values())
