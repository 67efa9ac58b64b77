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
"""
import os
import shutil
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

from scenarios.common import add_fabric_arguments, at_least, fabric
from testbed.api import PLACEMENTS, LaunchError, TestbedError, bus_bytes, place_jobs
from testbed.experiments import describe
from testbed.experiments.claims import Claim
from testbed.experiments.code_half import EMULATION

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
AGREE = 1e-6          # relative: two ranks' losses on the same batch from the same weights


def add_arguments(parser):
    add_fabric_arguments(parser, topology="bigraph:2,8", scaleup=None)
    parser.add_argument("--ranks", type=int, default=None, help="ranks, one per host (default: every host)")
    parser.add_argument("--placement", choices=PLACEMENTS, default="packed",
                        help="which hosts the ranks take, as multi_job places a job (default %(default)s)")
    parser.add_argument("--mpi", action="store_true",
                        help="start the program with mpirun (Open MPI, TCP over the fabric) instead of once per rank")
    parser.add_argument("--timeout", type=float, default=900.0,
                        help="seconds the program may run before every rank is ended (default %(default)s)")
    parser.add_argument("command", nargs="*", metavar="-- COMMAND",
                        help="the program and its arguments, after -- (default: " + " ".join(DEFAULT_COMMAND) + ")")


@dataclass
class Plan:
    topo: object
    mtu: int
    hosts: list
    command: list
    mpi: bool
    timeout: float

    @property
    def fabrics(self):
        return [self.topo]


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
    topo = fabric(args)
    command = list(args.command) or list(DEFAULT_COMMAND)
    findable(command)
    if args.mpi and shutil.which("mpirun") is None:
        raise TestbedError("--mpi needs Open MPI's mpirun: run ./setup.sh, which installs openmpi-bin")
    ranks = len(topo.hosts) if args.ranks is None else at_least(args.ranks, 1, "--ranks")
    if ranks > len(topo.hosts):
        raise TestbedError(f"--ranks {ranks}: {topo.name} has {len(topo.hosts)} hosts: give --ranks "
                           f"{len(topo.hosts)} or fewer, or a larger --topology")
    if args.timeout <= 0:
        raise TestbedError(f"--timeout must be more than 0 s (got {args.timeout:g})")
    (hosts,) = place_jobs(topo, [ranks], args.placement)
    return Plan(topo, args.mtu, hosts, command, args.mpi, args.timeout)


def agreement(results):
    """The share of ranks whose loss is rank 0's (None where the ranks report none)."""
    losses = [r.get("loss") for r in results]
    if not results or any(v is None for v in losses):
        return None
    first = losses[0]
    return sum(abs(v - first) <= AGREE * max(1.0, abs(first)) for v in losses) / len(losses)


def run(plan, experiment):
    topo = plan.topo
    how = "mpirun" if plan.mpi else "once per rank, torchrun's environment"
    experiment.header(f"# launch: {' '.join(plan.command)} on {topo.describe()}: {len(plan.hosts)} ranks ({how}), "
                      f"hosts {plan.hosts[0]}..{plan.hosts[-1]}")
    experiment.about.update(topology=topo.name, rate_mbit=topo.rate, mtu=plan.mtu, command=plan.command,
                            hosts=plan.hosts, mpi=plan.mpi)
    with experiment.emulate(topo, mtu=plan.mtu) as emu:
        experiment.about["datapath"] = emu.datapath
        with emu.cpu_monitor() as cpu:
            launched = emu.launch(plan.command, hosts=plan.hosts, mpi=plan.mpi)
            try:
                launched.wait(plan.timeout)
            except LaunchError as e:
                experiment.failed = str(e)
                experiment.say(f"failed: {e}; each rank's output: {launched.folder}")
                return
            finally:
                launched.stop()
        seconds, sent = launched.seconds, launched.fabric_bytes()
    verdict = cpu.result()
    steps, results = launched.steps(), launched.results()
    experiment.results.csv("steps.csv", [{"rank": r, "step": k, "seconds": s}
                                         for r, mine in enumerate(steps) for k, s in enumerate(mine)])
    for rank, (mine, result) in enumerate(zip(steps, results)):
        median = f"median step {statistics.median(mine) * 1e3:8.1f} ms over {len(mine)}" if mine else "no step reported"
        experiment.row({"rank": rank, "host": plan.hosts[rank], "steps": len(mine),
                        "median_step_s": statistics.median(mine) if mine else None, **result},
                       f"  rank {rank:3d} {plan.hosts[rank]:8s} {median}  {result or 'no result line'}",
                       csv="ranks.csv")
    every = [s for mine in steps for s in mine]
    experiment.headline.update({"seconds": seconds, "fabric bytes": sent})
    if every:
        experiment.headline["median step (ms)"] = statistics.median(every) * 1e3
    agree = agreement(results)
    if agree is not None:
        experiment.headline["ranks agreeing with rank 0"] = agree
    lines = [f"ran {seconds:.1f} s; the ranks' hosts sent {sent / 1e6:.2f} MB onto the fabric"]
    grads = {(r.get("gradient_bytes"), r.get("steps")) for r in results}
    if len(grads) == 1 and None not in next(iter(grads)):
        gradient, count = next(iter(grads))
        ring = count * bus_bytes("allreduce", len(plan.hosts), gradient)
        experiment.headline["fabric bytes over the ring's"] = sent / ring
        lines.append(f"  a ring allreduce of its {gradient / 1e3:.1f} kB of gradients per step moves "
                     f"{ring / 1e6:.2f} MB over {count} steps: the fabric carried {sent / ring:.2f} of that")
    if agree is not None:
        lines.append(f"  ranks whose loss on the shared batch is rank 0's: {agree:.0%}")
    wrong = sum(r.get("wrong", 0) for r in results)
    if any("wrong" in r for r in results):
        experiment.headline["#wrong"] = wrong
    lines.append(f"  {describe(verdict)}; the program's own computation counts in the machine's load: a "
                 "saturated core here may be the ranks' work, not only the switches'")
    experiment.say(*lines)
