"""HPN 7.0, single plane against dual plane: the same traffic on the same ToRs and uplinks, wired
as one plane or two, hashed by ECMP at every stage; paired trials, intervals, and a flow model
checked against every trial.

Single plane: both ToRs of a NIC link to the same aggregation switches, so an aggregation switch
has both as equal-cost next hops towards the NIC: a hashing stage after the NIC's choice of port
and the ToR's choice of uplink, and the same hash at successive switches picks correlated links
(polarisation). Dual plane: port p of every NIC is in plane p, whose aggregation switches reach
only plane p's ToRs; once a connection leaves its NIC its path down is fixed. Both forms have the
same ToRs, A uplinks per ToR at the same rate (``--uplink-capacity``: HPN's ratio of ToR uplink
to downlink capacity by default) and A aggregation switches' worth of ports; only the wiring
differs (``topology.hpn7.plane_forms``).

Trial t draws fresh 5-tuples (``routing.hashing.Draw`` from seed + t) and runs both forms on them,
in alternating order, each on a freshly built fabric: a Ring allreduce over every host whose
neighbours sit on different segments, and a cross-segment permutation of long-lived flows, both
with ``--streams`` connections per peer, spread over the NIC's ports by ``--bond``; with
``--workloads ...,alltoall`` also the pairwise alltoall over the same hosts (a mixture-of-experts'
expert-parallel exchange: a fresh set of 5-tuples in every step). Every link is
captured; from the paths the connections took, the flow model (``fidelity.predict``) gives what
the trial should have achieved; measured over model says whether the throughput follows from the
placement. The gains of dual plane are paired ratios with 95% intervals (``report.paired``).
"""
from dataclasses import dataclass

from scenarios.common import (
    PlaneTrials,
    add_fabric_arguments,
    add_plane_arguments,
    add_seed_argument,
    at_least,
    fabric,
    names,
    plane_options,
    seed_of,
)
from testbed.api import ELEMENT_BYTES, HPN7, Comm, CrossSegmentJob, PairwiseAlltoall, Ring, TestbedError
from testbed.experiments import check_sweep, describe_all, figures, flag
from testbed.experiments.claims import Claim
from testbed.experiments.code_half import EMULATION
from testbed.experiments.trials import Form, check_line, compare, model_lines, run_trials

NAME = "hpn7_planes"
HELP = "HPN7 single- against dual-plane under ECMP: paired trials with intervals, loads per tier, NIC split, " \
       "queues, measured against the flow model"
FORMS = ("single plane", "dual plane")
WORKLOADS = ("allreduce", "flows", "alltoall")
TIERS = ("host->tor", "tor->agg", "agg->tor", "tor->host")
DEFAULT_TRIALS = 8
CLAIMS = (Claim("dual plane carries the cross-segment allreduce at least 20% faster than single plane (HPN: +50% "
                "to +64%)", "allreduce result: gain", at_least=0.2),
          Claim("dual plane carries the cross-segment flows at least 20% faster (HPN: up to +71.6%)",
                "flows result: gain", at_least=0.2),
          Claim("the allreduce follows from where hashing put its flows (measured/model, dual plane)",
                "allreduce measured_over_model: dual plane", at_least=0.8))
SMOKE = ("--trials", "2", "--iters", "2", "--duration", "3", "--seed", "1")
# the code that measures, judges and scores this scenario's runs: the code half of its records
CODE = (*EMULATION, "testbed/routing/hashing.py", "testbed/runs/together.py", "testbed/fidelity/flowmodel.py",
        "testbed/fidelity/predict.py", "testbed/experiments/trials.py", "testbed/report/paired.py",
        "testbed/collectives/cross_segment.py")


def add_arguments(parser):
    add_fabric_arguments(parser, topology="hpn7:2,2,2,2")
    add_plane_arguments(parser)
    parser.add_argument("--bytes", type=int, default=1 << 20, help="allreduce message size (default %(default)s)")
    parser.add_argument("--iters", type=int, default=3, help="allreduce iterations per trial (default %(default)s)")
    parser.add_argument("--duration", type=int, default=5, help="seconds of cross-segment flows (default %(default)s)")
    parser.add_argument("--trials", type=int, default=DEFAULT_TRIALS,
                        help="paired trials, each on a fresh hash draw (default %(default)s)")
    add_seed_argument(parser, "the first trial's draw")
    parser.add_argument("--job-servers", type=int, default=None,
                        help="the job's servers on each segment, from the first (default: all): fewer leave the "
                             "other servers' ToR ports without cross-segment traffic")
    parser.add_argument("--workloads", default="allreduce,flows",
                        help="comma-separated, from " + ", ".join(WORKLOADS) + " (default %(default)s; "
                             "alltoall: the pairwise alltoall of --bytes over the same hosts)")


