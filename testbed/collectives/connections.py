"""The TCP connections a workload opens, in the order it opens them, numbered by a hash draw
(``routing.hashing.Draw``): the same list tells the emulated programs which source port (and, for
round-robin, which NIC port) each connection takes, and tells the flow model what the emulation
ran.

- The ranks of a collective: each rank connects to every peer its schedule names, ``streams``
  connections each, peers in ascending order (``testbed.programs.rank``); rank r listens on its
  address's port. A step's message to a peer is striped over that rank's connections to it.
- Long-lived flows between pairs of hosts: one iperf3 test per connection, each with a server of
  its own on IPERF_BASE_PORT + its number.
"""
from testbed.collectives.data import ELEMENT_BYTES
from testbed.collectives.schedules import rounds
from testbed.routing.hashing import Connection

IPERF_BASE_PORT = 5201


def schedule_peers(schedule, rank, ranks):
    """The ranks `rank` exchanges data with, ascending: the peers it opens connections to."""
    return sorted({p for s in schedule.steps(rank, ranks, ranks * 4) for p in (s.send_to, s.recv_from)
                   if p is not None})


def rank_connections(schedule, hosts, ports, streams, draw=None):
    """{rank: {peer: [Connection per stream]}} for ranks on hosts[rank] listening on ports[rank]
    (schedule: one, or a list that the ranks run on the same connections: every peer of any);
    without a draw the kernel picks the source ports (0 here, the stream in ``turn``)."""
    schedules = schedule if isinstance(schedule, (list, tuple)) else [schedule]
    ranks, out = len(hosts), {}
    for rank in range(ranks):
        peers = sorted({p for s in schedules for p in schedule_peers(s, rank, ranks)})
        out[rank] = {peer: [draw.connection(hosts[rank], hosts[peer], ports[peer]) if draw else
                            Connection(hosts[rank], hosts[peer], 0, ports[peer], turn=k) for k in range(streams)]
                     for peer in peers}
    return out


def source_ports(connections):
    """Each rank's source port per connection, for its config: {rank: {peer: [port per stream]}}."""
    return {rank: {str(peer): [c.sport for c in conns] for peer, conns in peers.items()}
            for rank, peers in connections.items()}


def flow_connections(pairs, streams, draw):
    """[[Connection per stream] per (source host, destination host) pair]."""
    out, number = [], 0
    for src, dst in pairs:
        conns = []
        for _ in range(streams):
            conns.append(draw.connection(src, dst, IPERF_BASE_PORT + number))
            number += 1
        out.append(conns)
    return out


def step_transfers(schedule, connections, count):
    """[(how many steps, {Connection: bytes})]: in each step every rank's message to its step's
    peer, striped over its connections to it (as the rank stripes it, nearly equal parts); a
    schedule whose steps all move the same (a Ring's chunk to the next rank, at most) is one
    entry for all of them."""
    ranks = len(connections)
    if hasattr(schedule, "uniform_step"):
        moved = {}
        for r in range(ranks):
            steps, peer, elements = schedule.uniform_step(r, ranks, count)
            stripe(moved, connections[r][peer], ELEMENT_BYTES * elements)
        return [(steps, moved)]
    plans = [schedule.steps(r, ranks, count) for r in range(ranks)]
    out = []
    for step in rounds(schedule, ranks, count):
        moved = {}
        for r, d, i, _ in step:
            lo, hi = plans[r][i].send
            stripe(moved, connections[r][d], ELEMENT_BYTES * (hi - lo))
        out.append((1, moved))
    return out


def stripe(moved, conns, size):
    for k, conn in enumerate(conns):
        part = size * (k + 1) // len(conns) - size * k // len(conns)
        if part:
            moved[conn] = moved.get(conn, 0) + part
