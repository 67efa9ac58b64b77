"""The engine's fault trial: on a job running under watch (``api.Emulated.watch``), a stretch of the
job as it runs, a fault placed where the job's traffic goes (a link its connections cross, a
switch on their paths, one of its ranks) and undone after its time, the job settling, and the
first alarm of the operator's monitor after the injection against what was injected (kind and
place), its false alarms before it, with the collective's bus bandwidth before and during the
fault. ``fault_localisation`` runs its trials on it."""
import contextlib
import threading
import time
from dataclasses import dataclass, field

from testbed import routing
from testbed.collectives.connections import rank_connections, step_transfers
from testbed.collectives.placements import place
from testbed.emulation import faults
from testbed.emulation.cpu import process_seconds
from testbed.emulation.events import Timeline
from testbed.errors import TestbedError
from testbed.experiments.fingerprint import ADDED
from testbed.fidelity.diagnosis import Finding
from testbed.probes.flows import measure_flows
from testbed.routing.hashing import Placer

# what the detector should call each injected kind
EXPECTED = {"slow-link": "link-slow", "link-down": "link-down", "flap": "link-down", "port-down": "link-down",
            "switch-down": "switch-down", "slow-rank": "rank-slow", "hang-rank": "rank-hung", "loss": "link-slow"}
STEP_S = 0.25            # how often a trial looks at the monitor's alarms while the fault lasts
REACT_SETTLE_S = 0.5     # after rerouting, the flows' queues drain before the bandwidth counts
STRAGGLER_USE_S = 0.5    # how long a straggler's CPU use is measured before it is held to its share


@dataclass(frozen=True)
class Trial:        # fault: api.Fault, or None (fault-free); share_of_use: a slow rank's, of what it used
    number: int
    fault: object
    share_of_use: float = 0.0
    drift: float = 0.0     # seconds fault-free with a second job's traffic starting and stopping
    also: object = field(default=None, metadata={ADDED: "--two-at-once"})   # a second fault, at the same time


def job_links(watch):
    """The links the job's connections cross, as hashing and the routes put them (the paths the
    watch gave its monitor)."""
    return sorted(set().union(*watch.monitor.paths.values()),
                  key=lambda link: (link.a, link.a_port, link.b, link.b_port))


def ready_job(emu, watch, straggler=None):
    """The links the job crosses (``job_links``), once a straggler (rank, share), if any, is held at
    `share` of the CPU it used over the job's first STRAGGLER_USE_S: slow from the start, as a rank
    with more work than the others is (stage imbalance), and no fault; returned once the monitor's
    baseline holds it alone (``held_back``)."""
    if straggler:
        rank, share = straggler
        pid, started = watch.rank_pids[rank], watch.now()
        used = process_seconds(pid)
        watch.wait(started + STRAGGLER_USE_S)
        use = (process_seconds(pid) - used) / (watch.now() - started)
        faults.CgroupLimit(emu.emulation.record, pid, max(faults.CgroupLimit.MIN_SHARE, round(use * share, 4))).apply()
        held_back(watch)
    return job_links(watch)


def held_back(watch, limit_s=60.0):
    """Wait until the monitor's baseline can hold none of the iterations before the straggler was
    held back: BASELINE_WINDOWS + 1 iterations and as many windows and one more since (its
    iterations may outlast a window), at most `limit_s`."""
    since, monitor = watch.now(), watch.monitor
    count = monitor.healthy.maxlen + 1
    while watch.alive() and watch.now() < since + limit_s and (
            watch.now() < since + monitor.cadence * (count + 1) or len(watch.ran(since, watch.now())) < count):
        watch.wait(watch.now() + monitor.cadence / 4)


def job_fabric_links(topo, mode, algorithm, count, draw, port=7000):
    """The switch-to-switch links ("A-B", by label) the job's data crosses under routing `mode`, as
    the routes and hashing put its connections (`draw`, the port the watched job listens on),
    known before the fabric is built: where a design comparison slows or cuts, so that each form
    is hit where its job goes."""
    schedule, hosts = place(algorithm, topo)
    conns = rank_connections(schedule, hosts, [port] * len(hosts), 1, draw)
    placer = Placer(topo, routing.plan(topo, mode), draw.bond)
    data = {c for _, moved in step_transfers(schedule, conns, count) for c in moved}
    links = {topo.link_at(node, p) for c in data for node, p in placer.path(c)}
    return sorted(f"{topo.label(link.a)}-{topo.label(link.b)}" for link in links
                  if link.a in topo.switches and link.b in topo.switches)