@dataclass
class Plan(PlaneTrials):
    duration: int = 5
    source: str = ""     # where the fabric came from, if a SimAI file
    workloads: tuple = WORKLOADS[:2]
    servers: int = 0     # the job's servers on each segment


def prepare(args):
    base = fabric(args)
    if not isinstance(base, HPN7) or base.segments < 2 or base.tors != 2:
        raise TestbedError(f"{NAME} needs a dual-ToR HPN7 fabric of 2 or more segments (got {base.name}): "
                           "use e.g. --topology hpn7:2,2,2,2")
    forms, streams = plane_options(args, base)
    servers = base.servers if args.job_servers is None else args.job_servers
    if not 1 <= servers <= base.servers:
        raise TestbedError(f"--job-servers must be between 1 and the {base.servers} servers of a segment "
                           f"(got {servers})")
    ranks = len(CrossSegmentJob(forms[0], range(servers), 1).ring_hosts)
    at_least(args.bytes, ELEMENT_BYTES * ranks, "--bytes", f" ({ELEMENT_BYTES} per rank)")
    trials, iters = at_least(args.trials, 2, "--trials", " (an interval needs two)"), at_least(args.iters, 1, "--iters")
    check_sweep([args.bytes], ranks, 2 * trials, base.bytes_per_s, 1, iters)
    workloads = tuple(w for w in WORKLOADS if w in names(args.workloads, "--workloads", WORKLOADS))
    if "alltoall" in workloads:
        PairwiseAlltoall().check_count(ranks, args.bytes // ELEMENT_BYTES)
    if not 1 <= args.duration <= 600:
        raise TestbedError(f"--duration must be between 1 and 600 s (got {args.duration})")
    source = getattr(base, "origin", "")
    seed = seed_of(args)
    return Plan(forms, args.mtu, args.hash, args.bond, args.bytes, iters, streams, trials, seed,
                routing=args.routing, duration=args.duration, source=f"fabric {source}" if source else "",
                workloads=workloads, servers=servers)


def measure(plan, results, seen):
    """What one form measures in one trial, on the trial's draw: the workloads in order (the
    allreduce's connections drawn first, then the flows', then the alltoall's: a workload left
    out leaves the others' 5-tuples as they were in both forms). seen: the links every run loaded
    (for hpn7_links.csv and the figure) and the queue samples of trial 0."""
    def one(emu, form, draw, trial, folder):
        job = CrossSegmentJob(form.topo, range(plan.servers), plan.streams)
        hosts = job.ring_hosts
        for workload in plan.workloads:
            if workload == "flows":
                got = emu.flows(form.topo.cross_segment_pairs(range(plan.servers)), seconds=plan.duration,
                                streams=plan.streams,
                                draw=draw)
                row = dict(got.row, algorithm=f"flows x{plan.streams}", result=got.goodput_over_nic, wrong=0)
                samples = got.queue_samples
            else:
                schedule = Ring() if workload == "allreduce" else PairwiseAlltoall()
                name = "ring_cross_segment" if workload == "allreduce" else "pairwise_alltoall"
                got = emu.collectives([Comm(schedule, tuple(hosts), plan.streams, name)], plan.size,
                                      iters=plan.iters, draw=draw, name=workload)
                row = dict(got.rows[0], result=got.rows[0]["busbw_over_nic"])
                samples = got.queue_samples
            planes = form.topo.planes
            row.update(planes=planes, workload=workload)
            links = [dict(link, planes=planes, workload=workload, trial=trial) for link in got.links]
            results.append("hpn7_links.csv", *links)
            seen["links"] += links
            if trial == 0:
                seen["queues"][planes, workload] = samples
            yield row
    return one


def line(row):
    result = (f"busbw/NIC {row['result']:.2f} #wrong {row['wrong']}" if row["workload"] != "flows"
              else f"goodput/NIC {row['result']:.2f} (min {row['min_goodput_over_nic']:.2f})")
    model = f"{row['measured_over_model']:.2f}" if row.get("measured_over_model") is not None else "-"
    return (f"  trial {row['trial']} {FORMS[row['planes'] - 1]:12s} {row['workload']:9s} {result}  "
            f"measured/model {model}  paths as hashed {row['as_placed']}/{row['connections']}  "
            f"agg->tor max/mean {row.get('agg->tor_max_over_mean')}  NIC busier share {row['nic_busier_share']}  "
            f"queue mean {row['mean_queue_bytes'] / 1e3:.1f} KB  {flag(row)}")


COMPARED = [("result", {"allreduce": "busbw/NIC", "flows": "goodput/NIC", "alltoall": "busbw/NIC"}, 3, "ratio"),
            ("measured_over_model", "measured/model", 2, "ratio"),
            ("agg->tor_max_over_mean", "agg->tor max/mean bytes", 2, "ratio"),
            ("nic_busier_share", "busier downlink's share of a NIC's bytes", 3, "ratio"),
            # can be zero: compared by its difference, not a ratio
            ("mean_queue_bytes", "mean queue at ToR ports facing NICs (bytes)", 0, "difference")]


def comparisons(rows):
    """Per workload and figure: the paired comparison of single and dual plane over trials."""
    out = []
    for workload in [w for w in WORKLOADS if any(r["workload"] == w for r in rows)]:
        for key, name, digits, by in COMPARED:
            name = name[workload] if isinstance(name, dict) else name
            out.append((workload, key, compare(rows, FORMS, key, f"{workload} {name}", digits, by,
                                               where=lambda r, w=workload: r["workload"] == w)))
    return out


def run(plan, experiment):
    single = plan.forms[0]
    if plan.source:
        experiment.header(f"# {plan.source}")
    experiment.header(
        f"# {NAME}: HPN7(S={single.segments}, H={single.servers}, R={single.rails}, A={single.aggs}), "
        f"{'ECMP' if plan.routing == 'ecmp' else plan.routing + ' routing'}, hash {plan.hash}, bond {plan.bond}, "
        f"links {single.rate:g} Mbit/s, ToR uplinks {single.uplink_capacity:.4g} of NIC-facing capacity; "
        f"{plan.trials} paired trials from seed {plan.seed}: allreduce {plan.size} B x {plan.iters} and "
        f"cross-segment flows for {plan.duration} s, {plan.streams} connections per peer; workloads "
        f"{', '.join(plan.workloads)}")
    experiment.about.update(hash=plan.hash, bond=plan.bond, seed=plan.seed, rate_mbit=single.rate,
                            uplink_capacity=single.uplink_capacity, mtu=plan.mtu, links=[])
    seen = {"links": experiment.about["links"], "queues": {}}
    forms = [Form(label, topo, plan.routing, plan.hash) for label, topo in zip(FORMS, plan.forms)]
    rows, checks = run_trials(experiment, forms, trials=plan.trials, seed=plan.seed, bond=plan.bond,
                              measure=measure(plan, experiment.results, seen), mtu=plan.mtu,
                              on_row=lambda row: experiment.row(row, line(row), csv=f"hpn7_{row['workload']}.csv"))
    experiment.about["fidelity"] = {f.topo.planes: checks[f.label].summary for f in forms}
    compared = comparisons(rows)
    experiment.about["summary"] = [dict(c.to_dict(), workload=w, key=k) for w, k, c in compared]
    experiment.about["emulator"] = describe_all(rows, lambda r: f"trial {r['trial']} planes={r['planes']} "
                                                                f"{r['workload']}")
    for w, k, c in compared:
        experiment.results.append("hpn7_summary.csv", {"workload": w, "figure": k, **c.row(("single", "dual"))})
        if k in ("result", "mean_queue_bytes", "measured_over_model"):
            experiment.headline.update(c.headline(f"{w} {k}"))
    experiment.results.append("hpn7_queues.csv", *[
        {"planes": planes, "workload": workload, "port": port, "time": t, "bytes": b}
        for (planes, workload), ports in seen["queues"].items() for port, series in ports.items()
        for t, _, b, *_ in series])
    experiment.say("\nsummary (single plane against dual plane, paired over trials; mean [95% interval]):",
                   *[f"  {c.line()}" for _, _, c in compared],
                   "measured against the flow model (max-min fair rates over the captured paths):",
                   *model_lines(rows, FORMS, name=lambda r: r["workload"]),
                   f"  #wrong over every iteration: {experiment.wrong}", f"  {experiment.about['emulator']}",
                   f"  {check_line({f'planes={f.topo.planes}': checks[f.label] for f in forms})}")
    experiment.figure("load_per_link.png", figures.load_per_link, seen["links"], TIERS, fabric=single.name)
    experiment.figure("queues.png", figures.queues_by_form, seen["queues"], fabric=single.name)
