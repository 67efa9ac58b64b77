"""Launch: your own distributed program on an emulated fabric, started once per rank on the placed
hosts as torchrun starts it (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR,
MASTER_PORT), or by mpirun (``--mpi``), with each rank's output, its step times and the bytes its
hosts put on the fabric in the run folder.

    sudo python3 run_scenario.py launch --topology bigraph:2,8 -- python3 examples/ddp_train.py --steps 50

A program reports a step by printing ``testbed-step SECONDS`` (``testbed.step(seconds)``), and its
result as a JSON object on its last line. ``python3`` is the project's venv's (PyTorch's CPU build,
mpi4py). The default program is ``examples/ddp_train.py``: PyTorch DDP over gloo, whose ranks'
losses on one shared batch agree when the gradients were averaged; the bytes its hosts sent are
set against what a ring allreduce of its gradients moves per step (2 (N - 1) / N of them per rank).
With ``--compare SPEC`` (repeatable) the program also runs on other fabrics, routed by ECMP, trial by
trial in alternating order, and its median step time is compared with --topology's (deterministic
routes) over the paired trials, with a 95% interval; each trial's connections take the source ports
the kernel gives them, so each is a fresh hash draw.
"""
import os
import shutil
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

from scenarios.common import add_fabric_arguments, at_least, fabric
from testbed.api import PLACEMENTS, Fault, LaunchError, TestbedError, bus_bytes, compare, place_jobs, trial_order
from testbed.experiments import describe
from testbed.experiments.claims import Claim
from testbed.experiments.code_half import EMULATION
from testbed.experiments.launch_faults import NoSteps, run_fault

NAME = "launch"
HELP = "run your own program once per rank on a fabric (torchrun's environment, or mpirun with --mpi)"
DEFAULT_COMMAND = ("python3", "examples/ddp_train.py", "--steps", "50")
CLAIMS = (Claim("every rank ends with the same model (DDP averaged the gradients)", "ranks agreeing with rank 0",
                at_least=1),
          Claim("the gradients cross the fabric as a ring allreduce moves them", "fabric bytes over the ring's",
                at_least=0.9, at_most=1.3))
SMOKE = ("--topology", "bigraph:2,4", "--", "python3", "examples/ddp_train.py", "--steps", "20")
# the code that measures, judges and scores this scenario's runs: the code half of its records
CODE = (*EMULATION, "testbed/runs/launch.py", "testbed/collectives/placements.py", "examples/ddp_train.py")
# and for a run with --inject, the monitor that watches it and the detector that names the fault
CODE_WITH = {"inject": ("testbed/runs/launch_watch.py", "testbed/runs/watch.py", "testbed/experiments/launch_faults.py",
                        "testbed/probes/sockets.py",
                        "testbed/fidelity/monitor.py", "testbed/fidelity/diagnosis.py",
                        "testbed/fidelity/windows.py")}
AGREE = 1e-6          # relative: two ranks' losses on the same batch from the same weights


def add_arguments(parser):
    add_fabric_arguments(parser, topology="bigraph:2,8", scaleup=None)
    parser.add_argument("--compare", action="append", default=[], metavar="SPEC",
                        help="also run the program on this fabric, routed by ECMP, trial by trial beside "
                             "--topology's (deterministic routes), and compare the median step time (repeatable)")
    parser.add_argument("--trials", type=int, default=1,
                        help="runs on each fabric, in alternating order (default %(default)s; with --compare, 3 or "
                             "more give an interval)")
    parser.add_argument("--ranks", type=int, default=None, help="ranks, one per host (default: every host of the "
                        "smallest fabric)")
    parser.add_argument("--placement", choices=PLACEMENTS, default="packed",
                        help="which hosts the ranks take, as multi_job places a job (default %(default)s)")
    parser.add_argument("--mpi", action="store_true",
                        help="start the program with mpirun (Open MPI, TCP over the fabric) instead of once per rank")
    parser.add_argument("--timeout", type=float, default=900.0,
                        help="seconds the program may run before every rank is ended (default %(default)s)")
    parser.add_argument("--inject", default=None, metavar="FAULT",
                        help="a fault while the program runs, KIND:WHERE[:HOW]@SECONDS after its first step "
                             "(as fault_localisation's --inject; a rank's fault not with --mpi), found or not by the "
                             "operator's monitor watching the fabric and the program's steps")
    parser.add_argument("--fault-for", type=float, default=10.0,
                        help="seconds the --inject fault lasts (default %(default)s)")
    parser.add_argument("--react", action="store_true",
                        help="with --inject, route around a switch link the monitor names slow")
    parser.add_argument("command", nargs="*", metavar="-- COMMAND",
                        help="the program and its arguments, after -- (default: " + " ".join(DEFAULT_COMMAND) + ")")