def place_fault(fault, topo, links, rng, ranks, straggler=None):
    """The fault at a place the job uses, drawn with rng (a given fault keeps its place; a rank's
    fault is never the straggler's, whose cgroup it would take over)."""
    if fault.where:
        return fault
    label = lambda node: topo.label(node) if node in topo.switches else node
    fabric_links = [link for link in links if all(n in topo.switches for n in (link.a, link.b))]
    host_links = [link for link in links if link not in fabric_links]
    single = [link for link in host_links if len(topo.hosts[link.a if link.a in topo.hosts else link.b].ports) == 1]
    if fault.kind == "slow-link":
        link = rng.choice(links)
    elif fault.kind == "loss":
        link = rng.choice([link for link in links if faults.can_lose(topo, link)])
    elif fault.kind in ("link-down", "flap"):
        link = rng.choice(fabric_links + single or links)
    elif fault.kind == "port-down":
        link = rng.choice([link for link in host_links if link not in single])
        host = link.a if link.a in topo.hosts else link.b
        port = next(i for i, nic in enumerate(topo.hosts[host].ports) if topo.attachment(nic) in link.ends())
        return _with(fault, f"{host}:{port}")
    elif fault.kind == "switch-down":
        used = sorted({n for link in links for n in (link.a, link.b) if n in topo.switches})
        return _with(fault, label(rng.choice(used)))
    else:
        return _with(fault, str(rng.choice([r for r in range(ranks) if r != straggler])))
    return _with(fault, f"{label(link.a)}-{label(link.b)}")


def footprint(fault, topo):
    """What a fault takes, as the detector names places: its link, its switch and that switch's
    links, or its rank. Two faults at once must take nothing in common."""
    if fault.kind == "switch-down":
        switch = faults.find_switch(topo, fault.where)
        return {frozenset((topo.label(switch),))} | {frozenset(topo.label(n) if n in topo.switches else n for n in
                                                              (link.a, link.b)) for link in topo.links
                                                    if switch in (link.a, link.b)}
    return {expected_place(fault, topo)}


def on_paths(fault, topo, links):
    """Whether a fault takes a link the job crosses (`links`: ``job_links``): a rank's always does;
    a fault given with --inject may be placed where the job never goes, and is run and said so."""
    if fault.kind in ("slow-rank", "hang-rank"):
        return True
    label = lambda node: topo.label(node) if node in topo.switches else node
    return bool(footprint(fault, topo) & {frozenset((label(link.a), label(link.b))) for link in links})


def check_apart(faults, topo, ranks):
    """Checks each of a trial's given faults on topo, and that two take nothing in common."""
    for fault in faults:
        fault.check(topo, ranks)
    if len(faults) == 2 and footprint(faults[0], topo) & footprint(faults[1], topo):
        raise TestbedError(f"--inject {'+'.join(f'{f.kind}:{f.where}' for f in faults)}: the two faults take the "
                           f"same place on {topo.name}: give them places apart")


def place_apart(fault, topo, links, rng, ranks, straggler, taken, tries=100):
    """place_fault, drawn again until it takes nothing of `taken` (a footprint)."""
    for _ in range(tries):
        placed = place_fault(fault, topo, links, rng, ranks, straggler)
        if not footprint(placed, topo) & taken:
            return placed
    raise TestbedError(f"no place for a {fault.kind} apart from the trial's other fault on {topo.name}")


def _at_once(fault):
    """The fault as it starts at the injection (its own `at` was the window before it)."""
    return faults.Fault(fault.kind, fault.where, fault.how, 0.0, fault.lasting)


def _with(fault, where, how=None):
    return faults.Fault(fault.kind, where, fault.how if how is None else how, fault.at, fault.lasting,
                        fault.iteration)


