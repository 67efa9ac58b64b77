"""Fabric check: build a fabric, show every host reaches every other and TCP gets the link rate."""
from dataclasses import dataclass

from scenarios.common import add_fabric_arguments, at_least, fabric
from testbed.api import TestbedError
from testbed.experiments import figures
from testbed.experiments.claims import Claim
from testbed.experiments.code_half import EMULATION

NAME = "fabric_check"
ACROSS_MACHINES = True     # --machines (machines.head)
HELP = "build a fabric, ping all pairs, measure one long TCP flow and parallel flows against the link rate"
CLAIMS = (Claim("every NIC port answers every other", "pairs answering", at_least=1),
          Claim("one TCP flow over the longest path gets the link rate", "longest path goodput/link", at_least=0.9),
          Claim("parallel flows on spread-out paths each get the link rate", "parallel flows min goodput/link",
                at_least=0.85))
SMOKE = ("--duration", "3")
# the code that measures, judges and scores this scenario's runs: the code half of its records
CODE = (*EMULATION, "testbed/fidelity/fabric_check.py", "testbed/programs/iperf_endpoint.py")


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
    topo = plan.topo
    experiment.about.update(topology=topo.name, rate_mbit=topo.rate, mtu=plan.mtu)
    with experiment.emulate(topo, mtu=plan.mtu) as emu:
        experiment.about["datapath"] = emu.datapath
        check = experiment.check(emu.check(plan.duration))
    experiment.about.update(check.summary)
    reach = check.summary["reachability"]
    experiment.headline.update({"pairs answering": reach["answered"] / reach["pairs"],
                                "longest path goodput/link": check.single_flow,
                                "parallel flows min goodput/link": check.parallel_min})
    flows = [("longest path", check.summary["single_flow"])] + \
        [(f"parallel {f['src']} -> {f['dst']}", f) for f in check.summary["parallel_flows"]["flows"]]
    experiment.figure("flows.png", figures.intervals, [(label, f["ratio"], None, None) for label, f in flows],
                      xlabel="goodput over what the flow's path carries", reference=0.85, fabric=topo.name)
    if not check.passed:
        experiment.failed = "the fabric check failed"
