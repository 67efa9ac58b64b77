"""HPN 7.0 at the paper's scale, by the flow model: no root, no emulation, seconds.

Two segments of 1,024 accelerators (128 servers x 8 rails, dual-ToR), 60 aggregation switches per
plane, ToR uplinks at HPN's 60 x 400G for 128 x 200G; single plane (both ToRs of a NIC reach the same
aggregation switches) against dual plane, the same ToRs and uplinks wired otherwise. For each job
size (accelerators split evenly over the two segments) and each hash draw, every connection's path
follows from its 5-tuple as Open vSwitch would hash it (``routing.hashing``: the function the
emulation was checked against), and its rate from max-min fair sharing (``fidelity.flowmodel``):
the same code that predicts the emulated fabrics of hpn7_planes. Each draw runs both forms on the
same 5-tuples; the figures are means over draws with 95% intervals, the gain of dual plane a paired
ratio, printed beside what the paper reports.
"""
import math
import time
from dataclasses import dataclass

from scenarios.common import add_plane_arguments, add_seed_argument, counts, seed_of
from testbed.api import (
    ELEMENT_BYTES,
    CrossSegmentJob,
    Draw,
    Placer,
    Ring,
    TestbedError,
    data_connections,
    from_spec,
    plane_forms,
    routing,
)
from testbed.experiments import figures, nic_downlink_split, predict, tier_loads
from testbed.experiments.claims import Claim
from testbed.experiments.trials import compare, model_trials

NAME = "hpn7_at_scale"
HELP = "HPN 7.0 at the paper's scale by the flow model (no root): dual against single plane over hash draws"
EMULATES = False            # a model: run_scenario.py offers it none of the emulation's options
NIC_MBIT = 200_000          # HPN's NIC ports: 200 Gbit/s (only ratios are reported)
MTU = 9000
ELEMENTS = 1 << 20          # per collective; the model's busbw does not depend on the size
FORMS = ("single plane", "dual plane")
# What the HPN paper (SIGCOMM 2024) reports, section 6.1, appendix A and section 9.2
PAPER = {
    "goodput": "cross-segment traffic up to +71.6% with dual plane",
    "allreduce": "AllReduce of 4 GB over 32-256 GPUs in two segments +50.1% to +63.7%",
    "multi": "Multi-AllReduce up to +158.2% (HPN against DCN+, all of HPN's changes)",
    "split": "single plane: a NIC's two ToR downlinks loaded 3x apart (production; a share of 0.75)",
    "agg": "single plane polarises the aggregation tier (no figure)",
    "idle": "(no figure)",
}
CLAIMS = (Claim("at 256 GPUs dual plane speeds up the cross-segment allreduce by 10% or more (HPN: +50% to +64%)",
                "256 GPUs allreduce: gain", at_least=0.1),
          Claim("at 256 GPUs dual plane speeds up Multi-AllReduce by 10% or more", "256 GPUs multi: gain",
                at_least=0.1))
SMOKE = ("--gpus", "256", "--draws", "4", "--seed", "1")
# the code that measures, judges and scores this scenario's runs: the code half of its records
CODE = ("testbed/fidelity/flowmodel.py", "testbed/fidelity/predict.py", "testbed/probes/loads.py",
        "testbed/routing/hashing.py", "testbed/experiments/trials.py", "testbed/report/paired.py")
# the paper's figure as a range of gains, where it gives one ("up to" a figure: from 0 to it)
PAPER_RANGE = {"goodput": (0.0, 0.716), "allreduce": (0.501, 0.637), "multi": (0.0, 1.582)}
NOT_MODELLED = ("ToR downlink queues -91.8% with dual plane (production): a fluid model has no queues; "
                "hpn7_planes measures them in the emulation")


def add_arguments(parser):
    parser.add_argument("--topology", default="hpn7:2,128,8,60",
                        help="hpn7:S,H,R,A of 2 or more segments (default %(default)s: HPN's segments)")
    add_plane_arguments(parser, emulated=False)
    parser.add_argument("--streams", type=int, default=4, help="connections per peer (default %(default)s)")
    parser.add_argument("--gpus", default="32,64,128,256",
                        help="job sizes in accelerators, each split evenly over segments 0 and 1 "
                             "(default %(default)s: the paper's AllReduce runs)")
    parser.add_argument("--draws", type=int, default=20, help="hash draws per job size (default %(default)s)")
    add_seed_argument(parser, "the first draw's seed")