@dataclass(frozen=True)
class Form:
    """A fabric the program runs on: its spec as given, its topology, its routing, the rank hosts."""
    spec: str
    topo: object
    routing: str
    hosts: tuple

    @property
    def label(self):
        return f"{self.spec} {self.routing}"


@dataclass
class Plan:
    forms: list
    mtu: int
    command: list
    mpi: bool
    timeout: float
    trials: int
    fault: object = None
    fault_for: float = 0.0
    react: bool = False

    @property
    def fabrics(self):
        return [f.topo for f in self.forms]


def findable(command):
    """Refuse a program the ranks could not start: not on the venv's or the system's PATH."""
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}"
    if shutil.which(command[0], path=path) is None:
        raise TestbedError(f"{command[0]}: no such command on PATH: give the program after --, e.g. "
                           f"-- {' '.join(DEFAULT_COMMAND)}")
    script = next((a for a in command[1:2] if a.endswith(".py")), None)
    if script and not Path(script).exists():
        raise TestbedError(f"{script}: no such file (paths are from the folder you run from)")


def prepare(args):
    specs = [(args.topology, "deterministic")] + [(spec, "ecmp") for spec in args.compare]
    topos = [fabric(args, spec, "--topology" if k == 0 else "--compare") for k, (spec, _) in enumerate(specs)]
    command = list(args.command) or list(DEFAULT_COMMAND)
    findable(command)
    if args.mpi and shutil.which("mpirun") is None:
        raise TestbedError("--mpi needs Open MPI's mpirun: run ./setup.sh, which installs openmpi-bin")
    smallest = min(topos, key=lambda topo: len(topo.hosts))
    ranks = len(smallest.hosts) if args.ranks is None else at_least(args.ranks, 1, "--ranks")
    if ranks > len(smallest.hosts):
        raise TestbedError(f"--ranks {ranks}: {smallest.name} has {len(smallest.hosts)} hosts: give --ranks "
                           f"{len(smallest.hosts)} or fewer, or a larger fabric")
    trials = at_least(args.trials, 1, "--trials")
    if args.timeout <= 0:
        raise TestbedError(f"--timeout must be more than 0 s (got {args.timeout:g})")
    fault = injected(args, topos[0], ranks, trials)
    forms = [Form(spec, topo, routing, tuple(place_jobs(topo, [ranks], args.placement)[0]))
             for (spec, routing), topo in zip(specs, topos)]
    return Plan(forms, args.mtu, command, args.mpi, args.timeout, trials, fault, args.fault_for, args.react)


def injected(args, topo, ranks, trials):
    """The --inject fault, checked against the fabric and the ranks, or None."""
    at_least(args.fault_for, 1, "--fault-for", " s")
    if args.inject is None:
        if args.react:
            raise TestbedError("--react routes around a fault the monitor names: give --inject too")
        return None
    if args.compare or trials > 1:
        raise TestbedError("--inject runs once, on --topology: leave out --compare and --trials")
    fault = Fault.parse(args.inject)
    if fault.iteration is not None:
        raise TestbedError(f"--inject {args.inject}: give the time after the program's first step in seconds "
                           "(@SECONDS)")
    if fault.kind in ("slow-rank", "hang-rank") and args.mpi:
        raise TestbedError(f"--inject {args.inject}: under --mpi, mpirun starts the ranks, so a rank's process is "
                           "not the launch's to slow or stop: leave out --mpi or inject a fabric fault")
    return fault.check(topo, ranks)


def agreement(results):
    """The share of ranks whose loss is rank 0's (None where the ranks report none)."""
    losses = [r.get("loss") for r in results]
    if not results or any(v is None for v in losses):
        return None
    first = losses[0]
    return sum(abs(v - first) <= AGREE * max(1.0, abs(first)) for v in losses) / len(losses)


