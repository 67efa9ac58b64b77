"""BiGraph allreduce: Ring (rank order, alternating layers), HD and HDRM over a message-size sweep.

Each variant runs real TCP allreduce between the emulated hosts, one rank process per rank; every
result is compared with numpy's sum (#wrong). The summary names the winner at the smallest and at
the largest size, the ratios between algorithms, and whether the emulator was the bottleneck.
"""
import time

from scenarios.common import SweepPlan, add_fabric_arguments, add_sweep_arguments, fabric, names, sweep_options
from testbed.api import sweep
from testbed.emulation import ovs
from testbed.experiments.sweeps import run_sweeps
from testbed.report import figures

NAME = "bigraph_allreduce"
ACROSS_MACHINES = True     # --machines (machines.head)
HELP = "Ring (two orders), HD and HDRM allreduce on BiGraph over a message-size sweep (nccl-tests style)"
ALGORITHMS = ("ring", "ring_topo", "hd", "hdrm")


def add_arguments(parser):
    add_fabric_arguments(parser, topology="bigraph:2,8")
    parser.add_argument("--algorithms", default=",".join(ALGORITHMS),
                        help="comma-separated, from " + ", ".join(ALGORITHMS) + " (default: all)")
    add_sweep_arguments(parser)


Plan = SweepPlan


def prepare(args):
    topo = fabric(args)
    sizes, warmup, iters, eager_limit = sweep_options(args)
    placed = sweep.place_variants(topo, names(args.algorithms, "--algorithms", ALGORITHMS), size_list=sizes)
    sweep.check_sweep(sizes, len(topo.hosts), len(placed), topo.bytes_per_s, warmup, iters)
    return Plan(topo, args.mtu, placed, sizes, warmup, iters, eager_limit)


def run(plan, experiment):
    results, topo, started = experiment.results, plan.topo, time.monotonic()
    about = {"scenario": NAME, "topology": topo.name, "rate_mbit": topo.rate, "mtu": plan.mtu,
             "eager_limit": plan.eager_limit, "rows": []}

    def heading(_collective, emu):
        return (f"\n# {NAME}: {topo.name}, {len(topo.hosts)} ranks, links {topo.rate:g} Mbit/s "
                f"= {topo.rate / 8:g} MB/s, MTU {plan.mtu}, OVS {ovs.datapath_name(emu.datapath)}, "
                f"warmup {plan.warmup}, iters {plan.iters}, eager limit {plan.eager_limit} B")

    with results.outcome("allreduce.json", about):
        measured, check = run_sweeps(experiment, topo, {"allreduce": plan.placed}, plan.sizes, plan.warmup,
                                     plan.iters, mtu=plan.mtu, about=about, csv="allreduce.csv", heading=heading,
                                     eager_limit=plan.eager_limit)
        rows = measured["allreduce"]
        cmp = about["summary"] = sweep.compare_variants(rows)
        cmp["fidelity_pass"] = check.passed
        about["seconds"] = round(time.monotonic() - started, 1)
    print(f"\nsummary ({topo.name}, {len(topo.hosts)} ranks, links {topo.rate:g} Mbit/s):")
    print("\n".join(sweep.summary_lines(cmp)))
    print(f"  fabric check before the sweep: {'PASS' if cmp['fidelity_pass'] else 'FAIL'} "
          "(reachability, one long TCP flow >= 0.9 and parallel flows >= 0.85 of the link rate)")
    results.figure("busbw.png", figures.busbw_by_size, rows, link_mbit=topo.rate, fabric=topo.name)
    print(results.listing())
    return 0 if cmp["wrong"] == 0 else 1
