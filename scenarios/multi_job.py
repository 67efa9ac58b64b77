"""Several training jobs on one fabric: how much each slows the others down, and what keeps them
apart, each measured against plain ECMP over paired trials.

Crux (SIGCOMM 2024) measured in Alibaba's production cluster that 36.3% of jobs, holding 51% of the
GPUs, meet other jobs' traffic on the network (a GPT job's iteration went from 1.53 s to 1.70 s,
+11%, beside a BERT job), and that placing jobs on paths apart and giving priority to the job of
the highest GPU intensity (its computation per iteration over its communication time) gained 8.3%
to 14.8% GPU utilisation on 96 GPUs. Here each job is a SimAI workload file or a synthetic
data-parallel job (``allreduce:RANKS:BYTES:COMPUTE_MS``), replayed with its groups (``api.jobs``),
its ranks on the fabric's servers by ``--placement``. As NCCL builds them, a job's rings visit a
server's accelerators one after another over its scale-up domain (``--scaleup``: NVLink's rate
over a NIC's by default) and go from server to server on one rail (``placements.nccl_ring``).
The default jobs are a GPT-like and a BERT-like pair, 30% and 50% of their iteration in
communication alone (Crux's representative pair: GPT's iteration 1.53 s, +11% beside BERT; the
paper gives the jobs' intensities, not these shares, which are the testbed's choice).

Trial t takes fresh 5-tuples (a hash draw per job, from seed + t; each job listens on ports of its
own, so it keeps its 5-tuples whether alone or beside the others) and runs, each on a freshly built
fabric, in alternating order:
- ecmp: each job alone, then all together, ECMP with one hash at every switch;
- priority: all together, the highest-intensity job's packets marked EF (DSCP 46) and every switch
  port with HTB traffic classes (``--priority``: strict or weighted); no job's packets ride the
  switches' control class under it, so a job's class holds for all its packets;
- paths: all together, each job's flows placed by the controller on the least-loaded equal-cost
  path, in Crux's order (highest intensity first), as deterministic rules;
- paths-unordered: the same, the jobs' flows taken in turn (no job first): what planned paths
  win without Crux's order;
- cassini: ECMP, each job starting its iterations later by the communication time (flow model,
  alone) of the jobs before it, so that their communication phases interleave (CASSINI, NSDI 2024,
  with its static offsets, not its periodic re-alignment).
Every job's iteration times are measured; a job's slowdown is its iteration together over alone
(paired in the trial); a scheme's gain over ECMP is the jobs' GPU utilisation (computation over
iteration time, weighted by GPUs) together under it over together under ECMP; beside it the
fairness of the jobs' slowdowns (Jain's index of alone over together, 1 when every job is slowed
alike) and the worst job's slowdown, so that a scheme that starves one job shows it. The
switch-to-switch links are captured in the runs together: which of the fabric's links the jobs
shared and what each sent over them.
For a synthetic job the flow model (``fidelity.predict``) gives its iteration alone and together
(its collective overlapping the others' fully: the model's bound) from the paths its connections
take (hashed as Open vSwitch hashes them, or planned), beside the measurement. A bonded NIC puts
its connections on its ports in turn (round-robin, as an RDMA NIC places its queue pairs), also
under paths, whose planner routes each pair from both ports, so the model knows the port each
connection leaves by.
"""
import contextlib
import json
import statistics
from dataclasses import dataclass, field, replace
from itertools import zip_longest
from pathlib import Path

from scenarios.common import (
    add_ecn_comparison_arguments,
    add_fabric_arguments,
    add_scheme_arguments,
    add_seed_argument,
    at_least,
    fabric,
    marking_of,
    names,
    positive,
    seed_of,
    streams_option,
    with_marking,
    with_uplinks,
)
from testbed.api import HIGH_DSCP, NVLINK_GBIT, PLACEMENTS, PRIORITIES, Draw, Job, TestbedError, place_jobs, workloads
from testbed.experiments import ADDED, describe_all, figures, flag
from testbed.experiments.claims import Claim
from testbed.experiments.code_half import EMULATION
from testbed.experiments.job_models import (
    BOND,
    SCALEUP,
    alone_form,
    cassini_offsets,
    comparisons,
    compute_s,
    job_intensity,
    job_model,
    job_pairs,
    scale_lines,
    shared_lines,
    together_model,
)
from testbed.experiments.trials import Form, check_line, marking_lines, run_trials

