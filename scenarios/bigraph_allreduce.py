"""BiGraph allreduce: Ring (rank order, alternating layers), HD and HDRM over a message-size sweep.

Each variant runs real TCP allreduce between the emulated hosts, one rank process per rank; every
result is compared with numpy's sum (#wrong). The summary names the winner at the smallest and at
the largest size, the ratios between algorithms, and whether the emulator was the bottleneck.
"""
import time
from dataclasses import dataclass

from scenarios.common import add_fabric_arguments, add_sweep_arguments, fabric, names, sweep_options
from testbed import routing
from testbed.collectives import sweep
from testbed.emulation import ovs
from testbed.emulation.across import open_emulation
from testbed.fidelity import fabric_check
from testbed.fidelity.model import idle_step_us
from testbed.report import figures

NAME = "bigraph_allreduce"
ACROSS_MACHINES = True     # --machines (emulation.across)
HELP = "Ring (two orders), HD and HDRM allreduce on BiGraph over a message-size sweep (nccl-tests style)"
ALGORITHMS = ("ring", "ring_topo", "hd", "hdrm")


def add_arguments(parser):
    add_fabric_arguments(parser, topology="bigraph:2,8")
    parser.add_argument("--algorithms", default=",".join(ALGORITHMS),
                        help="comma-separated, from " + ", ".join(ALGORITHMS) + " (default: all)")
    add_sweep_arguments(parser)


@dataclass
class Plan:
    topo: object
    mtu: int
    placed: dict
    sizes: list
    warmup: int
    iters: int
    eager_limit: int

    @property
    def fabrics(self):
        return [self.topo]


def prepare(args):
    topo = fabric(args)
    sizes, warmup, iters, eager_limit = sweep_options(args)
    placed = sweep.place_variants(topo, names(args.algorithms, "--algorithms", ALGORITHMS), size_list=sizes)
    sweep.check_sweep(sizes, len(topo.hosts), len(placed), topo.bytes_per_s, warmup, iters)
    return Plan(topo, args.mtu, placed, sizes, warmup, iters, eager_limit)


def run(plan, results):
    topo, started = plan.topo, time.monotonic()
    about = {"scenario": NAME, "topology": topo.name, "rate_mbit": topo.rate, "mtu": plan.mtu,
             "eager_limit": plan.eager_limit, "rows": []}

    def keep(row):
        about["rows"].append(row)
        results.append("allreduce.csv", row)

    with results.outcome("allreduce.json", about):
        with open_emulation(topo, routing.plan(topo), results.path, mtu=plan.mtu) as emu:
            about["datapath"] = emu.datapath
            about["fidelity"] = check = fabric_check.check(emu)
            print("\n" + "\n".join(fabric_check.report(check, emu)))
            about["idle_step_us"] = idle = idle_step_us(emu)
            print(f"  idle step latency  {idle:.0f} us per step of a 1 KiB allreduce between the farthest hosts")
            print(f"\n# {NAME}: {topo.name}, {len(topo.hosts)} ranks, links {topo.rate:g} Mbit/s "
                  f"= {topo.rate / 8:g} MB/s, MTU {plan.mtu}, OVS {ovs.datapath_name(emu.datapath)}, "
                  f"warmup {plan.warmup}, iters {plan.iters}, eager limit {plan.eager_limit} B")
            rows = sweep.run_sweep(emu, plan.placed, plan.sizes, plan.warmup, plan.iters,
                                   eager_limit=plan.eager_limit, on_row=keep, idle_step_us=idle)
        cmp = about["summary"] = sweep.compare_variants(rows)
        cmp["fidelity_pass"] = fabric_check.passed(check)
        about["seconds"] = round(time.monotonic() - started, 1)
    print(f"\nsummary ({topo.name}, {len(topo.hosts)} ranks, links {topo.rate:g} Mbit/s):")
    print("\n".join(sweep.summary_lines(cmp)))
    print(f"  fabric check before the sweep: {'PASS' if cmp['fidelity_pass'] else 'FAIL'} "
          "(reachability, one long TCP flow >= 0.9 and parallel flows >= 0.85 of the link rate)")
    results.figure("busbw.png", figures.busbw_by_size, rows, link_mbit=topo.rate)
    print(results.listing())
    return 0 if cmp["wrong"] == 0 else 1