@dataclass
class Plan:
    forms: list
    jobs: list           # [(accelerators, servers per segment)]
    hash: str
    bond: str
    streams: int
    draws: int
    seed: int
    mtu: int = MTU
    fabrics = ()         # nothing is emulated: no root, no Open vSwitch

    @property
    def modelled(self):
        return self.forms


def prepare(args):
    if not args.topology.startswith("hpn7:"):
        raise TestbedError(f"{NAME} models HPN7 fabrics: use --topology hpn7:S,H,R,A (got {args.topology})")
    base = from_spec(args.topology, rate=NIC_MBIT)
    if base.segments < 2 or base.tors != 2 or base.cores:
        raise TestbedError(f"{NAME} needs a dual-ToR HPN7 of 2 or more segments without a core tier "
                           f"(got {base.name}): use e.g. --topology hpn7:2,128,8,60")
    forms = plane_forms(base, args.uplink_capacity)
    jobs = []
    for gpus in counts(args.gpus, "--gpus"):
        servers, left = divmod(gpus, 2 * base.rails)
        if left or not 1 <= servers <= base.servers:
            raise TestbedError(f"--gpus {gpus}: a job takes whole servers of {base.rails} accelerators on each of "
                               f"two segments: use multiples of {2 * base.rails} up to {2 * base.rails * base.servers}")
        jobs.append((gpus, servers))
    if not 1 <= args.streams <= 64:
        raise TestbedError(f"--streams must be between 1 and 64 (got {args.streams})")
    if not 2 <= args.draws <= 10000:
        raise TestbedError(f"--draws must be between 2 and 10000 (got {args.draws}): an interval needs two")
    seed = seed_of(args)
    return Plan(forms, jobs, args.hash, args.bond, args.streams, args.draws, seed)


def evaluate_form(topo, placer, job, draw):
    """One form on one draw: the figures the paper reports, from the model."""
    groups, pairs = job.flows(draw)
    flows = predict.flows(topo, groups, {c: placer.path(c) for g in groups for c in g}, MTU)
    ring = job.allreduce(draw)
    rails = job.multi_allreduce(draw)
    paths = {c: placer.path(c) for ranks in [ring] + rails for c in data_connections(ranks)}
    nic = predict.nic_capacity(topo, job.ring_hosts[0])
    busbw = lambda ranks, seconds: ELEMENTS * ELEMENT_BYTES / seconds * 2 * (len(ranks) - 1) / len(ranks) / nic
    (ring_time,) = predict.collective_times(topo, [(Ring(), ring, ELEMENTS)], paths, MTU)
    rail_times = predict.collective_times(topo, [(Ring(), r, ELEMENTS) for r in rails], paths, MTU)
    split = nic_downlink_split(topo, flows["loads"])
    shares = [s["busier_share"] for s in split.values()]
    agg = tier_loads(topo, with_idle_downlinks(topo, flows["loads"], groups)).get("agg->tor", {})
    return {"goodput": sum(flows["goodput_over_nic"]) / len(groups), "allreduce": busbw(ring, ring_time),
            "multi": sum(busbw(r, t) for r, t in zip(rails, rail_times)) / len(rails),
            "split": sum(shares) / len(shares) if shares else None, "agg": agg.get("max_over_mean"),
            "idle": agg["idle_links"] / agg["links"] if agg else None}


def with_idle_downlinks(topo, loads, groups):
    """loads plus a zero for every agg->tor link into a ToR the flows end at: a capture sees every
    link, the model only those a flow crossed, and an idle link is what polarisation leaves."""
    tors = {topo.attachment(port)[0] for group in groups for c in group for port in topo.hosts[c.dst].ports}
    idle = {(a, ap): {"flows": 0, "bytes": 0.0} for a, ap, b, _ in topo.directed_links()
            if b in tors and topo.tier(a, b) == "agg->tor"}
    return {**idle, **loads}


