"""Incast: k senders push a message to one receiver at once (parameter-server style), for each k.

The queue builds at the last hop, the switch port facing the receiver. It is measured two ways
at once: the port's FIFO (backlog and drops, polled over netlink every 2 ms) and scapy probes,
small timestamped UDP packets sent every few ms from a host on the receiver's switch through the
same port, whose one-way delay above the smallest is their time in the queue (delay x rate =
backlog). Per fan-in: queue depth, drops, completion time p50/p99, and how well the two agree.
"""
import json
import subprocess
import sys
import time

import numpy as np

from scenarios.options import add_fabric_arguments
from testbed import plots
from testbed.controller import PROJECT
from testbed.cpu import CpuMonitor
from testbed.emulation import Emulation
from testbed.errors import TestbedError
from testbed.queues import QueueSampler
from testbed.results import write_csv, write_json
from testbed.routing import deterministic_routes
from testbed.topologies import from_spec

NAME = "incast"
HELP = "k-to-1 transfers for each fan-in k: last-hop queue depth (qdisc and scapy probes), drops, completion times"
PORT = 7300
PYTHON = [sys.executable, "-m"]


def add_arguments(parser):
    add_fabric_arguments(parser, topology="leafspine:4,4,5")
    parser.add_argument("--fanin", default="2,4,8,15", help="comma-separated sender counts (default %(default)s)")
    parser.add_argument("--bytes", type=int, default=256 * 1024, help="bytes per sender (default %(default)s)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds per fan-in (default %(default)s)")
    parser.add_argument("--probe-interval", type=float, default=0.005,
                        help="seconds between probe packets (default %(default)s)")


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


