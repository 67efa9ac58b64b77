"""Training jobs on a running fabric, one or several at once: each a workload (a SimAI workload file,
or a synthetic data-parallel job) whose ranks are placed on hosts, replayed iteration by iteration
with every collective in the group its phase names (``collectives.parallelism``), timed as
SimAI's simulator times a ``HYBRID_TRANSFORMER_FWD_IN_BCKWD`` workload (its Workload.cc):

- forward pass, layer by layer: the layer waits for its weight gradient's collective of the
  iteration before (issued without blocking), computes, then runs its forward collective, blocking;
  then the pipeline's stages pass their activations to the next stage (``PipelineForward``);
- backward pass, last layer first: input-gradient compute and its collective, blocking; then
  weight-gradient compute and its collective, issued without blocking: it runs while the backward
  pass goes on, in its group's order of issue (first in, first out), and each group runs one
  collective at a time; after the last layer the stages pass the gradients back
  (``PipelineBackward``); then the weight updates' compute;
- with pipeline parallelism, the pipeline's traffic per micro-batch: each stage passes pp_comm
  bytes to the next one for each of its ga x vpp micro-batches after the forward pass, and as many
  back after the backward pass, each send issued without blocking (in a 1F1B schedule a
  micro-batch's send overlaps other micro-batches' compute; SimAI's analytical mode counts the
  pipeline's traffic as hidden, ``-pp_o 1``), and the iteration waits at its end, after the
  bubble, only for what is still in flight: that wait is PP's exposed time;
- the pipeline's bubble, as SimAI's analytical mode counts it (``Layer.cc``): the stage's forward,
  input-gradient and weight-gradient compute and the waits for its forward and input-gradient
  collectives, the embedding layer left out, times (pp - 1) / (ga x vpp), added at the end of the
  iteration (the stages run side by side here, not in a 1F1B schedule); activation recomputation
  (``checkpoints``) is refused.

A group whose ranks all sit in one server (a tensor-parallel group, placed on one server's
accelerators) does not cross the fabric: it runs over the server's scale-up domain (NVLink), whose
time is modelled, not emulated: its bytes over the scale-up rate with the collective's bus factor
(nccl-tests' busbw at the NVLink rate). Emulating it would offer the software switch NVLink's rate
scaled as the fabric is, many times every NIC's together, which this machine cannot carry
faithfully. Every other group's collective runs for real between the hosts, checked against numpy
(#wrong), all groups of a phase at once. Each job runs in a thread of its own; jobs started
together share the fabric.

Rank r listens on PORT + STRIDE x (its communicator's number among all the jobs'), so a host can be
a rank of several groups and of several jobs.
"""
import contextlib
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from testbed.collectives.connections import rank_connections, source_ports
from testbed.collectives.coordinator import AllreduceError, Coordinator, emulation_launcher
from testbed.collectives.data import COLLECTIVES, ELEMENT_BYTES
from testbed.collectives.parallelism import KINDS, group_kind
from testbed.collectives.placements import nccl_ring
from testbed.collectives.schedules import (
    HalvingDoubling,
    PairwiseAlltoall,
    PipelineBackward,
    PipelinedRingBroadcast,
    PipelineForward,
    RecursiveDoubling,
    RecursiveHalving,
    Ring,
    RingAllgather,
    RingReduceScatter,
    SendRecv,
    XorAlltoall,
)
from testbed.collectives.workload import EMBEDDING, scaled_count
from testbed.errors import TestbedError
from testbed.probes.collisions import LinkCapture
from testbed.probes.loads import connection_paths
from testbed.runs.sweep import check_memory
from testbed.runs.together import PORT, STRIDE

