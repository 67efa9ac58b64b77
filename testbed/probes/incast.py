"""The incast probe: k senders push a message to one receiver at once (parameter-server style), for
each fan-in k, while the last hop's queue is measured two ways at once: the switch port's FIFO
(backlog and drops, polled over netlink every 2 ms) and scapy probes, small timestamped UDP packets
sent every few ms from a host on the receiver's switch through the same port, whose one-way delay
above the smallest is their time in the queue (delay x rate = backlog)."""
import time

import numpy as np

from testbed.emulation.programs import expect_all, stop_all
from testbed.errors import TestbedError
from testbed.fidelity.verdict import CpuMonitor, flag
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


def one_round(emu, receiver, prober, senders, size, interval):
    """Completion time of each sender, the queue samples and the probes of one round."""
    dst = receiver.ports[0]
    bottleneck = interface(*emu.topo.attachment(dst))
    duration = 1.0 + 2 * len(senders) * size / emu.topo.bytes_per_s
    server = emu.program(receiver.name, "incast_endpoint", "server", dst.ip, PORT, len(senders), size,
                         name="incast receiver")
    probe_rx = emu.program(receiver.name, "queue_probe", "recv", dst.intf, name="probe receiver")
    probe_tx = emu.program(prober.name, "queue_probe", "send", dst.ip, interval, duration, name="probe sender")
    programs = [server, probe_rx, probe_tx]
    try:
        for program in programs:    # scapy takes a second or two to load
            program.expect("ready", 60)
        clients = [emu.program(s.name, "incast_endpoint", "client", dst.ip, PORT, i, size,
                               name=f"incast sender {i} ({s.name})") for i, s in enumerate(senders)]
        programs += clients
        for client in clients:
            client.expect("ready", 30)
        start = time.monotonic() + 0.5
        probe_tx.send(start=start - 0.3)
        for client in clients:
            client.send(start=start)
        with QueueSampler([bottleneck], netns=emu.port_netns) as queue, CpuMonitor() as cpu:
            done = server.expect("done", duration + 60)["done"]
            expect_all([probe_tx], "sent", duration + 30)
            probe_rx.send(stop=True)
            probes = probe_rx.expect("probes", 60)["probes"]
    finally:
        stop_all(programs, grace=2)
    return [t - start for t in done.values()], queue, bottleneck, probes, cpu.result()


def agreement(probes, queue, ifname, link_bytes):
    """Probe-estimated backlog against the FIFO's, per probe: [(sent, probe bytes, qdisc bytes)].
    A probe that left at `sent` met the backlog the FIFO held when it arrived there (after the
    smallest delay, the path without queueing)."""
    if not probes:
        return []
    base = min(r - s for _, s, r in probes)
    return [(s, (r - s - base) * link_bytes, queue.backlog_at(ifname, s + base)) for _, s, r in probes]


HEADER = ("# fan-in  rounds  max queue(pkts)  max backlog(B)  drops  p50 done(ms)  p99 done(ms)  "
          "ideal(ms)  probe-qdisc median |diff| (frames)  emulator")


def run_fanins(emu, fanins, size, rounds, interval, progress=print, on_fanin=None):
    """One row per fan-in (queue depth, drops, completion p50/p99 against the ideal, how well probes
    and FIFO agree, the verdict) and the time series of every queue sample and probe;
    on_fanin(row, its part of the series) is called as each fan-in is measured."""
    topo = emu.topo
    link_bytes = topo.bytes_per_s
    frame = emu.mtu + 14
    receiver, prober, senders = roles(topo, fanins)
    rows, series = [], []
    progress(f"# receiver {receiver.name}, probes from {prober.name}, {size} B per sender, "
             f"queue limit {topo.queue} packets of up to {frame} B")
    progress(HEADER)
    for k in fanins:
        done, max_q, max_b, drops, diffs, bottleneck, mine = [], 0, 0, 0, [], False, []
        peak_cores = 0.0
        for r in range(rounds):
            completion, queue, port, probes, cpu = one_round(emu, receiver, prober, senders[:k], size, interval)
            done += completion
            max_q, max_b = max(max_q, queue.max_qlen(port)), max(max_b, queue.max_backlog(port))
            drops += queue.drops(port)
            pairs = agreement(probes, queue, port, link_bytes)
            diffs += [abs(p - q) / frame for _, p, q in pairs]
            bottleneck |= cpu["emulator_bottleneck"]
            peak_cores = max(peak_cores, cpu["ovs_vswitchd_cores"])
            mine += [{"fanin": k, "round": r, "kind": "qdisc", "time": t, "packets": n, "bytes": b, "drops": d}
                     for t, n, b, d in queue.samples[port]]
            mine += [{"fanin": k, "round": r, "kind": "probe", "time": s, "packets": "", "bytes": round(p),
                      "drops": ""} for s, p, _ in pairs]
        row = {"fanin": k, "rounds": rounds, "max_queue_packets": max_q, "max_backlog_bytes": max_b,
               "drops": drops, "p50_done_ms": round(float(np.percentile(done, 50)) * 1e3, 1),
               "p99_done_ms": round(float(np.percentile(done, 99)) * 1e3, 1),
               "ideal_ms": round(k * size / link_bytes * 1e3, 1),
               "probe_qdisc_median_diff_frames": round(float(np.median(diffs)), 2) if diffs else None,
               "probes": len(diffs), "emulator_bottleneck": bottleneck, "ovs_vswitchd_cores": peak_cores}
        rows.append(row)
        series += mine
        if on_fanin:
            on_fanin(row, mine)
        progress(f"  {k:6d}  {rounds:6d}  {max_q:15d}  {max_b:14d}  {drops:5d}  {row['p50_done_ms']:12.1f}  "
                 f"{row['p99_done_ms']:12.1f}  {row['ideal_ms']:9.1f}  {row['probe_qdisc_median_diff_frames']!s:>34}  "
                 f"{flag(row)}")
    return rows, series