NAME = "multi_job"
HELP = "two or more training jobs on one fabric: each one's slowdown, and priorities and job-aware paths against ECMP"
SCHEMES = ("ecmp", "priority", "paths", "paths-unordered", "cassini")
# 512 KiB over 8 ranks' Ring at 10 Mbit/s: 0.74 s alone; with these computations 30% and 50% of the iteration
DEFAULT_JOBS = ("allreduce:8:524288:1700", "allreduce:8:524288:740")
CRUX = {"slowdown": "a GPT job's iteration +11% beside a BERT job (1.53 s -> 1.70 s); 36.3% of jobs (51% of GPUs) "
                    "meet others' traffic",
        "utilisation": "Crux's intensity-ordered paths and priorities: +8.3% to +14.8% GPU utilisation (96 GPUs)"}

CLAIMS = (Claim("under ECMP the first job runs slower beside the second than alone (Crux: +11%)",
                "job0 slowdown under ecmp: gain", at_least=0.05),
          Claim("job-aware paths win GPU utilisation back over ECMP (Crux: +8.3% to +14.8%)",
                "utilisation paths over ecmp: gain", at_least=0.05))
# seed 544473: the default page's draws, on which the jobs meet in every trial under ECMP (a seed whose
# draws make a job collide with itself alone, as seed 1's second trial does, hides the second job)
SMOKE = ("--trials", "4", "--iters", "2", "--schemes", "ecmp,paths", "--model-draws", "2", "--seed", "544473")
# the code that measures, judges and scores this scenario's runs: the code half of its records
CODE = (*EMULATION, "testbed/experiments/job_models.py", "testbed/experiments/trials.py", "testbed/runs/jobs.py",
        "testbed/collectives/placements.py", "testbed/routing/hashing.py", "testbed/report/paired.py")


def add_arguments(parser):
    add_fabric_arguments(parser, topology="hpn7:2,4,2,2", scaleup=SCALEUP)
    parser.add_argument("--job", action="append", default=None, metavar="SPEC",
                        help="a job: allreduce:RANKS:BYTES:COMPUTE_MS (a data-parallel job) or a SimAI workload "
                             f"FILE; once per job (default {' and '.join(DEFAULT_JOBS)})")
    parser.add_argument("--placement", default="fragmented",
                        help=f"{', '.join(PLACEMENTS)}, or a JSON file of each job's hosts, [[h0, h1, ...], ...] "
                             "(default %(default)s)")
    parser.add_argument("--schemes", default=",".join(SCHEMES),
                        help="comma-separated, from " + ", ".join(SCHEMES) + " (default: all; ecmp always runs)")
    parser.add_argument("--priority", choices=PRIORITIES, default="strict",
                        help="the switch ports' traffic classes under the priority scheme (default %(default)s)")
    parser.add_argument("--trials", type=int, default=4,
                        help="paired trials, each on fresh hash draws (default %(default)s)")
    parser.add_argument("--iters", type=int, default=3, help="timed iterations per run (default %(default)s)")
    add_seed_argument(parser, "the first trial's draws")
    parser.add_argument("--workload-gbit", type=float, default=400.0,
                        help="the link rate a workload file was made for, Gbit/s (default %(default)s)")
    parser.add_argument("--model-draws", type=int, default=10,
                        help="hash draws of the flow model's comparison on one HPN 7.0 segment (default "
                             "%(default)s)")
    parser.add_argument("--scaleup-gbit", type=float, default=NVLINK_GBIT,
                        help="with --scaleup 0: a server's scale-up domain each way, Gbit/s, as real: the time of a "
                             "group inside one server is modelled at it (default %(default)s)")
    # every job's connections per peer and the fabric's uplinks; --schemes compares the routings
    add_scheme_arguments(parser, streams=1, uplinks=True)
    add_ecn_comparison_arguments(parser)


@dataclass
class Plan:
    topo: object
    mtu: int
    jobs: list           # [api.jobs.Job], each on its hosts and ports, in the order given
    order: list          # job indices, highest GPU intensity first (Crux's order)
    intensity: list      # per job: computation per iteration over its communication alone (model)
    schemes: tuple
    priority: str
    trials: int
    iters: int
    seed: int
    model_draws: int = 10
    marking: tuple | None = field(default=None, metadata={ADDED: "--compare-ecn"})   # (K, congestion control)

    @property
    def fabrics(self):
        return [self.topo]

    @property
    def planned(self):
        return [(form.topo, form.flows) for form in forms(self) if form.flows]


def job_of(spec, topo, args):
    """(name, workload, scale) of a --job SPEC."""
    if spec.startswith("allreduce:"):
        parts = spec.split(":")[1:]
        try:
            ranks, size, compute_ms = int(parts[0]), int(parts[1]), float(parts[2])
        except (ValueError, IndexError):
            raise TestbedError(f"--job {spec}: write allreduce:RANKS:BYTES:COMPUTE_MS, e.g. allreduce:8:2097152:300") \
                from None
        if ranks < 2 or size < 4 * ranks or not 0 <= compute_ms <= 60000:
            raise TestbedError(f"--job {spec}: 2 ranks or more, 4 bytes per rank or more, 0 to 60000 ms of compute")
        return spec, workloads.data_parallel(ranks, size, compute_ms / 1e3), 1.0
    return Path(spec).name, workloads.read(spec), args.rate * 1e6 / (args.workload_gbit * 1e9)


