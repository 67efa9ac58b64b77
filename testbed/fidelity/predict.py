"""What a workload should achieve on a fabric, given where its connections went: its connections'
paths (captured in an emulation, or computed from their 5-tuples by ``routing.hashing.Placer``)
through ``flowmodel``.

- Long-lived flows between pairs: each pair's goodput over its NIC's capacity (a bonded NIC's
  ports together), and the rate every directed link carries.
- A collective: its schedule played in time as its ranks play it (``as_ranks_run``): each
  transfer starts when its sender and receiver are both at its step, striped over the sender's
  connections, all moving transfers sharing the links max-min fairly, rates shared again whenever
  one starts or ends; a step lasts at least the latency floor; TCP and IP headers added. The
  floor is the idle fabric's per-step time of a small message (``idle_step_us``: forwarding and
  wake-up latency, which a shaped link lets through at once); without it (0) the model is the
  bandwidth term alone, which at MiB sizes and Mbit/s rates is within 1% of a step. A Ring's
  steps are timed one by one (each as long as its slowest hop). Several Rings at once
  (Multi-AllReduce) share one fluid run per step, each ending with its own last transfer: the
  model keeps their steps aligned, where real rings drift apart.

This is the one model of a collective's time: the size sweeps judge each row against it with the
paths the routes give (``route_paths``; under ECMP only the NICs' links are known), and the paired
experiments compare each trial against it with the paths the capture saw or hashing computes.
"""
from collections import deque

import numpy as np

from testbed.collectives.connections import step_transfers, stripe
from testbed.collectives.coordinator import SOCKBUF, Coordinator, emulation_launcher
from testbed.collectives.data import ELEMENT_BYTES
from testbed.collectives.schedules import Deadlock, HalvingDoubling
from testbed.fidelity.flowmodel import Incidence, completion, max_min, payload_fraction
from testbed.programs.rank import EAGER_LIMIT, starts_flow
from testbed.routing import deterministic_routes


def link_rates(topo):
    """{(node, port): bytes/s} for the sending end of every directed link, the servers' scale-up
    links included."""
    return {end: link.bytes_per_s for link in topo.links + topo.scaleup_links() for end in link.ends()}


def scaleup_path(topo, conn):
    """A connection's path over its server's scale-up domain, or None where it crosses the fabric."""
    return [(conn.src, topo.scaleup_port(conn.src, conn.dst))] if topo.same_server(conn.src, conn.dst) else None


def nic_capacity(topo, host):
    """A host's NIC capacity in bytes/s: all of its ports (a bonded NIC's two links)."""
    return len(topo.hosts[host].ports) * topo.bytes_per_s


def flows(topo, groups, paths, mtu):
    """For long-lived flows, groups: [[Connection per stream] per pair], paths: {Connection: [link]}.
    Returns {"goodput_over_nic": [per pair], "loads": {link: {"flows", "bytes"}}, "rates": {Connection:
    bytes/s}}; loads has the probes' form (bytes standing for bytes/s on the wire), so that
    probes.loads' tier and NIC summaries read a model as they read a capture."""
    rates = max_min({c: paths[c] for group in groups for c in group}, link_rates(topo))
    loads = {}
    for conn, rate in rates.items():
        for link in paths[conn]:
            cell = loads.setdefault(link, {"flows": 0, "bytes": 0.0})
            cell["flows"] += 1
            cell["bytes"] += rate
    fraction = payload_fraction(mtu)
    goodput = [sum(rates[c] for c in group) * fraction / nic_capacity(topo, group[0].src) for group in groups]
    return {"goodput_over_nic": goodput, "loads": loads, "rates": rates}


def _step_time(moved, paths, capacity, mtu):
    """Seconds until a step's last transfer ends ({Connection: bytes}); a connection inside one
    host (no link: ranks that share a host) takes no time."""
    crossing = {c: paths[c] for c in moved if paths[c]}
    return completion(crossing, capacity, {c: moved[c] for c in crossing})[0] / payload_fraction(mtu)


TIMINGS = ("ranks", "rounds")


def collective_time(topo, schedule, connections, count, paths, mtu, latency_s=0.0, timing="ranks"):
    """(seconds, latency-bound?) of one collective; latency-bound when the steps' floors outweigh
    the transfers. timing "ranks": the schedule followed as its ranks run it (``as_ranks_run``);
    "rounds": every rank waits for the slowest at each round of the schedule (``schedules.rounds``),
    each round the fluid model's time or the floor, whichever is larger: the same where nothing
    collides, 1.29x slower under ECMP's collisions (HD on 128 hosts of a leaf-spine, one draw, one
    connection per peer; 1.05x with 4 per peer, 1.00x with 16), and 70x faster to compute with 16
    connections per peer (0.4 s against 28 s). A schedule
    whose steps all move the same (Ring, ``uniform_step``) is timed by rounds either way: its ranks
    wait on their ring neighbours, so every step lasts as long as its slowest hop."""
    if timing not in TIMINGS:
        raise ValueError(f"unknown timing {timing!r}: one of {', '.join(TIMINGS)}")
    if timing == "rounds" or hasattr(schedule, "uniform_step"):
        capacity, total, floors, transfers = link_rates(topo), 0.0, 0.0, 0.0
        for steps, moved in step_transfers(schedule, connections, count):
            transfer = _step_time(moved, paths, capacity, mtu)
            total += steps * max(latency_s, transfer)
            floors += steps * latency_s
            transfers += steps * transfer
        return total, floors >= transfers
    total, floors = as_ranks_run(topo, schedule, connections, count, paths, mtu, latency_s)
    transfers = as_ranks_run(topo, schedule, connections, count, paths, mtu)[0] if latency_s else total
    return total, floors >= transfers


