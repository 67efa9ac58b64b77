"""Faults located from what an operator sees: a collective runs back to back on each fabric while
random faults, one per trial, slow or cut a link, take a switch or a bonded NIC's port down, or
slow or stop a rank; a detector (``fidelity.diagnosis``) that reads only the ranks' step timings,
the switch queues and the controller's port events names each fault's kind and place; the
scenario scores it and measures what each kind of fault costs the collective.

Alibaba's C4 (arXiv 2406.04594) found faulty and slow components from the collective library's
own timings, since collectives are periodic and every rank does the same work, and cut the time
lost to errors by about 30%; ByteDance's MegaScale (NSDI 2024) put straggler detection into the
same loop. A trial here: `--before` seconds of the collective as it runs, then the fault for
`--fault-for` seconds (undone at its end), then the job settles. The detector compares the window
after the injection with the one before it (it is never told the fault, nor when). Fault-free
trials do the same without a fault: a finding there is a false alarm. A fault's place is drawn
among what the job uses (a link its connections cross, a switch on their paths, one of its ranks);
a slow rank gets a CPU share below what it used in the window before (a share above that would
not slow it); a hung rank is stopped (SIGSTOP) and continued.

Scored: the confusion table (injected kind against found kind), the share located correctly (kind
and place) with its 95% Wilson interval, false alarms with theirs, the time from injection to the
first correct finding, and, per kind, the collective's bus bandwidth during the fault against the
same trial's window before it (paired, mean and 95% interval). With --react, the controller routes
around a link the detector names slow as soon as it does, as C4P moves elephant flows, and the
bandwidth regained is reported.
"""
import random
import statistics
import time
from dataclasses import dataclass

from scenarios.common import add_seed_argument, at_least, fabric, names, seed_of
from testbed.api import Comm
from testbed.collectives.data import ELEMENT_BYTES
from testbed.collectives.placements import place
from testbed.emulation import faults
from testbed.emulation.cpu import process_seconds
from testbed.emulation.events import Timeline
from testbed.emulation.network import DEFAULT_MTU
from testbed.emulation.shaping import netem_available
from testbed.errors import TestbedError
from testbed.experiments.claims import Claim
from testbed.experiments.job_trials import run_watched
from testbed.fidelity.diagnosis import KINDS as FOUND_KINDS
from testbed.report import figures
from testbed.report.paired import Comparison, figure, interval, wilson
from testbed.routing.hashing import Draw, Placer
from testbed.topology import DEFAULT_QUEUE, DEFAULT_RATE, FORMS, HPN7, LeafSpine

NAME = "fault_localisation"
HELP = "random faults (slow or cut links, switches and NIC ports down, slow or hung ranks) located and scored"
FABRICS = ("bigraph:2,8", "leafspine:4,4,4", "hpn7:2,2,2,2")
KINDS = ("slow-link", "link-down", "flap", "switch-down", "port-down", "slow-rank", "hang-rank")
DESIGNS = ("tor", "plane", "routing")
# what the detector should call each injected kind
EXPECTED = {"slow-link": "link-slow", "link-down": "link-down", "flap": "link-down", "port-down": "link-down",
            "switch-down": "switch-down", "slow-rank": "rank-slow", "hang-rank": "rank-hung", "loss": "link-slow"}
CLAIMS = (Claim("the detector names most faults, kind and place", "located (kind and place)", at_least=0.8),
          Claim("it raises few false alarms on fault-free trials", "false alarms", at_most=0.25))
SMOKE = ("--topology", "bigraph:2,8", "--trials", "2", "--fault-free", "1", "--kinds", "slow-link,link-down",
         "--designs", "none", "--before", "2", "--fault-for", "3")
STEP_S = 0.25            # the detector is asked again every STEP_S of the fault (time to detection)
REACT_SETTLE_S = 0.5     # after rerouting, the flows' queues drain before the bandwidth counts


