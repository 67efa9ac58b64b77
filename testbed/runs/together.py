"""Several collectives at once on one running fabric, each over its own group of hosts (a
communicator, as NCCL calls one), started together every iteration: the rails of a
Multi-AllReduce, a training job's groups in one phase, several jobs sharing the fabric.

Each communicator's ranks are processes in their hosts (``collectives.coordinator``), kept across
iterations; communicator k listens on PORT + STRIDE * k, so one host can be a rank of several.
With a hash draw (``routing.hashing.Draw``) every connection takes the draw's source port (and,
for a round-robin bond, its NIC port), so that two forms of a fabric run on the same 5-tuples and
the flow model knows each connection. ``measure`` captures every link while they run and judges
each collective against the model from the paths its connections actually took.
"""
import contextlib
import threading
import time
from dataclasses import dataclass

from testbed.collectives.connections import rank_connections, source_ports, step_transfers
from testbed.collectives.coordinator import AllreduceError, Coordinator, emulation_launcher
from testbed.collectives.data import ELEMENT_BYTES
from testbed.collectives.metrics import result_row
from testbed.emulation.events import Timeline
from testbed.fidelity import predict
from testbed.probes.loads import Observation
from testbed.routing.hashing import Placer
from testbed.topology import interface

PORT, STRIDE = 7000, 16


@dataclass(frozen=True)
class Comm:
    """One collective's ranks: schedule (``collectives.schedules``) over hosts[rank], `streams`
    connections per peer; label names it in rows and errors (default: the schedule's name); dscp:
    the DS field its packets carry (None: the default class)."""
    schedule: object
    hosts: tuple
    streams: int = 1
    label: str = ""
    dscp: int | None = None

    @property
    def name(self):
        return self.label or self.schedule.name


class Communicators:
    """with Communicators(emu, comms, draw) as group: group.iterate(counts, iteration) runs them
    together; emu is an ``emulation`` Emulation."""

    def __init__(self, emu, comms, draw=None, timeout=20.0, eager_limit=None, stopped_ok=False):
        self.emu, self.comms, self.draw = emu, list(comms), draw
        self.timeout, self.eager_limit, self.stopped_ok = timeout, eager_limit, stopped_ok
        self.coordinators, self.connections = [], []

    def __enter__(self):
        topo = self.emu.topo
        with contextlib.ExitStack() as stack:
            for k, comm in enumerate(self.comms):
                addresses, launch = emulation_launcher(self.emu, list(comm.hosts), PORT + STRIDE * k)
                conns = rank_connections(comm.schedule, list(comm.hosts), [p for _, p in addresses], comm.streams,
                                         self.draw)
                self.connections.append(conns)
                self.coordinators.append(stack.enter_context(Coordinator(
                    comm.schedule, addresses, launch, timeout=self.timeout, streams=comm.streams,
                    pacing=topo.bytes_per_s, eager_limit=self.eager_limit, label=comm.name, dscp=comm.dscp,
                    source_ports=source_ports(conns) if self.draw else None, stopped_ok=self.stopped_ok)))
            self._stack = stack.pop_all()
        return self

    def __exit__(self, *exc):
        return self._stack.__exit__(*exc)

    def iterate(self, counts, iteration, timeout=120.0, compute_s=0.0, which=None):
        """One iteration of the communicators `which` (default all), started together, each with
        its count (elements per rank; one number for all); each one's result, in order."""
        which = list(range(len(self.comms))) if which is None else list(which)
        counts = counts if isinstance(counts, (list, tuple)) else [counts] * len(self.comms)
        if len(which) == 1:
            k = which[0]
            return [self._one(k, counts[k], iteration, timeout, compute_s)]
        results, errors, go = {}, [], threading.Barrier(len(which))

        def one(k):
            try:
                go.wait()
                results[k] = self._one(k, counts[k], iteration, timeout, compute_s)
            except (AllreduceError, threading.BrokenBarrierError) as e:
                errors.append(str(e))
                go.abort()

        threads = [threading.Thread(target=one, args=(k,), daemon=True) for k in which]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if errors:
            raise AllreduceError(errors[0])
        return [results[k] for k in which]

    def _one(self, k, count, iteration, timeout, compute_s):
        return self.coordinators[k].iterate(count, iteration, timeout, compute_s=compute_s)

    def data_connections(self, k, count):
        """The connections communicator k's data crosses (as the model moves it), in a stable order."""
        moved = {}
        for _, step in step_transfers(self.comms[k].schedule, self.connections[k], count):
            moved.update(dict.fromkeys(step))
        return list(moved)


