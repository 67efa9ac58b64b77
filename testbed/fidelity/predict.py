"""What a workload should achieve on a fabric, given where its connections went: its connections'
paths (captured in an emulation, or computed from their 5-tuples by ``routing.hashing.Placer``)
through ``flowmodel``.

- Long-lived flows between pairs: each pair's goodput over its NIC's capacity (a bonded NIC's
  ports together), and the rate every directed link carries.
- A collective: the time of each step as the fluid model's (every rank's message to its step's
  peer, striped over its connections, all at once; the step ends with its last transfer), summed
  over the steps; TCP and IP headers added. Per-message latency is left out: at the sizes these
  comparisons use (MiB at Mbit/s) it is under 1% of a step. Several Rings at once (Multi-AllReduce)
  share one fluid run per step, each ending with its own last transfer: the model keeps their
  steps aligned, where real rings drift apart.
"""
from testbed.collectives.connections import step_transfers
from testbed.fidelity.flowmodel import completion, max_min, payload_fraction


def link_rates(topo):
    """{(node, port): bytes/s} for the sending end of every directed link."""
    return {end: link.bytes_per_s for link in topo.links for end in link.ends()}


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


def collective_times(topo, collectives, paths, mtu):
    """Seconds each collective of [(schedule, {rank: {peer: [Connection]}}, count)] takes when they
    all run at once (one alone: any schedule; several: Rings, ``uniform_step``); paths for every
    connection that carries data."""
    capacity = link_rates(topo)
    if len(collectives) == 1:
        schedule, connections, count = collectives[0]
        total = sum(steps * completion({c: paths[c] for c in moved}, capacity, moved)[0]
                    for steps, moved in step_transfers(schedule, connections, count))
        return [total / payload_fraction(mtu)]
    parts = [step_transfers(*collective) for collective in collectives]
    if any(len(p) != 1 for p in parts):
        raise ValueError("only collectives whose steps all move the same (Rings) run together in the model")
    moved = {c: size for ((_, mine),) in parts for c, size in mine.items()}
    _, ends = completion({c: paths[c] for c in moved}, capacity, moved)
    return [steps * max(ends[c] for c in mine) / payload_fraction(mtu) for ((steps, mine),) in parts]


def captured_paths(topo, connections, captured):
    """{Connection: [link]} for the connections a capture saw carry data, from its per-5-tuple
    paths (``probes.loads.Observation.paths``); the links sorted, as the model needs no order."""
    ip = {h.name: h.ports[0].ip for h in topo.hosts.values()}
    out = {}
    for c in connections:
        links = captured.get((ip[c.src], c.sport, ip[c.dst], c.dport))
        if links:
            out[c] = sorted(links)
    return out


def paths_as_placed(placer, paths):
    """How many of the captured paths ({Connection: [link]}) are the links the placer computes
    from the 5-tuple: the emulation forwarding as the model hashes."""
    return sum(1 for c, links in paths.items() if sorted(placer.path(c)) == links)
