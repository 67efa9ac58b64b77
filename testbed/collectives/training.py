"""Training iterations: modelled computation, then an allreduce of the gradients, on every rank, back
to back, as data-parallel training does; throughput in samples per second and how it scales. (A
SimAI workload, its layers' computation slept and their collectives run in their groups, is
replayed by ``api.jobs``.)

The computation is not run (2 cores cannot stand in for accelerators): each rank waits
``compute_s`` before each allreduce. It is chosen so that communication is a realistic share of an
iteration at the smallest scale: ``compute_s = ideal allreduce time x (1 - share) / share``, the
ideal time being the gradient's bandwidth term at the link rate. Weak scaling: every rank keeps its
batch, so N ranks process N times the samples of one.
"""

import numpy as np

from testbed.collectives.connections import rank_connections, source_ports
from testbed.collectives.coordinator import Coordinator, emulation_launcher
from testbed.collectives.data import ELEMENT_BYTES


def compute_seconds(gradient_bytes, ranks, link_bytes, share):
    """The modelled computation per iteration that makes the ideal allreduce `share` of it."""
    ideal = 2 * gradient_bytes * (ranks - 1) / ranks / link_bytes
    return ideal * (1 - share) / share


def train(emu, schedule, hosts, gradient_bytes, compute_s, iterations, batch, label, draw=None):
    """{"iteration_s" (mean), "samples_per_s", "times", "wrong"} and the CPU verdict of `iterations`
    training iterations after one of warmup; with a hash draw (``routing.hashing.Draw``), the
    connections take its source ports."""
    count = gradient_bytes // ELEMENT_BYTES
    addresses, launch = emulation_launcher(emu, hosts)
    ports = source_ports(rank_connections(schedule, hosts, [p for _, p in addresses], 1, draw)) if draw else None
    with Coordinator(schedule.name, addresses, launch, pacing=emu.topo.bytes_per_s, label=label,
                     source_ports=ports) as ranks:
        warmup = ranks.iterate(count, 0, 120, compute_s=compute_s)
        with emu.cpu_monitor() as cpu:
            timed = ranks.iterate(count, 1, 120, repeat=iterations, compute_s=compute_s)
    mean = float(np.mean(timed["times"]))
    return {"iteration_s": round(mean, 4), "samples_per_s": round(len(hosts) * batch / mean, 2),
            "times": [round(t, 4) for t in timed["times"]], "wrong": warmup["wrong"] + timed["wrong"],
            **cpu.result()}


def linear_ratio(throughput, ranks, base_throughput, base_ranks):
    """throughput(N) / ((N / N0) x throughput(N0)): 1.0 is perfectly linear scaling."""
    return throughput / (ranks / base_ranks * base_throughput)