def run(plan, experiment):
    how = "mpirun" if plan.mpi else "once per rank, torchrun's environment"
    ranks = len(plan.forms[0].hosts)
    experiment.header(f"# launch: {' '.join(plan.command)}, {ranks} ranks ({how}), {plan.trials} trial(s) on "
                      + "; ".join(f"{f.topo.describe()} ({f.routing})" for f in plan.forms))
    experiment.about.update(topology=plan.forms[0].topo.name, rate_mbit=plan.forms[0].topo.rate, mtu=plan.mtu,
                            command=plan.command, fabrics=[f.label for f in plan.forms], mpi=plan.mpi)
    runs = {}
    for trial in range(plan.trials):
        for k in trial_order(range(len(plan.forms)), trial):
            runs[k, trial] = once(plan, experiment, k, trial)
            if runs[k, trial] is None:
                return
    summarise(plan, experiment, runs)


def once(plan, experiment, k, trial):
    """One run of the program on form k: its figures, or None where it failed (said, and the run failed)."""
    form = plan.forms[k]
    name = f"launch-{k}-{trial}" if len(plan.forms) > 1 or plan.trials > 1 else "launch"
    with experiment.emulate(form.topo, form.routing, mtu=plan.mtu) as emu:
        experiment.about["datapath"] = emu.datapath
        fault = None
        with emu.cpu_monitor() as cpu:
            launched = emu.launch(plan.command, hosts=list(form.hosts), mpi=plan.mpi, name=name)
            try:
                if plan.fault:
                    fault, _ = run_fault(emu, launched, plan.fault, plan.fault_for, plan.react)
                launched.wait(plan.timeout)
            except (LaunchError, NoSteps) as e:
                experiment.failed = str(e)
                experiment.say(f"failed on {form.label}: {e}; each rank's output: {launched.folder}")
                return None
            finally:
                launched.stop()
        seconds, sent = launched.seconds, launched.fabric_bytes()
    steps, results = launched.steps(), launched.results()
    experiment.results.append("steps.csv", *[{"fabric": form.label, "trial": trial, "rank": r, "step": s,
                                              "seconds": v} for r, mine in enumerate(steps)
                                             for s, v in enumerate(mine)])
    for rank, (mine, result) in enumerate(zip(steps, results)):
        experiment.results.append("ranks.csv", {"fabric": form.label, "trial": trial, "rank": rank,
                                                "host": form.hosts[rank], "steps": len(mine),
                                                "median_step_s": statistics.median(mine) if mine else None,
                                                **{key: v for key, v in result.items() if not isinstance(v, dict)}})
    every = [v for mine in steps for v in mine]
    figures = {"fabric": form.label, "trial": trial, "seconds": round(seconds, 2), "fabric_bytes": sent,
               "median_step_s": statistics.median(every) if every else None, "agree": agreement(results),
               "wrong": sum(r.get("wrong", 0) for r in results), **cpu.result()}
    grads = {(r.get("gradient_bytes"), r.get("steps")) for r in results}
    if len(grads) == 1 and None not in next(iter(grads)):
        gradient, count = next(iter(grads))
        figures["ring_bytes"] = count * bus_bytes("allreduce", len(form.hosts), gradient)
        figures["over_ring"] = sent / figures["ring_bytes"]
    step = f"median step {figures['median_step_s'] * 1e3:8.1f} ms" if every else "no step reported"
    ring = f"  fabric bytes {figures['over_ring']:.2f} of the ring's" if "over_ring" in figures else ""
    agree = f"  ranks agreeing {figures['agree']:.0%}" if figures["agree"] is not None else ""
    experiment.row(figures, f"  trial {trial} {form.label:28s} {step}  {seconds:6.1f} s{ring}{agree}  "
                            f"{'BOTTLENECK' if figures['emulator_bottleneck'] else 'ok'}", csv="runs.csv")
    if fault:
        figures["fault"] = fault
        report_fault(experiment, fault, plan.react)
    if len(plan.forms) == 1 and plan.trials == 1:
        for rank, (mine, result) in enumerate(zip(steps, results)):
            median = f"median step {statistics.median(mine) * 1e3:8.1f} ms over {len(mine)}" if mine else \
                "no step reported"
            experiment.say(f"  rank {rank:3d} {form.hosts[rank]:8s} {median}  {result or 'no result line'}",
                           section="rows")
    return figures


