"""Training throughput against scale: iterations of modelled computation and an allreduce of the
gradients, for N = 4, 8, 16, ... ranks, on four systems, and the linear-scaling ratio
throughput(N) / ((N / N0) x throughput(N0)), N0 the smallest N.

- bigraph-hdrm: EFLOPS' system, BiGraph with a NIC per accelerator, HDRM; from 16 ranks on, its
  servers are EFLOPS' (4 accelerators on one switch: BiGraph(4, N/4, c), c parallel links enough
  for HDRM, c = 2 at 16), below that one accelerator per switch (BiGraph(1, N)), except for a
  workload with tensor parallelism, whose groups keep EFLOPS' servers from 8 ranks on (BiGraph(4,
  2, 4) at 8: two switches of one server each), so that a --ranks sweep never moves them from a
  server's scale-up domain onto the fabric;
- bigraph-ring: the same fabric, Ring with consecutive ranks alternating layers;
- clos-ecmp-hd: a leaf-spine Clos (4 hosts per leaf, 4 spines) with ECMP, halving-doubling;
- single-nic-hd: servers of 4 accelerators that share one NIC (one host per server, its 4 ranks
  reaching each other inside it), on BiGraph, halving-doubling in rank order; at N = 4 the job is
  one server and never touches the network.
The computation per iteration is the same at every N (weak scaling), chosen so that the ideal
allreduce of the gradients is --comm-share of an iteration at N0 (see testbed.collectives.training).
With --workload FILE, an iteration is a SimAI workload file replayed as the job it describes: its
ranks in Megatron's order on the system's servers (a tensor-parallel group on one server's
accelerators), each collective in the group its phase names (tensor-, data-, expert- or
pipeline-parallel), in the system's family of algorithms; a group inside one server runs over the
modelled scale-up domain (--scaleup-gbit), the others for real across the fabric. The file's GPU
count is the replay's unless --ranks asks for others (the data-parallel size follows); the report
gives each group kind's time, share of the iteration and bytes on the fabric and inside servers.
- hpn7-ring (a workload's systems only): HPN 7.0's dual-plane fabric, two segments of servers of 4
  accelerators, each on its rail (HPN7(2, N/8, 4, 2)), ECMP, Ring; for a workload whose tensor
  parallelism is 8, servers of 8 on 8 rails, as HPN 7.0's are, in one segment where the ranks
  fill fewer than two servers in each of two.
A system whose servers cannot hold the workload's tensor-parallel group is left out, and the run
says which and why (named in --systems, it is refused with the fix).
"""
from dataclasses import dataclass

from scenarios.common import (
    add_fabric_arguments,
    add_scheme_arguments,
    add_seed_argument,
    at_least,
    counts,
    names,
    positive,
    seed_of,
)
from testbed.api import (
    HPN7,
    NVLINK_GBIT,
    BiGraph,
    Draw,
    HalvingDoubling,
    Job,
    LeafSpine,
    Ring,
    TestbedError,
    compute_seconds,
    faster_uplinks,
    linear_ratio,
    place,
    place_jobs,
    servers,
    with_scaleup,
    workloads,
)
from testbed.api.fabric import check_delay
from testbed.experiments import (
    capacity,
    check_link_rate,
    check_mtu,
    check_ranks,
    datapath,
    describe_all,
    figures,
    flag,
)
from testbed.experiments.claims import Claim
from testbed.experiments.code_half import EMULATION
from testbed.experiments.job_models import all_ranks_bytes, group_lines, replay_header, scale_note
from testbed.experiments.trials import Form, run_once

NAME = "training_scaling"
HELP = "training iterations (modelled compute + gradient allreduce) against rank count: the linear-scaling ratio"
SYSTEMS = ("bigraph-hdrm", "bigraph-ring", "clos-ecmp-hd", "single-nic-hd", "hpn7-ring")
SYNTHETIC = SYSTEMS[:4]           # hpn7-ring needs 16 ranks or more (two segments of 4-accelerator servers)
FAMILY = {"bigraph-hdrm": "hd", "bigraph-ring": "ring", "clos-ecmp-hd": "hd", "single-nic-hd": "hd",
          "hpn7-ring": "ring"}
PER_SERVER = 4
CLAIMS = (Claim("BiGraph with HDRM scales near linearly to 32 ranks (EFLOPS)", "bigraph-hdrm linear ratio at 32",
                at_least=0.8),
          Claim("servers sharing one NIC scale far worse", "single-nic-hd linear ratio at 32", at_most=0.6))