def expected_place(fault, topo):
    """Where the detector should say the fault is, as it says it."""
    label = lambda node: topo.label(node) if node in topo.switches else node
    if fault.kind in ("slow-link", "link-down", "flap", "loss"):
        link = faults.find_link(topo, fault.where)
        return frozenset((label(link.a), label(link.b)))
    if fault.kind == "port-down":
        link = faults.port_link(topo, fault.where)
        return frozenset((label(link.a), label(link.b)))
    if fault.kind == "switch-down":
        return frozenset((label(faults.find_switch(topo, fault.where)),))
    return frozenset((f"rank {fault.where}",))


def found_place(finding):
    if finding.kind in ("link-slow", "link-down"):
        return frozenset(finding.where.split("-", 1))
    return frozenset((finding.where,)) if finding.where else frozenset()


class SecondJob:
    """A second job's traffic on the fabric, starting and stopping on its own: TCP flows between
    `pairs` pairs of random hosts for `on` seconds (low, high), then none for `off`, drawn from
    rng, each burst ending by `until` (monotonic s); ``bursts`` keeps when each ran. A confounder:
    it slows the watched job and queues links at their full rate, and is no fault."""
    DRIFT, TRIAL = ((5, 20), (5, 20)), ((1, 4), (0.5, 3))       # (on, off): over minutes, within a trial

    PAIRS = 2

    @classmethod
    def check(cls, topos, option):
        """Refuses, in one line, a fabric too small for the second job's pairs of hosts."""
        for topo in topos:
            if len(topo.hosts) < 2 * cls.PAIRS:
                raise TestbedError(f"{option}: the second job needs {2 * cls.PAIRS} hosts and {topo.name} has "
                                   f"{len(topo.hosts)}: give a larger --topology or leave {option} out")

    def __init__(self, emu, topo, rng, until, on, off, pairs=PAIRS):
        self.emu, self.hosts, self.rng, self.until, self.pairs = emu, sorted(topo.hosts), rng, until, pairs
        self.on, self.off, self.topo, self.bursts, self._stop = on, off, topo, [], threading.Event()

    def __enter__(self):
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _run(self):
        while not self._stop.wait(self.rng.uniform(*self.off)):
            seconds = self.rng.randint(*self.on)
            if time.monotonic() + seconds + 1 > self.until:
                return
            chosen = self.rng.sample(self.hosts, 2 * self.pairs)
            pairs = [(self.topo.hosts[a].ports[0], self.topo.hosts[b].ports[0])
                     for a, b in zip(chosen[::2], chosen[1::2])]
            start = time.monotonic()
            measure_flows(self.emu.emulation, pairs, seconds, omit=0)
            self.bursts.append((start, time.monotonic()))

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def run_trial(emu, watch, trial, topo, links, rng, *, before, fault_for, react=False, stall_limit=20.0,
              second_job=False, straggler=None):
    """One trial on a running watch (trial: its number, its fault or None, and for a slow rank the
    CPU share as a fraction of its use): `before` seconds of the job, the fault for `fault_for`
    seconds (rerouting around a link the monitor names slow, with `react`), the job settling; its
    rows, one per fault (``trial.also``: a second fault from the same moment, taking nothing of
    the first's place; ``first_alarm`` says what each is scored on), one if none. The operator's
    monitor (``watch.monitor``) judges its windows on its own cadence over the whole run and is
    told nothing of the fault; the trial's finding is the first alarm raised after the injection
    until the job has settled, its false alarms the incidents raised before the injection (in a
    fault-free trial, all of them; an alarm standing on from the trial before is no
    new incident, but it is the finding of a fault-free trial). A trial with `drift` seconds is a
    fault-free one that long, with a second job's traffic starting and stopping (``SecondJob``);
    `second_job`: a second job's traffic comes and goes during the trial, faulty or not; `straggler`:
    the (rank, share) that ``ready_job`` holds back, said in the row and spared by a rank's fault."""
    monitor, ranks, spared = watch.monitor, len(watch.comm.hosts), straggler and straggler[0]
    watch.wait(watch.started + monitor.cadence * (monitor.healthy.maxlen + 1))   # its baseline filled first
    fault = trial.fault and place_fault(trial.fault, topo, links, rng, ranks, spared)
    also = trial.also and place_apart(trial.also, topo, links, rng, ranks, spared, footprint(fault, topo))
    pids, start = watch.rank_pids, watch.now()
    used = [process_seconds(pid) for pid in pids]
    drift, second = trial.drift, None
    if drift:
        second = SecondJob(emu, topo, rng, start + drift, *SecondJob.DRIFT)
    elif second_job:
        second = SecondJob(emu, topo, rng, start + before + fault_for, *SecondJob.TRIAL)
    with contextlib.ExitStack() as confounding:
        if second:
            confounding.enter_context(second)
        with emu.cpu_monitor() as cpu_before:
            watch.wait(start + (fault.at if fault and fault.at else drift or before))
            if fault and fault.iteration:
                first = len(watch.iterations)
                while len(watch.iterations) < first + fault.iteration and watch.alive():
                    time.sleep(0.02)
        inject = watch.now()

        def sized(f):
            """A slow rank at its share of the CPU it used before the injection."""
            if not (f and f.kind == "slow-rank" and trial.share_of_use):
                return f
            use = (process_seconds(pids[int(f.where)]) - used[int(f.where)]) / (inject - start)
            return _with(f, f.where, max(faults.CgroupLimit.MIN_SHARE, round(use * trial.share_of_use, 4)))
        fault, also = sized(fault), sized(also)
        events = [e for f in (fault, also) if f for e in emu.fault(_at_once(f), watch, end=fault_for)]
        during, timeline, reacted, undone = while_faulty(emu, watch, events, inject + fault_for, react)
        settle(watch, undone, stall_limit)
        watch.wait(watch.now() + monitor.cadence)          # the window the job settled in has ended
        end = watch.now()
        monitor.poll(end)
    raised = monitor.between(inject, end) if fault else []
    false = monitor.between(start, inject) if fault else monitor.between(start, end)
    placed = [f for f in (fault, also) if f]
    expected = [(EXPECTED[f.kind], expected_place(f, topo)) for f in placed]
    b, d = watch.busbw(start, inject), watch.busbw(inject, undone)
    reaction = {}
    if react:
        settled = reacted + REACT_SETTLE_S if reacted is not None else None
        reaction = {"react_s": None if reacted is None else round(reacted - inject, 2),
                    "busbw_until_react_MBps": None if reacted is None else round(watch.busbw(inject, reacted) / 1e6, 4),
                    "busbw_after_react_MBps": None if settled is None or settled >= undone else
                    round(watch.busbw(settled, undone) / 1e6, 4)}
    on_clock = lambda t: round(t - watch.started, 3)      # the watch's trace clock (``faultbench.trace``)
    common = {"fabric": topo.name, "trial": trial.number, "share_of_use": trial.share_of_use or None,
              "start_s": on_clock(start), "inject_s": on_clock(inject) if fault else None,
              "undone_s": on_clock(undone) if fault else None, "end_s": on_clock(end),
              "off_paths": [f"{f.kind} {f.where}" for f in placed if not on_paths(f, topo, links)],
              "false_alarms": sum(a.new for a in false), "healthy_s": round((inject if fault else end) - start, 2),
              "healthy_windows": round(((inject if fault else end) - start) / monitor.cadence),
              "drift_s": drift or None,
              "straggler": straggler and f"rank {straggler[0]} at {straggler[1]:g} of its CPU",
              "second_job_s": round(sum(b - a for a, b in second.bursts), 1) if second else None,
              "alarms": [dict(a.to_dict(), at=round(a.at - watch.started, 3)) for a in monitor.between(start, end)],
              "windows": round((end - start) / monitor.cadence),
              "undecided_windows": sum(start < t <= end for t in monitor.undecided),
              "busbw_before_MBps": round(b / 1e6, 4), "busbw_during_MBps": round(d / 1e6, 4),
              "during_over_before": round(d / b, 3) if b else None, "iterations": len(watch.ran(start, watch.now())),
              "iteration_s_before": round((inject - start) / len(watch.ran(start, inject)), 4)
              if watch.ran(start, inject) else None,
              "wrong": watch.wrong(start, watch.now()), "events": [e.what for e in timeline.done],
              "event_error": timeline.error, "job_error": watch.error,
              "emulator_bottleneck": cpu_before.result()["emulator_bottleneck"] or during["emulator_bottleneck"],
              "busiest_core": max(cpu_before.result()["busiest_core"], during["busiest_core"]),
              **reaction}
    if not placed:
        found = false[0].finding if false else Finding("none", "", 1.0, "no alarm")   # one standing on counts
        return [dict(common, **outcome(None, ("none", frozenset()), found, None), along=None)]
    rows = []
    for k, (f, wanted) in enumerate(zip(placed, expected)):
        other = expected[1 - k] if len(placed) == 2 else None
        shown = first_alarm(raised, wanted, other)
        found = shown.finding if shown else Finding("none", "", 1.0, "no alarm")
        row = dict(common, **outcome(f, wanted, found, shown and shown.at - inject),
                   along=f"{placed[1 - k].kind} {placed[1 - k].where}" if other else None)
        if k:       # the trial's false alarms, windows and time without a fault are counted once, on its first row
            row.update(false_alarms=0, healthy_s=0.0, healthy_windows=0, windows=0, undecided_windows=0)
        rows.append(row)
    return rows


