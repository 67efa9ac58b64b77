"""The incast probe: k senders push a message to one receiver at once (parameter-server style), for
each fan-in k, while the last hop's queue is measured two ways at once: the switch port's FIFO
(backlog and drops, polled over netlink every 2 ms) and scapy probes, small timestamped UDP packets
sent every few ms from a host on the receiver's switch through the same port, whose one-way delay
above the smallest is their time in the queue (delay x rate = backlog); or the FIFO alone, with no
probe in it."""
import time

from testbed.emulation.processes import expect_all, stop_all
from testbed.errors import TestbedError
from testbed.probes.queues import QueueSampler
from testbed.topology import interface

PORT = 7300


def roles(topo, fanins):
    """(receiver, probe host, senders in the order they join): the probe host shares the
    receiver's switch, so its probes meet only the last-hop queue; senders come from the other
    switches in turn."""
    hosts = sorted(topo.hosts.values(), key=lambda h: h.index)
    receiver = hosts[0]
    home = topo.attachment(receiver.ports[0])[0]
    near = [h for h in hosts[1:] if topo.attachment(h.ports[0])[0] == home]
    if not near:
        raise TestbedError(f"{topo.name}: the receiver's switch has no second host for the probes")
    by_switch = {}
    for h in hosts[1:]:
        if h is not near[0]:
            by_switch.setdefault(topo.attachment(h.ports[0])[0], []).append(h)
    senders = []
    while any(by_switch.values()):
        for switch in sorted(by_switch, key=lambda s: (s == home, s)):
            if by_switch[switch]:
                senders.append(by_switch[switch].pop(0))
    if max(fanins) > len(senders):
        raise TestbedError(f"{topo.name} has {len(senders)} possible senders: use --fanin up to "
                           f"{len(senders)}, or a topology with more hosts")
    return receiver, near[0], senders


def one_round(emu, receiver, prober, senders, size, interval, congestion_control=None):
    """Completion time of each sender, the queue samples, the probes of one round, the CPU verdict
    and each sender's {"retransmits", "timeouts"}. interval: the probes' (None: no probes, the queue
    read from the port's FIFO alone: a probe shares the FIFO it measures, and at a few Mbit/s several
    probes queue per data frame). congestion_control: the senders' and the receiver's (None: the
    run's, --cc, else the hosts' default)."""
    cc = emu.kernel_congestion_control(congestion_control or emu.congestion_control) or ""
    dst = receiver.ports[0]
    bottleneck = interface(*emu.topo.attachment(dst))
    duration = 1.0 + 2 * len(senders) * size / emu.topo.bytes_per_s
    server = emu.program(receiver.name, "incast_endpoint", "server", dst.ip, PORT, len(senders), size, cc,
                         name="incast receiver")
    programs, probing = [server], interval is not None
    if probing:
        probe_rx = emu.program(receiver.name, "queue_probe", "recv", dst.intf, name="probe receiver")
        probe_tx = emu.program(prober.name, "queue_probe", "send", dst.ip, interval, duration, name="probe sender")
        programs += [probe_rx, probe_tx]
    probes = []
    try:
        for program in programs:    # scapy takes a second or two to load
            program.expect("ready", 60)
        clients = [emu.program(s.name, "incast_endpoint", "client", dst.ip, PORT, i, size, cc,
                               name=f"incast sender {i} ({s.name})") for i, s in enumerate(senders)]
        programs += clients
        for client in clients:
            client.expect("ready", 30)
        start = time.monotonic() + 0.5
        if probing:
            probe_tx.send(start=start - 0.3)
        for client in clients:
            client.send(start=start)
        with QueueSampler([bottleneck], netns=emu.port_netns) as queue, emu.cpu_monitor() as cpu:
            done = server.expect("done", duration + 60)["done"]
            sent = [client.expect("sent", 30) for client in clients]
            if probing:
                expect_all([probe_tx], "sent", duration + 30)
                probe_rx.send(stop=True)
                probes = probe_rx.expect("probes", 60)["probes"]
    finally:
        stop_all(programs, grace=2)
    tcp = [{"retransmits": s["retransmits"], "timeouts": s["timeouts"]} for s in sent]
    return [t - start for t in done.values()], queue, bottleneck, probes, cpu.result(), tcp


def agreement(probes, queue, ifname, link_bytes):
    """Probe-estimated backlog against the FIFO's, per probe: [(sent, probe bytes, qdisc bytes)].
    A probe that left at `sent` met the backlog the FIFO held when it arrived there (after the
    smallest delay, the path without queueing)."""
    if not probes:
        return []
    base = min(r - s for _, s, r in probes)
    return [(s, (r - s - base) * link_bytes, queue.backlog_at(ifname, s + base)) for _, s, r in probes]
