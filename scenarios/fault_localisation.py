"""Faults located from what an operator sees: a collective runs back to back on each fabric while
random faults, one per trial (or two at once), slow, cut or make lossy a link, take a switch or a
bonded NIC's port down, or slow or stop a rank. A detector (``fidelity.diagnosis``) reads only the
ranks' step timings and retransmissions, the job's paths, the switch ports' queues and counters and
the controller's port events, as an operator's monitor (``fidelity.monitor``: windows of a second
on a grid from the job's start, each against the healthy ones before it), told nothing of the
faults, neither what nor when: C4's approach (arXiv 2406.04594). A trial: `--before` s of the job,
the fault for `--fault-for` s, the job settling; its finding is the monitor's first incident after
the injection, and an incident with no fault is a false alarm. Places are drawn among what the job
uses, magnitudes across where detection stops (SLOW_LINK_RATE, SLOW_RANK_SHARE of the CPU the rank
used before, hangs from HANG_LEAST s). Scored: the confusion table, the share located with its
Wilson interval, per C4 class precision, recall and F1, detectability by magnitude, false alarms
per hour and per 10 windows (with --drift, under a second job that comes and goes), the time to
detect, and each kind's cost to busbw; with --react, what routing around a named link regains.
"""
import random
import sys
from dataclasses import dataclass, field

from scenarios.common import add_seed_argument, at_least, fabric, names, seed_of
from testbed.api import (
    DEFAULT_MTU,
    DEFAULT_QUEUE,
    DEFAULT_RATE,
    ELEMENT_BYTES,
    FORMS,
    HPN7,
    Comm,
    Draw,
    Fault,
    LeafSpine,
    TestbedError,
    place,
)
from testbed.experiments import (
    ADDED,
    FOUND_KINDS,
    SecondJob,
    fault_labels,
    fault_scores,
    figures,
    held_out,
    loss_available,
)
from testbed.experiments.claims import Claim
from testbed.experiments.code_half import EMULATION
from testbed.experiments.fault_trials import Trial, check_apart, job_fabric_links, ready_job, run_trial
from testbed.experiments.job_trials import run_watched

NAME = "fault_localisation"
HELD_OUT = True    # its method is tuned on runs: a run and its page block say whether its seed is held out
HELP = "random faults (slow or cut links, switches and NIC ports down, slow or hung ranks) located and scored"
FABRICS = ("bigraph:2,8", "leafspine:4,4,4", "hpn7:2,2,2,2")
KINDS = ("slow-link", "link-down", "flap", "switch-down", "port-down", "slow-rank", "hang-rank")
DESIGNS = ("tor", "plane", "routing")
SLOW_LINK_RATE, SLOW_RANK_SHARE, HANG_LEAST = (0.3, 0.95), (0.4, 0.9), 0.5
HOW = {"slow-link": (*SLOW_LINK_RATE, 2), "flap": (0.5, 1.5, 1), "loss": (0.01, 0.05, 3)}   # low, high, digits
# A share is judged on its Wilson interval: one trial of a class can refute its claim (0 of 1 is
# [0, 0.79]) but not show it, so the smoke fails when a class's mechanism breaks.
CLAIMS = (Claim("the detector names most strong faults, kind and place", "located, strong faults", at_least=0.8),
          Claim("it raises few false alarms on fault-free trials", "fault-free trials with an alarm", at_most=0.25),
          Claim("it names a slowed link (C4: communication, slow)", "located, strong comm slow", at_least=0.8),
          Claim("it names a cut link, a port or a switch down (communication, hung)", "located, strong comm hung",
                at_least=0.8),
          Claim("it names a slowed rank (computation, slow)", "located, strong compute slow", at_least=0.8),
          Claim("it names a hung rank (computation, hung)", "located, strong compute hung", at_least=0.8))
# one fault of each C4 class, each strong (a link at 0.35 of its rate, a rank at 0.44 of its CPU, a
# 2-3 s hang) and a fault-free trial, drawn by seed 406, whose hash draw puts no two of the ring's
# flows on one link: a slowed rank is then on the ring's critical path and costs it (0.78 of its
# busbw). Seed 97, the smoke's until 2026-12-05, hashes two flows onto a link: the ring waits on that
# link, a rank at 0.42 of its CPU catches up in the slack (busbw 0.97-1.01) and the claim cannot be
# exercised. Every claim's mechanism is exercised
SMOKE = ("--topology", "bigraph:2,8", "--trials", "4", "--fault-free", "1", "--seed", "406",
         "--kinds", "slow-link,link-down,slow-rank,hang-rank", "--designs", "none", "--before", "2", "--fault-for", "3")