def as_ranks_run(topo, schedule, connections, count, paths, mtu, latency_s=0.0, sockbuf=SOCKBUF,
                 eager_limit=EAGER_LIMIT):
    """(seconds until the last rank ends its last step, the longest rank's floors) of a schedule
    played in time as the ranks (``programs.rank``) play it. Each rank runs its steps in order. A
    message that starts a flow above the eager limit waits for its receiver to be at the step that
    takes it (the clear-to-send); any other goes when its sender is at its step. Once sent, a
    message is the kernel's: the sender's step has sent it when no more than its socket buffer is
    left to cross on each connection, and the rest flows on while the sender goes ahead, so a
    connection carries its messages one after another and a sender's messages to different peers
    share its links. A message has arrived when its last byte has crossed. Every moving
    connection shares the links max-min fairly with the others, rates shared again whenever one
    starts or ends. A step ends when its send has gone, its receive has arrived and latency_s has
    passed since it began. Timed by rounds instead, the pairwise alltoall under ECMP ran 1.4-1.7x
    faster than the model (load_balancing, LeafSpine(4,4,4), 16 KiB per message); timed so,
    1.22-1.33x (4 runs), and 1.00-1.10x with 128 KiB messages: a message of two frames is where the
    fluid model is coarse (two such messages on one link: a FIFO ends one of them a frame early,
    sharing ends both together)."""
    ranks = len(connections)
    plans = [schedule.steps(r, ranks, count) for r in range(ranks)]
    crossing = {c: paths[c] for peers in connections.values() for cs in peers.values() for c in cs if paths.get(c)}
    inc = Incidence(crossing, link_rates(topo)) if crossing else None
    index = {c: k for k, c in enumerate(inc.keys)} if inc else {}
    fraction = payload_fraction(mtu)
    queued, delivered = np.zeros(len(index)), np.zeros(len(index))
    pending = [deque() for _ in index]            # per connection: (end offset, message) in order
    head = np.full(len(index), np.inf)            # per connection: the first pending end offset
    takes, k_of = {}, {}                          # (sender, step) -> receiver's step
    for r in range(ranks):
        for i, step in enumerate(plans[r]):
            if step.send_to is not None:
                k_of[r, step.send_to] = k_of.get((r, step.send_to), -1) + 1
                takes[r, i] = [j for j, s in enumerate(plans[step.send_to]) if s.recv_from == r][k_of[r, step.send_to]]
    rendezvous = {(r, i): (plans[r][i].send[1] - plans[r][i].send[0]) * ELEMENT_BYTES > eager_limit
                  and starts_flow(plans[r], i, "send_to") for r, i in takes}
    left = {}                                     # message (sender, step) -> {connection index: end offset}
    arrived, started = set(), set()               # (receiver, receiver's step); (sender, step)
    at, began = [0] * ranks, [0.0] * ranks
    now = 0.0

    def sent(r, i):
        return (r, i) in started and all(queued[c] - delivered[c] <= sockbuf for c in left.get((r, i), {}))

    def start():
        for r in range(ranks):
            i = at[r]
            if i >= len(plans[r]) or (r, i) in started or plans[r][i].send_to is None:
                continue
            d = plans[r][i].send_to
            if rendezvous[r, i] and at[d] != takes[r, i]:
                continue
            started.add((r, i))
            lo, hi = plans[r][i].send
            parts = {}
            stripe(parts, connections[r][d], ELEMENT_BYTES * (hi - lo))
            ends = {}
            for c, size in parts.items():
                if c in index and size > 0:
                    k = index[c]
                    queued[k] += size
                    ends[k] = queued[k]
                    pending[k].append((queued[k], (r, i)))
                    head[k] = min(head[k], queued[k])
            left[r, i] = ends
            if not ends:                          # inside one host, or nothing to send
                arrived.add((d, takes[r, i]))

    def step_on():
        stepped = False
        for r in range(ranks):
            i = at[r]
            if i < len(plans[r]):
                step = plans[r][i]
                if ((step.send_to is None or sent(r, i)) and (step.recv_from is None or (r, i) in arrived)
                        and now >= began[r] + latency_s - 1e-12):
                    at[r], began[r], stepped = i + 1, now, True
        return stepped

    while True:
        start()
        while step_on():
            start()
        if all(at[r] >= len(plans[r]) for r in range(ranks)):
            break
        active = queued - delivered > 1e-6
        events = [began[r] + latency_s - now for r in range(ranks)
                  if at[r] < len(plans[r]) and began[r] + latency_s > now]          # floors still running
        if not active.any() and not events:
            raise Deadlock(f"{schedule.name} on {ranks} ranks: ranks wait on each other at steps {at}")
        if active.any():
            speed = inc.fill(active) * fraction   # payload bytes/s
            backlog = queued[active] - delivered[active]
            events.append(float(np.min((head[active] - delivered[active]) / speed[active])))
            over = backlog > sockbuf
            if over.any():
                events.append(float(np.min((backlog[over] - sockbuf) / speed[active][over])))
            dt = max(min(events), 0.0)
            delivered[active] = np.minimum(delivered[active] + speed[active] * dt, queued[active])
        else:
            dt = min(events)
        now += dt
        for k in np.flatnonzero(active & (head - delivered <= 1e-6)):
            while pending[k] and pending[k][0][0] - delivered[k] <= 1e-6:
                _, (r, i) = pending[k].popleft()
                if all(delivered[c] >= end - 1e-6 for c, end in left[r, i].items()):
                    arrived.add((plans[r][i].send_to, takes[r, i]))
            head[k] = pending[k][0][0] if pending[k] else np.inf
    return now, max(len(p) for p in plans) * latency_s


