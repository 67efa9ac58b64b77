"""Load balancing as the largest operators published it, each scheme against plain ECMP with one
connection per peer, paired over hash draws:
- streams-N: N connections per peer (Meta, SIGCOMM 2024: spreading each peer's traffic over several
  queue pairs improved AllReduce by up to 40%);
- uplinks-2x: a leaf's (ToR's) uplinks at twice a downlink's rate, half as many, the same uplink
  capacity (ByteDance's MegaScale, NSDI 2024: fewer, faster uplinks make collisions rarer);
- pinned: every switch sends a destination one way, chosen by the destination (Meta's static path
  pinning), with the job on all of the racks and on part of each rack (`--allocated`), where
  Meta saw pinning break;
- planned: the controller learns the long flows from its rules' counters and places them on paths
  apart (Alibaba's C4P, arXiv 2406.04594), for the collectives it is not told about.
And a rail-only fabric (Wang et al., HotI 2024: no spine; traffic between rails crosses the
server's scale-up domain; all-to-all 8.2-11.2% slower for 38-77% less network cost) against a
rail-optimised one of the same size (HPN7 with one segment and a ToR per rail, its uplinks as fast
as its downlinks together: non-blocking) whose servers have the same scale-up domain, both routed
deterministically (no hash luck on either side), for the same collectives: the overhead with its
interval. Rows the verdict finds the emulator bounded (CPU saturated) are left out of the gains,
and the line says how many; ECMP's own spread from draw to draw is shown beside them.
Each trial draws fresh 5-tuples (seed + trial) and measures every scheme on them, each routing and
fabric on a freshly built emulation, for an allreduce (HD), an alltoall (pairwise) and, with
`--workload`, a replayed SimAI workload; every link is captured, so each row has the flow model's
time from the paths its connections took (measured/model per trial). Each scheme's gain over ECMP
is a paired ratio with its 95% interval. The flow model then runs the streams and uplinks schemes on
a fabric of the papers' scale (`--model-topology`) over many draws, beside the published figures.
"""
from dataclasses import dataclass
from functools import partial

from scenarios.common import add_fabric_arguments, add_seed_argument, at_least, counts, fabric, names, positive, seed_of
from testbed.api import (
    ELEMENT_BYTES,
    HPN7,
    Comm,
    Job,
    TestbedError,
    faster_uplinks,
    from_spec,
    part_of_racks,
    place,
    workloads,
)
from testbed.experiments import describe_all, figures
from testbed.experiments.claims import Claim
from testbed.experiments.code_half import EMULATION
from testbed.experiments.scheme_models import (
    comparisons,
    gain_lines,
    model_ratio_lines,
    rail_lines,
    rail_rows,
    scale_model_lines,
    spread_lines,
)
from testbed.experiments.trials import Form, check_line, run_trials

NAME = "load_balancing"
HELP = "connections per peer, faster uplinks, pinned and controller-planned paths, each against ECMP"
FABRICS = ("leafspine:4,4,4", "hpn7:2,4,2,2")
SCHEMES = ("streams", "uplinks", "pinned", "planned")
VARIANTS = {"allreduce": "hd", "alltoall": "pairwise"}
PAPERS = {"streams": "Meta: AllReduce up to +40% with more queue pairs per peer (enhanced ECMP)",
          "uplinks": "MegaScale: uplinks at twice a downlink's rate make ECMP collisions rarer (no figure)",
          "pinned": "Meta: static path pinning broke under partial-rack allocation and failures (no figure)",
          "planned": "C4P: closed much of a 30% gap to ideal throughput under ECMP on 512 GPUs"}

CLAIMS = (Claim("two connections per peer raise HD's busbw on the ECMP Clos (Meta: up to +40% with more)",
                "leafspine:4,4,4 allreduce streams-2: gain", at_least=0.05),
          Claim("paths pinned by destination carry HD on part of every rack at least as well as ECMP on the same part",
                "leafspine:4,4,4 allreduce pinned-part: gain", at_least=0.0))
# the smoke's schemes are the ones two cores carry: more streams and the whole racks pinned saturate them
SMOKE = ("--also", "none", "--schemes", "streams,pinned", "--stream-counts", "2", "--collectives", "allreduce",
         "--railonly", "none", "--trials", "3", "--model-draws", "2", "--seed", "1")
