"""The testbed as a Python library: build a fabric, bring it to life, run a workload on it, and get
back plain results carrying the ratios a test asserts on. The scenarios are written on it, and so
are the project's own emulation tests; ``testbed.pytest_plugin`` gives it to pytest.

    import testbed

    topo = testbed.fabric("bigraph:2,8")                  # a family, a FILE.json|yaml, simai:FILE
    with testbed.emulate(topo) as emu:                    # root; torn down whatever happens
        sweep = emu.sweep(["hd", "hdrm"], [1 << 20])
    assert sweep.ratio("hdrm", "hd", 1 << 20) > 1.3       # busbw of one over the other
    assert sweep.wrong == 0                               # every result checked against numpy

Bad input raises ``TestbedError`` with a one-line message before anything is built.
"""
from __future__ import annotations

import math
import statistics
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from testbed import routing as routes
from testbed.collectives import sweep as sweeps
from testbed.collectives.connections import flow_connections
from testbed.collectives.data import ELEMENT_BYTES
from testbed.collectives.placements import place
from testbed.emulation import machines as machine_files
from testbed.emulation.across import MachineEmulation
from testbed.emulation.network import DEFAULT_MTU, Emulation
from testbed.emulation.shaping import netem_available
from testbed.errors import TestbedError
from testbed.fidelity import fabric_check, predict
from testbed.fidelity.capacity import check_hosts, check_link_rate, check_mtu, check_queue
from testbed.fidelity.model import idle_step_us
from testbed.fidelity.verdict import flag
from testbed.probes.collisions import collision_trials
from testbed.probes.flows import measure_flows
from testbed.probes.loads import Observation
from testbed.report.paired import Comparison, trial_order
from testbed.routing.hashing import Draw
from testbed.topology import DEFAULT_QUEUE, DEFAULT_RATE, Topology, from_spec, interface
from testbed.topology.hpn7 import HPN_UPLINK_CAPACITY, plane_forms

__all__ = ["fabric", "emulate", "Emulated", "plane_forms", "Draw", "compare", "trial_order", "Collective", "Sweep",
           "Collisions", "Flows", "FabricCheck", "TestbedError", "HPN_UPLINK_CAPACITY"]   # = testbed.API

MAX_DELAY_MS = 1000   # beyond this TCP's handshakes and the runs' timeouts stop fitting
SILENT = lambda line: None


def check_delay(delay: float) -> float:
    if not (math.isfinite(delay) and 0 <= delay <= MAX_DELAY_MS):
        raise TestbedError(f"--delay must be between 0 and {MAX_DELAY_MS} ms (got {delay:g})")
    if delay and not netem_available():
        raise TestbedError("--delay needs the netem qdisc, which this kernel does not have (CONFIG_NET_SCH_NETEM): "
                           "run without --delay, or in the lab VM, whose stock Debian kernel has it")
    return delay


def fabric(spec: str | Path = "bigraph:2,8", *, rate: float = DEFAULT_RATE, queue: int = DEFAULT_QUEUE,
           delay: float = 0.0, mtu: int = DEFAULT_MTU) -> Topology:
    """The fabric `spec` names ('bigraph:2,8', 'leafspine:4,4,4', 'hpn7:2,2,2,2', 'simai:FILE',
    a FILE.json|yaml as each run writes topology.json), links at `rate` Mbit/s, checked: a rate,
    MTU, queue or size the emulator cannot honour is refused here. No root; nothing built."""
    check_mtu(mtu)
    check_link_rate(rate)
    topo = from_spec(str(spec), rate=rate, queue=queue, delay=check_delay(delay))
    if len(topo.hosts) < 2:
        raise TestbedError(f"{topo.name} has {len(topo.hosts)} host: a fabric needs at least 2 to carry traffic")
    check_hosts(topo)
    check_queue(topo, mtu)
    return topo


def compare(name: str, labels: tuple[str, str], pairs: Sequence[tuple[float, float]]) -> Comparison:
    """A figure measured on both of two forms in each trial: `.a`, `.b` and `.gain` (b / a - 1) as
    a mean with its 95% interval (`.lo`, `.hi`, `.excludes(0)`), and `.line()` to print."""
    return Comparison(name, tuple(labels), list(pairs))