def collective_times(topo, collectives, paths, mtu, latency_s=0.0, high=(), timing="ranks"):
    """Seconds each collective of [(schedule, {rank: {peer: [Connection]}}, count)] takes when they
    all run at once (one alone: any schedule; several: Rings, ``uniform_step``); paths for every
    connection that carries data; high: connections the switches serve first (strict priority)."""
    if len(collectives) == 1 and not high:
        schedule, connections, count = collectives[0]
        return [collective_time(topo, schedule, connections, count, paths, mtu, latency_s, timing)[0]]
    parts = [step_transfers(*collective) for collective in collectives]
    if any(len(p) != 1 for p in parts):
        raise ValueError("only collectives whose steps all move the same (Rings) run together in the model")
    moved = {c: size for ((_, mine),) in parts for c, size in mine.items()}
    crossing = {c: paths[c] for c in moved if paths[c]}
    _, ends = completion(crossing, link_rates(topo), {c: moved[c] for c in crossing}, set(high) & set(crossing))
    return [steps * max(latency_s, max((ends.get(c, 0.0) for c in mine), default=0.0) / payload_fraction(mtu))
            for ((steps, mine),) in parts]


def route_paths(topo, routing, connections):
    """{Connection: [link]} from the routes known before any packet moves (deterministic routing);
    where hashing decides (ECMP), only the NICs' links: the sending port and the destination's
    downlink. A connection between two ranks on one host crosses no link ([])."""
    ip = {h.name: h.ports[0].ip for h in topo.hosts.values()}
    out = {}
    for c in connections:
        route = routing.route(ip[c.src], ip[c.dst], c.sport) if c.src != c.dst else None
        if c.src == c.dst:
            out[c] = []
        elif topo.same_server(c.src, c.dst):
            out[c] = scaleup_path(topo, c)
        elif route is not None:
            out[c] = sorted(route.directed_links())
        else:
            nic = topo.hosts[c.dst].ports[0]
            out[c] = sorted([(c.src, 0), topo.attachment(nic)])
    return out


def idle_step_us(emu, size=1024, iterations=100, schedule=HalvingDoubling):
    """The latency floor, measured: per-step time (us) of a 2-rank `schedule` allreduce of `size`
    bytes between the two hosts farthest apart, back to back, with nothing else running. Halving-
    doubling's two steps move size/2 each way (the model's floor); recursive doubling's one step
    moves all `size` bytes each way: the idle fabric's exchange of a whole vector, the floor of a
    step of recursive doubling at that size."""
    longest = max(deterministic_routes(emu.topo).values(), key=lambda r: (len(r.hops), r.src.ip, r.dst.ip))
    hosts = [longest.src.host, longest.dst.host]
    with Coordinator(schedule.name, *emulation_launcher(emu, hosts), pacing=emu.topo.bytes_per_s,
                     label="idle step latency") as ranks:
        ranks.iterate(size // ELEMENT_BYTES, 0, 60, repeat=10)
        times = ranks.iterate(size // ELEMENT_BYTES, 1, 60, repeat=iterations)["times"]
    return round(float(np.mean(times)) / len(schedule().steps(0, 2, 2)) * 1e6, 1)


def captured_paths(topo, connections, captured):
    """{Connection: [link]} for the connections a capture saw carry data, from its per-5-tuple
    paths (``probes.loads.Observation.paths``); the links sorted, as the model needs no order."""
    ip = {h.name: h.ports[0].ip for h in topo.hosts.values()}
    out = {}
    for c in connections:
        links = scaleup_path(topo, c) or captured.get((ip[c.src], c.sport, ip[c.dst], c.dport))
        if links:
            out[c] = sorted(links)
    return out


def paths_as_placed(placer, paths):
    """How many of the captured paths ({Connection: [link]}) are the links the placer computes
    from the 5-tuple: the emulation forwarding as the model hashes."""
    return sum(1 for c, links in paths.items() if sorted(placer.path(c)) == links)