def add_arguments(parser):
    parser.add_argument("--topology", action="append", default=None, metavar="SPEC",
                        help=f"a fabric, {FORMS}; once per fabric (default {', '.join(FABRICS)})")
    parser.add_argument("--rate", type=float, default=DEFAULT_RATE, help="link rate, Mbit/s (default %(default)s)")
    parser.add_argument("--queue", type=int, default=DEFAULT_QUEUE,
                        help="egress FIFO limit per link end, packets (default %(default)s)")
    parser.add_argument("--mtu", type=int, default=DEFAULT_MTU, help="MTU of every link (default %(default)s)")
    parser.add_argument("--trials", type=int, default=7, help="faulty trials per fabric (default %(default)s)")
    parser.add_argument("--fault-free", type=int, default=4,
                        help="fault-free trials per fabric, for false alarms (default %(default)s)")
    parser.add_argument("--kinds", default=",".join(KINDS),
                        help="the kinds random faults are drawn from, comma-separated (default: all; port-down only "
                             "where NICs have two ports; loss where the kernel has netem)")
    parser.add_argument("--inject", action="append", default=None, metavar="FAULT",
                        help="KIND:WHERE[:HOW][@WHEN]: this fault in a trial of its own on every fabric, in place of "
                             "random ones (e.g. slow-link:U0-L1:0.25, hang-rank:3, flap:leaf0-spine1:0.5, "
                             "slow-rank:2:0.01); WHEN (seconds, or 5it: after 5 iterations) is counted from the "
                             "trial's start and defaults to --before; repeatable")
    parser.add_argument("--algorithm", default="ring", help="the allreduce the job runs (default %(default)s)")
    parser.add_argument("--bytes", type=int, default=256 << 10, help="allreduce message size (default %(default)s)")
    parser.add_argument("--before", type=float, default=3.0,
                        help="seconds of the job before each fault, the detector's baseline (default %(default)s)")
    parser.add_argument("--fault-for", type=float, default=5.0, help="seconds each fault lasts (default %(default)s)")
    parser.add_argument("--hang-for", type=float, default=2.0,
                        help="seconds a hung rank stays stopped, within --fault-for (default %(default)s)")
    parser.add_argument("--stall-limit", type=float, default=20.0,
                        help="seconds a rank waits for data before the job gives up (default %(default)s)")
    parser.add_argument("--designs", default=",".join(DESIGNS),
                        help="what a fabric's design does about a fault, each a paired comparison with the same "
                             "faults in both forms: tor (a NIC link cut: dual-ToR against single-ToR), plane (an "
                             "aggregation switch down: dual against single plane), routing (a fabric link slowed: "
                             "deterministic routes against ECMP); comma-separated, or none (default: all)")
    parser.add_argument("--design-trials", type=int, default=3,
                        help="paired trials per design comparison (default %(default)s)")
    parser.add_argument("--react", action="store_true",
                        help="route around a link as soon as the detector names it slow, and report what that regains")
    add_seed_argument(parser, "the faults' draws")


@dataclass(frozen=True)
class Trial:
    number: int
    fault: object        # emulation.faults.Fault, or None (fault-free); a slow rank's share is set when run
    share_of_use: float = 0.0   # slow-rank: the CPU share as a fraction of what the rank used before


@dataclass(frozen=True)
class Run:
    """One emulation's trials: a fabric of the localisation (design None), or one form of a design
    comparison (design: its name, label: the form's)."""
    label: str
    topo: object
    routing: str
    trials: tuple
    design: str | None = None


@dataclass
class Plan:
    runs: list
    mtu: int
    size: int
    algorithm: str
    before: float
    fault_for: float
    hang_for: float
    stall_limit: float
    react: bool
    seed: int

    @property
    def fabrics(self):
        return [run.topo for run in self.runs]


def kinds_of(text):
    allowed = KINDS + (("loss",) if netem_available() else ())
    if "loss" in text.split(",") and "loss" not in allowed:
        raise TestbedError("--kinds loss: random loss needs the netem qdisc, which this kernel does not have: "
                           "run it in the lab VM, whose stock kernel has it")
    return names(text, "--kinds", allowed)