def report_fault(experiment, row, react):
    """The injected fault's line and figures: what the monitor named, how soon, what it cost the steps."""
    ms = lambda s: "-" if s is None else f"{s * 1e3:.0f} ms"
    found = f"{row['found']} {row['found_where']}".strip()
    when = f" {row['detect_s']:.1f} s after it began" if row["detect_s"] is not None else ""
    experiment.say(f"  fault: {row['fault']}: the monitor named {found}{when} "
                   f"({'right' if row['correct'] else 'WRONG: ' + row['expected'] + ' ' + row['expected_where']}; "
                   f"confidence {row['confidence']:.2f}); {row['false_alarms']} false alarm(s) before it; "
                   f"median step {ms(row['step_before_s'])} before, {ms(row['step_during_s'])} during, "
                   f"{ms(row['step_after_s'])} after",
                   f"    evidence: {row['evidence']}")
    if react and row["react_s"] is None:
        experiment.say("    react: the monitor named no switch link slow, so nothing was rerouted")
    elif react:
        experiment.say(f"    react: routed around it {row['react_s']:.1f} s in; median step "
                       f"{ms(row['step_after_react_s'])} after")
    if row["ended_during_fault"]:
        experiment.failed = ("the program ended while the fault lasted: give it more steps or a shorter "
                             "--fault-for")
    if row["event_error"]:
        experiment.failed = f"the fault could not be injected: {row['event_error']}"
    experiment.headline.update({"fault named": int(row["correct"]), "false alarms": row["false_alarms"]})
    if row["detect_s"] is not None:
        experiment.headline["detect (s)"] = row["detect_s"]


def summarise(plan, experiment, runs):
    first = [runs[0, t] for t in range(plan.trials)]
    one = first[0]
    lines = [f"ran {one['seconds']:.1f} s; the ranks' hosts sent {one['fabric_bytes'] / 1e6:.2f} MB onto the fabric"]
    experiment.headline.update({"seconds": one["seconds"], "fabric bytes": one["fabric_bytes"]})
    steps = [r["median_step_s"] for r in first if r["median_step_s"] is not None]
    if steps:
        experiment.headline["median step (ms)"] = statistics.median(steps) * 1e3
    agree = [r["agree"] for r in runs.values()]
    if None not in agree:
        experiment.headline["ranks agreeing with rank 0"] = min(agree)
        lines.append(f"  ranks whose loss on the shared batch is rank 0's: {min(agree):.0%} (the fewest of "
                     f"{len(agree)} run(s))")
    if "over_ring" in one:
        over = statistics.median(r["over_ring"] for r in first)
        experiment.headline["fabric bytes over the ring's"] = over
        lines.append(f"  a ring allreduce of its gradients moves {one['ring_bytes'] / 1e6:.2f} MB over its steps: the "
                     f"fabric carried {over:.2f} of that on {plan.forms[0].label}")
    if any("wrong" in r for r in runs.values()) and experiment.wrong:
        experiment.headline["#wrong"] = experiment.wrong
    for k, form in enumerate(plan.forms[1:], start=1):
        pairs = [(runs[0, t]["median_step_s"], runs[k, t]["median_step_s"]) for t in range(plan.trials)]
        if all(a is not None and b is not None for a, b in pairs):
            c = compare(f"median step, {plan.forms[0].label} against {form.label}", (plan.forms[0].label, form.label),
                        pairs)
            lines.append(f"  {c.line()}")
            experiment.headline.update(c.headline(f"median step: {form.label}"))
    bound = [f"{r['fabric']} trial {r['trial']}" for r in runs.values() if r["emulator_bottleneck"]]
    lines.append(f"  {describe(one)}" if len(runs) == 1 else
                 f"  emulator WAS the bottleneck in {len(bound)} of {len(runs)} runs ({', '.join(bound)})" if bound else
                 f"  emulator was not the bottleneck in any of the {len(runs)} runs")
    lines.append("  the program's own computation counts in the machine's load: a saturated core may be the ranks' "
                 "work, not only the switches'")
    experiment.say(*lines)
