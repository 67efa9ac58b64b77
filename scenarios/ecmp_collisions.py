"""ECMP collisions: HD on a leaf-spine Clos with hashed ECMP against HDRM on BiGraph with
deterministic routes, at equal link rate and rank count; with ``--collective alltoall``, the pairwise
alltoall on the Clos against BiGraph's alltoall in rounds whose flows share no link (the traffic of
mixture-of-experts' expert parallelism, which stresses hashing most: every pair of ranks, a fresh
set of 5-tuples in every step).

Trial t draws fresh source ports (``routing.hashing.Draw`` from seed + t, so a fresh ECMP hash
draw) and runs both cases with them, in alternating order, each on a freshly built fabric: the
collective at one message size while the collision probe captures every switch-to-switch link. Each
trial reports per step the links that two or more flows shared, the busbw, and for deterministic
routes what the routing predicted. The summary pairs the trials (``report.paired``): each case's
busbw and collided steps with 95% intervals, and BiGraph's gain over the Clos with its interval.
"""
import contextlib
import shutil
from dataclasses import dataclass, field

from scenarios.common import (
    add_ecn_comparison_arguments,
    add_fabric_arguments,
    add_scheme_arguments,
    add_seed_argument,
    at_least,
    fabric,
    marking_of,
    seed_of,
    with_marking,
    with_uplinks,
)
from testbed.api import ELEMENT_BYTES, TestbedError, place
from testbed.experiments import ADDED, check_sweep, describe_all, figures, trial_line
from testbed.experiments.claims import Claim
from testbed.experiments.code_half import EMULATION
from testbed.experiments.trials import MARKED, Form, compare, marking_lines, run_trials

NAME = "ecmp_collisions"
HELP = "HD on a Clos with ECMP against HDRM on BiGraph with deterministic routes: collisions per step, busbw"
# {--collective: ((collective, variant on the Clos), (collective, variant on BiGraph))}
COLLECTIVES = {"allreduce": (("allreduce", "hd"), ("allreduce", "hdrm")),
             "alltoall": (("alltoall", "pairwise"), ("alltoall", "topo"))}
DEFAULT_TRIALS = 16
CLAIMS = (Claim("BiGraph with HDRM carries 50% more busbw than HD on the ECMP Clos", "busbw/link: gain",
                at_least=0.5),
          Claim("HDRM on BiGraph runs near the link rate", "busbw/link: bigraph-deterministic-hdrm", at_least=0.9),
          Claim("HDRM's steps share no link on BiGraph", "collided steps: bigraph-deterministic-hdrm", at_most=0))
SMOKE = ("--trials", "2", "--iters", "1", "--seed", "1")
# the code that measures, judges and scores this scenario's runs: the code half of its records
CODE = (*EMULATION, "testbed/routing/hashing.py", "testbed/runs/collision_trials.py",
        "testbed/probes/collisions.py", "testbed/experiments/trials.py", "testbed/report/paired.py",
        "testbed/collectives/schedules.py")


def add_arguments(parser):
    add_fabric_arguments(parser, topology="bigraph:2,8")
    parser.add_argument("--clos", default="leafspine:4,4,4",
                        help="the ECMP Clos, same host count as --topology (default %(default)s)")
    parser.add_argument("--collective", choices=COLLECTIVES, default="allreduce",
                        help="allreduce: HD on the Clos, HDRM on BiGraph; alltoall: pairwise on the Clos, in "
                             "link-disjoint rounds on BiGraph (default %(default)s)")
    parser.add_argument("--bytes", type=int, default=1 << 20, help="message size (default %(default)s)")
    parser.add_argument("--trials", type=int, default=DEFAULT_TRIALS,
                        help="paired trials, each on a fresh hash draw (default %(default)s)")
    add_seed_argument(parser, "the first trial's draw")
    parser.add_argument("--iters", type=int, default=2, help="timed iterations per trial (default %(default)s)")
    # the Clos's schemes; planned is left out: it moves flows while the probe counts them per step
    add_scheme_arguments(parser, routings=("ecmp", "pinned"), uplinks=True)
    add_ecn_comparison_arguments(parser)


@dataclass
class Case:
    label: str
    topo: object
    routing: str
    collective: str
    variant: str


@dataclass
class Plan:
    cases: list
    mtu: int
    size: int
    trials: int
    iters: int
    seed: int
    collective: str
    marking: tuple | None = field(default=None, metadata={ADDED: "--compare-ecn"})   # (K, congestion control)

    @property
    def fabrics(self):
        return [case.topo for case in self.cases]

    @property
    def forms(self):
        return with_marking([Form(case.label, case.topo, case.routing) for case in self.cases], self.marking)

    def case(self, label):
        return next(c for c in self.cases if label in (c.label, c.label + MARKED))