# the code that measures, judges and scores this scenario's runs: the code half of its records
CODE = (*EMULATION, "testbed/fidelity/diagnosis.py", "testbed/fidelity/monitor.py", "testbed/fidelity/windows.py",
        "testbed/experiments/fault_trials.py", "testbed/runs/watch.py", "testbed/emulation/faults.py",
        "testbed/report/fault_scores.py")


def add_arguments(parser):
    parser.add_argument("--trials", type=int, default=7, help="faulty trials per fabric (default %(default)s)")
    parser.add_argument("--fault-free", type=int, default=4, help="fault-free trials per fabric (default %(default)s)")
    parser.add_argument("--inject", action="append", default=None, metavar="FAULT",
                        help="KIND:WHERE[:HOW][@WHEN]: this fault in a trial of its own on every fabric, not random "
                             "ones (e.g. slow-link:U0-L1:0.25, hang-rank:3, slow-rank:2:0.01); WHEN (seconds, or 5it: "
                             "after 5 iterations) from the trial's start, by default --before; FAULT+FAULT: two at "
                             "once, at different places; repeatable")
    parser.add_argument("--designs", default=",".join(DESIGNS),
                        help="what a fabric's design does about a fault, paired, the same faults in both forms: tor "
                             "(a NIC link cut: dual- against single-ToR), plane (an aggregation switch down: dual "
                             "against single plane), routing (a fabric link slowed: deterministic against ECMP); "
                             "comma-separated, or none (default: all)")
    parser.add_argument("--design-trials", type=int, default=3,
                        help="paired trials per design comparison (default %(default)s)")
    parser.add_argument("--react", action="store_true",
                        help="route around a link as soon as the detector names it slow, and report what that regains")
    add_seed_argument(parser, "the faults' draws")
    add_trial_arguments(parser)


def add_trial_arguments(parser):
    """The options of the job, its fabrics and its faults' kinds, sizes and times (faultbench's splits
    take them as they are)."""
    parser.add_argument("--topology", action="append", default=None, metavar="SPEC",
                        help=f"a fabric, {FORMS}; once per fabric (default {', '.join(FABRICS)})")
    parser.add_argument("--rate", type=float, default=DEFAULT_RATE, help="link rate, Mbit/s (default %(default)s)")
    parser.add_argument("--queue", type=int, default=DEFAULT_QUEUE,
                        help="egress FIFO limit per link end, packets (default %(default)s)")
    parser.add_argument("--mtu", type=int, default=DEFAULT_MTU, help="MTU of every link (default %(default)s)")
    parser.add_argument("--kinds", default=",".join(KINDS),
                        help="the kinds random faults are drawn from, comma-separated (default %(default)s; "
                             "port-down only where NICs have two ports; loss: links between switches, any with netem)")
    parser.add_argument("--two-at-once", type=int, default=0, metavar="N",
                        help="of the --trials per fabric, N have a second fault of another kind from the same moment, "
                             "apart from the first (default %(default)s)")
    parser.add_argument("--algorithm", default="ring", help="the allreduce the job runs (default %(default)s)")
    parser.add_argument("--bytes", type=int, default=256 << 10, help="allreduce message size (default %(default)s)")
    parser.add_argument("--before", type=float, default=3.0,
                        help="seconds of the job before each fault, the detector's baseline (default %(default)s)")
    parser.add_argument("--fault-for", type=float, default=5.0, help="seconds each fault lasts (default %(default)s)")
    parser.add_argument("--hang-for", type=float, default=None,
                        help="the longest a hung rank stays stopped, s, within --fault-for: a drawn hang lasts "
                             f"{HANG_LEAST:g} s to it, an --inject one all of it (default 5, or --fault-for if less)")
    parser.add_argument("--stall-limit", type=float, default=20.0,
                        help="seconds a rank waits for data before the job gives up (default %(default)s)")
    parser.add_argument("--drift", type=float, default=0,
                        help="a fault-free stretch of this many seconds per fabric with a second job's traffic "
                             "starting and stopping: false alarms under drift (default %(default)s)")
    parser.add_argument("--second-job", action="store_true", help="a second job's traffic comes and goes during every "
                        "trial, faulty or not: a confounder the faults are found through")
    parser.add_argument("--straggler", type=float, default=0,
                        help="a rank per fabric held at this share of the CPU it used, from the job's first second: "
                             "slow from the start and no fault (default %(default)s; 0: none)")


