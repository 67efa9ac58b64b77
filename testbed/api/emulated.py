"""A running fabric and what can be measured on it (``emulate``, ``Emulated``)."""
from __future__ import annotations

import statistics
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path

from testbed import routing as routes
from testbed.api.results import Collective, Collisions, FabricCheck, Flows, Sweep, Together
from testbed.collectives import training
from testbed.collectives.connections import flow_connections
from testbed.collectives.data import ELEMENT_BYTES
from testbed.collectives.placements import place
from testbed.collectives.schedules import RecursiveDoublingAllreduce
from testbed.emulation import dctcp, events, faults
from testbed.emulation import ecn as ecn_marking
from testbed.emulation.network import DEFAULT_MTU
from testbed.emulation.settings import RunSettings
from testbed.emulation.shaping import PRIORITIES
from testbed.errors import TestbedError
from testbed.fidelity import fabric_check, predict
from testbed.fidelity.monitor import BASELINE_WINDOWS, CADENCE_S
from testbed.fidelity.verdict import flag
from testbed.machines import inventory
from testbed.machines.head import open_emulation
from testbed.probes import markers
from testbed.probes.alphas import Alphas
from testbed.probes.flows import measure_flows
from testbed.probes.loads import Observation
from testbed.probes.queues import SwitchQueues
from testbed.routing.hashing import Draw, Placer
from testbed.runs import sweep as sweeps
from testbed.runs import together
from testbed.runs.collision_trials import collision_trials
from testbed.runs.fanins import run_fanins
from testbed.runs.jobs import run_jobs
from testbed.runs.launch import Launch
from testbed.runs.launch_watch import LaunchWatch
from testbed.runs.watch import Watch
from testbed.topology import Topology, interface

SILENT = lambda line: None
LEARNING_WARMUP = 6     # iterations: a learning controller places flows after 4 readings of 0.5 s


def emulate(topo: Topology, routing: str = "deterministic", *, hash: str = "same", folder: str | Path | None = None,
            mtu: int = DEFAULT_MTU, log=SILENT, slots: int = 1, machines: str | Path | None = None,
            cpu_placement: str = "auto", settings: RunSettings | None = None, priority: str | None = None,
            flows: Sequence[tuple[str, str]] = (), control_class: bool = True, ecn: int | None = None,
            congestion_control: str | None = None) -> Emulated:
    """The fabric as a context manager: entering builds it (Mininet hosts, Open vSwitch switches,
    shaped links, the controller installing `routing`: 'deterministic', 'ecmp' (ECMP hashing with
    the `hash` 'same' at every switch or 'per-switch'), 'pinned' (by destination, one next hop each)
    or 'planned' (deterministic, with `flows`, host pairs in the order they choose, on paths apart:
    ``routing.plan``; without flows the controller learns the long ones from its rule counters and
    places them so, as C4P does); leaving tears down exactly what it
    built, also after an exception or Ctrl-C. Needs root. The run's files (topology.json,
    routing.json, captures, the controller's log) go to `folder` (default: the settings' results
    folder, else a new temporary one). slots > 1 splits the fabric into that many slots, an
    ovs-vswitchd each (docs/scale.md); machines names a machines file whose machines run the
    slots, on Dask distributed (docs/machines.md); cpu_placement: auto, pinned or none. settings:
    all of those as one value (``RunSettings``, as run_scenario.py builds it from its options),
    in place of slots, machines and cpu_placement. priority: 'strict' or 'weighted' traffic
    classes on every switch port, a packet with the DS field ``HIGH_DSCP`` (46, EF) in the high
    one (a ``Comm`` or a job's ``dscp``), or None: one FIFO per port. control_class: every switch
    port serves the ranks' clear-to-sends and ACKs first (docs/design.md, *The control class*;
    settings, when given, say it instead). ecn: K in bytes, every switch port marks CE on
    ECN-capable packets while its class's queue is above K and the hosts' TCP asks for ECN
    (``emulation.ecn``; settings, when given, say it instead); None: drop-tail only.
    congestion_control: the TCP congestion control of the ranks' connections between hosts and of
    the flows: cubic, bbr, reno or dctcp (the project's own BPF DCTCP, ``emulation.dctcp``), or
    None: the ranks' CUBIC, the flows' machine default (settings, when given, say it instead)."""
    if routing not in routes.MODES:
        raise TestbedError(f"unknown routing {routing!r}: use one of {', '.join(routes.MODES)}")
    if hash not in routes.HASHES:
        raise TestbedError(f"unknown hash {hash!r}: use one of {', '.join(routes.HASHES)}")
    if settings is None:
        if machines is not None and slots > 1:
            raise TestbedError("the machines file gives each machine its slots: leave slots out")
        settings = RunSettings(slots=slots, cpu_placement=cpu_placement,
                               machines=inventory.load(machines) if machines is not None else None,
                               control_class=control_class, ecn=ecn, congestion_control=congestion_control)
    if priority not in (None, *PRIORITIES):
        raise TestbedError(f"unknown priority {priority!r}: use one of {', '.join(PRIORITIES)}, or None")
    if folder is None:
        folder = settings.results or Path(tempfile.mkdtemp(prefix="testbed-"))
    return Emulated(open_emulation(topo, routes.plan(topo, routing, hash, flows), Path(folder), settings, mtu=mtu,
                                   log=log, priority=priority))