# --- results -----------------------------------------------------------------------------------
def _verdict(row: dict) -> str:
    return flag(row) if "emulator_bottleneck" in row else "ok"


@dataclass(frozen=True)
class Collective:
    """One size of a collective's sweep, as nccl-tests prints it: the mean time, algbw and busbw
    (bytes/s over 1e6, busbw with the collective's factor), busbw over the link rate, the results
    that differed from numpy, and the verdict ('ok', or BOTTLENECK / LOSS / ABOVE-LINK: see
    docs/fidelity.md)."""
    algorithm: str
    size: int
    ranks: int
    time_us: float
    algbw_MBps: float
    busbw_MBps: float
    busbw_over_link: float
    wrong: int
    verdict: str
    row: dict = field(repr=False)
    collective: str = "allreduce"

    @property
    def emulator_bottleneck(self) -> bool:
        return self.verdict == "BOTTLENECK"

    @classmethod
    def from_row(cls, row: dict) -> Collective:
        return cls(row["algorithm"], row["size"], row["ranks"], row["time_us"], row["algbw_MBps"],
                   row["busbw_MBps"], row["busbw_over_link"], row["wrong"], _verdict(row), row,
                   row.get("collective", "allreduce"))


class Sweep(list):
    """The Collective of each (algorithm, size) measured, in order."""

    def get(self, algorithm: str, size: int) -> Collective:
        for c in self:
            if c.algorithm == algorithm and c.size == size:
                return c
        raise KeyError(f"no {algorithm} at {size} bytes in this sweep")

    def ratio(self, a: str, b: str, size: int, figure: str = "busbw_MBps") -> float:
        """a's figure over b's at `size` (busbw: > 1 when a is faster; time_us: < 1 when it is)."""
        return getattr(self.get(a, size), figure) / getattr(self.get(b, size), figure)

    @property
    def wrong(self) -> int:
        return sum(c.wrong for c in self)


@dataclass(frozen=True)
class Collisions:
    """One trial of an allreduce under the collision probe: steps in which a directed link carried
    two or more of the step's flows, measured on captured packets and predicted from the routes
    (None where hashing decides), busbw over the link, and the capture checked against the
    switch ports' counters (1.0: nothing missed)."""
    algorithm: str
    trial: int
    collided_steps: int
    steps: int
    predicted_collided_steps: int | None
    max_flows_per_link: int
    busbw_over_link: float
    wrong: int
    capture_over_port_counters: float | None
    verdict: str
    row: dict = field(repr=False)

    @classmethod
    def from_row(cls, row: dict) -> Collisions:
        return cls(row["algorithm"], row["trial"], row["collided_steps"], row["steps"],
                   row["predicted_collided_steps"], row["max_flows_per_link"], row["busbw_over_link"],
                   row["wrong"], row["capture_over_port_counters"], _verdict(row), row)


@dataclass(frozen=True)
class Flows:
    """Long-lived TCP flows measured with every link captured: goodput over the source NIC's
    capacity (mean and slowest), per tier the busiest link's bytes over the tier's mean and its idle
    links, the busier of each bonded NIC's two downlinks' share, switch-port queues, the capture
    against the port counters, and measured over the max-min flow model (with a `draw`, whose
    connections the model knows)."""
    flows: list[dict] = field(repr=False)
    goodput_over_nic: float
    min_goodput_over_nic: float
    tiers: dict[str, float]
    idle_links: dict[str, int]
    nic_busier_share: float | None
    mean_queue_bytes: float
    capture_over_port_counters: float | None
    measured_over_model: float | None
    verdict: str
    links: list[dict] = field(repr=False)


@dataclass(frozen=True)
class FabricCheck:
    """Ping between every pair of NIC ports, one TCP flow over the longest path, parallel flows on
    spread-out paths; each flow's goodput over the link rate."""
    passed: bool
    single_flow: float
    parallel_min: float
    summary: dict = field(repr=False)


