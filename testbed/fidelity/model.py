"""What a collective should take on this emulated fabric, to tell a measured time from the
emulator's contention.

A step of a small message is latency-bound: its bytes cross an idle shaped link at once (HTB lets a
frame through), so its time is the forwarding and wake-up latency of the emulated path, measured once
on an idle fabric (``idle_step_us``). A step of a large message takes its bytes over the link rate,
times the most flows that share a link in that step (the routes say how many). ``model_us`` adds,
step by step, whichever is larger. A result near the model was measured; one far above it was made
by the emulator: ranks and ovs-vswitchd waiting for the 2 cores (``judge``), whether or not the CPU
counters reached their saturation thresholds (at 64 ranks HD's small steps took 1.4-2.2 times the
model with the machine 85-89% busy).
"""
import numpy as np

from testbed.collectives.coordinator import Coordinator, emulation_launcher
from testbed.collectives.data import ELEMENT_BYTES
from testbed.collectives.schedules import HalvingDoubling, rounds
from testbed.routing import deterministic_routes, link_load

LATENCY_SLACK = 1.5       # a latency-bound result up to this many times the model is latency, measured
BANDWIDTH_SLACK = 1 / 0.9  # a bandwidth-bound one within 0.9 of the model's rate is link-bound


def idle_step_us(emu, size=1024, iterations=100):
    """Per-step time (us) of a 2-rank halving-doubling allreduce of `size` bytes between the two
    hosts farthest apart, back to back, with nothing else running."""
    longest = max(deterministic_routes(emu.topo).values(), key=lambda r: (len(r.hops), r.src.ip, r.dst.ip))
    hosts = [longest.src.host, longest.dst.host]
    with Coordinator(HalvingDoubling.name, *emulation_launcher(emu, hosts), pacing=emu.topo.bytes_per_s,
                     label="idle step latency") as ranks:
        ranks.iterate(size // ELEMENT_BYTES, 0, 60, repeat=10)
        times = ranks.iterate(size // ELEMENT_BYTES, 1, 60, repeat=iterations)["times"]
    return round(float(np.mean(times)) / len(HalvingDoubling().steps(0, 2, 2)) * 1e6, 1)


def model_us(schedule, hosts, topo, routes, count, idle_us):
    """(time, latency-bound?) for one collective, played round by round as the ranks meet
    (``schedules.rounds``: a step for Ring and HD, a pipelined broadcast's wavefront): per round
    the idle step latency or its largest message over the link rate times the most flows on one
    link (1 where routes are unknown), whichever is larger; latency-bound when the latency parts
    outweigh the transfers. (Ranks that share a host reach each other inside it, faster than the
    model says: it is an upper bound there.)"""
    ips = [topo.hosts[h].ports[0].ip for h in hosts]
    plans = [schedule.steps(r, len(hosts), count) for r in range(len(hosts))]
    transfers = []
    for moved in rounds(schedule, len(hosts), count):
        pairs = [(ips[r], ips[d]) for r, d, _, _ in moved if ips[r] != ips[d]]
        share = max(link_load(routes, pairs).values(), default=1) if routes and pairs else 1
        largest = max(plans[r][i].send[1] - plans[r][i].send[0] for r, _, i, _ in moved)
        transfers.append(ELEMENT_BYTES * largest * share / topo.bytes_per_s * 1e6)
    total = sum(max(idle_us, t) for t in transfers)
    return total, idle_us * len(transfers) >= sum(transfers)


def judge(row, cpu, model, drops=0):
    """The row's verdict: the emulator was the bottleneck when the result strayed from the model by
    more than its slack (model: (time, latency-bound?) from model_us), or without a model when the
    CPU was saturated. The model shares links as a lossless fabric would; a row past its slack while
    the switch queues dropped packets (`drops`, during the row) and the CPU was not saturated was
    slowed by TCP recovering from that loss (plain HD's flows that share a link at 1 MiB on 64
    ranks: 1772 of 94000 segments resent, 15 retransmission timeouts of 200 ms or more in 3
    allreduces): the emulated fabric's congestion, measured, not the emulator's."""
    saturated = cpu["emulator_bottleneck"]
    if model is None:
        return dict(cpu, cpu_saturated=saturated)
    expected, latency_bound = model
    ratio = row["time_us"] / expected
    slack = LATENCY_SLACK if latency_bound else BANDWIDTH_SLACK
    congestion = ratio > slack and drops > 0 and not saturated
    return dict(cpu, cpu_saturated=saturated, model_us=round(expected, 1), time_over_model=round(ratio, 2),
                latency_bound=latency_bound, queue_drops=drops, congestion=congestion,
                emulator_bottleneck=ratio > slack and not congestion)
