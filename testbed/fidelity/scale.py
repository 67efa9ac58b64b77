"""Scale on paper: how many slots, cores and machines a fabric needs at a link rate, from this
machine's calibration (``emulation.capacity``), the switch passes per packet and the slots'
partition (``topology.partition``). No root, no emulation.

The model, each part measured on a 2-core machine (docs/scale.md):
- one slot's ovs-vswitchd forwards what the calibration's 16 flows got through faithfully, counted in
  switch passes: capacity = calibrated offered Mbit/s x the calibration flows' mean passes per packet;
- a fabric offers every NIC port's rate, each packet crossing up to the fabric's longest path
  (its diameter in switches: the planning figure, an upper bound for any workload);
- hosts' processes take cores of their own, ENDPOINTS_PER_CORE each (64 ranks ran at the link rate
  on 2 cores, 128 did not);
- a cut link carries its rate each way over the underlay between the machines of its two slots.
"""
import math
from collections import deque
from dataclasses import dataclass

from testbed import routing
from testbed.fidelity.fabric_check import spread_pairs
from testbed.topology import BiGraph
from testbed.topology.partition import attachments, max_slots, partition

ENDPOINTS_PER_CORE = 32
CALIBRATION_TOPOLOGY = BiGraph(2, 8)   # what fidelity.calibrate measures: its 16 spread flows


def calibration_passes():
    """Mean switches crossed per packet by the calibration's flows."""
    plan = routing.plan(CALIBRATION_TOPOLOGY)
    pairs = spread_pairs(CALIBRATION_TOPOLOGY, plan.routes)
    return sum(len(plan.routes[s.ip, d.ip].hops) for s, d in pairs) / len(pairs)


def diameter(topo):
    """The most switches a packet crosses between two hosts, shortest paths (a host with several
    ports leaves by the nearest)."""
    adjacency = {s: [n for _, n, _ in ports] for s, ports in topo.switch_adjacency().items()}
    groups = {frozenset(switches) for switches in attachments(topo).values()}
    longest = 0
    for start in groups:
        seen, queue = dict.fromkeys(start, 1), deque(start)
        while queue:
            s = queue.popleft()
            for n in adjacency[s]:
                if n not in seen:
                    seen[n] = seen[s] + 1
                    queue.append(n)
        longest = max(longest, max(min(seen.get(s, math.inf) for s in group) for group in groups))
    return longest


@dataclass
class Plan:
    fabric: str
    endpoints: int
    ports: int
    rate_mbit: float
    passes: int
    slots: int
    max_slots: int
    cores: int
    machines: int
    cut_links: int
    underlay_mbit: float       # the busiest machine's underlay traffic, each way
    fits: bool                 # False: even max_slots slots cannot forward it faithfully

    def to_dict(self):
        return dict(self.__dict__)


def plan(topo, slot_capacity, machine_cores):
    """slot_capacity: switch-pass Mbit/s one slot forwards faithfully (calibrated offered Mbit/s x
    calibration_passes()). machine_cores: cores per machine."""
    ports = len(topo.nic_ports())
    passes = diameter(topo)
    limit = max_slots(topo)
    needed = max(1, math.ceil(ports * topo.rate * passes / slot_capacity))
    slots = min(needed, limit)
    part = partition(topo, slots)
    cores = slots + sum(math.ceil(len(part.hosts(s)) / ENDPOINTS_PER_CORE) for s in range(slots))
    # Slots go to machines in order, as many as fit a machine's cores.
    machine_of, used, machine = {}, 0, 0
    for s in range(slots):
        need = 1 + math.ceil(len(part.hosts(s)) / ENDPOINTS_PER_CORE)
        if used and used + need > machine_cores:
            machine, used = machine + 1, 0
        machine_of[s], used = machine, used + need
    underlay = [0.0] * (machine + 1)
    cut = part.cut_links()
    for c in cut:
        a, b = (machine_of[s] for s in c.slots)
        if a != b:
            underlay[a] += c.link.rate
            underlay[b] += c.link.rate
    return Plan(topo.name, len(topo.hosts), ports, topo.rate, passes, slots, limit, cores, machine + 1,
                len(cut), max(underlay), needed <= limit)


def highest_rate(topo, slot_capacity):
    """The highest link rate (Mbit/s) the most slots topo splits into forward faithfully."""
    return max_slots(topo) * slot_capacity / (len(topo.nic_ports()) * diameter(topo))
