"""ECMP collisions: HD on a leaf-spine Clos with hashed ECMP against HDRM on BiGraph with
deterministic routes, at equal link rate and rank count.

Each trial opens fresh connections (so fresh source ports, so a fresh ECMP hash draw), runs the
allreduce at one message size while the collision probe captures every switch-to-switch link,
and reports per step the links that two or more flows shared, the busbw, and for deterministic
routes what the routing predicted. The summary gives the busbw lost to collisions.
"""
import shutil
import time
from dataclasses import dataclass

from scenarios.common import add_fabric_arguments, at_least, fabric
from testbed import routing
from testbed.collectives.data import ELEMENT_BYTES
from testbed.collectives.placements import place
from testbed.collectives.sweep import check_sweep
from testbed.emulation.network import Emulation
from testbed.errors import TestbedError
from testbed.fidelity.verdict import describe_all
from testbed.probes.collisions import collision_trials
from testbed.report import figures

NAME = "ecmp_collisions"
HELP = "HD on a Clos with ECMP against HDRM on BiGraph with deterministic routes: collisions per step, busbw"
CLOS, BIGRAPH = "clos-ecmp-hd", "bigraph-deterministic-hdrm"


def add_arguments(parser):
    add_fabric_arguments(parser, topology="bigraph:2,8")
    parser.add_argument("--clos", default="leafspine:4,4,4",
                        help="the ECMP Clos, same host count as --topology (default %(default)s)")
    parser.add_argument("--bytes", type=int, default=1 << 20, help="message size (default %(default)s)")
    parser.add_argument("--trials", type=int, default=3, help="trials with fresh source ports (default %(default)s)")
    parser.add_argument("--iters", type=int, default=2, help="timed iterations per trial (default %(default)s)")


@dataclass
class Case:
    label: str
    topo: object
    routing: str
    variant: str


@dataclass
class Plan:
    cases: list
    mtu: int
    size: int
    trials: int
    iters: int

    @property
    def fabrics(self):
        return [case.topo for case in self.cases]


def prepare(args):
    bigraph, clos = fabric(args), fabric(args, args.clos)
    if len(clos.hosts) != len(bigraph.hosts):
        raise TestbedError(f"--clos has {len(clos.hosts)} hosts and --topology {len(bigraph.hosts)}: "
                           "give both the same host count")
    at_least(args.bytes, ELEMENT_BYTES * len(bigraph.hosts), "--bytes", f" ({ELEMENT_BYTES} per rank)")
    trials, iters = at_least(args.trials, 1, "--trials"), at_least(args.iters, 1, "--iters")
    check_sweep([args.bytes], len(bigraph.hosts), 2 * trials, bigraph.bytes_per_s, 1, iters)
    if shutil.which("tcpdump") is None:
        raise TestbedError("the collision probe needs tcpdump: run 'sudo ./setup.sh' to install it")
    cases = [Case(CLOS, clos, "ecmp", "hd"), Case(BIGRAPH, bigraph, "deterministic", "hdrm")]
    for case in cases:
        place(case.variant, case.topo)
    return Plan(cases, args.mtu, args.bytes, trials, iters)


def run_case(case, plan, folder, on_row):
    """The case's trials under the collision probe, in an emulation of its own."""
    schedule, hosts = place(case.variant, case.topo)
    with Emulation(case.topo, routing.plan(case.topo, case.routing), folder / case.label, mtu=plan.mtu) as emu:
        return collision_trials(emu, case.label, case.variant, schedule, hosts, plan.size, plan.trials,
                                plan.iters, folder / case.label, on_row=on_row)


def compare_cases(rows):
    by_case = {}
    for r in rows:
        by_case.setdefault(r["case"], []).append(r)
    mean = lambda rs, k: sum(r[k] for r in rs) / len(rs)
    out = {case: {"busbw_over_link": round(mean(rs, "busbw_over_link"), 3),
                  "collided_steps": [r["collided_steps"] for r in rs],
                  "steps_per_trial": rs[0]["steps"]} for case, rs in by_case.items()}
    out["busbw_lost_to_collisions"] = round(1 - out[CLOS]["busbw_over_link"] / out[BIGRAPH]["busbw_over_link"], 3)
    out["wrong"] = sum(r["wrong"] for r in rows)
    out["emulator_bottleneck_trials"] = [f"{r['case']}#{r['trial']}" for r in rows if r["emulator_bottleneck"]]
    out["emulator"] = describe_all(rows, lambda r: f"{r['case']}#{r['trial']}")
    return out


def run(plan, results):
    started = time.monotonic()
    print(f"# {NAME}: {plan.size} B allreduce, {plan.trials} trials x {plan.iters} iterations, "
          f"links {plan.cases[0].topo.rate:g} Mbit/s, MTU {plan.mtu}")
    about = {"scenario": NAME, "rows": []}

    def keep(row):
        about["rows"].append(row)
        results.append("ecmp_trials.csv", {k: v for k, v in row.items() if k not in ("per_step", "per_link")})
        results.append("ecmp_links.csv",
                       *[dict(link, case=row["case"], trial=row["trial"]) for link in row["per_link"]])

    with results.outcome("ecmp_collisions.json", about):
        for case in plan.cases:
            print(f"\n## {case.label}: {case.topo.describe()}, routing {case.routing}, {case.variant}")
            run_case(case, plan, results.path, keep)
        rows = about["rows"]
        cmp = about["summary"] = compare_cases(rows)
        about["seconds"] = round(time.monotonic() - started, 1)
    print(f"\nsummary: busbw/link {cmp[CLOS]['busbw_over_link']:.2f} (Clos, ECMP, HD) against "
          f"{cmp[BIGRAPH]['busbw_over_link']:.2f} (BiGraph, deterministic, HDRM): "
          f"{100 * cmp['busbw_lost_to_collisions']:.0f}% of the busbw lost")
    print(f"  collided steps per trial: Clos {cmp[CLOS]['collided_steps']}, "
          f"BiGraph {cmp[BIGRAPH]['collided_steps']} (of {cmp[CLOS]['steps_per_trial']})")
    print(f"  #wrong over every iteration: {cmp['wrong']}")
    print(f"  {cmp['emulator']}")
    first = [r for r in rows if r["trial"] == 0]
    results.figure("flows_per_link.png", figures.flows_heatmap,
                   [(f"{r['case']} (trial 0)", r["per_link"], len(r["per_step"])) for r in first])
    print(results.listing())
    return 0 if cmp["wrong"] == 0 else 1