# --- the running fabric ------------------------------------------------------------------------
def emulate(topo: Topology, routing: str = "deterministic", *, hash: str = "same", folder: str | Path | None = None,
            mtu: int = DEFAULT_MTU, log=SILENT, slots: int = 1, machines: str | Path | None = None) -> Emulated:
    """The fabric as a context manager: entering builds it (Mininet hosts, Open vSwitch switches,
    shaped links, the controller installing `routing`: 'deterministic' or 'ecmp', ECMP hashing
    with the `hash` 'same' at every switch or 'per-switch'); leaving tears down exactly what it
    built, also after an exception or Ctrl-C. Needs root. The run's files (topology.json,
    routing.json, captures, the controller's log) go to `folder` (default: a new temporary one).
    slots > 1 splits the fabric into that many slots, an ovs-vswitchd each (docs/scale.md); machines
    names a machines file whose machines run the slots, on Dask distributed (docs/machines.md)."""
    if routing not in routes.MODES:
        raise TestbedError(f"unknown routing {routing!r}: use one of {', '.join(routes.MODES)}")
    if hash not in routes.HASHES:
        raise TestbedError(f"unknown hash {hash!r}: use one of {', '.join(routes.HASHES)}")
    if not isinstance(slots, int) or slots < 1:
        raise TestbedError(f"slots must be 1 or more (got {slots!r})")
    folder = Path(folder) if folder is not None else Path(tempfile.mkdtemp(prefix="testbed-"))
    plan = routes.plan(topo, routing, hash)
    if machines is not None:
        if slots > 1:
            raise TestbedError("the machines file gives each machine its slots: leave slots out")
        return Emulated(MachineEmulation(topo, plan, folder, machine_files.load(machines), mtu=mtu, log=log))
    return Emulated(Emulation(topo, plan, folder, mtu=mtu, log=log, slot_count=slots))