PIPELINE = {"pipeline_forward": PipelineForward, "pipeline_backward": PipelineBackward}
PIPELINE_PHASES = ("pp_forward", "pp_backward")
PIPELINE_LAYER = -1       # the layer index of the pipeline's sends: waited for at the iteration's end
FAMILIES = {"ring": {"allreduce": Ring, "allgather": RingAllgather, "reducescatter": RingReduceScatter,
                     "alltoall": PairwiseAlltoall, "broadcast": PipelinedRingBroadcast, "sendrecv": SendRecv,
                     **PIPELINE},
            "hd": {"allreduce": HalvingDoubling, "allgather": RecursiveDoubling, "reducescatter": RecursiveHalving,
                   "alltoall": XorAlltoall, "broadcast": PipelinedRingBroadcast, "sendrecv": SendRecv, **PIPELINE}}
NVLINK_GBIT = 3600        # H100's NVLink: 18 links of 25 GB/s each way


@dataclass(frozen=True)
class Step:
    """One collective of an iteration: its label, its layer's index (-1: the pipeline's passes), its
    pass (forward, input_grad, weight_grad, pp_forward, pp_backward), the compute before it (s),
    the collective, its group kind and its size as written (bytes)."""
    label: str
    layer: int
    phase: str
    compute_s: float
    collective: str
    kind: str
    size: int

    @property
    def blocking(self):
        """SimAI issues a weight gradient's collective without blocking, and the pipeline's sends
        overlap other micro-batches' compute; every other collective blocks."""
        return self.phase not in ("weight_grad", *PIPELINE_PHASES)