SMOKE = ("--ranks", "4,32", "--systems", "bigraph-hdrm,single-nic-hd", "--iters", "3", "--seed", "1")
# the code that measures, judges and scores this scenario's runs: the code half of its records
CODE = (*EMULATION, "testbed/collectives/training.py", "testbed/collectives/workload.py",
        "testbed/experiments/job_models.py", "testbed/runs/jobs.py", "testbed/collectives/parallelism.py")


def add_arguments(parser):
    add_fabric_arguments(parser, topology="(per system)")
    parser.add_argument("--ranks", default=None,
                        help="rank counts, powers of two (default 4,8,16,32; with --workload the file's GPU count)")
    parser.add_argument("--systems", default=None, help="comma-separated, from " + ", ".join(SYSTEMS) +
                        f" (default {','.join(SYNTHETIC)}; with --workload all)")
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
    parser.add_argument("--scaleup-gbit", type=float, default=NVLINK_GBIT,
                        help="with --scaleup 0: a server's scale-up domain (NVLink) each way, Gbit/s, as real: the "
                             "time of a group inside one server is modelled at it (default %(default)s: H100's "
                             "NVLink)")
    # for clos-ecmp-hd and hpn7-ring; planned is left out: it moves flows while iterations are timed
    add_scheme_arguments(parser, routings=("ecmp", "pinned"), uplinks=True)
    add_seed_argument(parser, "the connections' source ports (a hash draw: the paths ECMP gives clos-ecmp-hd and "
                              "hpn7-ring)")


def hpn7_width(tp):
    """Accelerators per hpn7-ring server: 4, or 8 on 8 rails (HPN 7.0's own) for tensor parallel 8."""
    return max(PER_SERVER, tp)


