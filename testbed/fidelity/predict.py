"""What a workload should achieve on a fabric, given where its connections went: its connections'
paths (captured in an emulation, or computed from their 5-tuples by ``routing.hashing.Placer``)
through ``flowmodel``.

- Long-lived flows between pairs: each pair's goodput over its NIC's capacity (a bonded NIC's
  ports together), and the rate every directed link carries.
- A collective: the time of each step as the fluid model's (every rank's message to its step's
  peer, striped over its connections, all at once; the step ends with its last transfer), or the
  step's latency floor, whichever is larger, summed over the steps; TCP and IP headers added. The
  floor is the idle fabric's per-step time of a small message (``idle_step_us``: forwarding and
  wake-up latency, which a shaped link lets through at once); without it (0) the model is the
  bandwidth term alone, which at MiB sizes and Mbit/s rates is within 1% of a step. Several Rings
  at once (Multi-AllReduce) share one fluid run per step, each ending with its own last
  transfer: the model keeps their steps aligned, where real rings drift apart.

This is the one model of a collective's time: the size sweeps judge each row against it with the
paths the routes give (``route_paths``; under ECMP only the NICs' links are known), and the paired
experiments compare each trial against it with the paths the capture saw or hashing computes.
"""
import numpy as np

from testbed.collectives.connections import step_transfers
from testbed.collectives.coordinator import Coordinator, emulation_launcher
from testbed.collectives.data import ELEMENT_BYTES
from testbed.collectives.schedules import HalvingDoubling
from testbed.fidelity.flowmodel import completion, max_min, payload_fraction
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


def collective_time(topo, schedule, connections, count, paths, mtu, latency_s=0.0):
    """(seconds, latency-bound?) of one collective: per step the fluid model's time or the latency
    floor, whichever is larger; latency-bound when the floors outweigh the transfers."""
    capacity, total, floors, transfers = link_rates(topo), 0.0, 0.0, 0.0
    for steps, moved in step_transfers(schedule, connections, count):
        transfer = _step_time(moved, paths, capacity, mtu)
        total += steps * max(latency_s, transfer)
        floors += steps * latency_s
        transfers += steps * transfer
    return total, floors >= transfers


def collective_times(topo, collectives, paths, mtu, latency_s=0.0, high=()):
    """Seconds each collective of [(schedule, {rank: {peer: [Connection]}}, count)] takes when they
    all run at once (one alone: any schedule; several: Rings, ``uniform_step``); paths for every
    connection that carries data; high: connections the switches serve first (strict priority)."""
    if len(collectives) == 1 and not high:
        schedule, connections, count = collectives[0]
        return [collective_time(topo, schedule, connections, count, paths, mtu, latency_s)[0]]
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
    routes = routing.routes or {}
    ip = {h.name: h.ports[0].ip for h in topo.hosts.values()}
    out = {}
    for c in connections:
        if c.src == c.dst:
            out[c] = []
        elif topo.same_server(c.src, c.dst):
            out[c] = scaleup_path(topo, c)
        elif (ip[c.src], ip[c.dst]) in routes:
            out[c] = sorted(routes[ip[c.src], ip[c.dst]].directed_links())
        else:
            nic = topo.hosts[c.dst].ports[0]
            out[c] = sorted([(c.src, 0), topo.attachment(nic)])
    return out


def idle_step_us(emu, size=1024, iterations=100):
    """The latency floor, measured: per-step time (us) of a 2-rank halving-doubling allreduce of
    `size` bytes between the two hosts farthest apart, back to back, with nothing else running."""
    longest = max(deterministic_routes(emu.topo).values(), key=lambda r: (len(r.hops), r.src.ip, r.dst.ip))
    hosts = [longest.src.host, longest.dst.host]
    with Coordinator(HalvingDoubling.name, *emulation_launcher(emu, hosts), pacing=emu.topo.bytes_per_s,
                     label="idle step latency") as ranks:
        ranks.iterate(size // ELEMENT_BYTES, 0, 60, repeat=10)
        times = ranks.iterate(size // ELEMENT_BYTES, 1, 60, repeat=iterations)["times"]
    return round(float(np.mean(times)) / len(HalvingDoubling().steps(0, 2, 2)) * 1e6, 1)


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