@dataclass(frozen=True)
class Job:
    """A training job: `workload` (collectives.workload.Workload), its groups (`parallelism`), the
    host of each rank, sizes here over as written (`scale`), the scale-up domain's rate each way
    (Gbit/s, as real: its time is modelled), the algorithm family of its fabric collectives
    ('ring' or 'hd'), the DS field its packets carry (None: the default class)."""
    name: str
    workload: object
    parallelism: object
    hosts: tuple
    scale: float = 1.0
    scaleup_gbit: float = NVLINK_GBIT
    family: str = "ring"
    dscp: int | None = None
    streams: int = 1
    port: int | None = None   # its groups listen from this port on (None: after the other jobs' groups)

    def phases(self, waits=False):
        """([Step] of one iteration in the order SimAI's simulator runs them, the compute after the
        last: the weight updates'). waits: also a Step of phase "wait" (no collective) where the
        forward pass of a layer that issues a weight gradient's collective begins: that layer's
        computation waits there for the collective of the iteration before, whether or not its
        forward pass has a collective of its own."""
        out, pending, forward_done = [], 0.0, False
        pipeline = self.parallelism.pp > 1 and self.workload.pipeline_bytes()
        micro = self.workload.micro_batches()

        def sends(direction, pending):
            return [Step(f"pipeline {direction} {k + 1}/{micro}", PIPELINE_LAYER, f"pp_{direction}",
                         pending if k == 0 else 0.0, f"pipeline_{direction}", "PP", self.workload.number("pp_comm"))
                    for k in range(micro)]
        issuing = {index for index, _, name, phase in self.workload.sequence()
                   if name == "weight_grad" and self._runs(name, phase)} if waits else set()
        for index, layer, name, phase in self.workload.sequence():
            if name == "forward" and index in issuing:
                out.append(Step(f"{layer} forward", index, "wait", pending, None, None, 0))
                pending = 0.0
            if name != "forward" and not forward_done:
                forward_done = True
                if pipeline:
                    out += sends("forward", pending)
                    pending = 0.0
            pending += phase.compute_ns / 1e9
            if self._runs(name, phase):
                out.append(Step(f"{layer} {name}", index, name, pending, phase.collective,
                                group_kind(name, phase.group), phase.size))
                pending = 0.0
        if pipeline:
            out += sends("backward", pending)
            pending = 0.0
        tail = pending + sum(layer.update_ns for layer in self.workload.layers) / 1e9
        return out, tail

    def _runs(self, name, phase):
        """Whether a phase's collective runs: it has one, of some bytes, in groups of two or more."""
        return bool(phase.collective and phase.size and self.parallelism.size(group_kind(name, phase.group)) > 1)

    def server_width(self, topo):
        """Accelerators per server: a server's hosts, or the job's ranks on it where several ranks
        share one host (servers whose accelerators share a NIC); 1 where hosts are not grouped."""
        ranks = Counter(server_of(topo, h) for h in self.hosts)
        hosts = Counter(host.server for host in topo.hosts.values())
        return max(max(hosts[s], n) for s, n in ranks.items())

    def split_groups(self, topo):
        """The tensor-parallel groups (their ranks) whose hosts sit in more than one server: allowed,
        as a user's placement may want it, but their collectives cross the fabric."""
        return [ranks for ranks in self.parallelism.groups("TP") if self.parallelism.tp > 1 and
                len({server_of(topo, self.hosts[r]) for r in ranks}) > 1]

    def split_note(self, topo):
        """'' or a sentence saying how many tensor-parallel groups the placement splits."""
        split = self.split_groups(topo)
        return (f"{len(split)} of {len(self.parallelism.groups('TP'))} tensor-parallel groups span servers "
                f"(ranks {', '.join(str(r) for r in split[0])} first): their collectives cross the fabric"
                if split else "")

    def check(self, topo):
        """Refuse, in one line, a job its fabric or its family cannot run."""
        missing = [h for h in self.hosts if h not in topo.hosts]
        if missing:
            raise TestbedError(f"job {self.name}: no host {missing[0]} in {topo.name}")
        if len(self.hosts) != self.parallelism.gpus:
            raise TestbedError(f"job {self.name}: {len(self.hosts)} hosts for {self.parallelism.gpus} ranks")
        if self.family not in FAMILIES:
            raise TestbedError(f"job {self.name}: family {self.family!r}: use one of {', '.join(FAMILIES)}")
        width, tp = self.server_width(topo), self.parallelism.tp
        if tp > 1 and width > 1 and width % tp:
            raise TestbedError(f"job {self.name}: tensor parallel {tp} does not divide {topo.name}'s servers of "
                               f"{width} accelerators: use a workload file whose tp divides {width}, or a fabric "
                               f"whose servers hold a multiple of {tp}")
        phases, _ = self.phases()
        if not phases:
            raise TestbedError(f"job {self.name}: no collective of {self.workload.path} runs in a group of 2 or more "
                               f"ranks at {self.parallelism.gpus} GPUs ({self.parallelism.describe()}): nothing to "
                               "replay between ranks")
        for step in phases:
            if step.collective not in FAMILIES[self.family]:
                raise TestbedError(f"job {self.name}: {step.label}: {step.collective} has no algorithm here")
            schedule = FAMILIES[self.family][step.collective]()
            count = scaled_count(step.size, self.scale, self.parallelism.size(step.kind))
            try:
                schedule.check_count(self.parallelism.size(step.kind), count)
            except TestbedError as e:
                raise TestbedError(f"job {self.name}: {step.label} in its {step.kind} groups: {e}") from None
            fix = lambda fits, step=step: (f"its {step.label} ({step.size} B as written) must scale by "
                                           f"{fits / step.size:.3g} or less here (now {self.scale:.3g}): a "
                                           "higher --workload-gbit or a lower --rate")
            check_memory(count * ELEMENT_BYTES, self.parallelism.gpus, fix, what=f"collective of {self.name}")


def server_of(topo, host):
    return topo.hosts[host].server


def scaleup_seconds(collective, ranks, size_bytes, gbit):
    """The modelled time of a collective inside one server: its bus bytes over the NVLink rate."""
    return size_bytes * COLLECTIVES[collective].busbw_factor(ranks) / (gbit * 1e9 / 8)


def bus_bytes(collective, ranks, size_bytes):
    """Bytes a collective's ranks put on their links together, as nccl-tests' bus bandwidth counts."""
    return size_bytes * COLLECTIVES[collective].busbw_factor(ranks) * ranks


@dataclass
class Group:
    """One group of a job: its ranks' hosts, whether it stays inside a server, and its coordinator."""
    kind: str
    index: int
    hosts: list
    inside: bool
    schedules: list = field(default_factory=list)     # [collective] in the order the coordinator has them
    coordinator: object = None
    connections: dict = None                          # {rank: {peer: [Connection]}}
    near_share: float = 0.0                           # of its connections, those on a scale-up domain