def nic_ports(topo, hosts):
    """The NIC ports a rank's busbw is counted over: a bonded NIC's two, one otherwise."""
    return len(topo.hosts[hosts[0]].ports)


def measure(emu, comms, counts, iters=3, warmup=1, draw=None, folder=None, timeout=120.0):
    """Rows (one per communicator: nccl-tests' figures, #wrong, the CPU verdict, and measured over
    the flow model from the captured paths) and the Observation of every link while they ran
    (None without a folder to capture into)."""
    topo, counts = emu.topo, counts if isinstance(counts, (list, tuple)) else [counts] * len(comms)
    queue_ports = [interface(*topo.attachment(nic)) for nic in topo.nic_ports()]
    with Communicators(emu, comms, draw) as group:
        for w in range(warmup):                       # connections and windows
            group.iterate(counts, w, timeout)
        watch = Observation(emu, folder, queue_ports) if folder is not None else contextlib.nullcontext()
        with watch as seen, emu.cpu_monitor() as cpu:
            results = [group.iterate(counts, warmup + i, timeout) for i in range(iters)]
        conns = [group.data_connections(k, counts[k]) for k in range(len(comms))]
        connections = group.connections
    rows = []
    for k, comm in enumerate(comms):
        mine = [iteration[k] for iteration in results]
        row = result_row(comm.name, counts[k] * ELEMENT_BYTES, [r["time"] for r in mine], sum(r["wrong"] for r in mine),
                         len(comm.hosts), topo.rate, ports=nic_ports(topo, comm.hosts),
                         collective=comm.schedule.collective)
        row.update(label=comm.name, ranks=len(comm.hosts), connections=len(conns[k]), measured_over_model=None,
                   **cpu.result())
        rows.append(row)
    if seen is not None:
        every = [c for mine in conns for c in mine]
        paths = predict.captured_paths(topo, every, seen.paths)
        for row, mine in zip(rows, conns):
            row["captured"] = sum(1 for c in mine if c in paths)
            if draw is not None:
                placer = Placer(topo, emu.routing, draw.bond)
                row["as_placed"] = predict.paths_as_placed(placer, {c: paths[c] for c in mine if c in paths})
        if len(paths) == len(every):
            try:
                model = predict.collective_times(topo, [(comm.schedule, connections[k], counts[k])
                                                        for k, comm in enumerate(comms)], paths, emu.mtu)
            except ValueError:            # collectives the model cannot run together (not all Rings)
                model = None
            for row, expected in zip(rows, model or []):
                row["measured_over_model"] = round(expected / (row["time_us"] / 1e6), 3)
    return rows, seen


def run_for(emu, comm, count, seconds, events=(), stall_limit=20.0, draw=None):
    """One collective's iterations back to back for `seconds` while `events` (emulation.events:
    links and switches down and up) happen on their time line: {"iterations": [{"start", "end",
    "time", "wrong"}], "error": what stopped them early (a stall past stall_limit), "start" and
    "end" of the time line (monotonic), "done": the events as they happened, "event_error", and
    the CPU verdict}. With a hash draw, the connections take its source ports."""
    addresses, launch = emulation_launcher(emu, list(comm.hosts), PORT)
    conns = rank_connections(comm.schedule, list(comm.hosts), [p for _, p in addresses], comm.streams, draw) \
        if draw else None
    with Coordinator(comm.schedule, addresses, launch, timeout=stall_limit, pacing=emu.topo.bytes_per_s,
                     streams=comm.streams, label=comm.name, dscp=comm.dscp,
                     source_ports=source_ports(conns) if conns else None) as ranks:
        ranks.iterate(count, 0, timeout=120)          # warmup: connections and windows
        with emu.cpu_monitor() as cpu, Timeline(list(events)) as timeline:
            iterations, error = ranks.run_for(count, seconds, timeout=stall_limit + 60)
            ended = time.monotonic()
    return {"iterations": iterations, "error": error, "start": timeline.start, "end": ended, "done": timeline.done,
            "event_error": timeline.error, "cpu": cpu.result()}