def while_faulty(emu, watch, events, until, react=False):
    """The fault's `events` on a Timeline until monotonic `until`, the watch's monitor polled every
    STEP_S (with `react`, the first switch link it names slow is drained, and put back at the end):
    (the CPU verdict over the span, the timeline, when it rerouted or None, when the fault ended)."""
    reacted = None
    with emu.cpu_monitor() as cpu, Timeline(events) as timeline:
        while watch.now() < until and watch.alive():
            watch.wait(min(until, watch.now() + STEP_S))
            raised = watch.monitor.poll(watch.now())
            if react and reacted is None:
                link = next((link for link in (drainable(emu.topo, a.finding) for a in raised) if link), None)
                if link is not None:
                    emu.drain([link])
                    reacted = watch.now()
    undone = watch.now()
    if reacted is not None:
        emu.drain([])
    return cpu.result(), timeline, reacted, undone


def first_alarm(raised, wanted, other=None):
    """The alarm a fault is scored on: alone, the first new incident after the injection (or one
    standing on); beside an `other` fault (its expected (kind, place)), the first alarm that names
    it, else the first new one that names neither (the monitor names one place a window: the
    second fault's incident comes in a later window)."""
    if other is None:
        return next((a for a in raised if a.new), raised[0] if raised else None)
    named = lambda a: (a.finding.kind, found_place(a.finding))
    return next((a for a in raised if named(a) == wanted), None) or \
        next((a for a in raised if a.new and named(a) != other), None)