def placements_of(text, topo, sizes, seed):
    if text in PLACEMENTS:
        return place_jobs(topo, sizes, text, seed)
    try:
        given = json.loads(Path(text).read_text())
    except (OSError, ValueError) as e:
        raise TestbedError(f"--placement {text}: use one of {', '.join(PLACEMENTS)}, or a JSON file of each job's "
                           f"hosts ({e.__class__.__name__})") from None
    if not isinstance(given, list) or [len(h) if isinstance(h, list) else None for h in given] != sizes:
        raise TestbedError(f"--placement {text}: give a list of {len(sizes)} host lists of {sizes} hosts")
    every = [h for hosts in given for h in hosts]
    if len(set(every)) != len(every):
        raise TestbedError(f"--placement {text}: a host is given to two ranks: give each rank its own")
    return given


def prepare(args):
    positive(args, "workload_gbit", "scaleup_gbit")
    topo = with_uplinks(fabric(args), args)
    streams = streams_option(args)
    specs = args.job or list(DEFAULT_JOBS)
    if len(specs) < 2:
        raise TestbedError("multi_job needs two jobs or more: give --job twice or more")
    seed = seed_of(args)
    made = [job_of(spec, topo, args) for spec in specs]
    groups = [w.groups() for _, w, _ in made]
    hosts = placements_of(args.placement, topo, [g.gpus for g in groups], seed)
    jobs = [Job(f"job{k} {name}", w, g, tuple(h), scale, args.scaleup_gbit, "ring", port=7000 + 256 * k,
                streams=streams)
            for k, ((name, w, scale), g, h) in enumerate(zip(made, groups, hosts))]
    for job in jobs:
        job.check(topo)
    schemes = tuple(s for s in SCHEMES if s in names(args.schemes, "--schemes", SCHEMES) or s == "ecmp")
    intensity = [job_intensity(topo, job, args.mtu) for job in jobs]
    order = sorted(range(len(jobs)), key=lambda k: -intensity[k])
    return Plan(topo, args.mtu, jobs, order, intensity, schemes, args.priority,
                at_least(args.trials, 2, "--trials", " (an interval needs two)"), at_least(args.iters, 1, "--iters"),
                seed, at_least(args.model_draws, 2, "--model-draws", " (an interval needs two)"),
                marking_of(args, [topo]))


def forms(plan):
    pairs = [job_pairs(plan.topo, job) for job in plan.jobs]
    ordered = tuple(pair for k in plan.order for pair in pairs[k])
    interleaved = tuple(pair for turn in zip_longest(*pairs) for pair in turn if pair)     # no job first
    made = {"ecmp": Form("ecmp", plan.topo, "ecmp"),
            "priority": Form("priority", plan.topo, "ecmp", priority=plan.priority),
            "paths": Form("paths", plan.topo, "planned", flows=ordered),
            "paths-unordered": Form("paths-unordered", plan.topo, "planned", flows=interleaved),
            "cassini": Form("cassini", plan.topo, "ecmp")}
    return with_marking([made[s] for s in plan.schemes], plan.marking)


def measure(plan, seen):
    """One scheme's runs in one trial: with ECMP each job alone first, then every scheme all the
    jobs together; rows per job and run, with the model's iteration beside each."""
    def one(emu, form, draw, trial, folder):
        # a Draw hands out ports in turn: a fresh one per run and model keeps a job's 5-tuples alike
        draws = lambda: [Draw((plan.seed + trial) * 64 + k, BOND) for k in range(len(plan.jobs))]
        jobs = [replace(job, dscp=HIGH_DSCP) if form.priority and k == plan.order[0] else job
                for k, job in enumerate(plan.jobs)]
        if form.label == alone_form(form.label):
            for k, job in enumerate(jobs):
                (row,) = emu.jobs([job], iters=plan.iters, draws=[draws()[k]])
                model = job_model(plan.topo, job, emu.routing, draws()[k], plan.mtu)[0]
                yield dict(row, run="alone", job_index=k, model_iteration_s=model and round(compute_s(job) + model, 4))
        offsets = cassini_offsets(plan.topo, plan.jobs, plan.mtu) if form.label.startswith("cassini") else None
        with emu.switch_queues() if plan.marking else contextlib.nullcontext() as ports:
            rows = emu.jobs(jobs, iters=plan.iters, draws=draws(), capture="together", offsets=offsets)
        rows = [dict(row, **ports.row, **ports.sent_by(job.hosts)) for row, job in zip(rows, jobs)] if ports else rows
        model = together_model(plan.topo, jobs, emu.routing, draws(), plan.mtu,
                               high={plan.order[0]} if form.priority else ())
        for k, (row, expected) in enumerate(zip(rows, model)):
            seen.setdefault(trial, {})[form.label] = rows
            yield dict(row, run="together", job_index=k, model_iteration_s=expected and round(expected, 4))
    return one