def prepare(args):
    bigraph, clos = fabric(args), with_uplinks(fabric(args, args.clos, "--clos"), args)
    if len(clos.hosts) != len(bigraph.hosts):
        raise TestbedError(f"--clos has {len(clos.hosts)} hosts and --topology {len(bigraph.hosts)}: "
                           "give both the same host count")
    at_least(args.bytes, ELEMENT_BYTES * len(bigraph.hosts), "--bytes", f" ({ELEMENT_BYTES} per rank)")
    trials = at_least(args.trials, 2, "--trials", " (an interval needs two)")
    iters = at_least(args.iters, 1, "--iters")
    check_sweep([args.bytes], len(bigraph.hosts), 2 * trials, bigraph.bytes_per_s, 1, iters)
    if shutil.which("tcpdump") is None:
        raise TestbedError("the collision probe needs tcpdump: run 'sudo ./setup.sh' to install it")
    (clos_collective, clos_variant), (big_collective, big_variant) = COLLECTIVES[args.collective]
    cases = [Case(f"clos-{args.routing}-{clos_variant}", clos, args.routing, clos_collective, clos_variant),
             Case(f"bigraph-deterministic-{big_variant}", bigraph, "deterministic", big_collective, big_variant)]
    for case in cases:
        schedule, hosts = place(case.variant, case.topo, case.collective)
        schedule.check_count(len(hosts), args.bytes // ELEMENT_BYTES)
    seed = seed_of(args)
    return Plan(cases, args.mtu, args.bytes, trials, iters, seed, args.collective, marking_of(args, [bigraph, clos]))


def measure(plan):
    """One trial of a case under the collision probe, on a fabric built for it, with the trial's draw."""
    def one(emu, form, draw, trial, folder):
        case = plan.case(form.label)
        placed = place(case.variant, case.topo, case.collective)
        with emu.switch_queues() if plan.marking else contextlib.nullcontext() as seen:
            got = emu.collisions(case.variant, plan.size, iters=plan.iters, placed=placed, label=form.label,
                                 draw=draw, trial=trial)
        return [dict(c.row, **seen.row) if seen else c.row for c in got]
    return one


def compare_cases(rows, plan):
    """BiGraph against the Clos, paired over trials: busbw/link and collided steps; with
    --compare-ecn, each case against itself under marking (busbw, the deepest queue), and BiGraph
    against the Clos under marking."""
    CLOS, BIGRAPH = (case.label for case in plan.cases)
    rows = [dict(r, form=r["case"]) for r in rows]
    out = {"busbw": compare(rows, (CLOS, BIGRAPH), "busbw_over_link", "busbw/link", 3),
           # can be zero (BiGraph's always is): compared by its difference, not a ratio
           "collided": compare(rows, (CLOS, BIGRAPH), "collided_steps", "collided steps", 1, by="difference")}
    if plan.marking:
        for label in (CLOS, BIGRAPH):
            out[f"busbw {label}"] = compare(rows, (label, label + MARKED), "busbw_over_link", "busbw/link", 3)
            out[f"queue {label}"] = compare(rows, (label, label + MARKED), "queue_busy_mean_bytes",
                                            "deepest queue while busy (B)", 0)
        out["busbw ecn"] = compare(rows, (CLOS + MARKED, BIGRAPH + MARKED), "busbw_over_link", "busbw/link", 3)
    summary = {key: c.to_dict() for key, c in out.items()}
    summary["steps_per_case"] = [next((r["steps"] for r in rows if r["case"] == c), None) for c in (CLOS, BIGRAPH)]
    summary["wrong"] = sum(r["wrong"] for r in rows)
    summary["emulator_bottleneck_trials"] = [f"{r['case']}#{r['trial']}" for r in rows if r["emulator_bottleneck"]]
    summary["emulator"] = describe_all(rows, lambda r: f"{r['case']}#{r['trial']}")
    return out, summary


def run(plan, experiment):
    marked = f"; '+ecn': ECN at K = {plan.marking[0]} B, ranks on {plan.marking[1]}" if plan.marking else ""
    experiment.header(f"# {NAME}: {plan.size} B {plan.collective}, {plan.trials} paired trials x {plan.iters} "
                      f"iterations from seed {plan.seed}, links {plan.cases[0].topo.rate:g} Mbit/s, MTU {plan.mtu}"
                      f"{marked}",
                      *[f"#   {case.label}: {case.topo.describe()}, routing {case.routing}, {case.variant}"
                        for case in plan.cases])

    def keep(row):
        experiment.row(row, trial_line(row), csv="ecmp_trials.csv")
        experiment.results.append("ecmp_links.csv",
                                  *[dict(link, case=row["case"], trial=row["trial"]) for link in row["per_link"]])

    rows, _ = run_trials(experiment, plan.forms, trials=plan.trials, seed=plan.seed, measure=measure(plan),
                         mtu=plan.mtu, check=False, on_row=keep)
    compared, cmp = compare_cases(rows, plan)
    experiment.about.update(seed=plan.seed, summary=cmp)
    experiment.headline.update(compared["busbw"].headline("busbw/link"))
    experiment.headline.update(compared["collided"].headline("collided steps"))
    if plan.marking:
        for case in plan.cases:
            experiment.headline.update(compared[f"busbw {case.label}"].headline(f"busbw/link with ECN, {case.label}"))
            experiment.headline.update(compared[f"queue {case.label}"].headline(f"queue with ECN, {case.label}"))
        experiment.headline.update(compared["busbw ecn"].headline("busbw/link under ECN"))
    steps = ", ".join(f"{case.label} {n}" for case, n in zip(plan.cases, cmp["steps_per_case"]))
    experiment.say(f"\nsummary (paired over trials; mean [95% interval]; steps per {plan.collective}: {steps}):",
                   *[f"  {c.line()}" for c in compared.values()], f"  #wrong over every iteration: {cmp['wrong']}",
                   f"  {cmp['emulator']}")
    if plan.marking:
        experiment.say(f"under ECN marking at K = {plan.marking[0]} B, the ranks on {plan.marking[1]}:",
                       *marking_lines(rows, [form.label for form in plan.forms]))
    first = [r for r in rows if r["trial"] == 0]
    experiment.figure("flows_per_link.png", figures.flows_heatmap,
                      [(f"{r['case']} (trial 0)", r["per_link"], len(r["per_step"])) for r in first],
                      fabric=" against ".join(case.topo.name for case in plan.cases))
