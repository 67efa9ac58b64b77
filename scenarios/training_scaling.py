"""Training throughput against scale: iterations of modelled computation and an allreduce of the
gradients, for N = 4, 8, 16, ... ranks, on four systems, and the linear-scaling ratio
throughput(N) / ((N / N0) x throughput(N0)), N0 the smallest N.

- bigraph-hdrm: EFLOPS' system, BiGraph with a NIC per accelerator, HDRM;
- bigraph-ring: the same fabric, Ring with consecutive ranks alternating layers;
- clos-ecmp-hd: a leaf-spine Clos (4 hosts per leaf, 4 spines) with ECMP, halving-doubling;
- single-nic-hd: servers of 4 accelerators that share one NIC (one host per server, its 4 ranks
  reaching each other inside it), on BiGraph, halving-doubling in rank order; at N = 4 the job is
  one server and never touches the network.
The computation per iteration is the same at every N (weak scaling), chosen so that the ideal
allreduce of the gradients is --comm-share of an iteration at N0 (see testbed.collectives.training).
With --workload FILE, an iteration is instead a SimAI workload file replayed
(testbed.collectives.workload): its layers' computation slept, their collectives (allreduce,
allgather, reduce-scatter, alltoall, broadcast) real, each in the system's family of algorithms.
"""
import time
from dataclasses import dataclass

from scenarios.common import add_fabric_arguments, at_least, counts, names
from testbed import routing
from testbed.api import check_delay
from testbed.collectives import workload as workloads
from testbed.collectives.placements import place
from testbed.collectives.schedules import HalvingDoubling
from testbed.collectives.training import compute_seconds, family, linear_ratio, replay, train
from testbed.emulation import preflight
from testbed.emulation.network import Emulation
from testbed.errors import TestbedError
from testbed.fidelity.capacity import capacity, check_link_rate, check_mtu, largest_faithful_ranks
from testbed.fidelity.verdict import describe_all, flag
from testbed.report import figures
from testbed.topology import BiGraph, LeafSpine

NAME = "training_scaling"
HELP = "training iterations (modelled compute + gradient allreduce) against rank count: the linear-scaling ratio"
SYSTEMS = ("bigraph-hdrm", "bigraph-ring", "clos-ecmp-hd", "single-nic-hd")
PER_SERVER = 4
SYSTEM, RANKS = "system", "ranks"


def add_arguments(parser):
    add_fabric_arguments(parser, topology="(per system)")
    parser.add_argument("--ranks", default="4,8,16,32", help="rank counts, powers of two (default %(default)s)")
    parser.add_argument("--systems", default=",".join(SYSTEMS), help="comma-separated, from " + ", ".join(SYSTEMS))
    parser.add_argument("--gradient-bytes", type=int, default=256 << 10,
                        help="bytes allreduced per iteration (default %(default)s)")
    parser.add_argument("--comm-share", type=float, default=0.3,
                        help="the ideal allreduce's share of an iteration at the smallest N (default %(default)s)")
    parser.add_argument("--iters", type=int, default=5, help="timed iterations per point (default %(default)s)")
    parser.add_argument("--batch", type=int, default=32, help="samples per rank per iteration (default %(default)s)")
    parser.add_argument("--workload", default=None, metavar="FILE",
                        help="replay a SimAI workload file (as AICB writes them) instead of compute + allreduce; "
                             "--gradient-bytes and --comm-share are then unused")
    parser.add_argument("--workload-gbit", type=float, default=400.0,
                        help="the link rate the workload was made for, Gbit/s: its sizes are scaled by "
                             "--rate over it (default %(default)s)")


