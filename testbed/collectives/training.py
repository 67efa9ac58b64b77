"""Training iterations: modelled computation, then an allreduce of the gradients, on every rank, back
to back, as data-parallel training does; or a SimAI workload replayed (``replay``), its layers'
computation slept and their collectives run; throughput in samples per second and how it scales.

The computation is not run (2 cores cannot stand in for accelerators): each rank waits
``compute_s`` before each allreduce. It is chosen so that communication is a realistic share of an
iteration at the smallest scale: ``compute_s = ideal allreduce time x (1 - share) / share``, the
ideal time being the gradient's bandwidth term at the link rate. Weak scaling: every rank keeps its
batch, so N ranks process N times the samples of one.
"""
import time

import numpy as np

from testbed.collectives.coordinator import Coordinator, emulation_launcher
from testbed.collectives.data import ELEMENT_BYTES
from testbed.collectives.placements import alltoall_rounds
from testbed.collectives.schedules import (
    BinomialTreeBroadcast,
    PairwiseAlltoall,
    PipelinedRingBroadcast,
    RecursiveDoubling,
    RecursiveHalving,
    Ring,
    RingAllgather,
    RingReduceScatter,
    RoundsAlltoall,
    XorAlltoall,
)
from testbed.collectives.workload import scaled_count
from testbed.fidelity.verdict import CpuMonitor
from testbed.routing import deterministic_routes


def compute_seconds(gradient_bytes, ranks, link_bytes, share):
    """The modelled computation per iteration that makes the ideal allreduce `share` of it."""
    ideal = 2 * gradient_bytes * (ranks - 1) / ranks / link_bytes
    return ideal * (1 - share) / share


def train(emu, schedule, hosts, gradient_bytes, compute_s, iterations, batch, label):
    """{"iteration_s" (mean), "samples_per_s", "times", "wrong"} and the CPU verdict of `iterations`
    training iterations after one of warmup."""
    count = gradient_bytes // ELEMENT_BYTES
    with Coordinator(schedule.name, *emulation_launcher(emu, hosts), pacing=emu.topo.bytes_per_s,
                     label=label) as ranks:
        warmup = ranks.iterate(count, 0, 120, compute_s=compute_s)
        with CpuMonitor() as cpu:
            timed = ranks.iterate(count, 1, 120, repeat=iterations, compute_s=compute_s)
    mean = float(np.mean(timed["times"]))
    return {"iteration_s": round(mean, 4), "samples_per_s": round(len(hosts) * batch / mean, 2),
            "times": [round(t, 4) for t in timed["times"]], "wrong": warmup["wrong"] + timed["wrong"],
            **cpu.result()}


def linear_ratio(throughput, ranks, base_throughput, base_ranks):
    """throughput(N) / ((N / N0) x throughput(N0)): 1.0 is perfectly linear scaling."""
    return throughput / (ranks / base_ranks * base_throughput)


def family(topo, routing_mode, schedule, hosts, collectives):
    """{collective: schedule} for a system whose allreduce is `schedule` on `hosts`: the same
    family for the rest (Ring: ring allgather, ring reduce-scatter, pipelined ring broadcast,
    pairwise alltoall; halving-doubling: recursive doubling and halving, binomial tree, xor
    alltoall), and with deterministic routes an alltoall in rounds that share no link
    (``placements.alltoall_rounds``)."""
    ring = isinstance(schedule, Ring)
    out = {"allreduce": schedule,
           "allgather": RingAllgather() if ring else RecursiveDoubling(),
           "reducescatter": RingReduceScatter() if ring else RecursiveHalving(),
           "broadcast": PipelinedRingBroadcast() if ring else BinomialTreeBroadcast(),
           "alltoall": PairwiseAlltoall() if ring else XorAlltoall()}
    if routing_mode == "deterministic" and "alltoall" in collectives:
        out["alltoall"] = RoundsAlltoall(alltoall_rounds(topo, hosts, deterministic_routes(topo)))
    return {c: out[c] for c in collectives}


def replay(emu, schedules, hosts, workload, scale, iterations, batch, label):
    """Iterations of a SimAI workload (``workload``) on `hosts`: per phase, its computation slept by
    every rank and then its collective, real, with `schedules` ({collective: schedule}), sizes
    times `scale`. Returns the iteration time (mean), samples per second, the computation per
    iteration, the exposed communication (iteration - computation) and each collective type's
    share of the communication, #wrong, and the CPU verdict."""
    kinds = list(schedules)
    index = {c: k for k, c in enumerate(kinds)}
    ranks = len(hosts)
    with Coordinator([schedules[c] for c in kinds], *emulation_launcher(emu, hosts), pacing=emu.topo.bytes_per_s,
                     label=label) as coordinator:
        def one(iteration):
            comm, wrong, pending, started = dict.fromkeys(kinds, 0.0), 0, 0.0, time.monotonic()
            for _, _, phase in workload.sequence():
                pending += phase.compute_ns / 1e9
                if not (phase.collective and phase.size):
                    continue
                count = scaled_count(phase.size, scale, ranks)
                result = coordinator.iterate(count, iteration, 120, compute_s=pending,
                                             schedule=index[phase.collective])
                comm[phase.collective] += max(0.0, result["time"] - pending)
                wrong += result["wrong"]
                pending = 0.0
            time.sleep(pending + sum(layer.update_ns for layer in workload.layers) / 1e9)
            return time.monotonic() - started, comm, wrong
        _, _, wrong = one(0)                             # warmup: connections and windows
        with CpuMonitor() as cpu:
            timed = [one(i + 1) for i in range(iterations)]
    mean = float(np.mean([t for t, _, _ in timed]))
    comm = {c: float(np.mean([m[c] for _, m, _ in timed])) for c in kinds}
    total = sum(comm.values()) or 1.0
    compute = workload.compute_s()
    return {"iteration_s": round(mean, 4), "samples_per_s": round(ranks * batch / mean, 2),
            "times": [round(t, 4) for t, _, _ in timed], "compute_s": round(compute, 4),
            "exposed_comm_s": round(mean - compute, 4),
            "comm_share": {c: round(v / total, 3) for c, v in comm.items()},
            "wrong": wrong + sum(w for _, _, w in timed), **cpu.result()}