class JobRun:
    """A job's rank processes on a running fabric (``emulation`` Emulation), one coordinator per
    group that crosses the fabric, kept for every iteration, and the job's collectives in flight:
    per group kind one worker, so that a kind's groups run one collective at a time in their order
    of issue (a weight gradient's, issued without blocking, before the next). ports: an iterator of
    free port bases, shared by the jobs of one run."""

    def __init__(self, emu, job, ports, draw=None, timeout=30.0):
        self.emu, self.job, self.ports, self.draw, self.timeout = emu, job, ports, draw, timeout
        self.phases, self.tail = job.phases(waits=True)
        self.groups, self.workers, self.in_flight = {}, {}, {}      # in flight: {layer: [Future]}
        self.wrong, self._lock = 0, threading.Lock()
        pp = job.parallelism.pp
        self.bubble_share = (pp - 1) / (job.workload.number("ga", 1) * job.workload.number("vpp", 1)) \
            if pp > 1 and job.workload.number("ga", 1) and job.workload.number("vpp", 1) else 0.0

    def __enter__(self):
        topo, job = self.emu.topo, self.job
        used = {}
        for step in self.phases:
            if step.collective:
                used.setdefault(step.kind, dict.fromkeys([]))[step.collective] = None
        with contextlib.ExitStack() as stack:
            for kind, collectives in used.items():
                self.workers[kind] = stack.enter_context(ThreadPoolExecutor(1, thread_name_prefix=f"{kind}-"))
                for index, ranks in enumerate(job.parallelism.groups(kind)):
                    hosts = [job.hosts[r] for r in ranks]
                    if job.family == "ring":
                        hosts = nccl_ring(topo, hosts)
                    # one server's group runs on its scale-up domain: emulated where the fabric has
                    # one, else modelled at the scale-up rate
                    inside = len({server_of(topo, h) for h in hosts}) == 1 and not topo.scaleup_domain
                    group = Group(kind, index, hosts, inside, list(collectives))
                    if not group.inside:
                        group.coordinator = stack.enter_context(self._coordinator(group))
                        near = [c for peers in group.connections.values() for cs in peers.values() for c in cs
                                if topo.same_server(c.src, c.dst)]
                        group.near_share = len(near) / max(1, sum(len(cs) for peers in group.connections.values()
                                                                  for cs in peers.values()))
                    self.groups.setdefault(kind, []).append(group)
            self._stack = stack.pop_all()
        return self

    def _coordinator(self, group):
        schedules = [FAMILIES[self.job.family][c]() for c in group.schedules]
        addresses, launch = emulation_launcher(self.emu, group.hosts, next(self.ports))
        conns = rank_connections(schedules, group.hosts, [p for _, p in addresses], self.job.streams, self.draw)
        group.connections = conns
        return Coordinator(schedules, addresses, launch, timeout=self.timeout, streams=self.job.streams,
                           pacing=self.emu.topo.bytes_per_s, label=f"{self.job.name} {group.kind}{group.index}",
                           dscp=self.job.dscp, source_ports=source_ports(conns) if self.draw else None)

    def __exit__(self, *exc):
        return self._stack.__exit__(*exc)

    def connections(self):
        """Every connection the job's fabric groups opened."""
        return [c for groups in self.groups.values() for g in groups if g.connections
                for peers in g.connections.values() for conns in peers.values() for c in conns]

    def iteration(self, number):
        """One iteration as SimAI's simulator runs it (the module docstring): {"start", "end",
        "seconds", "comm_s": {kind: communication the iteration waited for}, "fabric_bytes":
        {kind}, "scaleup_bytes": {kind}, "bubble_s"}; the bytes are those the iteration issued."""
        job, exposed = self.job, dict.fromkeys(KINDS, 0.0)
        fabric, inside = dict.fromkeys(KINDS, 0), dict.fromkeys(KINDS, 0)
        stage = job.workload.stage_compute_s()      # and the waits for its blocking collectives: what the bubble scales
        start = time.monotonic()
        for step in self.phases:
            time.sleep(step.compute_s)
            if step.phase == "wait":
                waited = time.monotonic()
                for kind, future in self.in_flight.pop(step.layer, []):
                    future.result()
                    exposed[kind] += time.monotonic() - waited
                    waited = time.monotonic()
                continue
            groups = self.groups[step.kind]
            ranks = job.parallelism.size(step.kind)
            count = scaled_count(step.size, job.scale, ranks)
            moved = bus_bytes(step.collective, ranks, count * ELEMENT_BYTES)     # per group
            for g in groups:        # bytes where they go: a group's share of connections on a scale-up domain
                near = 1.0 if g.inside else g.near_share
                fabric[step.kind] += moved * (1 - near)
                inside[step.kind] += moved * near
            future = self.workers[step.kind].submit(self._run, step, count, number)
            if step.blocking:
                began = time.monotonic()
                future.result()
                exposed[step.kind] += time.monotonic() - began
                if job.workload.layers[step.layer].name != EMBEDDING:
                    stage += time.monotonic() - began
            else:
                self.in_flight.setdefault(step.layer, []).append((step.kind, future))
        time.sleep(self.tail)
        bubble = stage * self.bubble_share
        time.sleep(bubble)
        waited = time.monotonic()
        for _, future in self.in_flight.pop(PIPELINE_LAYER, []):
            future.result()
        exposed["PP"] += time.monotonic() - waited
        end = time.monotonic()
        return {"start": start, "end": end, "seconds": end - start, "comm_s": exposed, "fabric_bytes": fabric,
                "scaleup_bytes": inside, "bubble_s": bubble}

    def finish(self):
        """Wait for the collectives still in flight (the last iteration's weight gradients)."""
        for futures in self.in_flight.values():
            for _, future in futures:
                future.result()
        self.in_flight.clear()

    def _run(self, step, count, number):
        """One step's collective on every group of its kind at once: for real where a group
        crosses the fabric, modelled at the scale-up rate where it stays in a server."""
        groups = self.groups[step.kind]
        crossing = [g for g in groups if not g.inside]
        began = time.monotonic()
        if crossing:
            wrong = sum(r["wrong"] for r in self._together(crossing, step.collective, count, number))
            with self._lock:
                self.wrong += wrong
        if len(crossing) < len(groups):
            modelled = scaleup_seconds(step.collective, self.job.parallelism.size(step.kind), step.size,
                                       self.job.scaleup_gbit)
            time.sleep(max(0.0, began + modelled - time.monotonic()))

    def _together(self, groups, collective, count, number):
        results, errors = [None] * len(groups), []

        def one(k, group):
            try:
                results[k] = group.coordinator.iterate(count, number, 120,
                                                       schedule=group.schedules.index(collective))
            except AllreduceError as e:
                errors.append(str(e))

        threads = [threading.Thread(target=one, args=(k, g), daemon=True) for k, g in enumerate(groups)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if errors:
            raise AllreduceError(errors[0])
        return results


def port_bases(base=PORT):
    """base, base + STRIDE, ...: a listening port base for each communicator of a run (a job with a
    port of its own listens on the same ports whether it runs alone or beside others: the same
    5-tuples, so the same paths under ECMP)."""
    while True:
        yield base
        base += STRIDE


def run_jobs(emu, jobs, iterations, warmup=1, draws=None, folder=None, offsets=None):
    """The jobs at once, each `iterations` timed iterations after `warmup`, started together, every
    job going on until all are through theirs (so that no job's timed iterations run alone); per job
    its iterations (start and end on the monotonic clock every namespace shares) and a summary row:
    the mean iteration, per group kind its communication time and share of the iteration, bytes on
    the fabric and inside servers, #wrong, and the CPU verdict over the run. draws: a hash draw per
    job (its connections' source ports) or None; folder: capture every link during the timed
    iterations there, and give each job the bytes it sent over each switch-to-switch link; offsets:
    seconds each job waits before its first iteration (CASSINI's start offsets)."""
    shared, draws = port_bases(), draws or [None] * len(jobs)
    offsets = offsets or [0.0] * len(jobs)
    with contextlib.ExitStack() as stack:
        runs = [stack.enter_context(JobRun(emu, job, shared if job.port is None else port_bases(job.port), draw))
                for job, draw in zip(jobs, draws)]
        go = threading.Barrier(len(runs))
        done, errors, finished = [[] for _ in runs], [], [threading.Event() for _ in runs]

        def one(k, run):
            # A job that is through its iterations goes on (untimed) until every job is: the timed
            # iterations of a job held back (a lower priority) then meet the others' traffic.
            try:
                go.wait()
                time.sleep(offsets[k])
                i = 0
                while not (finished[k].is_set() and all(f.is_set() for f in finished)) and not errors:
                    it = run.iteration(i)
                    if warmup <= i < warmup + iterations:
                        done[k].append(it)
                    if i + 1 >= warmup + iterations:
                        finished[k].set()
                    i += 1
                run.finish()
            except (AllreduceError, threading.BrokenBarrierError) as e:
                errors.append(str(e))
                go.abort()
                for f in finished:
                    f.set()

        watch = LinkCapture(emu, folder) if folder is not None else contextlib.nullcontext()
        with emu.cpu_monitor() as cpu, watch as capture:
            threads = [threading.Thread(target=one, args=(k, r), daemon=True) for k, r in enumerate(runs)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
        if errors:
            raise AllreduceError(errors[0])
        rows = [summary(job, its, cpu.result(), run.wrong) for job, its, run in zip(jobs, done, runs)]
        for row, job in zip(rows, jobs):
            if note := job.split_note(emu.topo):
                row["split_note"] = note
        if capture is not None:
            paths = connection_paths(capture.packets)
            ip = {h.name: h.ports[0].ip for h in emu.topo.hosts.values()}
            for row, run in zip(rows, runs):
                row["link_bytes"] = link_bytes(emu.topo, run.connections(), paths, ip)
    return rows


def link_bytes(topo, connections, paths, ip):
    """{"a:port->b": bytes} a job's connections sent over each switch-to-switch link (captured)."""
    out = {}
    for c in connections:
        ways = [(ip[c.src], c.sport, ip[c.dst], c.dport), (ip[c.dst], c.dport, ip[c.src], c.sport)]   # data either way
        for (node, port), size in [item for way in ways for item in paths.get(way, {}).items()]:
            if node in topo.switches:
                link = topo.link_at(node, port)
                other = link.b if link.a == node else link.a
                if other in topo.switches:
                    name = f"{topo.label(node)}:{port}->{topo.label(other)}"
                    out[name] = out.get(name, 0) + size
    return out


def summary(job, iterations, cpu, wrong):
    """A job's row: its mean iteration, per group kind the communication it waited for (its
    share of the iteration) and its bytes, the pipeline's bubble, and #wrong over every collective
    the job ran (warm-up and the iterations that kept it going included)."""
    mean = float(np.mean([it["seconds"] for it in iterations]))
    row = {"job": job.name, "ranks": len(job.hosts), "groups": job.parallelism.describe(),
           "iteration_s": round(mean, 4), "times": [round(it["seconds"], 4) for it in iterations],
           "starts": [round(it["start"], 4) for it in iterations], "wrong": wrong,
           "bubble_s": round(float(np.mean([it["bubble_s"] for it in iterations])), 4), **cpu}
    for kind in KINDS:
        comm = float(np.mean([it["comm_s"][kind] for it in iterations]))
        if comm or any(it["fabric_bytes"][kind] or it["scaleup_bytes"][kind] for it in iterations):
            row[f"{kind}_s"] = round(comm, 4)
            row[f"{kind}_share"] = round(comm / mean, 3)
            row[f"{kind}_fabric_bytes"] = iterations[0]["fabric_bytes"][kind]
            row[f"{kind}_scaleup_bytes"] = iterations[0]["scaleup_bytes"][kind]
    return row