def system_fabric(system, ranks, rate, queue, delay):
    """(topology, routing mode, allreduce variant, host per rank) of a system at N ranks."""
    if system in ("bigraph-hdrm", "bigraph-ring"):
        n = 8 if ranks >= 8 else ranks
        topo = BiGraph(ranks // n, n, rate=rate, queue=queue, delay=delay)
        variant = "hdrm" if system == "bigraph-hdrm" else "ring_topo"
        return topo, "deterministic", variant, place(variant, topo)
    if system == "clos-ecmp-hd":
        per_leaf = min(4, ranks // 2)
        topo = LeafSpine(ranks // per_leaf, 4, per_leaf, rate=rate, queue=queue, delay=delay)
        return topo, "ecmp", "hd", place("hd", topo)
    servers = max(2, ranks // PER_SERVER)           # a BiGraph needs 2 switches; at N = 4 one is idle
    topo = BiGraph(1, servers, rate=rate, queue=queue, delay=delay)
    schedule = HalvingDoubling()
    schedule.check(ranks)
    hosts = [topo.host_at(r // PER_SERVER, 0).name for r in range(ranks)]
    return topo, "deterministic", "hd", (schedule, hosts)


@dataclass
class Plan:
    points: list          # [(system, ranks, topology, routing mode, variant, (schedule, hosts))]
    mtu: int
    gradient_bytes: int
    compute_s: float
    iters: int
    batch: int
    base: int             # N0
    workload: object = None   # a workloads.Workload, or None: compute + gradient allreduce
    scale: float = 1.0        # workload sizes here over as written

    @property
    def fabrics(self):
        return [p[2] for p in self.points]


def prepare(args):
    check_mtu(args.mtu)
    check_link_rate(args.rate)
    if args.topology != "(per system)":
        raise TestbedError(f"{NAME} builds its own fabrics per system and rank count: leave out --topology")
    rank_counts = sorted(set(counts(args.ranks, "--ranks")))
    datapath = preflight.datapath()      # the userspace datapath's limit must not cap the kernel's
    most = largest_faithful_ranks(args.rate, args.mtu, datapath)
    for n in rank_counts:
        if n < 2 or n & (n - 1):
            raise TestbedError(f"--ranks: {n} is not a power of two of 2 or more (halving-doubling needs one)")
        if n > most:
            raise TestbedError(f"--ranks: {n} ranks at {args.rate:g} Mbit/s offer more than this machine forwards "
                               f"faithfully (about {capacity(args.mtu, datapath)} Mbit/s): use up to {most} ranks, "
                               "or a lower --rate")
    systems = names(args.systems, "--systems", SYSTEMS)
    if not 0.05 <= args.comm_share <= 0.95:
        raise TestbedError(f"--comm-share must be between 0.05 and 0.95 (got {args.comm_share})")
    size = at_least(args.gradient_bytes, 4 * max(rank_counts), "--gradient-bytes", " (4 per rank)")
    delay = check_delay(args.delay)
    points = [(s, n, *system_fabric(s, n, args.rate, args.queue, delay)) for s in systems for n in rank_counts]
    base = rank_counts[0]
    compute = compute_seconds(size, base, points[0][2].bytes_per_s, args.comm_share)
    workload, scale = None, 1.0
    if args.workload is not None:
        workload = workloads.read(args.workload)
        if args.workload_gbit <= 0:
            raise TestbedError(f"--workload-gbit must be positive (got {args.workload_gbit:g})")
        scale = args.rate * 1e6 / (args.workload_gbit * 1e9)
        compute = workload.compute_s()
    return Plan(points, args.mtu, size, compute, at_least(args.iters, 1, "--iters"),
                at_least(args.batch, 1, "--batch"), base, workload, scale)


def run(plan, results):
    started = time.monotonic()
    if plan.workload:
        w = plan.workload
        print(f"# {NAME}: workload {w.path} ({w.parallelism}, {len(w.layers)} layers, collectives "
              f"{', '.join(w.collectives())}), sizes x {plan.scale:.3g} (--rate over --workload-gbit), "
              f"{plan.compute_s * 1e3:.1f} ms of computation per iteration, {plan.iters} iterations per point, "
              f"{plan.batch} samples per rank; N0 = {plan.base}")
    else:
        print(f"# {NAME}: gradients of {plan.gradient_bytes} B, {plan.compute_s * 1e3:.0f} ms of modelled "
              f"computation per iteration, {plan.iters} iterations per point, {plan.batch} samples per rank; "
              f"N0 = {plan.base}")
    print("# system           ranks  iteration(ms)  samples/s  linear ratio  #wrong  emulator")
    about = {"scenario": NAME, "gradient_bytes": plan.gradient_bytes, "compute_s": plan.compute_s,
             "base_ranks": plan.base, "rows": []}
    base = {}
    with results.outcome("training_scaling.json", about):
        for system, ranks, topo, mode, variant, (schedule, hosts) in plan.points:
            folder = results / f"{system}-{ranks}"
            with Emulation(topo, routing.plan(topo, mode), folder, mtu=plan.mtu, log=lambda m: None) as emu:
                label = f"{system} N={ranks}"
                if plan.workload:
                    used = family(topo, mode, schedule, hosts, plan.workload.collectives())
                    row = replay(emu, used, hosts, plan.workload, plan.scale, plan.iters, plan.batch, label)
                else:
                    row = train(emu, schedule, hosts, plan.gradient_bytes, plan.compute_s, plan.iters, plan.batch,
                                label)
            base.setdefault(system, (row["samples_per_s"], ranks))
            row.update(system=system, ranks=ranks, fabric=topo.name, variant=variant,
                       linear_ratio=round(linear_ratio(row["samples_per_s"], ranks, *base[system]), 3))
            about["rows"].append(row)
            flat = {k: v for k, v in row.items() if k not in ("times", "comm_share")}
            flat.update({f"share_{c}": share for c, share in row.get("comm_share", {}).items()})
            results.append("training_scaling.csv", flat)
            print(f"  {system:15s} {ranks:5d}  {row['iteration_s'] * 1e3:13.1f}  {row['samples_per_s']:9.1f}  "
                  f"{row['linear_ratio']:12.3f}  {row['wrong']:6d}  {flag(row)}")
            if plan.workload:
                print(f"  {'':15s}        exposed communication {row['exposed_comm_s'] * 1e3:.1f} ms of "
                      f"{row['iteration_s'] * 1e3:.1f}; of the communication: " +
                      ", ".join(f"{c} {share:.0%}" for c, share in row["comm_share"].items()))
        about["seconds"] = round(time.monotonic() - started, 1)
    largest = max(r["ranks"] for r in about["rows"])
    print(f"\nsummary: linear ratio at {largest} ranks against N0 = {plan.base}: " + ", ".join(
        f"{r['system']} {r['linear_ratio']:.2f}" for r in about["rows"] if r["ranks"] == largest))
    print(f"  #wrong over every iteration: {sum(r['wrong'] for r in about['rows'])}")
    print(f"  {describe_all(about['rows'], lambda r: f'{r[SYSTEM]} N={r[RANKS]}')}")
    results.figure("linear_ratio.png", figures.linear_ratio, about["rows"], plan.base)
    print(results.listing())
    return 0 if all(r["wrong"] == 0 for r in about["rows"]) else 1
