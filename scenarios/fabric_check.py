"""Fabric check: build a fabric, show every host reaches every other and TCP gets the link rate."""
from dataclasses import dataclass

from scenarios.common import add_fabric_arguments, at_least, fabric
from testbed import routing
from testbed.emulation.across import open_emulation
from testbed.errors import TestbedError
from testbed.fidelity import fabric_check

NAME = "fabric_check"
ACROSS_MACHINES = True     # --machines (emulation.across)
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


def run(plan, results):
    topo = plan.topo
    about = {"scenario": NAME, "topology": topo.name, "rate_mbit": topo.rate, "mtu": plan.mtu}
    with results.outcome("summary.json", about), \
            open_emulation(topo, routing.plan(topo), results.path, mtu=plan.mtu) as emu:
        about["datapath"] = emu.datapath
        check = fabric_check.check(emu, plan.duration)
        about.update(check)
        print("\n" + "\n".join(fabric_check.report(check, emu)))
    print(results.listing())
    return 0 if fabric_check.passed(check) else 1
