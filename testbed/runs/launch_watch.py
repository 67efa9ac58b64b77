"""A launched program (``runs.launch``) watched as an operator watches a training job: what the
fabric shows without the program's help (``watch.Observer``: switch queues, the hosts' egress
drops, ECN marks, the controller's port events) and the steps the program reports with their end
times (``testbed.step``), judged by the same monitor as the testbed's own collectives
(``fidelity.monitor``), told nothing of a fault.

Step k of the job is every rank's k-th reported step, from the first rank's start to the last
rank's end: to the detector, an iteration of one rank (the job) with one step. Where the ranks of
a synchronous job wait for each other inside the step (DDP's allreduce), a slow or stopped rank
lengthens every rank's step alike, so the steps say the job slowed, never which rank: the
detector's rank rules, which need each rank's own delay, stay silent, and the fabric's evidence
(port events, queues) names what it can. Each rank's own steps are in the run's steps.csv.

The job's retransmissions are read as a host agent reads them (``probes.sockets``: every TCP
connection between its hosts, with its ports, from the kernel), and each connection's path from
the routes and the switches' hash of its ports (``routing.hashing.Placer``): to the detector, the
job's peers are its connections, numbered as first seen, so a lossy link is voted for by the
connections that cross it (``diagnosis.loss_finding``)."""
import time

from testbed.fidelity.monitor import BASELINE_WINDOWS, CADENCE_S, Monitor
from testbed.probes.sockets import SocketSampler
from testbed.routing.hashing import Connection, Placer
from testbed.runs.watch import Observer


class LaunchWatch:
    """with LaunchWatch(emu, launched) as watch: ``watch.monitor.poll(watch.now())`` gives the
    alarms; emu is an ``emulation`` Emulation, launched a started Launch; the switch ports are
    sampled every `interval` s; the monitor judges windows of `cadence` s against `baseline`."""

    def __init__(self, emu, launched, interval=0.02, cadence=CADENCE_S, baseline=BASELINE_WINDOWS):
        self.emu, self.launched = emu, launched
        self.interval, self.cadence, self.baseline = interval, cadence, baseline
        self.error = None

    @property
    def hosts(self):
        return self.launched.hosts

    @property
    def rank_pids(self):
        """Each rank's process id, in rank order (None under mpirun, which starts the ranks itself)."""
        return None if self.launched.mpi else self.launched.pids

    def now(self):
        return time.monotonic()

    def __enter__(self):
        topo, hosts = self.emu.topo, list(dict.fromkeys(self.hosts))
        self.observer = Observer(self.emu, hosts, self.interval).__enter__()
        try:
            self.sockets = SocketSampler({h: self.emu.host(h).pid for h in hosts},
                                         {nic.ip: h.name for h in topo.hosts.values() for nic in h.ports}).__enter__()
        except BaseException:
            self.observer.__exit__(None, None, None)
            raise
        self.placer, self.connections, self.paths = Placer(topo, self.emu.routing), {}, {}
        self.started = self.now()
        # the monitor keeps this dict and sees the paths of connections found later
        self.monitor = Monitor(topo, self.window, self.started, self.cadence, self.baseline, paths=self.paths)
        return self

    def __exit__(self, *exc):
        self.sockets.__exit__(*exc)
        self.observer.__exit__(*exc)

    def _number(self, key):
        """The job's connection `key` (src host, sport, dst host, dport) as a peer number, its path
        put in self.paths the first time it is seen."""
        if key not in self.connections:
            number = self.connections[key] = len(self.connections)
            src, sport, dst, dport = key
            path = self.placer.path(Connection(src, dst, sport, dport))
            self.paths[0, number] = frozenset(self.emu.topo.link_at(node, port) for node, port in path)
        return self.connections[key]

    def resent(self, start, end):
        """[[connection number, segments it retransmitted in (start, end]]] (monotonic)."""
        before, after = self.sockets.at(start), self.sockets.at(end)
        numbered = [(self._number(key), n - before.get(key, 0)) for key, n in after.items()]
        return [[number, segments] for number, segments in numbered if segments > 0]

    @property
    def iterations(self):
        """The job's steps that every rank has reported, on the monotonic clock: [{"start", "end",
        "timing"}] as ``fidelity.diagnosis.Window`` reads them, the job as one rank (a step
        reported without its end time is left out)."""
        offset, out = self.observer.offset, []
        ranks = self.launched.step_times()
        for k in range(min(len(mine) for mine in ranks)):
            steps = [mine[k] for mine in ranks]
            if any(end is None for _, end in steps):
                continue
            start = min(end - seconds for seconds, end in steps) - offset
            end = max(end for _, end in steps) - offset
            out.append({"start": start, "end": end, "timing": [{
                "start": start, "steps": [[start, end, None, None, False]], "retrans": self.resent(start, end)}]})
        return out

    def alive(self):
        """Whether any rank still runs."""
        return any(p.poll() is None for p in self.launched.procs)

    def wait(self, until):
        """Sleep until monotonic time `until`, or until every rank has ended."""
        while self.now() < until and self.alive():
            time.sleep(min(0.05, max(0.0, until - self.now())))

    def ran(self, start, end):
        """The job's steps that ended in (start, end]."""
        return [it for it in self.iterations if start < it["end"] <= end]

    def window(self, start, end):
        """What the operator has of [start, end] (monotonic): ``Observer.window``."""
        return self.observer.window(self.iterations, start, end)

    def save(self, folder):
        """What the operator had of the job so far as a trace (``faultbench.trace``) in `folder`."""
        job = {"algorithm": "launched", "collective": " ".join(self.launched.command), "hosts": list(self.hosts),
               "bytes": 0, "routing": self.emu.routing.mode}
        return self.observer.save(folder, job, self.iterations, self.started, self.now(), self.monitor)