def one_round(emu, receiver, prober, senders, size, interval, link_bytes):
    """Completion time of each sender, the queue samples and the probes of one round."""
    dst = receiver.ports[0]
    bottleneck = "-eth".join(map(str, emu.topo.attachment(dst)))
    server = emu.popen(receiver.name, PYTHON + ["testbed.incast_flow", "server", dst.ip, str(PORT),
                                                str(len(senders)), str(size)],
                       cwd=PROJECT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    duration = 1.0 + 2 * len(senders) * size / link_bytes
    probe_rx = emu.popen(receiver.name, PYTHON + ["testbed.incast_probe", "recv", dst.intf], cwd=PROJECT,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    probe_tx = emu.popen(prober.name, PYTHON + ["testbed.incast_probe", "send", dst.ip, str(interval), str(duration)],
                         cwd=PROJECT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                         text=True)
    procs = [server, probe_rx, probe_tx]
    try:
        for proc, word in ((server, "listening"), (probe_rx, "ready"), (probe_tx, "ready")):
            line = proc.stdout.readline()   # scapy takes a second or two to load
            if word not in line:
                raise TestbedError(f"incast: {word!r} expected, got: {line.strip()}")
        start = time.monotonic() + 1.0
        procs += [emu.popen(s.name, PYTHON + ["testbed.incast_flow", "client", dst.ip, str(PORT), str(i),
                                              str(size), str(start)], cwd=PROJECT,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                  for i, s in enumerate(senders)]
        probe_tx.stdin.write(f"{start - 0.3}\n")
        probe_tx.stdin.flush()
        with QueueSampler(bottleneck) as queue, CpuMonitor() as cpu:
            out = server.communicate(timeout=duration + 60)[0]
            probe_tx.wait(timeout=duration + 30)
            probes_out = probe_rx.communicate("stop\n", timeout=60)[0]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
    lines = [json.loads(line) for line in out.splitlines() if line.startswith('{"done"')]
    if not lines:
        raise TestbedError(f"incast receiver failed: {out.strip()[-300:]}")
    completion = [t - start for t in lines[-1]["done"].values()]
    probes = json.loads(probes_out.strip().splitlines()[-1])
    return completion, queue, probes, cpu.result()


def agreement(probes, queue, link_bytes):
    """Probe-estimated backlog against the FIFO's, per probe: [(sent, probe bytes, qdisc bytes)].
    A probe that left at `sent` met the backlog the FIFO held when it arrived there (after the
    smallest delay, the path without queueing)."""
    if not probes:
        return []
    base = min(r - s for _, s, r in probes)
    return [(s, (r - s - base) * link_bytes, queue.backlog_at(s + base)) for _, s, r in probes]


def measure(emu, fanins, size, rounds, interval, progress=print):
    topo = emu.topo
    link_bytes = topo.rate * 1e6 / 8
    frame = emu.mtu + 14
    receiver, prober, senders = roles(topo, fanins)
    rows, series = [], []
    progress(f"# receiver {receiver.name}, probes from {prober.name}, {size} B per sender, "
             f"queue limit {topo.queue} packets of up to {frame} B")
    progress("# fan-in  rounds  max queue(pkts)  max backlog(B)  drops  p50 done(ms)  p99 done(ms)  "
             "ideal(ms)  probe-qdisc median |diff| (frames)  emulator")
    for k in fanins:
        done, max_q, max_b, drops, diffs, bottleneck = [], 0, 0, 0, [], False
        for r in range(rounds):
            completion, queue, probes, cpu = one_round(emu, receiver, prober, senders[:k], size, interval, link_bytes)
            done += completion
            max_q, max_b = max(max_q, queue.max_qlen), max(max_b, max((s[2] for s in queue.samples), default=0))
            drops += queue.drops
            pairs = agreement(probes, queue, link_bytes)
            diffs += [abs(p - q) / frame for _, p, q in pairs]
            bottleneck |= cpu["emulator_bottleneck"]
            series += [{"fanin": k, "round": r, "kind": "qdisc", "time": t, "packets": n, "bytes": b, "drops": d}
                       for t, n, b, d in queue.samples]
            series += [{"fanin": k, "round": r, "kind": "probe", "time": s, "packets": "", "bytes": round(p),
                        "drops": ""} for s, p, _ in pairs]
        row = {"fanin": k, "rounds": rounds, "max_queue_packets": max_q, "max_backlog_bytes": max_b,
               "drops": drops, "p50_done_ms": round(float(np.percentile(done, 50)) * 1e3, 1),
               "p99_done_ms": round(float(np.percentile(done, 99)) * 1e3, 1),
               "ideal_ms": round(k * size / link_bytes * 1e3, 1),
               "probe_qdisc_median_diff_frames": round(float(np.median(diffs)), 2) if diffs else None,
               "probes": len(diffs), "emulator_bottleneck": bottleneck}
        rows.append(row)
        progress(f"  {k:6d}  {rounds:6d}  {max_q:15d}  {max_b:14d}  {drops:5d}  {row['p50_done_ms']:12.1f}  "
                 f"{row['p99_done_ms']:12.1f}  {row['ideal_ms']:9.1f}  {row['probe_qdisc_median_diff_frames']!s:>34}  "
                 f"{'BOTTLENECK' if bottleneck else 'ok'}")
    return rows, series


def run(args, out):
    fanins = [int(k) for k in args.fanin.split(",") if k.strip()]
    if not fanins or min(fanins) < 1 or args.bytes < 1 or args.rounds < 1 or args.probe_interval <= 0:
        raise TestbedError("need --fanin of positive counts, --bytes >= 1, --rounds >= 1, --probe-interval > 0")
    topo = from_spec(args.topology, rate=args.rate, queue=args.queue)
    roles(topo, fanins)
    started = time.monotonic()
    with Emulation(topo, deterministic_routes(topo), out, mtu=args.mtu) as emu:
        rows, series = measure(emu, fanins, args.bytes, args.rounds, args.probe_interval)
    write_csv(out / "incast.csv", rows)
    write_csv(out / "incast_timeseries.csv", series)
    write_json(out / "incast.json", {"scenario": NAME, "topology": topo.name, "rate_mbit": topo.rate,
                                     "queue": topo.queue, "mtu": args.mtu, "rows": rows,
                                     "seconds": round(time.monotonic() - started, 1)})
    plots.queue_over_time(series, out / "queue.png", topo.queue)
    print(f"results: {out / 'incast.csv'} {out / 'incast_timeseries.csv'} {out / 'incast.json'} {out / 'queue.png'}")
    return 0
