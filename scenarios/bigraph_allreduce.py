"""BiGraph allreduce: Ring (rank order, alternating layers), HD and HDRM over a message-size sweep
(and, asked for, recursive doubling in rank order or with HDRM's mapping, rd and rdrm, and auto: at
each size the one of rdrm and hdrm that the model of this fabric finds fastest).

Each variant runs real TCP allreduce between the emulated hosts, one rank process per rank; every
result is compared with numpy's sum (#wrong). The summary names the winner at the smallest and at
the largest size, the ratios between algorithms, and whether the emulator was the bottleneck.
"""
from scenarios.common import SweepPlan, add_fabric_arguments, add_sweep_arguments, fabric, names, sweep_options
from testbed.experiments import datapath_name, figures, sweep
from testbed.experiments.claims import Claim
from testbed.experiments.code_half import EMULATION
from testbed.experiments.nccl_tests import run_sweeps

NAME = "bigraph_allreduce"
ACROSS_MACHINES = True     # --machines (machines.head)
HELP = "Ring (two orders), HD and HDRM allreduce on BiGraph over a message-size sweep (nccl-tests style)"
ALGORITHMS = ("ring", "ring_topo", "hd", "hdrm", "rd", "rdrm", "auto")
DEFAULT_ALGORITHMS = ALGORITHMS[:4]       # recursive doubling (small messages) and auto on request
CLAIMS = (Claim("HDRM runs at the link rate at 1 MiB (no link shared within a step)",
                "hdrm busbw/link at 1048576 B", at_least=0.9),
          Claim("HDRM beats plain HD at 1 MiB (EFLOPS: HD in rank order congests)", "hdrm/hd busbw at 1048576 B",
                at_least=1.3),
          Claim("HDRM takes a fraction of Ring's time at 1 KiB (EFLOPS: about a sixth)", "hdrm/ring time at 1024 B",
                at_most=0.6))
SMOKE = ("--factor", "1024", "--iters", "3")     # 1 KiB and 1 MiB only
# the code that measures, judges and scores this scenario's runs: the code half of its records
CODE = (*EMULATION, "testbed/runs/sweep.py", "testbed/collectives/schedules.py", "testbed/collectives/metrics.py",
        "testbed/fidelity/verdict.py")


def add_arguments(parser):
    add_fabric_arguments(parser, topology="bigraph:2,8")
    parser.add_argument("--algorithms", default=",".join(DEFAULT_ALGORITHMS),
                        help="comma-separated, from " + ", ".join(ALGORITHMS) + " (default %(default)s)")
    add_sweep_arguments(parser)


Plan = SweepPlan


def prepare(args):
    topo = fabric(args)
    sizes, warmup, iters, eager_limit = sweep_options(args)
    placed = sweep.place_variants(topo, names(args.algorithms, "--algorithms", ALGORITHMS), size_list=sizes)
    sweep.check_sweep(sizes, len(topo.hosts), len(placed), topo.bytes_per_s, warmup, iters)
    return Plan(topo, args.mtu, placed, sizes, warmup, iters, eager_limit)


def run(plan, experiment):
    topo = plan.topo
    experiment.about.update(topology=topo.name, rate_mbit=topo.rate, mtu=plan.mtu, eager_limit=plan.eager_limit)

    def heading(_collective, emu):
        return (f"\n# {NAME}: {topo.name}, {len(topo.hosts)} ranks, links {topo.rate:g} Mbit/s "
                f"= {topo.rate / 8:g} MB/s, MTU {plan.mtu}, OVS {datapath_name(emu.datapath)}, "
                f"warmup {plan.warmup}, iters {plan.iters}, eager limit {plan.eager_limit} B")

    measured, check = run_sweeps(experiment, topo, {"allreduce": plan.placed}, plan.sizes, plan.warmup, plan.iters,
                                 mtu=plan.mtu, csv="allreduce.csv", heading=heading, eager_limit=plan.eager_limit)
    rows = measured["allreduce"]
    cmp = experiment.about["summary"] = sweep.compare_variants(rows, experiment.about.get("idle_exchange_us"))
    experiment.headline.update(sweep.headline(cmp))
    experiment.say(f"\nsummary ({topo.name}, {len(topo.hosts)} ranks, links {topo.rate:g} Mbit/s):",
                   *sweep.summary_lines(cmp),
                   f"  fabric check before the sweep: {'PASS' if check.passed else 'FAIL'} (reachability, one long "
                   "TCP flow >= 0.9 and parallel flows >= 0.85 of the link rate)")
    experiment.figure("busbw.png", figures.busbw_by_size, rows, link_mbit=topo.rate, fabric=topo.name)