def outcome(fault, wanted, found, after):
    """The per-fault part of a trial's row: what was injected, what was found, and how soon."""
    correct = (found.kind, found_place(found)) == wanted
    return {"injected": fault.kind if fault else "none", "where": fault.where if fault else "",
            "how": fault.how if fault else None, "lasting_s": fault.lasting if fault else None,
            "expected": wanted[0], "expected_where": "-".join(sorted(wanted[1])), "found": found.kind,
            "found_where": found.where, "confidence": round(found.confidence, 3), "correct": correct,
            "kind_correct": found.kind == wanted[0],
            "detect_s": round(after, 2) if fault and correct and after is not None else None,
            "evidence": found.evidence}


def drainable(topo, finding):
    """The switch-to-switch link a finding names slow (one the fabric can route around), or None."""
    if finding.kind != "link-slow":
        return None
    a, _, b = finding.where.partition("-")
    try:
        link = faults.find_link(topo, f"{a}-{b}")
    except TestbedError:
        return None
    return link if link.a in topo.switches and link.b in topo.switches else None


def settle(watch, undone, limit):
    """Wait until the job ran two whole iterations after the fault was undone (TCP's retransmission
    timer may hold a flow for seconds after a link comes back), at most `limit` seconds."""
    deadline = undone + limit
    while watch.alive() and watch.now() < deadline:
        if sum(it["start"] >= undone for it in list(watch.iterations)) >= 2:
            return
        time.sleep(0.05)