# the code that measures, judges and scores this scenario's runs: the code half of its records
CODE = (*EMULATION, "testbed/experiments/scheme_models.py", "testbed/experiments/trials.py",
        "testbed/runs/jobs.py", "testbed/collectives/connections.py", "testbed/routing/hashing.py",
        "testbed/report/paired.py")


def add_arguments(parser):
    add_fabric_arguments(parser, topology=FABRICS[0], scaleup=None)
    parser.add_argument("--also", action="append", default=None, metavar="SPEC",
                        help=f"another fabric to run every scheme on (default {FABRICS[1]}; 'none': only "
                             "--topology); repeatable")
    parser.add_argument("--schemes", default=",".join(SCHEMES),
                        help="comma-separated, from " + ", ".join(SCHEMES) + " (default: all; ECMP always runs)")
    parser.add_argument("--stream-counts", default="2,4,8,16",
                        help="connections per peer the streams scheme tries (default %(default)s)")
    parser.add_argument("--allocated", type=float, default=0.5,
                        help="the share of each rack's hosts a partly allocated job gets (default %(default)s)")
    parser.add_argument("--collectives", default="allreduce,alltoall",
                        help="comma-separated, from allreduce (HD), alltoall (pairwise) (default %(default)s)")
    parser.add_argument("--workload", default=None, metavar="FILE",
                        help="also replay this SimAI workload file under each scheme (its groups, at the "
                             "fabric's size)")
    parser.add_argument("--workload-gbit", type=float, default=400.0,
                        help="the link rate the workload file was made for, Gbit/s (default %(default)s)")
    parser.add_argument("--bytes", type=int, default=256 << 10, help="message size (default %(default)s)")
    parser.add_argument("--iters", type=int, default=2, help="timed iterations per measurement (default %(default)s)")
    parser.add_argument("--trials", type=int, default=3,
                        help="paired trials, each on a fresh hash draw (default %(default)s)")
    parser.add_argument("--model-topology", default="leafspine:8,16,16",
                        help="the fabric of the papers' scale the flow model runs the schemes on (default "
                             "%(default)s)")
    parser.add_argument("--model-draws", type=int, default=20, help="hash draws for the model (default %(default)s)")
    parser.add_argument("--railonly", default="8,2",
                        help="H,R[,U]: the rail-only fabric (H servers of R accelerators, scale-up links U times a "
                             "NIC's rate) compared with a rail-optimised one of the same size, or none "
                             "(default %(default)s)")
    add_seed_argument(parser, "the first trial's draw")


@dataclass(frozen=True)
class Fabric:
    label: str
    topo: object
    uplinks: object      # the same fabric with half the uplinks at twice the rate (None: not made)
    jobs: dict           # {"all": hosts, "part": hosts of the partly allocated job}


@dataclass
class Plan:
    fabrics_: list
    mtu: int
    schemes: tuple
    streams: list
    collectives: list
    workload: object     # (name, Workload, scale) or None
    size: int
    iters: int
    trials: int
    seed: int
    model_topo: object
    model_draws: int
    rails: tuple = ()    # (rail-only, rail-optimised) or ()

    @property
    def fabrics(self):
        return [f.topo for f in self.fabrics_] + [f.uplinks for f in self.fabrics_ if f.uplinks is not None] + \
            list(self.rails)


def rail_forms(text, args):
    """(rail-only, rail-optimised of the same size: HPN7, one segment, a ToR per rail, non-blocking,
    each server with the same scale-up domain as the rail-only fabric's, as Wang et al. compare
    them: a server's traffic between its own accelerators stays in it in both, and only the
    traffic between rails of different servers differs, over the scale-up domain on rail-only and
    through the spine on rail-optimised)."""
    if text == "none":
        return ()
    rail = fabric(args, f"railonly:{text}", "--railonly")
    aggs = 2
    optimised = HPN7(1, rail.servers, rail.rails, aggs, planes=1, tors=1, uplink_ratio=rail.servers / aggs,
                     rate=args.rate, queue=args.queue, delay=args.delay, scaleup_domain=rail.scaleup)
    return rail, optimised