@dataclass(frozen=True)
class Run:
    """One emulation's trials: a fabric of the localisation (design None), or one form of a design
    comparison (design: its name, label: the form's)."""
    label: str
    topo: object
    routing: str
    trials: tuple
    design: str | None = None
    straggler: tuple | None = field(default=None, metadata={ADDED: "--straggler"})   # (rank, CPU share): no fault


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
    second_job: bool = False

    @property
    def fabrics(self):
        return [run.topo for run in self.runs]


def kinds_of(text):
    allowed = KINDS + (("loss",) if loss_available() else ())
    if "loss" in text.split(",") and "loss" not in allowed:
        raise TestbedError("--kinds loss: random loss needs the netem qdisc or nftables' egress hook; this "
                           "machine has neither: run ./setup.sh (it installs nftables)")
    return names(text, "--kinds", allowed)


def prepare(args):
    specs = args.topology or list(FABRICS)
    topos = [fabric(args, spec) for spec in specs]
    at_least(args.trials, 0, "--trials")
    at_least(args.fault_free, 0, "--fault-free")
    at_least(args.design_trials, 2, "--design-trials", " (an interval needs two)")
    at_least(args.before, 1, "--before", " s")
    at_least(args.fault_for, 1, "--fault-for", " s")
    if args.drift and not 60 <= args.drift <= 3600:
        raise TestbedError(f"--drift must be 0 or 60 to 3600 s, for a second job to come and go (got {args.drift:g})")
    if args.drift or args.second_job:
        SecondJob.check(topos, "--drift" if args.drift else "--second-job")
    if args.straggler and not SLOW_RANK_SHARE[0] <= args.straggler < 1:
        raise TestbedError(f"--straggler must be 0 or {SLOW_RANK_SHARE[0]:g} to 1 (got {args.straggler:g})")
    args.hang_for = min(5.0, args.fault_for) if args.hang_for is None else args.hang_for
    if not HANG_LEAST <= args.hang_for <= args.fault_for:
        raise TestbedError(f"--hang-for must be between {HANG_LEAST:g} s and --fault-for ({args.fault_for:g} s); "
                           f"got {args.hang_for:g}")
    if args.stall_limit < args.fault_for + 5:
        raise TestbedError("--stall-limit must outlast a fault by 5 s or more: "
                           f"use --stall-limit {args.fault_for + 5:g}")
    kinds = kinds_of(args.kinds)
    designs = [] if args.designs == "none" else names(args.designs, "--designs", DESIGNS)
    seed = seed_of(args)
    if not 0 <= args.two_at_once <= args.trials:
        raise TestbedError(f"--two-at-once must be 0 to --trials ({args.trials}); got {args.two_at_once}")
    given = [[Fault.parse(part, lasting=args.hang_for if part.startswith("hang-rank") else args.fault_for)
              for part in text.split("+")] for text in args.inject or []]
    if any(len(faults) > 2 for faults in given):
        raise TestbedError("--inject: at most two faults at once (FAULT+FAULT)")
    rng, runs = random.Random(seed), []
    for topo in topos:
        ranks = check_job(topo, args)
        for faults in given:
            check_apart(faults, topo, ranks)
        trials = tuple(Trial(t, *faults[:1], also=faults[1] if len(faults) == 2 else None)
                       for t, faults in enumerate(given)) if given else draw_trials(topo, kinds, args, rng)
        trials += (Trial(len(trials), None, drift=args.drift),) if args.drift else ()
        if trials:
            runs.append(Run(topo.spec, topo, "ecmp", trials,
                            straggler=(rng.randrange(ranks), args.straggler) if args.straggler else None))
    for name in designs:
        runs += design_runs(name, topos, args, rng, seed)
    for run in runs[len(topos):]:
        check_job(run.topo, args)
    if not runs:
        raise TestbedError("no trials: give --trials or --fault-free of 1 or more, --inject, or --designs")
    return Plan(runs, args.mtu, args.bytes, args.algorithm, args.before, args.fault_for, args.hang_for,
                args.stall_limit, args.react, seed, args.second_job)