class Emulated:
    """A running fabric (see `emulate`). `emulation` is the underlying ``emulation.Emulation``."""

    def __init__(self, emulation):
        self.emulation = emulation
        self.topo, self.folder, self.mtu = emulation.topo, emulation.run_dir, emulation.mtu
        self._idle_step_us, self._idle_exchange_us = None, {}

    def __enter__(self) -> Emulated:
        self.emulation.__enter__()
        return self

    def __exit__(self, *exc):
        return self.emulation.__exit__(*exc)

    @property
    def routing(self) -> routes.RoutingPlan:
        return self.emulation.routing

    @property
    def datapath(self) -> str:
        return self.emulation.datapath

    @property
    def idle_step_us(self) -> float:
        """The idle fabric's per-step time of a 1 KiB allreduce between the farthest hosts: the
        latency floor of the model every sweep row is judged by (measured once per emulation)."""
        if self._idle_step_us is None:
            self._idle_step_us = predict.idle_step_us(self.emulation)
        return self._idle_step_us

    def idle_exchange_us(self, size: int) -> float:
        """The idle fabric's exchange of `size` bytes each way between the farthest hosts (a 2-rank
        recursive doubling: one step), us: the floor of a recursive-doubling step at that size."""
        if size not in self._idle_exchange_us:
            self._idle_exchange_us[size] = predict.idle_step_us(self.emulation, size,
                                                                schedule=RecursiveDoublingAllreduce)
        return self._idle_exchange_us[size]

    def check(self, seconds: int = 3) -> FabricCheck:
        summary = fabric_check.check(self.emulation, seconds)
        return FabricCheck(fabric_check.passed(summary), summary["single_flow"]["ratio"],
                           summary["parallel_flows"]["min"], summary, fabric_check.report(summary, self.emulation))

    def sweep(self, algorithms: Iterable[str] = ("ring", "hd", "hdrm"), sizes: Iterable[int] = (1024, 1 << 20), *,
              iters: int = 5, warmup: int = 1, model: bool = True, progress=SILENT, on_row=None,
              collective: str = "allreduce", eager_limit: int | None = None, placed: dict | None = None) -> Sweep:
        """A collective of each size by each algorithm, every result checked against numpy:
        allreduce by 'ring', 'ring_topo', 'hd', 'hdrm', 'ring_grouped', 'rd', 'rdrm' and 'auto' (at each
        size the choice the model of this fabric finds fastest; it needs the model); the other collectives
        ('allgather', 'reducescatter', 'alltoall', 'broadcast', 'sendrecv') by the variants
        docs/scenarios/collectives.md lists (placed: {name: (schedule, hosts)} instead, as
        ``api.sweep.place_variants`` gives them). model: judge each row against the model of the
        collective's time with the idle fabric's latency floor (docs/fidelity.md), at the cost of
        one idle-latency measurement per emulation; without it only the CPU decides the verdict.
        on_row(row) sees each row as it is measured; progress(line) its table line."""
        algorithms, sizes = list(algorithms), sorted(set(sizes))
        if not algorithms or not sizes:
            raise TestbedError("a sweep needs at least one algorithm and one size")
        if min(sizes) < ELEMENT_BYTES or iters < 1 or warmup < 0:
            raise TestbedError(f"sizes must be at least {ELEMENT_BYTES} bytes, iters at least 1, warmup at least 0")
        if "auto" in algorithms and not model:
            raise TestbedError("auto chooses by the model of this fabric's step latency: sweep with model=True")
        placed = placed or sweeps.place_variants(self.topo, algorithms, collective, sizes)
        sweeps.check_sweep(sizes, max(len(h) for _, h in placed.values()), len(placed), self.topo.bytes_per_s,
                           warmup, iters)
        rows = sweeps.run_sweep(self.emulation, placed, sizes, warmup, iters, progress=progress, on_row=on_row,
                                eager_limit=eager_limit, idle_step_us=self.idle_step_us if model else None)
        return Sweep(Collective.from_row(r) for r in rows)

    def allreduce(self, algorithm: str = "hdrm", size: int = 1 << 20, **kw) -> Collective:
        return self.sweep([algorithm], [size], **kw)[0]

    def collisions(self, algorithm: str, size: int = 1 << 20, *, trials: int = 2, iters: int = 2,
                   seed: int | None = None, progress=SILENT, on_row=None, placed: tuple | None = None,
                   label: str | None = None, draw: Draw | None = None, trial: int = 0) -> list[Collisions]:
        """Trials of one allreduce with every directed link captured, each on fresh connections:
        with `seed`, trial t takes its source ports from Draw(seed + t), so that another fabric or
        algorithm can run on the same 5-tuples; without, the kernel picks them. draw: one trial,
        numbered `trial`, on that draw (a paired experiment's). placed: (schedule, hosts) instead of
        the algorithm's own placement (another collective's variant)."""
        if trials < 1 or iters < 1:
            raise TestbedError("collisions need at least 1 trial and 1 iteration")
        schedule, hosts = placed or place(algorithm, self.topo)
        sweeps.check_sweep([size], len(hosts), trials, self.topo.bytes_per_s, 1, iters)
        draws = {trial: draw} if draw is not None else None if seed is None else \
            {t: Draw(seed + t) for t in range(trials)}
        rows = collision_trials(self.emulation, label or self.topo.name, algorithm, schedule, hosts, size, trials,
                                iters, self.folder / f"collisions-{algorithm}", progress=progress, draws=draws,
                                on_row=on_row)
        return [Collisions.from_row(r) for r in rows]

    def collectives(self, comms: Sequence[together.Comm], size: int | Sequence[int], *, iters: int = 3,
                    warmup: int | None = None, draw: Draw | None = None, name: str = "collectives") -> Together:
        """Collectives at once, each over its communicator (``Comm``: a schedule over hosts, its
        streams), `size` bytes per rank (one for all, or one each), started together every
        iteration, with every link captured (into folder/name): per communicator its row, measured
        over the flow model from the paths its connections took. With a `draw`, every connection
        takes its source port (and a round-robin bond's NIC port), and the row says how many took
        the path hashing gives them. warmup: untimed iterations (default 1; under planned routing
        that learns the flows, enough for the controller to have placed them)."""
        if warmup is None:
            warmup = LEARNING_WARMUP if self.routing.mode == "planned" and not self.routing.flows else 1
        comms = list(comms)
        sizes = list(size) if isinstance(size, (list, tuple)) else [size] * len(comms)
        if not comms or len(sizes) != len(comms) or iters < 1 or warmup < 0:
            raise TestbedError("collectives need one or more communicators, a size each, iters >= 1, warmup >= 0")
        for comm, bytes_ in zip(comms, sizes):
            comm.schedule.check_count(len(comm.hosts), bytes_ // ELEMENT_BYTES)
            missing = [h for h in comm.hosts if h not in self.topo.hosts]
            if missing:
                raise TestbedError(f"{comm.name}: no host {missing[0]!r} in {self.topo.name}")
        sweeps.check_sweep([max(sizes)], sum(len(c.hosts) for c in comms), 1, self.topo.bytes_per_s, warmup, iters)
        rows, seen = together.measure(self.emulation, comms, [s // ELEMENT_BYTES for s in sizes], iters, warmup,
                                      draw, self.folder / name)
        summary = seen.summary()
        for row in rows:
            row.update(summary)
        return Together(rows, summary, seen.links, seen.sampler.samples,
                        "BOTTLENECK" if any(r["emulator_bottleneck"] for r in rows) else "ok")

    def collective_for(self, comm: together.Comm, size: int, seconds: float, *, events: Sequence = (),
                       stall_limit: float = 20.0, draw: Draw | None = None) -> dict:
        """One collective's iterations back to back for `seconds`, while `events` (``link_failure``,
        ``switch_failure``) take links and switches down and back up: every iteration's start, end
        and #wrong, what stopped them early (ranks stalled past stall_limit), and the events as
        they happened (see ``api.together.run_for``); with a `draw`, its source ports."""
        comm.schedule.check_count(len(comm.hosts), size // ELEMENT_BYTES)
        return together.run_for(self.emulation, comm, size // ELEMENT_BYTES, seconds, events, stall_limit, draw)

    def watch(self, comm: together.Comm, size: int, *, draw: Draw | None = None, stall_limit: float = 15.0,
              interval: float = 0.02, cadence: float = CADENCE_S, baseline: int = BASELINE_WINDOWS) -> Watch:
        """The collective running back to back, watched as an operator watches a training job (its
        ranks' step timings and retransmissions, the switch queues every `interval` s, the
        controller's port events; with a draw, which fixes its 5-tuples, its paths for lossy links),
        until the block ends: ``with emu.watch(comm, size) as w: ... w.monitor.poll(w.now())``
        gives the alarms of the operator's monitor (windows of `cadence` s, each against `baseline`
        healthy ones before it; told nothing of a fault), ``w.diagnose(before, after)`` the
        detector's finding on two windows of your own (``api.watch``). A stall up to stall_limit is
        waited out; a draw gives the connections its 5-tuples."""
        comm.schedule.check_count(len(comm.hosts), size // ELEMENT_BYTES)
        if cadence <= 0 or baseline < 1:
            raise TestbedError("watch: cadence must be above 0 s and baseline 1 window or more")
        return Watch(self.emulation, comm, size // ELEMENT_BYTES, draw, stall_limit, interval, cadence, baseline)

    def fault(self, fault: faults.Fault | str, watch: Watch | LaunchWatch | None = None, end: float = 600.0) -> list:
        """A fault (``emulation.faults``: a Fault, or its text KIND:WHERE[:HOW]@WHEN) as events for
        ``events.Timeline`` (its start and its undoing); slowing or stopping a rank needs the watch
        that runs the ranks (a launched job's watch under mpirun has no rank's process to give)."""
        fault = faults.Fault.parse(fault) if isinstance(fault, str) else fault
        pids = watch.rank_pids if watch else None
        fault.check(self.topo, len(pids) if pids else 0)
        return fault.events(self.emulation, pids, end)

    def train(self, schedule, hosts: Sequence[str], gradient_bytes: int, compute_s: float, iters: int, batch: int,
              label: str, draw: Draw | None = None) -> dict:
        """`iters` training iterations (modelled computation of `compute_s`, then the gradients'
        allreduce by `schedule` over `hosts`) after one of warmup: ``collectives.training.train``."""
        return training.train(self.emulation, schedule, hosts, gradient_bytes, compute_s, iters, batch, label, draw)

    def cpu_monitor(self):
        """with emu.cpu_monitor() as cpu: ...; cpu.result(): how busy the machine, its busiest core and
        Open vSwitch were over the span, with the verdict (``emulation.cpu``)."""
        return self.emulation.cpu_monitor()

    def drain(self, links: Sequence) -> None:
        """Have the controller route around `links` (``topo.links``' entries) until the next
        drain() leaves them out: drain([]) puts every link back."""
        self.emulation.drain(links)

    def link_failure(self, link, at: float, lasting: float, flap: float = 0) -> list:
        """The events of a link (``topo.links``' entry) down at `at` s for `lasting` s (up and down
        every `flap` s in between), for ``collective_for``."""
        return events.link_failure(self.emulation, link, at, lasting, flap)

    def switch_failure(self, switch: str, at: float, lasting: float, flap: float = 0) -> list:
        """The events of a switch (its bridge name) down at `at` s for `lasting` s."""
        return events.switch_failure(self.emulation, switch, at, lasting, flap)

    def jobs(self, jobs: Sequence, *, iters: int = 3, warmup: int = 1, draws: Sequence | None = None,
             capture: str | None = None, offsets: Sequence[float] | None = None) -> list[dict]:
        """Training jobs (``api.jobs.Job``: a workload, its groups, a host per rank) at once, started
        together, each `iters` iterations after `warmup`: per job its mean iteration and every one
        (``times``, ``starts``), per group kind its time, share and bytes on the fabric and inside
        servers, #wrong, and the CPU verdict. draws: a hash draw per job, for its connections'
        source ports; capture: a name to capture every switch-to-switch link under (folder/name),
        which gives each job's bytes per link (``link_bytes``); offsets: seconds each job waits
        before its first iteration (CASSINI's start offsets)."""
        jobs = list(jobs)
        if not jobs or iters < 1 or warmup < 0:
            raise TestbedError("jobs need one or more jobs, iters >= 1 and warmup >= 0")
        if offsets is not None and (len(offsets) != len(jobs) or min(offsets) < 0):
            raise TestbedError("offsets: one non-negative number of seconds per job")
        for job in jobs:
            job.check(self.topo)
        return run_jobs(self.emulation, jobs, iters, warmup, draws, self.folder / capture if capture else None,
                        offsets)

    def watch_launch(self, launched: Launch, *, interval: float = 0.02, cadence: float = CADENCE_S,
                     baseline: int = BASELINE_WINDOWS) -> LaunchWatch:
        """A launched program watched as an operator watches a training job, until the block ends:
        the switch queues every `interval` s, the hosts' egress drops, ECN marks, the controller's
        port events and the steps the program reports (``testbed.step``), judged by the operator's
        monitor (windows of `cadence` s against `baseline` healthy ones; told nothing of a fault):
        ``with emu.watch_launch(launched) as w: ... w.monitor.poll(w.now())`` (``runs.launch_watch``)."""
        if cadence <= 0 or baseline < 1:
            raise TestbedError("watch_launch: cadence must be above 0 s and baseline 1 window or more")
        return LaunchWatch(self.emulation, launched, interval, cadence, baseline)

    def launch(self, command: Sequence[str], *, hosts: Sequence[str] | None = None, env: dict | None = None,
               mpi: bool = False, name: str = "launch") -> Launch:
        """Your own program once per rank, started now in the hosts' namespaces with torchrun's
        environment (``runs.launch``), or by ``mpirun`` with ``mpi``: a rank per host of `hosts`
        (default: every host, in order), `env` added to each rank's. Returns the started launch:
        ``wait(timeout)`` (each rank's exit code; a failed rank ends the others), ``ranks``,
        ``pids``, ``logs``, ``steps()`` (what each rank reported with ``testbed.step``) and ``stop()``;
        each rank's output in folder/name. Leaving the fabric ends every process in its hosts."""
        command = list(command)
        hosts = list(hosts) if hosts is not None else list(self.topo.hosts)
        if not command or len(hosts) < 1 or any(h not in self.topo.hosts for h in hosts):
            raise TestbedError("launch needs a command and one or more of the fabric's hosts")
        return Launch(self.emulation, command, hosts, self.folder / name, dict(env or {}), mpi).start()

    def communicators(self, comms: Sequence[together.Comm], draw: Draw | None = None) -> together.Communicators:
        """The communicators' rank processes, kept open: ``with emu.communicators(comms) as group:
        group.iterate(counts, iteration)``, for a workload that runs them phase after phase."""
        return together.Communicators(self.emulation, list(comms), draw)

    def flows(self, pairs: Sequence[tuple], *, seconds: int = 3, streams: int = 1, draw: Draw | None = None,
              name: str = "flows", congestion_control: str | None = None) -> Flows:
        """Long-lived TCP flows, all at once, `streams` connections per (source, destination) pair
        (host names, or NIC ports such as HPN7's ``cross_segment_pairs()``). With a `draw`, the
        connections take its source ports (and, for a round-robin bond, its NIC ports), so two
        forms of a fabric can be measured on the same 5-tuples. congestion_control: the senders'
        (cubic, bbr, reno or dctcp, on each socket; None: the emulation's, else the hosts' default,
        BBR on this machine)."""
        pairs = [(self._port(s), self._port(d)) for s, d in pairs]
        if not pairs or not 1 <= streams <= 16 or not 1 <= seconds <= 600:
            raise TestbedError("flows need at least one pair, 1 to 16 streams and 1 to 600 seconds")
        if congestion_control:
            dctcp.check(congestion_control, "congestion_control")
        groups = None if draw is None else flow_connections([(s.host, d.host) for s, d in pairs], streams, draw)
        queue_ports = [interface(*self.topo.attachment(nic)) for nic in self.topo.nic_ports()]
        seen = Observation(self.emulation, self.folder / name, queue_ports)
        during = [seen]
        if (congestion_control or self.emulation.congestion_control) == dctcp.OFFERED:
            during.append(Alphas([(s.ip, d.ip) for s, d in pairs]))
        flows, cpu = measure_flows(self.emulation, pairs, seconds, streams=streams, connections=groups, during=during,
                                   congestion_control=congestion_control)
        failed = [f"{f['src']}->{f['dst']}: {f['error']}" for f in flows if f["error"]]
        if failed:
            raise TestbedError(f"flows failed: {'; '.join(failed)}")
        goodput = [f["received_mbit"] * 1e6 / 8 / predict.nic_capacity(self.topo, s.host)
                   for f, (s, _) in zip(flows, pairs)]
        row = {"goodput_over_nic": round(statistics.mean(goodput), 3), "min_goodput_over_nic": round(min(goodput), 3),
               "measured_over_model": None, **seen.summary(), **cpu}
        if groups is not None:
            conns = [c for group in groups for c in group]
            paths = predict.captured_paths(self.topo, conns, seen.paths)
            row.update(connections=len(conns), captured=len(paths),
                       as_placed=predict.paths_as_placed(Placer(self.topo, self.routing, draw.bond), paths))
            if len(paths) == len(conns):
                expected = predict.flows(self.topo, groups, paths, self.emulation.mtu)["goodput_over_nic"]
                row["measured_over_model"] = round(statistics.mean(goodput) / statistics.mean(expected), 3)
        return Flows(flows, row["goodput_over_nic"], row["min_goodput_over_nic"],
                     {t: c["max_over_mean"] for t, c in seen.tiers.items()},
                     {t: c["idle_links"] for t, c in seen.tiers.items()}, row["nic_busier_share"],
                     row["mean_queue_bytes"], seen.capture_over_counters, row["measured_over_model"], flag(cpu),
                     seen.links, row, seen.sampler.samples, during[1].means if len(during) > 1 else {})

    def switch_queues(self, interval: float = 0.005) -> SwitchQueues:
        """``with emu.switch_queues() as seen: <traffic>``; then ``seen.row``: the deepest FIFO over
        every switch port, the mean of its busy samples, the drops, and the ECN marks (with ecn);
        ``seen.sent_by(hosts)``: the marks on the packets those hosts sent."""
        return SwitchQueues(self.emulation, interval)

    def virtual_queue(self, port: str) -> markers.VirtualQueue:
        """``with emu.virtual_queue(port) as vq: <traffic>``; then ``vq.against(FIFO samples, frame)``:
        how closely the ECN marker's virtual queue at a switch port followed its FIFO (with ecn)."""
        link = next((link for intf, link in self.topo.switch_ports() if intf == port), None)
        if link is None:
            raise TestbedError(f"no switch port {port!r} in {self.topo.name}")
        tables = ecn_marking.maps({self.emulation.port_netns(port): [port]}).get(port, {})
        if "queues" not in tables or "config" not in tables:
            raise TestbedError(f"no ECN marker at {port}: give ecn= or set_ecn(K) first")
        return markers.VirtualQueue(tables["queues"], tables["config"])

    def incast(self, fanins: Sequence[int], size: int, *, rounds: int = 3, interval: float | None = 0.001,
               on_fanin=None, congestion_control: str | None = None) -> tuple[list[dict], list[dict]]:
        """k senders to one receiver at once, for each k of `fanins`: (one row per fan-in: the
        bottleneck queue's depth, drops, completion times against the ideal, how well scapy's probes
        and the FIFO agree, the senders' retransmissions and timeouts, the verdict; every queue sample
        and probe). interval: the probes' (None: no probes, the FIFO's own figures alone; a probe
        shares the FIFO it measures). on_fanin(row, its samples) sees each fan-in as it is measured.
        congestion_control: the senders' and the receiver's (None: the emulation's, else the hosts'
        default)."""
        if congestion_control:
            dctcp.check(congestion_control, "congestion_control")
        return run_fanins(self.emulation, list(fanins), size, rounds, interval, on_fanin=on_fanin,
                          congestion_control=congestion_control)

    def _port(self, end):
        if isinstance(end, str):
            if end not in self.topo.hosts:
                raise TestbedError(f"no host {end!r} in {self.topo.name}")
            return self.topo.hosts[end].ports[0]
        return end
