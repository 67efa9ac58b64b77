"""A collective that runs on and on while its operator watches, with what a training cluster's
operator has: every rank's step timings (``programs.rank``), the switch ports' queues and the
controller's port events. ``monitor`` is the operator's monitor (``fidelity.monitor``): windows on
a fixed cadence from the watch's start, each against a baseline of the healthy windows before it,
an alarm where the detector finds something; it is told nothing about a fault, neither what nor
when. ``diagnose`` hands the detector two windows of the caller's choosing.

    with emu.watch(Comm(schedule, hosts), 256 << 10) as watch:
        time.sleep(6)
        <slow a link with tc, stop a rank, cut a cable: anything, from anywhere>
        time.sleep(4)
        for alarm in watch.monitor.poll(watch.now()):
            print(alarm.at - watch.started, alarm.finding)
"""
import threading
import time

from testbed.collectives.coordinator import AllreduceError
from testbed.collectives.data import ELEMENT_BYTES
from testbed.collectives.metrics import bandwidths
from testbed.emulation.controller import port_events
from testbed.faultbench import trace
from testbed.fidelity.diagnosis import diagnose
from testbed.fidelity.monitor import BASELINE_WINDOWS, CADENCE_S, Monitor
from testbed.fidelity.windows import window_of
from testbed.probes.markers import MarkSampler
from testbed.probes.queues import QueueSampler
from testbed.routing.hashing import Placer
from testbed.runs.together import Communicators
from testbed.topology import interface

EDGE_INTERVAL_S = 0.25   # the ranks' hosts' egress FIFOs: only their drop counters are read, per window


class Watch:
    """with Watch(emu, comm, count) as watch: iterations run back to back in a thread of their own
    until the block ends; a stall up to stall_limit is waited out (a rank stopped on purpose too);
    a longer one ends them (``error``). emu is an ``emulation`` Emulation; the switch ports are
    sampled every `interval` s; the monitor judges windows of `cadence` s against `baseline`
    healthy ones."""

    def __init__(self, emu, comm, count, draw=None, stall_limit=15.0, interval=0.02, cadence=CADENCE_S,
                 baseline=BASELINE_WINDOWS):
        self.emu, self.comm, self.count, self.draw = emu, comm, count, draw
        self.stall_limit, self.interval = stall_limit, interval
        self.cadence, self.baseline = cadence, baseline
        self.iterations, self.error = [], None
        self._stop = threading.Event()

    @property
    def rank_pids(self):
        """Each rank's process id, in rank order (to slow or stop one: ``emulation.faults``)."""
        return [proc.pid for proc in self._group.coordinators[0].procs]

    def connections(self):
        """The connections the watched collective's data crosses (``collectives.connections``)."""
        return self._group.data_connections(0, self.count)

    def paths(self):
        """{(rank, peer): the links rank's data to peer crosses, as the routes and hashing put its
        connections}, what an operator has from the routes (or a traceroute); None without a draw,
        where the kernel picked the source ports that hashing goes by."""
        if self.draw is None:
            return None
        topo, rank = self.emu.topo, {host: r for r, host in enumerate(self.comm.hosts)}
        placer, out = Placer(topo, self.emu.routing, self.draw.bond), {}
        for c in self.connections():
            out.setdefault((rank[c.src], rank[c.dst]), set()).update(topo.link_at(node, port)
                                                                     for node, port in placer.path(c))
        return {pair: frozenset(links) for pair, links in out.items()}

    def now(self):
        return time.monotonic()

    def __enter__(self):
        self._group = Communicators(self.emu, [self.comm], self.draw, timeout=self.stall_limit, stopped_ok=True)
        self._group.__enter__()
        for coordinator in self._group.coordinators:
            coordinator.retransmissions = True
        try:
            self._group.iterate(self.count, 0)            # warmup: connections and windows
            self.observer = Observer(self.emu, self.comm.hosts, self.interval).__enter__()
            self.started = self.now()
            self.monitor = Monitor(self.emu.topo, self.window, self.started, self.cadence, self.baseline,
                                   paths=self.paths())
            self._thread = threading.Thread(target=self._iterate, daemon=True)
            self._thread.start()
        except BaseException:
            if getattr(self, "observer", None):
                self.observer.__exit__(None, None, None)
            self._group.__exit__(None, None, None)
            raise
        return self

    def _iterate(self):
        while not self._stop.is_set():
            try:
                result, = self._group.iterate(self.count, len(self.iterations) + 1, timeout=self.stall_limit + 30)
            except AllreduceError as e:
                if not self._stop.is_set():
                    self.error = str(e)
                return
            self.iterations.append({k: result[k] for k in ("start", "end", "time", "wrong", "timing")})

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(timeout=self.stall_limit + 5)
        self.observer.__exit__(*exc)
        self._group.__exit__(*exc)
        self._thread.join()

    def alive(self):
        """Whether the iterations still run (they stop at the block's end or on a stall past the limit)."""
        return self._thread.is_alive()

    def wait(self, until):
        """Sleep until monotonic time `until`, or until the iterations stop."""
        while self.now() < until and self.alive():
            time.sleep(min(0.05, max(0.0, until - self.now())))

    def ran(self, start, end):
        """The iterations that ended in [start, end]."""
        return [it for it in list(self.iterations) if start < it["end"] <= end]

    def wrong(self, start=0.0, end=float("inf")):
        """#wrong (against numpy) over the iterations that ended in [start, end]."""
        return sum(it["wrong"] for it in self.ran(start, end))

    def window(self, start, end):
        """What the operator has of [start, end] (monotonic): ``Observer.window``."""
        return self.observer.window(self.iterations, start, end)

    def save(self, folder):
        """What the operator had of the whole watch so far, as a trace (``faultbench.trace``) in
        `folder`, on a clock from the watch's start; no fault is in it. Returns the folder."""
        job = {"algorithm": self.comm.schedule.name, "collective": self.comm.schedule.collective,
               "hosts": list(self.comm.hosts), "bytes": self.count * ELEMENT_BYTES, "routing": self.emu.routing.mode}
        return self.observer.save(folder, job, self.iterations, self.started, self.now(), self.monitor)

    def diagnose(self, before, after):
        """The detector's Finding for the window after against the window before ((start, end) each)."""
        return diagnose(self.emu.topo, self.window(*before), self.window(*after), self.monitor.paths)

    def busbw(self, start, end):
        """Bus bandwidth over [start, end], bytes/s: the collectives done in it, over its length (a
        stall in it counts against it); an iteration that straddles an end counts for the share of
        its time inside, so that a few iterations per window do not make the figure jump by one.
        None if the window is empty."""
        if end <= start:
            return None
        overlapping = [it for it in list(self.iterations)
                       if it["end"] > start and it["start"] < end and it["end"] > it["start"]]
        done = sum(max(0.0, min(end, it["end"]) - max(start, it["start"])) / (it["end"] - it["start"])
                   for it in overlapping)
        return bandwidths(self.count * ELEMENT_BYTES * done, end - start, len(self.comm.hosts),
                          self.comm.schedule.collective)[1]