def prepare(args):
    specs = args.topology or list(FABRICS)
    topos = [fabric(args, spec) for spec in specs]
    at_least(args.trials, 0, "--trials")
    at_least(args.fault_free, 0, "--fault-free")
    at_least(args.design_trials, 2, "--design-trials", " (an interval needs two)")
    at_least(args.before, 1, "--before", " s")
    at_least(args.fault_for, 1, "--fault-for", " s")
    if not 0.2 <= args.hang_for <= args.fault_for:
        raise TestbedError(f"--hang-for must be between 0.2 s and --fault-for ({args.fault_for:g} s); "
                           f"got {args.hang_for:g}")
    if args.stall_limit < args.fault_for + 5:
        raise TestbedError("--stall-limit must outlast a fault by 5 s or more: "
                           f"use --stall-limit {args.fault_for + 5:g}")
    kinds = kinds_of(args.kinds)
    designs = [] if args.designs == "none" else names(args.designs, "--designs", DESIGNS)
    seed = seed_of(args)
    given = [faults.Fault.parse(text, lasting=args.fault_for) for text in args.inject or []]
    given = [_lasting(f, args.hang_for if f.kind == "hang-rank" else f.lasting) for f in given]
    rng, runs = random.Random(seed), []
    for topo in topos:
        ranks = check_job(topo, args)
        for fault in given:
            fault.check(topo, ranks)
        trials = tuple(Trial(t, fault) for t, fault in enumerate(given)) if given else \
            draw_trials(topo, kinds, args, rng)
        if trials:
            runs.append(Run(topo.spec, topo, "ecmp", trials))
    for name in designs:
        runs += design_runs(name, topos, args, rng)
    for run in runs[len(topos):]:
        check_job(run.topo, args)
    if not runs:
        raise TestbedError("no trials: give --trials or --fault-free of 1 or more, --inject, or --designs")
    return Plan(runs, args.mtu, args.bytes, args.algorithm, args.before, args.fault_for, args.hang_for,
                args.stall_limit, args.react, seed)