class Emulated:
    """A running fabric (see `emulate`). `emulation` is the underlying ``emulation.Emulation``."""

    def __init__(self, emulation: Emulation):
        self.emulation = emulation
        self.topo, self.folder = emulation.topo, emulation.run_dir
        self._idle_step_us = None

    def __enter__(self) -> Emulated:
        self.emulation.__enter__()
        return self

    def __exit__(self, *exc):
        return self.emulation.__exit__(*exc)

    @property
    def routing(self) -> routes.RoutingPlan:
        return self.emulation.routing

    def check(self, seconds: int = 3) -> FabricCheck:
        summary = fabric_check.check(self.emulation, seconds)
        return FabricCheck(fabric_check.passed(summary), summary["single_flow"]["ratio"],
                           summary["parallel_flows"]["min"], summary)

    def sweep(self, algorithms: Iterable[str] = ("ring", "hd", "hdrm"), sizes: Iterable[int] = (1024, 1 << 20), *,
              iters: int = 5, warmup: int = 1, model: bool = True, progress=SILENT,
              collective: str = "allreduce") -> Sweep:
        """A collective of each size by each algorithm, every result checked against numpy:
        allreduce by 'ring', 'ring_topo', 'hd', 'hdrm', 'ring_grouped'; the other collectives
        ('allgather', 'reducescatter', 'alltoall', 'broadcast', 'sendrecv') by the variants
        docs/scenarios/collectives.md lists. model: judge each row against what
        the idle fabric and the link rate predict (docs/fidelity.md), at the cost of one idle-latency
        measurement per emulation; without it only the CPU decides the verdict."""
        algorithms, sizes = list(algorithms), sorted(set(sizes))
        if not algorithms or not sizes:
            raise TestbedError("a sweep needs at least one algorithm and one size")
        if min(sizes) < ELEMENT_BYTES or iters < 1 or warmup < 0:
            raise TestbedError(f"sizes must be at least {ELEMENT_BYTES} bytes, iters at least 1, warmup at least 0")
        placed = sweeps.place_variants(self.topo, algorithms, collective, sizes)
        sweeps.check_sweep(sizes, max(len(h) for _, h in placed.values()), len(placed), self.topo.bytes_per_s,
                           warmup, iters)
        if model and self._idle_step_us is None:
            self._idle_step_us = idle_step_us(self.emulation)
        rows = sweeps.run_sweep(self.emulation, placed, sizes, warmup, iters, progress=progress,
                                idle_step_us=self._idle_step_us if model else None)
        return Sweep(Collective.from_row(r) for r in rows)

    def allreduce(self, algorithm: str = "hdrm", size: int = 1 << 20, **kw) -> Collective:
        return self.sweep([algorithm], [size], **kw)[0]

    def collisions(self, algorithm: str, size: int = 1 << 20, *, trials: int = 2, iters: int = 2,
                   seed: int | None = None, progress=SILENT) -> list[Collisions]:
        """Trials of one allreduce with every directed link captured, each on fresh connections:
        with `seed`, trial t takes its source ports from Draw(seed + t), so that another fabric or
        algorithm can run on the same 5-tuples; without, the kernel picks them."""
        if trials < 1 or iters < 1:
            raise TestbedError("collisions need at least 1 trial and 1 iteration")
        schedule, hosts = place(algorithm, self.topo)
        sweeps.check_sweep([size], len(hosts), trials, self.topo.bytes_per_s, 1, iters)
        draws = None if seed is None else {t: Draw(seed + t) for t in range(trials)}
        rows = collision_trials(self.emulation, self.topo.name, algorithm, schedule, hosts, size, trials, iters,
                                self.folder / f"collisions-{algorithm}", progress=progress, draws=draws)
        return [Collisions.from_row(r) for r in rows]

    def flows(self, pairs: Sequence[tuple], *, seconds: int = 3, streams: int = 1, draw: Draw | None = None) -> Flows:
        """Long-lived TCP flows, all at once, `streams` connections per (source, destination) pair
        (host names, or NIC ports such as HPN7's ``cross_segment_pairs()``). With a `draw`, the
        connections take its source ports (and, for a round-robin bond, its NIC ports), so two
        forms of a fabric can be measured on the same 5-tuples."""
        pairs = [(self._port(s), self._port(d)) for s, d in pairs]
        if not pairs or not 1 <= streams <= 16 or not 1 <= seconds <= 600:
            raise TestbedError("flows need at least one pair, 1 to 16 streams and 1 to 600 seconds")
        groups = None if draw is None else flow_connections([(s.host, d.host) for s, d in pairs], streams, draw)
        queue_ports = [interface(*self.topo.attachment(nic)) for nic in self.topo.nic_ports()]
        seen = Observation(self.emulation, self.folder / "flows", queue_ports)
        flows, cpu = measure_flows(self.emulation, pairs, seconds, streams=streams, connections=groups, during=[seen])
        failed = [f"{f['src']}->{f['dst']}: {f['error']}" for f in flows if f["error"]]
        if failed:
            raise TestbedError(f"flows failed: {'; '.join(failed)}")
        goodput = [f["received_mbit"] * 1e6 / 8 / predict.nic_capacity(self.topo, s.host)
                   for f, (s, _) in zip(flows, pairs)]
        model = None
        if groups is not None:
            conns = [c for group in groups for c in group]
            paths = predict.captured_paths(self.topo, conns, seen.paths)
            if len(paths) == len(conns):
                expected = predict.flows(self.topo, groups, paths, self.emulation.mtu)["goodput_over_nic"]
                model = round(statistics.mean(goodput) / statistics.mean(expected), 3)
        shares = [s["busier_share"] for s in seen.split.values()]
        return Flows(flows, round(statistics.mean(goodput), 3), round(min(goodput), 3),
                     {t: c["max_over_mean"] for t, c in seen.tiers.items()},
                     {t: c["idle_links"] for t, c in seen.tiers.items()},
                     round(statistics.mean(shares), 3) if shares else None,
                     round(statistics.mean(q["mean_backlog"] for q in seen.queues.values())),
                     seen.capture_over_counters, model, flag(cpu), seen.links)

    def _port(self, end):
        if isinstance(end, str):
            if end not in self.topo.hosts:
                raise TestbedError(f"no host {end!r} in {self.topo.name}")
            return self.topo.hosts[end].ports[0]
        return end