class Observer:
    """with Observer(emu, hosts, interval) as seen: what a training cluster's operator has of a job
    without the job's help, taken until the block ends: every switch port's queue every `interval`
    s, the job's hosts' own egress FIFOs (their drops), the ports' ECN mark counts where they mark
    (--ecn), and the controller's port events. Samples are on the wall clock; ``offset`` takes
    them to the monotonic one."""

    def __init__(self, emu, hosts, interval):
        self.emu, self.hosts, self.interval = emu, list(hosts), interval
        self.queues = self.edges = self.marks = None
        self.log_path = emu.controller.log_path if getattr(emu, "controller", None) else None

    def _host_netns(self, ifname):
        return self.emu.host(ifname.split("-eth")[0]).pid

    def __enter__(self):
        topo = self.emu.topo
        try:
            ports = [interface(node, port) for link in topo.links for node, port in link.ends()
                     if node in topo.switches and self.emu.here(node)]
            self.queues = QueueSampler(ports, self.interval, self.emu.port_netns).__enter__()
            nics = [interface(node, port) for link in topo.links for node, port in link.ends()
                    if node in set(self.hosts) and self.emu.here(node)]
            self.edges = QueueSampler(nics, EDGE_INTERVAL_S, self._host_netns).__enter__()
            # with --ecn, the markers there when the watch starts, as a switch's ECN counters
            if getattr(self.emu, "ecn", None):
                tables = self.emu.marker_maps()
                self.marks = MarkSampler({port: tables[port]["ecn_counts"] for port in ports},
                                         EDGE_INTERVAL_S).__enter__()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        self.offset = time.time() - time.monotonic()   # wall clock to monotonic, for samples and events
        return self

    def __exit__(self, *exc):
        for sampler in (self.queues, self.edges, self.marks):
            if sampler is not None:
                sampler.__exit__(None, None, None)

    def events(self):
        """The controller's port events so far, [(wall time, switch, port, up)]."""
        return list(port_events(self.log_path)) if self.log_path else []

    def window(self, iterations, start, end):
        """What the operator has of [start, end] (monotonic): ``fidelity.windows.window_of`` over
        the job's `iterations` and what was sampled so far."""
        events = [(t - self.offset, *rest) for t, *rest in self.events()]
        return window_of(iterations, self.queues.samples, self.edges.samples,
                         self.marks.samples if self.marks else {}, events, start, end, shift=self.offset)

    def save(self, folder, job, iterations, started, now, monitor):
        """A trace (``faultbench.trace``) in `folder` of the job's `iterations` and what was sampled,
        on a clock from `started` (monotonic) until `now`. Returns the folder."""
        wall = started + self.offset
        shifted = lambda sampled: {port: [(t - wall, *rest) for t, *rest in samples]
                                   for port, samples in list(sampled.items())}
        events = [(t - wall, *rest) for t, *rest in self.events()]
        return trace.write(
            folder, topo=self.emu.topo, cadence=monitor.cadence, baseline=monitor.healthy.maxlen,
            duration=now - started, job=job, iterations=[_from(it, started) for it in list(iterations)],
            queues=shifted(self.queues.samples), edges=shifted(self.edges.samples),
            marks=shifted(self.marks.samples) if self.marks else {},
            events=[e for e in events if e[0] >= 0], paths=monitor.paths)


def _from(iteration, start):
    """An iteration's times on a clock from `start`."""
    at = lambda t: None if t is None else t - start
    return {"start": at(iteration["start"]), "end": at(iteration["end"]),
            "timing": [dict(t, start=at(t["start"]),
                            steps=[[at(sent), at(end), *rest] for sent, end, *rest in t["steps"]])
                       for t in iteration["timing"]]}