def check_job(topo, args):
    schedule, hosts = place(args.algorithm, topo)
    at_least(args.bytes, ELEMENT_BYTES * len(hosts), "--bytes", f" ({ELEMENT_BYTES} per rank)")
    schedule.check_count(len(hosts), args.bytes // ELEMENT_BYTES)
    return len(hosts)


def _lasting(fault, lasting):
    return faults.Fault(fault.kind, fault.where, fault.how, fault.at, lasting, fault.iteration)


def draw_trials(topo, kinds, args, rng):
    """A fabric's trials in a random order: --trials faults, kinds in turn from a random start
    (kinds the fabric lacks skipped), places drawn once the job's paths are known, and --fault-free."""
    mine = [kind for kind in kinds if kind != "port-down" or multi_port(topo)]
    start = rng.randrange(len(mine))
    chosen = [mine[(start + i) % len(mine)] for i in range(args.trials)] + [None] * args.fault_free
    rng.shuffle(chosen)
    return tuple(Trial(t, None if kind is None else
                       faults.Fault(kind, "", fault_how(kind, rng), 0.0,
                                    args.hang_for if kind == "hang-rank" else args.fault_for),
                       rng.uniform(0.25, 0.6) if kind == "slow-rank" else 0.0)
                 for t, kind in enumerate(chosen))


def design_runs(name, topos, args, rng):
    """The two forms of a design comparison, each with the same faults in the same trials:
    tor: a NIC's link to its ToR cut, dual-ToR against single-ToR (one plane each);
    plane: an aggregation switch down, dual plane against single plane (dual-ToR each);
    routing: a fabric link slowed, deterministic routes against ECMP on the Clos."""
    kw = dict(rate=args.rate, queue=args.queue)
    n = args.design_trials
    if name == "routing":
        clos = next((t for t in topos if isinstance(t, LeafSpine)), None) or LeafSpine(4, 4, 4, **kw)
        links = clos.fabric_links()
        chosen = [rng.choice(links) for _ in range(n)]
        how = [round(rng.uniform(0.15, 0.4), 2) for _ in range(n)]
        trials = tuple(Trial(t, faults.Fault("slow-link", f"{clos.label(link.a)}-{clos.label(link.b)}", how[t], 0.0,
                                             args.fault_for)) for t, link in enumerate(chosen))
        return [Run("deterministic", clos, "deterministic", trials, name), Run("ecmp", clos, "ecmp", trials, name)]
    base = next((t for t in topos if isinstance(t, HPN7)), None) or HPN7(2, 2, 2, 2, **kw)
    size = (base.segments, base.servers, base.rails, base.aggs)
    if name == "tor":
        dual, single = HPN7(*size, planes=1, tors=2, **kw), HPN7(*size, planes=1, tors=1, **kw)
        hosts = [rng.choice(sorted(dual.hosts)) for _ in range(n)]
        ports = [rng.randrange(2) for _ in range(n)]
        only = lambda h: single.label(single.attachment(single.hosts[h].ports[0])[0])
        port_down = [faults.Fault("port-down", f"{h}:{p}", 0, 0.0, args.fault_for) for h, p in zip(hosts, ports)]
        link_down = [faults.Fault("link-down", f"{h}-{only(h)}", 0, 0.0, args.fault_for) for h in hosts]
        return [Run("dual-ToR", dual, "ecmp", tuple(Trial(t, f) for t, f in enumerate(port_down)), name),
                Run("single-ToR", single, "ecmp", tuple(Trial(t, f) for t, f in enumerate(link_down)), name)]
    dual, single = HPN7(*size, planes=2, tors=2, **kw), HPN7(*size, planes=1, tors=2, **kw)
    aggs = [rng.randrange(base.aggs) for _ in range(n)]
    planes = [rng.randrange(2) for _ in range(n)]
    return [Run("dual-plane", dual, "ecmp", tuple(Trial(t, faults.Fault("switch-down", f"agg.p{p}.a{a}", 0, 0.0,
                                                                         args.fault_for))
                                              for t, (a, p) in enumerate(zip(aggs, planes))), name),
            Run("single-plane", single, "ecmp", tuple(Trial(t, faults.Fault("switch-down", f"agg.a{a}", 0, 0.0,
                                                                            args.fault_for))
                                                      for t, a in enumerate(aggs)), name)]


def multi_port(topo):
    return any(len(h.ports) > 1 for h in topo.hosts.values())


def fault_how(kind, rng):
    return {"slow-link": round(rng.uniform(0.15, 0.4), 2), "flap": round(rng.uniform(0.5, 1.5), 1),
            "loss": round(rng.uniform(0.01, 0.05), 3)}.get(kind, 0.0)


# --- where a fault goes ------------------------------------------------------------------------
def job_links(topo, emu, watch, draw):
    """The links the job's connections cross, as hashing and the routes put them."""
    placer = Placer(topo, emu.routing, draw.bond)
    conns = watch._group.data_connections(0, watch.count)
    return sorted({topo.link_at(node, port) for c in conns for node, port in placer.path(c)},
                  key=lambda link: (link.a, link.a_port, link.b, link.b_port))


def place_fault(fault, topo, links, rng, ranks):
    """The fault at a place the job uses, drawn with rng (a given fault keeps its place)."""
    if fault.where:
        return fault
    label = lambda node: topo.label(node) if node in topo.switches else node
    fabric_links = [link for link in links if all(n in topo.switches for n in (link.a, link.b))]
    host_links = [link for link in links if link not in fabric_links]
    single = [link for link in host_links if len(topo.hosts[link.a if link.a in topo.hosts else link.b].ports) == 1]
    if fault.kind in ("slow-link", "loss"):
        link = rng.choice(links)
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
        return _with(fault, str(rng.randrange(ranks)))
    return _with(fault, f"{label(link.a)}-{label(link.b)}")


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


# --- a trial -----------------------------------------------------------------------------------
def run_trial(emu, watch, trial, plan, topo, links, rng):
    """One trial on a running watch: the window before, the fault, the job settling; its row."""
    fault = trial.fault and place_fault(trial.fault, topo, links, rng, len(watch.comm.hosts))
    pids, start = watch.rank_pids, watch.now()
    used = [process_seconds(pid) for pid in pids]
    with emu.emulation.cpu_monitor() as cpu_before:
        watch.wait(start + (fault.at if fault and fault.at else plan.before))
        if fault and fault.iteration:
            first = len(watch.iterations)
            while len(watch.iterations) < first + fault.iteration and watch.alive():
                time.sleep(0.02)
    inject = watch.now()
    if fault and fault.kind == "slow-rank" and trial.share_of_use:
        rank = int(fault.where)
        use = (process_seconds(pids[rank]) - used[rank]) / (inject - start)
        fault = _with(fault, fault.where, max(faults.CgroupLimit.MIN_SHARE, round(use * trial.share_of_use, 4)))
    events = emu.fault(_at_once(fault), watch, end=plan.fault_for) if fault else []
    reacted = None
    with emu.emulation.cpu_monitor() as cpu_during, Timeline(events) as timeline:
        while watch.now() < inject + plan.fault_for and watch.alive():
            watch.wait(min(inject + plan.fault_for, watch.now() + STEP_S))
            if plan.react and reacted is None:
                link = drainable(topo, watch.diagnose((start, inject), (inject, watch.now())))
                if link is not None:
                    emu.drain([link])
                    reacted = watch.now()
    undone = watch.now()
    if reacted is not None:
        emu.drain([])
    settle(watch, undone, plan.stall_limit)
    before, after = (start, inject), (inject, undone)
    found = watch.diagnose(before, after)
    expected = (EXPECTED[fault.kind], expected_place(fault, topo)) if fault else ("none", frozenset())
    correct = (found.kind, found_place(found)) == expected
    detect = first_detection(watch, before, inject, undone, expected) if fault and correct else None
    b, d = watch.busbw(*before), watch.busbw(*after)
    react = {}
    if plan.react:
        settled = reacted + REACT_SETTLE_S if reacted is not None else None
        react = {"react_s": None if reacted is None else round(reacted - inject, 2),
                 "busbw_until_react_MBps": None if reacted is None else round(watch.busbw(inject, reacted) / 1e6, 4),
                 "busbw_after_react_MBps": None if settled is None or settled >= undone else
                 round(watch.busbw(settled, undone) / 1e6, 4)}
    return {"fabric": topo.name, "trial": trial.number, "injected": fault.kind if fault else "none",
            "where": fault.where if fault else "", "how": fault.how if fault else None,
            "share_of_use": trial.share_of_use or None, "expected": expected[0],
            "found": found.kind, "found_where": found.where, "confidence": round(found.confidence, 3),
            "correct": correct, "kind_correct": found.kind == expected[0],
            "detect_s": None if detect is None else round(detect, 2),
            "busbw_before_MBps": round(b / 1e6, 4), "busbw_during_MBps": round(d / 1e6, 4),
            "during_over_before": round(d / b, 3) if b else None, "iterations": len(watch.ran(start, watch.now())),
            "wrong": watch.wrong(start, watch.now()), "evidence": found.evidence,
            "events": [e.what for e in timeline.done],
            "event_error": timeline.error, "job_error": watch.error,
            "emulator_bottleneck": cpu_before.result()["emulator_bottleneck"] or
            cpu_during.result()["emulator_bottleneck"],
            "busiest_core": max(cpu_before.result()["busiest_core"], cpu_during.result()["busiest_core"]), **react}


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


def first_detection(watch, before, inject, undone, expected):
    """Seconds from the injection to the first moment the detector, asked every STEP_S, named the
    fault correctly."""
    t = inject + STEP_S
    while t <= undone + 1e-9:
        found = watch.diagnose(before, (inject, t))
        if (found.kind, found_place(found)) == expected:
            return t - inject
        t += STEP_S
    return undone - inject


# --- a fabric, and the run ---------------------------------------------------------------------
def run_one(experiment, plan, k, run, keep):
    """Every trial of a run on one emulation (``experiments.watched``). The forms of a design share
    their draw (and so their 5-tuples)."""
    topo = run.topo
    rng = random.Random(plan.seed * 1009 + k)
    schedule, hosts = place(plan.algorithm, topo)
    bond = "round-robin" if multi_port(topo) else "hash"
    draw_seed = plan.seed + (DESIGNS.index(run.design) + 100 if run.design else k)
    return run_watched(experiment, topo, run.routing, Comm(schedule, tuple(hosts)), plan.size, run.trials,
                       lambda emu, watch, trial, links: run_trial(emu, watch, trial, plan, topo, links, rng),
                       draw=Draw(draw_seed, bond), stall_limit=plan.stall_limit, mtu=plan.mtu,
                       folder=experiment.results.path / (f"{run.design}_{run.label}" if run.design else f"fabric{k}"),
                       on_row=lambda row: keep(dict(row, run=run.label, design=run.design)),
                       prepare=lambda emu, watch: job_links(topo, emu, watch, Draw(draw_seed, bond)))


def share_line(what, k, n):
    share, lo, hi = wilson(k, n)
    return f"{what}: {k} of {n}" + (f" = {share:.0%} [95% interval {lo:.0%}, {hi:.0%}]" if n else "")


def confusion_lines(rows):
    """Injected kind (rows) against found kind (columns)."""
    injected = [k for k in KINDS + ("loss", "none") if any(r["injected"] == k for r in rows)]
    width = max(len(k) for k in FOUND_KINDS) + 1
    lines = [f"  {'injected / found':18s}" + "".join(f"{k:>{width}s}" for k in FOUND_KINDS) + "  located"]
    for kind in injected:
        mine = [r for r in rows if r["injected"] == kind]
        cells = "".join(f"{sum(r['found'] == k for r in mine):>{width}d}" for k in FOUND_KINDS)
        lines.append(f"  {kind:18s}{cells}  {sum(r['correct'] for r in mine)}/{len(mine)}")
    return lines


def cost_line(rows, kind):
    """The collective's busbw during the fault over the same trial's window before: the mean of the
    trials' ratios and its 95% interval (fabrics differ in busbw, so ratios, not MB/s, are pooled)."""
    ratios = [r["during_over_before"] for r in rows if r["injected"] == kind and r["during_over_before"] is not None]
    e = interval(ratios)
    said = figure(e, 2) + (f" over {e.n} trials" if e.n != 1 else " (1 trial: no interval)")
    return f"  {kind:12s} during/before {said}" + (f" (range {min(ratios):.2f}-{max(ratios):.2f})" if ratios else "")


def summary_lines(rows):
    faulty = [r for r in rows if r["injected"] != "none"]
    free = [r for r in rows if r["injected"] == "none"]
    lines = ["confusion (trials):"] + confusion_lines(rows)
    lines.append(share_line("located correctly (kind and place)", sum(r["correct"] for r in faulty), len(faulty)))
    lines.append(share_line("kind right", sum(r["kind_correct"] for r in faulty), len(faulty)))
    lines.append(share_line("false alarms in fault-free trials", sum(r["found"] != "none" for r in free), len(free)))
    lines.append("time from injection to the first correct finding (s), per kind: median (range, trials):")
    for kind in KINDS + ("loss",):
        times = sorted(r["detect_s"] for r in faulty if r["injected"] == kind and r["detect_s"] is not None)
        if times:
            lines.append(f"  {kind:12s} {statistics.median(times):5.2f} ({times[0]:.2f}-{times[-1]:.2f}, {len(times)})")
    lines.append("cost: busbw during the fault over the trial's window before it, per kind (mean [95% interval]):")
    for kind in KINDS + ("loss",):
        if any(r["injected"] == kind for r in faulty):
            lines.append(cost_line(rows, kind))
    if free:
        lines.append(cost_line(rows, "none") + " (no fault: the window-to-window noise)")
    reacted = [r for r in rows if r.get("busbw_after_react_MBps") is not None]
    if any("react_s" in r for r in rows):
        lines.append(f"reaction: {len(reacted)} trial(s) drained a link the detector named slow "
                     f"({sum(r['injected'] == 'slow-link' and r['correct'] for r in reacted)} of them the slowed link)")
        if reacted:
            regained = Comparison("busbw under the fault", ("until the reaction", "after it"),
                                  [(r["busbw_until_react_MBps"], r["busbw_after_react_MBps"]) for r in reacted], 3)
            lines.append(f"  {regained.line()}")
            shares = [r["busbw_after_react_MBps"] / r["busbw_before_MBps"] for r in reacted if r["busbw_before_MBps"]]
            lines.append("  after it, of the window before the fault: " + ", ".join(f"{s:.2f}" for s in shares))
    return lines


def design_lines(plan, rows):
    """Each design comparison: busbw during the fault over before it, one form against the other,
    paired by trial (a difference: a fault that stops the job leaves 0)."""
    lines = []
    for design in dict.fromkeys(run.design for run in plan.runs if run.design):
        labels = tuple(run.label for run in plan.runs if run.design == design)
        value = {(r["trial"], r["run"]): r["during_over_before"] for r in rows if r["design"] == design}
        trials = sorted({t for t, _ in value})
        fault = next(r["injected"] for r in rows if r["design"] == design)
        compared = Comparison(f"{design}: busbw during a {fault} over before", labels,
                              [(value.get((t, labels[0])), value.get((t, labels[1]))) for t in trials], 2,
                              by="difference")
        lines.append(compared.line())
    return (["what the design does about it (during/before, mean [95% interval]):"] +
            [f"  {line}" for line in lines]) if lines else []


def line(row):
    said = (f"found {row['found']} {row['found_where']} ({row['confidence']:.2f})"
            + (f" after {row['detect_s']:.2f} s" if row["detect_s"] is not None else ""))
    how = f" {row['how']:g}" if row["how"] else ""
    return (f"  {row['fabric']:30s} trial {row['trial']:2d} {row['injected']:11s} {row['where'] + how:26s} "
            f"{said:54s} {'RIGHT' if row['correct'] else 'WRONG'}  busbw {row['during_over_before'] or 0:.2f} "
            f"of before{'  BOTTLENECK' if row['emulator_bottleneck'] else ''}")


def run(plan, experiment):
    located = [t for run in plan.runs if run.design is None for t in run.trials]
    faulty = sum(t.fault is not None for t in located)
    designs = list(dict.fromkeys(run.design for run in plan.runs if run.design))
    experiment.header(
        f"# {NAME}: {sum(run.design is None for run in plan.runs)} fabric(s), {faulty} faulty and "
        f"{len(located) - faulty} fault-free trials; design comparisons: {', '.join(designs) or 'none'} "
        f"(seed {plan.seed}); {plan.algorithm} allreduce of {plan.size} bytes on every host, back to back; "
        f"{plan.before:g} s before each fault, {plan.fault_for:g} s of fault (a hang {plan.hang_for:g} s)")
    experiment.about.update(seed=plan.seed, runs=[f"{r.label} {r.topo.name}" for r in plan.runs])
    for k, run in enumerate(plan.runs):
        experiment.say(f"\n## {run.design + ': ' + run.label + ', ' if run.design else ''}{run.topo.describe()}, "
                       f"{run.routing} routing", section="rows")
        run_one(experiment, plan, k, run,
                lambda row: experiment.row(row, line(row), csv="fault_localisation.csv", omit=("events",)))
    rows = experiment.rows
    lines = summary_lines([r for r in rows if r["design"] is None]) + design_lines(plan, rows)
    bound = [f"{r['fabric']} trial {r['trial']}" for r in rows if r["emulator_bottleneck"]]
    lines.append("emulator: " + (f"WAS the bottleneck (CPU saturated) in {', '.join(bound)}" if bound else
                                 "was not the bottleneck (busiest core at most "
                                 f"{max((r['busiest_core'] for r in rows), default=0):.0%} busy)"))
    lines.append(f"#wrong: {experiment.wrong} (every allreduce checked against numpy)")
    experiment.about["summary"] = lines
    faulty_rows = [r for r in rows if r["design"] is None and r["injected"] != "none"]
    free_rows = [r for r in rows if r["design"] is None and r["injected"] == "none"]
    experiment.headline.update({"located (kind and place)": wilson(sum(r["correct"] for r in faulty_rows),
                                                                   len(faulty_rows))[0],
                                "false alarms": wilson(sum(r["found"] != "none" for r in free_rows),
                                                       len(free_rows))[0]})
    experiment.say("\nsummary:", *[f"  {line}" for line in lines])
    kinds = [k for k in KINDS + ("loss",) if any(r["injected"] == k for r in faulty_rows)]
    located = [(f"{k} located", *wilson(sum(r["correct"] for r in faulty_rows if r["injected"] == k),
                                         sum(r["injected"] == k for r in faulty_rows))) for k in kinds]
    experiment.figure("located.png", figures.intervals, located, "share located (kind and place), 95% Wilson interval",
                      reference=None, fabric=", ".join(dict.fromkeys(r["fabric"] for r in rows)))