def system_fabric(system, ranks, rate, queue, delay, routing="ecmp", uplink_ratio=1, tp=1):
    """(topology, routing mode, allreduce variant, host per rank) of a system at N ranks for a job
    of tensor parallelism `tp`; the systems that ECMP routes take `routing` and `uplink_ratio`
    (faster_uplinks) instead."""
    if system in ("bigraph-hdrm", "bigraph-ring"):
        topo = BiGraph.eflops(ranks, PER_SERVER, whole=tp > 1, rate=rate, queue=queue, delay=delay)
        variant = "hdrm" if system == "bigraph-hdrm" else "ring_topo"
        return topo, "deterministic", variant, place(variant, topo)
    if system == "clos-ecmp-hd":
        per_leaf = min(4, ranks // 2)
        topo = faster_uplinks(LeafSpine(ranks // per_leaf, 4, per_leaf, rate=rate, queue=queue, delay=delay),
                              uplink_ratio)
        return topo, routing, "hd", place("hd", topo)
    if system == "hpn7-ring":
        width = hpn7_width(tp)
        segments = 2 if ranks >= 4 * width else 1
        topo = faster_uplinks(HPN7(segments, ranks // (segments * width), width, 2, rate=rate, queue=queue,
                                   delay=delay), uplink_ratio)
        return topo, routing, "ring", (Ring(), [h for box in servers(topo) for h in box])
    boxes = max(2, ranks // PER_SERVER)           # a BiGraph needs 2 switches; at N = 4 one is idle
    topo = BiGraph(1, boxes, rate=rate, queue=queue, delay=delay)
    schedule = HalvingDoubling()
    schedule.check(ranks)
    hosts = [topo.host_at(r // PER_SERVER, 0).name for r in range(ranks)]
    return topo, "deterministic", "hd", (schedule, hosts)


def unfit(system, ranks, rate, limit, topo=None, tp=None):
    """Why `system` cannot run `ranks` ranks here (given its fabric: whether this machine forwards
    what its NICs offer), or None; tp: a workload's tensor parallelism (None: the synthetic job)."""
    if topo is None and system == "hpn7-ring":
        if tp is None and ranks < 2 * 2 * PER_SERVER:
            return f"needs 16 ranks or more (two segments of {PER_SERVER}-GPU servers; got {ranks})"
        width = hpn7_width(tp or 1)
        if tp is not None and ranks % width:
            return f"needs a multiple of {width} ranks (servers of {width} accelerators; got {ranks})"
        return None
    if topo is None:
        return None
    offered = len(topo.nic_ports()) * rate
    if limit is not None and offered > limit:
        return (f"at {ranks} ranks offers {offered:g} Mbit/s ({len(topo.nic_ports())} NIC ports at {rate:g} Mbit/s), "
                f"more than this machine forwards faithfully (about {limit} Mbit/s)")
    return None


def replay_hosts(system, ranks, topo, hosts):
    """The host of each rank of a workload's replay: Megatron's order filling the system's servers;
    single-nic-hd's own (4 ranks on each server's one host)."""
    return hosts if system == "single-nic-hd" else place_jobs(topo, [ranks])[0]


def servers_unfit(system, ranks, topo, hosts, workload, tp):
    """Why `system`'s servers at `ranks` cannot hold `workload`'s tensor-parallel groups, or None."""
    if tp == 1:
        return None
    hosts = replay_hosts(system, ranks, topo, hosts)
    width = Job(system, workload, workload.groups(ranks), tuple(hosts)).server_width(topo)
    if width % tp == 0:
        return None
    return (f"has servers of {width} accelerator{'s' if width > 1 else ''} at {ranks} ranks: tensor parallel {tp} "
            "of the workload would cross the fabric or not divide them")


def headline(rows, base):
    """Each system's iteration time per rank count and, where the run scaled past N0, its linear
    ratio at the largest count (a run at N0 alone has a ratio of 1 by definition: no figure)."""
    largest = max(r["ranks"] for r in rows)
    figures = {f"{r['system']} linear ratio at {largest}": r["linear_ratio"] for r in rows
               if r["ranks"] == largest} if largest > base else {}
    figures.update({f"{r['system']} iteration at {r['ranks']} (ms)": round(r["iteration_s"] * 1e3, 2) for r in rows})
    return figures


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
    jobs: dict = None         # {(system, ranks): api.jobs.Job} of a workload's replay
    schemes: str = ""         # the ECMP systems' routing and uplinks when not ECMP's and 1x
    seed: int = 0
    workload_gbit: float = 400.0
    _left_out: dict = None    # {system: why} of the default systems this machine cannot run; not what runs

    @property
    def fabrics(self):
        return [p[2] for p in self.points]


def rank_counts(args, workload):
    if args.ranks is not None:
        return sorted(set(counts(args.ranks, "--ranks")))
    if workload is not None:
        if not workload.gpus:
            raise TestbedError(f"--workload {workload.path} names no GPU count (all_gpus in its first line): "
                               "give the ranks to replay it on with --ranks")
        return [workload.gpus]
    return [4, 8, 16, 32]


def prepare(args):
    positive(args, "workload_gbit", "scaleup_gbit")
    check_mtu(args.mtu)
    check_link_rate(args.rate)
    if args.topology != "(per system)":
        raise TestbedError(f"{NAME} builds its own fabrics per system and rank count: leave out --topology")
    workload = workloads.read(args.workload) if args.workload is not None else None
    ranks = rank_counts(args, workload)
    named = args.systems is not None
    systems = names(args.systems or ",".join(SYSTEMS if workload else SYNTHETIC), "--systems", SYSTEMS)
    path = datapath()      # the limit of the datapath this machine runs
    check_ranks(ranks, args.rate, args.mtu, path)
    limit = capacity(args.mtu, path)
    if not 0.05 <= args.comm_share <= 0.95:
        raise TestbedError(f"--comm-share must be between 0.05 and 0.95 (got {args.comm_share})")
    size = at_least(args.gradient_bytes, 4 * max(ranks), "--gradient-bytes", " (4 per rank)")
    delay = check_delay(args.delay)
    points, left_out = [], {}
    tp = {n: workload.groups(n).tp for n in ranks} if workload else dict.fromkeys(ranks)
    for s in systems:
        for n in ranks:
            why = unfit(s, n, args.rate, limit, tp=tp[n])
            if why is None:
                points.append((s, n, *system_fabric(s, n, args.rate, args.queue, delay, args.routing,
                                                    args.uplink_ratio, tp[n] or 1)))
                why = unfit(s, n, args.rate, limit, points[-1][2])
            if why is None and workload:
                why = servers_unfit(s, n, points[-1][2], points[-1][5][1], workload, tp[n])
            if why and named:
                raise TestbedError(f"--systems: {s} {why}: leave it out of --systems, or give other --ranks "
                                   "or a lower --rate")
            if why:
                left_out.setdefault(s, why)
    points = [p for p in points if p[0] not in left_out]     # a system runs at every rank count or not at all
    if not points:
        raise TestbedError("no system fits: " + "; ".join(f"{s} {why}" for s, why in left_out.items()) +
                           ": give other --ranks or a lower --rate")
    for point in points:
        with_scaleup(point[2], args.scaleup)
    base = ranks[0]
    compute = compute_seconds(size, base, points[0][2].bytes_per_s, args.comm_share)
    jobs, scale = {}, 1.0
    if workload is not None:
        scale = args.rate * 1e6 / (args.workload_gbit * 1e9)
        compute = workload.compute_s()
        for system, n, topo, _, _, (_, hosts) in points:
            hosts = replay_hosts(system, n, topo, hosts)
            job = Job(f"{system} N={n}", workload, workload.groups(n), tuple(hosts), scale, args.scaleup_gbit,
                      FAMILY[system])
            job.check(topo)
            jobs[system, n] = job
    schemes = "" if (args.routing, args.uplink_ratio) == ("ecmp", 1) else \
        f"routing {args.routing}, uplinks {args.uplink_ratio}x as fast and {args.uplink_ratio}x fewer"
    return Plan(points, args.mtu, size, compute, at_least(args.iters, 1, "--iters"),
                at_least(args.batch, 1, "--batch"), base, workload, scale, jobs, schemes, seed_of(args),
                args.workload_gbit, left_out)


def run(plan, experiment):
    if plan.workload:
        w = plan.workload
        experiment.header(*scale_note(plan.jobs.values(), plan.scale, plan.workload_gbit))
        experiment.header(*replay_header(NAME, w, [(f"{s} N={n}", job) for (s, n), job in plan.jobs.items()],
                                         plan.scale, plan.compute_s, plan.iters, plan.batch, plan.base))
    else:
        experiment.header(f"# {NAME}: gradients of {plan.gradient_bytes} B, {plan.compute_s * 1e3:.0f} ms of modelled "
                          f"computation per iteration, {plan.iters} iterations per point, {plan.batch} samples per "
                          f"rank; N0 = {plan.base}")
    if plan.schemes:
        experiment.header(f"#   clos-ecmp-hd and hpn7-ring: {plan.schemes}")
    for system, why in (plan._left_out or {}).items():
        experiment.header(f"# left out: {system} {why} (name it in --systems to be told how to run it)")
    experiment.header(f"# connections' source ports from seed {plan.seed}",
                      "# system           ranks  iteration(ms)  samples/s  linear ratio  #wrong  emulator")
    experiment.about.update(gradient_bytes=plan.gradient_bytes, compute_s=plan.compute_s, base_ranks=plan.base)
    base = {}

    def measure(emu, form, folder):
        system, ranks, topo, mode, variant, (schedule, hosts) = points[form.label]
        if plan.workload:
            job = plan.jobs[system, ranks]
            (row,) = emu.jobs([job], iters=plan.iters, draws=[Draw(plan.seed)])
            row.update(samples_per_s=round(ranks * plan.batch / row["iteration_s"], 2),
                       all_ranks_fabric_bytes=all_ranks_bytes(job))
        else:
            row = emu.train(schedule, hosts, plan.gradient_bytes, plan.compute_s, plan.iters, plan.batch,
                            f"{system} N={ranks}", Draw(plan.seed))
        base.setdefault(system, (row["samples_per_s"], ranks))
        yield dict(row, system=system, ranks=ranks, fabric=topo.name, variant=variant,
                   linear_ratio=round(linear_ratio(row["samples_per_s"], ranks, *base[system]), 3))

    def keep(row):
        experiment.row(row, f"  {row['system']:15s} {row['ranks']:5d}  {row['iteration_s'] * 1e3:13.1f}  "
                            f"{row['samples_per_s']:9.1f}  {row['linear_ratio']:12.3f}  {row['wrong']:6d}  {flag(row)}",
                       csv="training_scaling.csv")
        if plan.workload:
            experiment.say(*group_lines(row), section="rows")

    points = {f"{p[0]}-{p[1]}": p for p in plan.points}
    forms = [Form(label, topo, mode) for label, (_, _, topo, mode, *_) in points.items()]
    rows, _ = run_once(experiment, forms, measure=measure, mtu=plan.mtu, check=False, on_row=keep, log=lambda m: None)
    largest = max(r["ranks"] for r in rows)
    experiment.headline.update(headline(rows, plan.base))
    scaled = ", ".join(f"{r['system']} {r['linear_ratio']:.2f}" for r in rows if r["ranks"] == largest) \
        if largest > plan.base else "one rank count, nothing to scale against"
    experiment.say(f"\nsummary: linear ratio at {largest} ranks against N0 = {plan.base}: {scaled}",
        f"  #wrong over every iteration: {experiment.wrong}",
        f"  {describe_all(rows, '{system} N={ranks}'.format_map)}")
    experiment.figure("linear_ratio.png", figures.linear_ratio, rows, plan.base,
                      fabric="each system's fabric per rank count")