def prepare(args):
    positive(args, "workload_gbit")
    at_least(args.bytes, ELEMENT_BYTES * 16, "--bytes")
    specs = [args.topology] + ([] if args.also == ["none"] else (args.also or [FABRICS[1]]))
    schemes = tuple(names(args.schemes, "--schemes", SCHEMES))
    streams = counts(args.stream_counts, "--stream-counts")
    if max(streams) > 16:
        raise TestbedError(f"--stream-counts: at most 16 connections per peer (got {max(streams)})")
    collectives = names(args.collectives, "--collectives", VARIANTS)
    if not 0 < args.allocated < 1:
        raise TestbedError("--allocated must be between 0 and 1: the share of each rack a job gets "
                           f"(got {args.allocated})")
    fabrics = []
    for k, spec in enumerate(specs):
        topo = fabric(args, spec, "--topology" if k == 0 else "--also")
        hosts = sorted(topo.hosts, key=lambda h: topo.hosts[h].index)
        part = part_of_racks(topo, args.allocated)
        if len(part) < 2:
            raise TestbedError(f"--allocated {args.allocated} leaves fewer than 2 hosts of {spec}: give a larger share")
        check_jobs(topo, (hosts, part), collectives, args.bytes, spec)
        uplinks = faster_uplinks(topo, 2, "uplinks-2x") if "uplinks" in schemes else None
        fabrics.append(Fabric(spec, topo, uplinks, {"all": hosts, "part": part}))
    workload = None
    if args.workload:
        read = workloads.read(args.workload)
        for f in fabrics:
            if read.groups().gpus > len(f.topo.hosts):
                raise TestbedError(f"--workload {args.workload} needs {read.groups().gpus} GPUs, {f.label} has "
                                   f"{len(f.topo.hosts)}")
        workload = (args.workload, read, args.rate * 1e6 / (args.workload_gbit * 1e9))
    model_topo = from_spec(args.model_topology, rate=args.rate, queue=args.queue)     # modelled, never emulated
    rails = rail_forms(args.railonly, args)
    for topo in rails:
        check_jobs(topo, (topo.hosts,), collectives, args.bytes, f"--railonly {args.railonly}")
    return Plan(fabrics, args.mtu, schemes, streams, collectives, workload, args.bytes,
                at_least(args.iters, 1, "--iters"), at_least(args.trials, 2, "--trials", " (an interval needs two)"),
                seed_of(args), model_topo, at_least(args.model_draws, 2, "--model-draws"), rails)