def line(row):
    model = row.get("model_iteration_s")
    said = f"model {model * 1e3:8.1f} ms ({row['iteration_s'] / model:.2f})" if model else "model -"
    return (f"  trial {row['trial']} {row['form']:15s} {row['run']:8s} {row['job']:30s} iteration "
            f"{row['iteration_s'] * 1e3:8.1f} ms  {said}  #wrong {row['wrong']}  {flag(row)}")


def run(plan, experiment):
    experiment.header(f"# {NAME}: {plan.topo.describe()}; {len(plan.jobs)} jobs, {plan.trials} paired trials from seed "
                      f"{plan.seed}, {plan.iters} iterations per run; schemes {', '.join(plan.schemes)} (priority "
                      f"{plan.priority})",
                      *[f"#   {job.name}: {job.parallelism.describe()}, hosts {', '.join(job.hosts[:4])}"
                        f"{' ...' if len(job.hosts) > 4 else ''}; GPU intensity {plan.intensity[k]:.2f}"
                        f"{' (highest: priority and first choice of paths)' if k == plan.order[0] else ''}"
                        f"{'; ' + job.split_note(plan.topo) if job.split_groups(plan.topo) else ''}"
                        for k, job in enumerate(plan.jobs)])
    experiment.about.update(seed=plan.seed, jobs=[job.name for job in plan.jobs], order=plan.order,
                            intensity=plan.intensity)
    seen = {}
    rows, checks = run_trials(experiment, forms(plan), trials=plan.trials, seed=plan.seed,
                              measure=measure(plan, seen), mtu=plan.mtu,
                              on_row=lambda row: experiment.row(row, line(row), csv="multi_job.csv"))
    labels = [form.label for form in forms(plan)]
    compared = comparisons(rows, plan.jobs, labels, plan.trials)
    experiment.about["summary"] = [c.to_dict() for c in compared]
    experiment.about["emulator"] = describe_all(rows, lambda r: f"trial {r['trial']} {r['form']} {r['run']} {r['job']}")
    experiment.say("\nsummary (paired over trials; mean [95% interval]):")
    for c in compared:
        experiment.say(f"  {c.line()}")
        experiment.results.append("multi_job_summary.csv", {"figure": c.name, **c.row(c.labels)})
        if c.labels[0] == alone_form(c.labels[0]):
            figure = c.name.split(",")[0].split(" (")[0].replace("GPU utilisation together", "utilisation")
            experiment.headline.update(c.headline(f"{figure} {c.labels[1]} over {c.labels[0]}"))
        elif c.labels[1] == alone_form(c.labels[1]):
            experiment.headline.update(c.headline(f"{c.name.split(' ')[0]} slowdown under {c.labels[1]}"))
    experiment.say(f"  Crux: {CRUX['slowdown']}; {CRUX['utilisation']}", *scale_lines(plan.seed, plan.model_draws,
                                                                                         plan.mtu))
    model = [r["iteration_s"] / r["model_iteration_s"] for r in rows if r.get("model_iteration_s")]
    if model:
        experiment.say(f"measured against the flow model: iteration over the model's, median "
                       f"{statistics.median(model):.2f} (range {min(model):.2f}-{max(model):.2f}, {len(model)} runs; "
                       "together, the model's is the bound of the jobs' collectives overlapping fully)")
    experiment.say("links the jobs shared (trial 0, switch-to-switch, captured):",
                   *shared_lines(seen, plan.topo, plan.jobs),
                   f"  #wrong over every iteration: {experiment.wrong}", f"  {experiment.about['emulator']}",
                   f"  {check_line(checks)}")
    if plan.marking:
        experiment.say(f"the switch ports in the runs together ('+ecn': ECN at K = {plan.marking[0]} B, the ranks on "
                       f"{plan.marking[1]}):", *marking_lines([r for r in rows if r["job_index"] == 0 and
                                                               r["run"] == "together"], labels))
    timeline = [dict(r, series=f"{r['form']} {r['run']} job{r['job_index']}") for r in rows if r["trial"] == 0]
    experiment.figure("iterations.png", figures.job_iterations, timeline, fabric=plan.topo.name)
