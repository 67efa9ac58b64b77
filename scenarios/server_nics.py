"""Servers of 4 accelerators: EFLOPS' one NIC per accelerator against the common server whose 4
accelerators share one NIC, on the same BiGraph switches, at the same per-NIC rate.

The shared-NIC server is one emulated host running its 4 ranks, with one link to its switch: the 4
ranks' traffic leaves through the one NIC and its one queue, as accelerators behind a PCIe switch
share a NIC; ranks of one server reach each other inside the host, unshaped, as over PCIe or NVLink.
(A "server switch" with 4 hosts behind it would send that intra-server traffic through an emulated
switch, and cost ovs-vswitchd a port per accelerator more, for nothing the comparison needs.) Each
algorithm places its ranks as on EFLOPS' servers, and a rank that would sit on a server's
accelerator j sits on that server's one host. busbw is per accelerator (per rank), as nccl-tests'.
ring_grouped is the Ring a library would choose for such servers: a server's accelerators one after
another, and servers alternating BiGraph's layers, so that the ring leaves each server once.
"""
from dataclasses import dataclass

from scenarios.common import add_fabric_arguments, at_least, counts, fabric, names
from testbed.api import BiGraph, TestbedError, on_shared_nics
from testbed.experiments import describe_all, figures, sweep
from testbed.experiments.claims import Claim
from testbed.experiments.code_half import EMULATION
from testbed.experiments.nccl_tests import run_sweeps
from testbed.experiments.trials import check_line

NAME = "server_nics"
HELP = "BiGraph servers of 4 accelerators: one NIC per accelerator (EFLOPS) against one NIC shared by all 4"
ALGORITHMS = ("ring_grouped", "ring", "ring_topo", "hd", "hdrm")
PER_SERVER = 4
CLAIMS = (Claim("HDRM with a NIC per accelerator carries several times the shared NIC's busbw at 1 MiB",
                "hdrm at 1048576 B, per accelerator over shared", at_least=2.5),
          Claim("the server-grouped Ring leaves each server once: a NIC per accelerator gains it little at 1 MiB",
                "ring_grouped at 1048576 B, per accelerator over shared", at_most=1.3))
SMOKE = ("--algorithms", "ring_grouped,hdrm", "--sizes", "1048576", "--iters", "2")
# the code that measures, judges and scores this scenario's runs: the code half of its records
CODE = (*EMULATION, "testbed/runs/sweep.py", "testbed/collectives/schedules.py", "testbed/collectives/metrics.py",
        "testbed/fidelity/verdict.py")


def add_arguments(parser):
    add_fabric_arguments(parser, topology="bigraph:4,8")
    parser.add_argument("--algorithms", default="ring_grouped,hd,hdrm", help="comma-separated, from "
                        + ", ".join(ALGORITHMS) + " (default %(default)s)")
    parser.add_argument("--sizes", default="1024,65536,1048576", help="message sizes in bytes (default %(default)s)")
    parser.add_argument("--iters", type=int, default=5,
                        help="timed iterations per size, at least (default %(default)s)")


@dataclass
class Plan:
    forms: dict           # {"nic per accelerator": BiGraph(4, n), "shared nic": BiGraph(1, n)}
    mtu: int
    placed: dict          # {form: {algorithm: (schedule, hosts)}}
    sizes: list
    iters: int

    @property
    def fabrics(self):
        return list(self.forms.values())


def prepare(args):
    eflops = fabric(args)
    if not isinstance(eflops, BiGraph) or eflops.m != PER_SERVER:
        raise TestbedError(f"{NAME} needs BiGraph servers of {PER_SERVER} accelerators, one per switch "
                           f"(got {eflops.name}): use --topology bigraph:{PER_SERVER},n")
    shared = BiGraph(1, eflops.n, eflops.c, rate=eflops.rate, queue=eflops.queue, delay=eflops.delay)   # one host
    # a server: no scale-up domain to join, its accelerators' ranks share the host
    algorithms = names(args.algorithms, "--algorithms", ALGORITHMS)
    placed = {"nic per accelerator": sweep.place_variants(eflops, algorithms), "shared nic": {}}
    for name, (schedule, hosts) in placed["nic per accelerator"].items():
        placed["shared nic"][name] = (schedule, on_shared_nics(eflops, shared, hosts))
    sizes = sorted(set(counts(args.sizes, "--sizes")))
    for size in sizes:
        at_least(size, 4 * len(eflops.hosts), "--sizes", f" (4 bytes per rank, {len(eflops.hosts)} ranks)")
    iters = at_least(args.iters, 1, "--iters")
    sweep.check_sweep(sizes, len(eflops.hosts), 2 * len(algorithms), eflops.bytes_per_s, 1, iters)
    return Plan({"nic per accelerator": eflops, "shared nic": shared}, args.mtu, placed, sizes, iters)


def compare_forms(rows):
    """Per algorithm and size: busbw per accelerator in each form and their ratio."""
    by = {(r["form"], r["algorithm"], r["size"]): r for r in rows}
    out = []
    for (form, algorithm, size), row in by.items():
        if form == "nic per accelerator" and ("shared nic", algorithm, size) in by:
            other = by["shared nic", algorithm, size]
            out.append({"algorithm": algorithm, "size": size, "eflops_busbw_over_link": row["busbw_over_link"],
                        "shared_busbw_over_link": other["busbw_over_link"],
                        "eflops_over_shared": round(row["busbw_MBps"] / other["busbw_MBps"], 2)})
    return out


def label(row):
    return f"{row['form']} {row['algorithm']}@{row['size']}"


def run(plan, experiment):
    eflops = plan.forms["nic per accelerator"]
    experiment.header(f"# {NAME}: {len(eflops.hosts)} accelerators in {eflops.n} servers of {PER_SERVER}, links "
                      f"{eflops.rate:g} Mbit/s; {', '.join(plan.placed['shared nic'])} at "
                      f"{', '.join(map(str, plan.sizes))} B")
    experiment.about.update(rate_mbit=eflops.rate, forms={})
    checks = {}
    for form, topo in plan.forms.items():
        _, checks[form] = run_sweeps(experiment, topo, {"allreduce": plan.placed[form]}, plan.sizes, 1, plan.iters,
                                     mtu=plan.mtu, csv="server_nics.csv", label={"form": form},
                                     about=experiment.about["forms"].setdefault(form, {}),
                                     heading=lambda _c, _e, f=form, t=topo: f"\n## {f}: {t.describe()}",
                                     folder=experiment.results / form.replace(" ", "_"))
    rows = experiment.rows
    cmp = experiment.about["comparison"] = compare_forms(rows)
    experiment.say("\nsummary: busbw per accelerator over the link rate, one NIC per accelerator against one shared "
                   "NIC")
    for c in cmp:
        experiment.say(f"  {c['algorithm']:9s} {c['size']:9d} B  {c['eflops_busbw_over_link']:.2f} against "
                       f"{c['shared_busbw_over_link']:.2f}: {c['eflops_over_shared']:.2f}x")
        experiment.headline[f"{c['algorithm']} at {c['size']} B, per accelerator over shared"] = c["eflops_over_shared"]
    experiment.say(f"  #wrong over every iteration: {experiment.wrong}", f"  {describe_all(rows, label)}",
                   f"  {check_line(checks)}")
    experiment.headline["rows flagged BOTTLENECK"] = sum(bool(r["emulator_bottleneck"]) for r in rows)
    experiment.figure("busbw_per_accelerator.png", figures.busbw_by_size, rows, link_mbit=eflops.rate,
                      series=lambda r: f"{r['algorithm']}, {r['form']}", fabric=eflops.name)
