"""nccl-tests' suite on a fabric: allreduce, allgather, reduce-scatter, alltoall, broadcast and
send/recv, each in the variants asked for, over a message-size sweep.

Every variant runs real TCP between the emulated hosts, one rank process per rank, and every rank
checks its result against numpy on every iteration (#wrong). Per collective: the nccl-tests table
(busbw with the collective's own factor), the winner at each end of the sweep, the ratios between
variants, the verdict on the emulator, and a busbw figure.
"""
import time

from scenarios.common import SweepPlan, add_fabric_arguments, add_sweep_arguments, fabric, names, sweep_options
from testbed.api import COLLECTIVE_VARIANTS, TestbedError
from testbed.experiments import datapath_name, figures, sweep
from testbed.experiments.claims import Claim
from testbed.experiments.code_half import EMULATION
from testbed.experiments.nccl_tests import run_sweeps

NAME = "collectives"
ACROSS_MACHINES = True     # --machines (machines.head)
HELP = "nccl-tests' suite (allreduce, allgather, reduce-scatter, alltoall, broadcast, send/recv) over a size sweep"
COLLECTIVES = ("allreduce", "allgather", "reducescatter", "alltoall", "broadcast", "sendrecv")
DEFAULTS = {"allreduce": "ring,hdrm", "allgather": "ring,rdrm", "reducescatter": "ring,rhrm",
            "alltoall": "pairwise,topo", "broadcast": "ring,tree", "sendrecv": "ring"}
CLAIMS = (Claim("EFLOPS' mapping carries recursive doubling's allgather at the link rate at 1 MiB",
                "allgather rdrm busbw/link at 1048576 B", at_least=0.9),
          Claim("EFLOPS' mapping carries recursive halving's reduce-scatter at the link rate at 1 MiB",
                "reducescatter rhrm busbw/link at 1048576 B", at_least=0.9),
          Claim("the alltoall in link-disjoint rounds beats the pairwise exchange at 1 MiB",
                "alltoall topo/pairwise busbw at 1048576 B", at_least=1.2),
          Claim("the pipelined Ring broadcast beats the binomial tree at 1 MiB",
                "broadcast tree/ring busbw at 1048576 B",
                at_most=0.6))
# 1 MiB only, the size and the collectives the claims read (1 KiB as well took a fifth longer)
SMOKE = ("--collectives", "allgather,reducescatter,alltoall,broadcast", "--min-bytes", "1048576", "--iters", "2")
# the code that measures, judges and scores this scenario's runs: the code half of its records
CODE = (*EMULATION, "testbed/runs/sweep.py", "testbed/collectives/schedules.py", "testbed/collectives/metrics.py",
        "testbed/fidelity/verdict.py")


def add_arguments(parser):
    add_fabric_arguments(parser, topology="bigraph:2,8")
    parser.add_argument("--collectives", default=",".join(COLLECTIVES),
                        help="comma-separated, from " + ", ".join(COLLECTIVES) + " (default: all)")
    parser.add_argument("--algorithms", action="append", default=[], metavar="COLLECTIVE=A,B",
                        help="a collective's variants, once per collective; " + "; ".join(
                            f"{c}: {', '.join(v for v in COLLECTIVE_VARIANTS[c] if v != 'ring_cross_segment')} "
                            f"(default {DEFAULTS[c]})" for c in COLLECTIVES))
    add_sweep_arguments(parser)


Plan = SweepPlan


def chosen_variants(collectives, given):
    """{collective: [variant]} from --algorithms COLLECTIVE=A,B (each collective at most once)."""
    chosen = {}
    for text in given:
        collective, sep, variants = text.partition("=")
        collective = collective.strip()
        if not sep or collective not in COLLECTIVES:
            raise TestbedError(f"--algorithms {text!r}: write COLLECTIVE=A,B with COLLECTIVE one of "
                               f"{', '.join(COLLECTIVES)}")
        if collective in chosen:
            raise TestbedError(f"--algorithms gives {collective} twice: give its variants once, comma-separated")
        if collective not in collectives:
            raise TestbedError(f"--algorithms gives {collective}, which --collectives leaves out: add it there")
        allowed = [v for v in COLLECTIVE_VARIANTS[collective] if v != "ring_cross_segment"]
        chosen[collective] = names(variants, f"--algorithms {collective}", allowed)
    return {c: chosen.get(c) or DEFAULTS[c].split(",") for c in collectives}


def prepare(args):
    topo = fabric(args)
    collectives = names(args.collectives, "--collectives", COLLECTIVES)
    sizes, warmup, iters, eager_limit = sweep_options(args)
    placed = {c: sweep.place_variants(topo, variants, c, sizes)
              for c, variants in chosen_variants(collectives, args.algorithms).items()}
    sweep.check_sweep(sizes, len(topo.hosts), sum(len(v) for v in placed.values()), topo.bytes_per_s, warmup, iters)
    return Plan(topo, args.mtu, placed, sizes, warmup, iters, eager_limit)


def run(plan, experiment):
    topo, started = plan.topo, experiment.started
    experiment.about.update(topology=topo.name, rate_mbit=topo.rate, mtu=plan.mtu, eager_limit=plan.eager_limit,
                            summary={})

    def heading(collective, emu):
        return (f"\n# {collective}: {topo.name}, {len(topo.hosts)} ranks, links {topo.rate:g} Mbit/s, "
                f"MTU {plan.mtu}, OVS {datapath_name(emu.datapath)}, warmup {plan.warmup}, "
                f"iters {plan.iters}; busbw = algbw x {busbw_factor_text(collective)}")

    measured, check = run_sweeps(experiment, topo, plan.placed, plan.sizes, plan.warmup, plan.iters, mtu=plan.mtu,
                                 csv="collectives.csv", heading=heading, eager_limit=plan.eager_limit,
                                 done=lambda c: print(f"  ... {c} done, {time.monotonic() - started:.0f} s"))
    for collective, rows in measured.items():
        exchange = experiment.about.get("idle_exchange_us") if collective == "allreduce" else None
        cmp = experiment.about["summary"][collective] = sweep.compare_variants(rows, exchange)
        experiment.headline.update({f"{collective} {k}": v for k, v in sweep.headline(cmp).items()})
        experiment.say(f"\nsummary, {collective} ({topo.name}, {len(topo.hosts)} ranks, links {topo.rate:g} Mbit/s):",
                       *sweep.summary_lines(cmp))
        experiment.figure(f"busbw_{collective}.png", figures.busbw_by_size, rows, link_mbit=topo.rate, fabric=topo.name)
    experiment.say(f"\n#wrong over every collective and iteration: {experiment.wrong}",
                   f"fabric check before the sweeps: {'PASS' if check.passed else 'FAIL'} (reachability, one long TCP "
                   "flow >= 0.9 and parallel flows >= 0.85 of the link rate)")


def busbw_factor_text(collective):
    return {"allreduce": "2(p-1)/p", "broadcast": "1", "sendrecv": "1"}.get(collective, "(p-1)/p")