FIGURES = [("goodput", "cross-segment goodput/NIC"), ("allreduce", "allreduce busbw/NIC"),
           ("multi", "Multi-AllReduce busbw/NIC"), ("split", "busier downlink's share of a NIC's bytes"),
           ("agg", "agg->tor max/mean rate"), ("idle", "idle agg->tor links (share)")]
BY_DIFFERENCE = {"idle"}        # can be zero: compared by its difference, not a ratio


def run(plan, experiment):
    single = plan.forms[0]
    experiment.header(
        f"# {NAME}: HPN7(S={single.segments}, H={single.servers}, R={single.rails}, A={single.aggs}) by the flow "
        "model; "
        f"ToR uplinks {single.uplink_capacity:.4g} of NIC-facing capacity; hash {plan.hash}, bond {plan.bond}, "
        f"{plan.streams} connections per peer; {plan.draws} draws per job from seed {plan.seed}")
    placers = dict(zip(FORMS, (Placer(form, routing.plan(form, "ecmp", plan.hash), plan.bond) for form in plan.forms)))
    topos = dict(zip(FORMS, plan.forms))
    experiment.about.update(seed=plan.seed, hash=plan.hash, bond=plan.bond, streams=plan.streams, summary=[])
    drawn = []
    for gpus, servers in plan.jobs:
        started = time.monotonic()

        def evaluate(form, d, servers=servers):
            job = CrossSegmentJob(topos[form], range(servers), plan.streams)
            return evaluate_form(topos[form], placers[form], job, Draw(plan.seed + d, plan.bond))

        rows = model_trials(FORMS, plan.draws, evaluate)
        for d in range(plan.draws):
            row = {"gpus": gpus, "draw": d, "seed": plan.seed + d}
            for r in (r for r in rows if r["trial"] == d):
                row.update({f"{key}_{r['form'].split()[0]}": r[key] for key, _ in FIGURES})
            experiment.row(row, csv="hpn7_at_scale_draws.csv")
        experiment.say(f"\n## {gpus} accelerators ({servers} servers x {single.rails} rails on each of two segments), "
                       f"{plan.draws} draws in {time.monotonic() - started:.1f} s")
        for key, name in FIGURES:
            cmp = compare(rows, FORMS, key, name, 3, by="difference" if key in BY_DIFFERENCE else "ratio")
            experiment.say(f"  {cmp.line()}\n      paper: {PAPER[key]}" + agreement(key, cmp))
            drawn.append((f"{gpus} GPUs", name, cmp))
            experiment.about["summary"].append(dict(cmp.to_dict(), gpus=gpus, key=key, paper=PAPER[key]))
            experiment.results.append("hpn7_at_scale_summary.csv", summary_row(gpus, key, name, cmp))
            if key in ("goodput", "allreduce", "multi"):
                experiment.headline.update(cmp.headline(f"{gpus} GPUs {key}"))
    experiment.figure("gains.png", figures.gains, drawn, fabric=single.name)
    experiment.say(f"\nmodelled in {experiment.seconds} s (flows: the job's hosts to their counterparts; agg->tor over "
                   f"every aggregation switch's links to the job's ToRs)\nnot modelled: {NOT_MODELLED}")


def agreement(key, cmp):
    """Whether the model's gain falls in the paper's range, where the paper gives one."""
    if key not in PAPER_RANGE:
        return ""
    low, high = PAPER_RANGE[key]
    gain = cmp.gain
    if gain.n == 0 or gain.mean != gain.mean:
        return ""
    spread = (gain.lo, gain.hi) if math.isfinite(gain.lo) and math.isfinite(gain.hi) else (gain.mean, gain.mean)
    if spread[0] > high:
        said = "above the paper's range"
    elif spread[1] < low:
        said = "below the paper's range"
    elif low <= gain.mean <= high:
        said = "within the paper's range"
    else:
        said = "outside the paper's range, its interval reaching it"
    return f"; the model's gain {100 * gain.mean:+.0f}% is {said} ({100 * low:+.1f}% to {100 * high:+.1f}%)"


def summary_row(gpus, key, name, cmp):
    return {"gpus": gpus, "figure": name, **cmp.row(("single", "dual")), "paper": PAPER[key]}
