"""Fabric check: build a fabric, show every host reaches every other and TCP gets the link rate."""
from dataclasses import dataclass

from scenarios.common import add_fabric_arguments, at_least, fabric
from testbed.errors import TestbedError

NAME = "fabric_check"
ACROSS_MACHINES = True     # --machines (machines.head)
HELP = "build a fabric, ping all pairs, measure one long TCP flow and parallel flows against the link rate"


def add_arguments(parser):
    add_fabric_arguments(parser, topology="bigraph:2,8")
    parser.add_argument("--duration", type=int, default=5, help="seconds per iperf3 test (default %(default)s)")


@dataclass
class Plan:
    topo: object
    mtu: int
    duration: int

    @property
    def fabrics(self):
        return [self.topo]


MAX_DURATION_S = 600


def prepare(args):
    if args.duration > MAX_DURATION_S:
        raise TestbedError(f"--duration must be at most {MAX_DURATION_S} s (got {args.duration})")
    return Plan(fabric(args), args.mtu, at_least(args.duration, 1, "--duration", " s"))


def run(plan, experiment):
    results, topo = experiment.results, plan.topo
    about = {"scenario": NAME, "topology": topo.name, "rate_mbit": topo.rate, "mtu": plan.mtu}
    with results.outcome("summary.json", about), experiment.emulate(topo, mtu=plan.mtu) as emu:
        about["datapath"] = emu.datapath
        check = emu.check(plan.duration)
        about.update(check.summary)
        print("\n" + "\n".join(check.lines))
    print(results.listing())
    return 0 if check.passed else 1