def check_job(topo, args):
    schedule, hosts = place(args.algorithm, topo)
    at_least(args.bytes, ELEMENT_BYTES * len(hosts), "--bytes", f" ({ELEMENT_BYTES} per rank)")
    schedule.check_count(len(hosts), args.bytes // ELEMENT_BYTES)
    return len(hosts)


def draw_trials(topo, kinds, args, rng):
    """A fabric's trials in a random order: --trials faults, kinds in turn from a random start
    (kinds the fabric lacks skipped), the first --two-at-once with the next kind beside them, places
    drawn once the job's paths are known, and --fault-free."""
    mine = [kind for kind in kinds if kind != "port-down" or topo.multi_port]
    start = rng.randrange(len(mine))
    chosen = [(mine[(start + i) % len(mine)], mine[(start + i + 1) % len(mine)] if i < args.two_at_once else None)
              for i in range(args.trials)] + [(None, None)] * args.fault_free
    rng.shuffle(chosen)
    def fault(kind):
        low, high, digits = HOW.get(kind, (0, 0, 0))
        lasting = round(rng.uniform(HANG_LEAST, args.hang_for), 1) if kind == "hang-rank" else args.fault_for
        return Fault(kind, "", round(rng.uniform(low, high), digits), 0.0, lasting)
    return tuple(Trial(t, kind and fault(kind), round(rng.uniform(*SLOW_RANK_SHARE), 2) if "slow-rank" in (kind, also)
                       else 0, also=also and fault(also)) for t, (kind, also) in enumerate(chosen))


def design_runs(name, topos, args, rng, seed):
    """The two forms of a design comparison (--designs), the same kind of fault in the same trials,
    each where that form's job goes (its links and switches as routes and hashing put its connections)."""
    kw, n, count = dict(rate=args.rate, queue=args.queue), args.design_trials, args.bytes // ELEMENT_BYTES
    base = next((t for t in topos if isinstance(t, HPN7)), None) or HPN7(2, 2, 2, 2, **kw)
    size = (base.segments, base.servers, base.rails, base.aggs)
    clos = next((t for t in topos if isinstance(t, LeafSpine)), None) or LeafSpine(4, 4, 4, **kw)
    forms = {"routing": [("deterministic", clos, "deterministic"), ("ecmp", clos, "ecmp")],
             "tor": [("dual-ToR", HPN7(*size, planes=1, tors=2, **kw), "ecmp"),
                     ("single-ToR", HPN7(*size, planes=1, tors=1, **kw), "ecmp")],
             "plane": [("dual-plane", HPN7(*size, planes=2, tors=2, **kw), "ecmp"),
                       ("single-plane", HPN7(*size, planes=1, tors=2, **kw), "ecmp")]}[name]
    draw = lambda topo: Draw(seed + DESIGNS.index(name) + 100, "round-robin" if topo.multi_port else "hash")
    used = [job_fabric_links(topo, mode, args.algorithm, count, draw(topo)) for _, topo, mode in forms]
    if name == "tor":
        hosts, ports = [rng.choice(sorted(base.hosts)) for _ in range(n)], [rng.randrange(2) for _ in range(n)]
        single = forms[1][1]
        only = lambda h: single.label(single.attachment(single.hosts[h].ports[0])[0])
        faults = [[Fault("port-down", f"{h}:{p}", 0, 0.0, args.fault_for) for h, p in zip(hosts, ports)],
                  [Fault("link-down", f"{h}-{only(h)}", 0, 0.0, args.fault_for) for h in hosts]]
    elif name == "plane":
        aggs = [sorted({end for link in links for end in link.split("-") if end.startswith("agg")}) for links in used]
        faults = [[Fault("switch-down", rng.choice(mine), 0, 0.0, args.fault_for) for _ in range(n)] for mine in aggs]
    else:
        how = [round(rng.uniform(0.15, 0.4), 2) for _ in range(n)]      # a slow link that hurts, in both
        faults = [[Fault("slow-link", rng.choice(mine), h, 0.0, args.fault_for) for h in how] for mine in used]
    return [Run(label, topo, mode, tuple(Trial(t, f) for t, f in enumerate(mine)), name)
            for (label, topo, mode), mine in zip(forms, faults)]


# --- a fabric, and the run ---------------------------------------------------------------------
def run_one(experiment, plan, k, run, keep, under=""):
    """Every trial of a run on one emulation (``experiments.watched``), its traces and labels in the
    run folder's `under`/fabricK (or design_form). The forms of a design share their draw (and so
    their 5-tuples)."""
    topo = run.topo
    rng = random.Random(plan.seed * 1009 + k)
    schedule, hosts = place(plan.algorithm, topo)
    bond = "round-robin" if topo.multi_port else "hash"
    draw_seed = plan.seed + (DESIGNS.index(run.design) + 100 if run.design else k)
    return run_watched(experiment, topo, run.routing, Comm(schedule, tuple(hosts)), plan.size, run.trials,
                       lambda emu, watch, trial, links: run_trial(
                           emu, watch, trial, topo, links, rng, before=plan.before, fault_for=plan.fault_for,
                           react=plan.react, stall_limit=plan.stall_limit, second_job=plan.second_job,
                           straggler=run.straggler),
                       draw=Draw(draw_seed, bond), stall_limit=plan.stall_limit, mtu=plan.mtu,
                       folder=experiment.results.path / under / (f"{run.design}_{run.label}" if run.design
                                                                  else f"fabric{k}"),
                       on_row=lambda rows: [keep(dict(row, run=run.label, design=run.design)) for row in rows],
                       prepare=lambda emu, watch: ready_job(emu, watch, run.straggler),
                       labelled=fault_labels.from_rows)


def run(plan, experiment):
    located = [t for run in plan.runs if run.design is None for t in run.trials]
    faulty = sum(t.fault is not None for t in located)
    designs = {d: tuple(run.label for run in plan.runs if run.design == d)
               for d in dict.fromkeys(run.design for run in plan.runs if run.design)}
    shown = held_out.of_scenario(plan.seed, sys.modules[__name__])
    experiment.header(
        f"# {NAME}: {sum(run.design is None for run in plan.runs)} fabric(s), {faulty} faulty and "
        f"{len(located) - faulty} fault-free trials; design comparisons: {', '.join(designs) or 'none'} "
        f"(seed {plan.seed}, {shown}); {plan.algorithm} allreduce of {plan.size} B on every host; "
        f"{plan.before:g} s before each fault, {plan.fault_for:g} s of fault, hangs {HANG_LEAST:g}-{plan.hang_for:g} s,"
        + " links slowed to {:g}-{:g} of their rate, ranks to {:g}-{:g} of their CPU".format(*SLOW_LINK_RATE,
                                                                                          *SLOW_RANK_SHARE))
    experiment.about.update(seed=plan.seed, held_out=shown.held_out,
                            runs=[f"{r.label} {r.topo.name}" for r in plan.runs])
    for k, run in enumerate(plan.runs):
        experiment.say(f"\n## {run.design + ': ' + run.label + ', ' if run.design else ''}{run.topo.describe()}, "
                       f"{run.routing} routing" + (", a straggler: rank {} at {:g} of its CPU from the job's start"
                                                   .format(*run.straggler) if run.straggler else ""), section="rows")
        run_one(experiment, plan, k, run,
                lambda row: experiment.row(row, fault_scores.trial_line(row), csv="fault_localisation.csv",
                                           omit=("events", "alarms")))
    rows = experiment.rows
    located = [r for r in rows if r["design"] is None]
    lines = (fault_scores.summary_lines(located, KINDS + ("loss",), FOUND_KINDS)
             + fault_scores.design_lines(designs, rows))
    lines += fault_scores.emulator_lines(rows, experiment.wrong)
    experiment.about["summary"] = lines
    experiment.headline.update(fault_scores.headline(located))
    experiment.say("\nsummary:", *[f"  {line}" for line in lines])
    fabrics = ", ".join(dict.fromkeys(r["fabric"] for r in rows))
    experiment.figure("located.png", figures.intervals, fault_scores.located_by_kind(located, KINDS + ("loss",)),
                      xlabel="share located (kind and place), 95% Wilson interval", reference=None, fabric=fabrics)
    experiment.figure("detectability.png", figures.intervals, fault_scores.detectability(located),
                      xlabel="located (kind and place) by magnitude, 95% Wilson", reference=0.5, fabric=fabrics)