def check_jobs(topo, jobs, collectives, size, what):
    """Refuse jobs (host lists) of a fabric that a collective's schedule cannot run at `size`."""
    if len(topo.hosts) & (len(topo.hosts) - 1):
        raise TestbedError(f"{what}: HD needs a power-of-two host count (got {len(topo.hosts)})")
    for collective in collectives:
        schedule, _ = place(VARIANTS[collective], topo, collective)
        for job in jobs:
            schedule.check_count(len(job), size // ELEMENT_BYTES)


def builds(plan, fab):
    """[(build label, fabric, routing, [(scheme, job, streams)])] of one fabric in a trial."""
    ecmp = [("ecmp", "all", 1)] + ([(f"streams-{n}", "all", n) for n in plan.streams if n > 1]
                                   if "streams" in plan.schemes else [])
    if "pinned" in plan.schemes:
        ecmp.append(("ecmp-part", "part", 1))
    out = [("ecmp", fab.topo, "ecmp", ecmp)]
    if "uplinks" in plan.schemes:
        out.append(("uplinks-2x", fab.uplinks, "ecmp", [("uplinks-2x", "all", 1)]))
    if "pinned" in plan.schemes:
        out.append(("pinned", fab.topo, "pinned", [("pinned", "all", 1), ("pinned-part", "part", 1)]))
    if "planned" in plan.schemes:
        out.append(("planned", fab.topo, "planned", [("planned", "all", 1)]))
    return out


def forms(plan):
    """Every build of a trial as a form of the shared runner, with what it measures: {label:
    (form, measure(emu, draw) -> rows)}; the rail comparison's two fabrics last."""
    out = {}
    for k, fab in enumerate(plan.fabrics_):
        for label, topo, mode, measured in builds(plan, fab):
            out[f"{k}-{label}"] = (Form(f"{k}-{label}", topo, mode), partial(measure_build, plan, fab, measured))
    for label, topo in zip(("rail-only", "rail-optimised"), plan.rails):
        # both deterministic: the comparison is of the fabrics, not of ECMP's luck, which only one would carry
        out[label] = (Form(label, topo, "deterministic"),
                      lambda emu, draw, trial, label=label: rail_rows(emu, plan.collectives, VARIANTS, plan.size,
                                                                      plan.iters, label, draw))
    return out


def measure_build(plan, fab, measured, emu, draw, trial):
    """Every (scheme, job, streams) of one build, for each collective (and the workload); in odd
    trials in the reverse order, so that a drift of the machine within a build (ECMP first, then
    streams-2..16) falls on every scheme alike."""
    for scheme, job, streams in (measured if trial % 2 == 0 else measured[::-1]):
        hosts = fab.jobs[job]
        for collective in plan.collectives:
            schedule, _ = place(VARIANTS[collective], emu.topo, collective)
            comm = Comm(schedule, tuple(hosts), streams, f"{collective} {scheme}")
            got = emu.collectives([comm], plan.size, iters=plan.iters, draw=draw,
                                  name=f"{scheme}-{collective}")
            yield dict(got.rows[0], fabric=fab.label, scheme=scheme, job=job, streams=streams,
                       workload=collective)
        if plan.workload is not None:
            name, read, scale = plan.workload
            groups = read.groups()
            job_hosts = tuple(fab.jobs["all"][:groups.gpus])
            row = emu.jobs([Job(f"workload {scheme}", read, groups, job_hosts, scale, streams=streams,
                                family="hd")], iters=plan.iters, draws=[draw])[0]
            yield dict(row, fabric=fab.label, scheme=scheme, job=job, streams=streams, workload="workload",
                       busbw_over_link=None,
                       iteration_inverse=1 / row["iteration_s"] if row.get("iteration_s") else None)


def heading(plan):
    """The run's plan as the lines above its rows: the schemes, then each fabric and its part of the racks."""
    parts = {f.label: ", ".join(f.jobs["part"][:6]) + (" ..." if len(f.jobs["part"]) > 6 else "")
             for f in plan.fabrics_}
    return ([f"# {NAME}: {plan.trials} paired trials from seed {plan.seed}; schemes {', '.join(plan.schemes)} "
             f"(streams {plan.streams}); {', '.join(plan.collectives)}{' and the workload' if plan.workload else ''} "
             f"of {plan.size} B, {plan.iters} iterations each"]
            + [f"#   {f.label}: {f.topo.describe()}; part of the racks: {len(f.jobs['part'])} hosts ({parts[f.label]})"
               for f in plan.fabrics_])


def line(row):
    figure = (f"busbw/link {row['busbw_over_link']:.3f}" if row.get("busbw_over_link") is not None else
              f"iteration {row.get('iteration_s', 0) * 1e3:.1f} ms")
    model = row.get("measured_over_model")
    return (f"  trial {row['trial']} {row['fabric'][:18]:18s} {row['scheme']:12s} {row['workload']:9s} {figure}  "
            f"measured/model {model if model is not None else '-'}  #wrong {row['wrong']}  "
            f"{'BOTTLENECK' if row.get('emulator_bottleneck') else 'ok'}")


def run(plan, experiment):
    experiment.header(*heading(plan))
    experiment.about["seed"] = plan.seed
    built = forms(plan)
    # the runner's form is the build; a comparison's is the scheme
    _, checks = run_trials(experiment, [form for form, _ in built.values()], trials=plan.trials, seed=plan.seed,
                           measure=lambda emu, form, draw, trial, folder: built[form.label][1](emu, draw, trial),
                           mtu=plan.mtu, on_row=lambda row: experiment.row(dict(row, form=row["scheme"]), line(row),
                                                                           csv="load_balancing.csv"))
    rows = experiment.rows
    compared = comparisons([f.label for f in plan.fabrics_], rows)
    experiment.about["summary"] = [dict(c.to_dict(), fabric=f, workload=w, scheme=s) for f, w, s, c in compared]
    for f, w, s, c in compared:
        experiment.headline.update(c.headline(f"{f} {w} {s}"))
    lines = gain_lines(compared, rows) + spread_lines([f.label for f in plan.fabrics_], rows) + \
        model_ratio_lines(rows) + rail_lines(rows)
    lines += scale_model_lines(plan.model_topo, plan.schemes, plan.streams, plan.size, plan.model_draws, plan.seed,
                               plan.mtu, PAPERS)
    lines.append(describe_all([r for r in rows if "emulator_bottleneck" in r],
                              lambda r: f"trial {r['trial']} {r['fabric']} {r['scheme']} {r['workload']}"))
    lines += [f"#wrong over every iteration: {experiment.wrong}", check_line(checks)]
    experiment.say("\nsummary:", *[f"  {line}" for line in lines])
    experiment.figure("gains.png", figures.gains, [(f"{f} {w}", s, c) for f, w, s, c in compared],
                      fabric=", ".join(f.label for f in plan.fabrics_))
