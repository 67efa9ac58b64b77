"""Faults as an open benchmark. The job of fault_localisation runs on each fabric while faults come
and go, twice: a **test** split whose seed is drawn fresh by every run (--seed reruns one) and a
**train** split for a detector to be fitted on (its seed the test's shifted by half the range). Each watch of the job is
kept as a **trace** (what an operator's monitor sees: step timings, retransmissions, queues, ECN
marks, port events, the fabric and paths; Parquet tables and a manifest) with its **labels** in a
file of their own beside it (``testbed.faultbench``). Every detector then reads the test split's
traces, never their labels, and one scorer judges its alarms one by one: precision over alarms,
recall over faults (all, and strong ones), F1, per C4 class, with Wilson intervals; false alarms
per hour of fault-free time; the time to detect. The detectors: the testbed's own rules (the
operator's monitor, replayed), a Greyhound-style change-point detector on iteration times, a
Minder-style detector of the rank that departs from its peers, and river's Page-Hinkley drift test
on iteration times. ``--score DIR`` scores the traces a
run kept, without root or emulation, in seconds."""
import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from scenarios import fault_localisation
from scenarios.common import MAX_SEED, add_seed_argument, names, seed_of
from testbed.api import TestbedError
from testbed.experiments import fault_scores, held_out
from testbed.experiments.benchmark import (
    DETECTORS,
    fitted,
    held_out_of_run,
    leaderboard,
    score_traces,
    splits_of,
    trace_folders,
)
from testbed.experiments.claims import Claim
from testbed.experiments.code_half import EMULATION

NAME = "faultbench"
HELP = "faults as an open benchmark: traces and labels apart, every detector scored alarm by alarm on a fresh split"
CLAIMS = (Claim("the testbed's rules find the strong faults of the test split, alarm by alarm",
                "rules: recall, strong", at_least=0.5),
          Claim("most of the rules' alarms name a fault's kind and place", "rules: precision", at_least=0.5))
# the test split of fault_localisation's former smoke (seed 97: one strong fault of each C4 class,
# its slowed rank on a ring whose hashing collides, which barely costs the job, and a fault-free
# trial), no train split: the claims read the test split alone
SMOKE = ("--topology", "bigraph:2,8", "--train-trials", "0", "--train-fault-free", "0", "--train-drift", "0",
         "--trials", "4", "--fault-free", "1", "--seed", "97", "--kinds", "slow-link,link-down,slow-rank,hang-rank",
         "--before", "2", "--fault-for", "3", "--drift", "0", "--two-at-once", "0", "--straggler", "0")
CODE = (*EMULATION, "testbed/fidelity/diagnosis.py", "testbed/fidelity/monitor.py", "testbed/fidelity/windows.py",
        "testbed/experiments/fault_trials.py", "testbed/runs/watch.py", "testbed/emulation/faults.py",
        "testbed/faultbench/trace.py", "testbed/faultbench/labels.py", "testbed/faultbench/score.py",
        "testbed/faultbench/detectors/rules.py", "testbed/faultbench/detectors/greyhound.py",
        "testbed/faultbench/detectors/minder.py", "testbed/faultbench/detectors/drift.py",
        "testbed/faultbench/fit.py", "testbed/experiments/benchmark.py")
# The default benchmark: every kind (loss too), a straggler on every fabric (slow from the start, no
# fault), two faults at once in two trials of seven, and a second job coming and going over a
# fault-free stretch of each fabric, so that the test split holds >= 15 minutes of fault-free time
BENCHMARK = {"kinds": ",".join((*fault_localisation.KINDS, "loss")), "straggler": 0.5, "two_at_once": 2,
             "drift": 270.0}
TRAIN_DRIFT_S = 60.0


def add_arguments(parser):
    parser.add_argument("--score", metavar="DIR", default=None,
                        help="score the traces a faultbench run kept in DIR (its test split), without root: no "
                             "emulation, seconds")
    parser.add_argument("--detector", default=",".join(DETECTORS),
                        help=f"the detectors scored, comma-separated (default: all: {', '.join(DETECTORS)})")
    parser.add_argument("--trials", type=int, default=7, help="the test split's faulty trials per fabric "
                        "(default %(default)s)")
    parser.add_argument("--fault-free", type=int, default=4, help="the test split's fault-free trials per fabric "
                        "(default %(default)s)")
    parser.add_argument("--train-trials", type=int, default=3,
                        help="the train split's faulty trials per fabric (default %(default)s)")
    parser.add_argument("--train-fault-free", type=int, default=1,
                        help="the train split's fault-free trials per fabric (default %(default)s)")
    parser.add_argument("--train-drift", type=float, default=TRAIN_DRIFT_S,
                        help="the train split's fault-free stretch per fabric under a second job, s (default "
                             "%(default)s; --drift is the test split's)")
    add_seed_argument(parser, "the test split's draws (the train split's follow from it)")
    fault_localisation.add_trial_arguments(parser)
    parser.set_defaults(**BENCHMARK)


@dataclass
class Plan:
    splits: dict            # {"train": fault_localisation's Plan, "test": ...}, or {} to score
    detectors: list
    score: Path | None
    seed: int | None        # the test split's; the train split's is train_seed(seed)
    mtu: int = 9000

    @property
    def fabrics(self):
        return [topo for split in self.splits.values() for topo in split.fabrics]


def split_args(args, seed, trials, fault_free, drift):
    """fault_localisation's options for one split: its own defaults, and the job's, fabrics' and
    faults' options (``add_trial_arguments``) as given, with the split's trials and drift (and at
    most its trials with two faults at once)."""
    shared = argparse.ArgumentParser()
    fault_localisation.add_trial_arguments(shared)
    parser = argparse.ArgumentParser()
    fault_localisation.add_arguments(parser)
    out = parser.parse_args(["--designs", "none", "--seed", str(seed), "--trials", str(trials),
                             "--fault-free", str(fault_free)])
    for action in shared._actions:
        if action.dest != "help":
            setattr(out, action.dest, getattr(args, action.dest))
    out.drift, out.two_at_once = drift, min(args.two_at_once, trials)
    return out


def prepare(args):
    detectors = names(args.detector, "--detector", list(DETECTORS))
    if args.score is not None:
        folder = Path(args.score)
        given = generation_options_given(args)
        if given:
            raise TestbedError(f"--score rescores the traces a run kept, as they were generated: leave out "
                               f"{', '.join(given)} (or generate a new benchmark without --score)")
        if not trace_folders(folder):
            raise TestbedError(f"--score {folder}: no traces there: give the folder of a faultbench run (or any run "
                               "that kept traces: fault_localisation's)")
        splits_of(folder)                          # every trace and its labels checked, once
        return Plan({}, detectors, folder, None)
    for option in ("trials", "fault_free", "train_trials", "train_fault_free", "train_drift"):
        if getattr(args, option) < 0:
            raise TestbedError(f"--{option.replace('_', '-')} must be at least 0 (got {getattr(args, option)})")
    if args.train_drift and not 60 <= args.train_drift <= 3600:
        raise TestbedError(f"--train-drift must be 0 or 60 to 3600 s, for a second job to come and go (got "
                           f"{args.train_drift:g})")
    if args.trials + args.fault_free == 0 and not args.drift:
        raise TestbedError("the test split has no trials: give --trials, --fault-free or --drift")
    seed = seed_of(args)
    splits = {"test": fault_localisation.prepare(split_args(args, seed, args.trials, args.fault_free, args.drift))}
    if args.train_trials + args.train_fault_free or args.train_drift:
        splits = {"train": fault_localisation.prepare(split_args(args, train_seed(seed), args.train_trials,
                                                                 args.train_fault_free, args.train_drift)), **splits}
    return Plan(splits, detectors, None, seed, splits["test"].mtu)


def generation_options_given(args):
    """The options that generate a benchmark which `args` sets away from their defaults, as typed."""
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return [action.option_strings[0] for action in parser._actions
            if action.dest not in ("help", "score", "detector")
            and getattr(args, action.dest, action.default) != action.default]


def train_seed(seed):
    """The train split's seed: half the seeds' range away from the test split's."""
    return (seed + MAX_SEED // 2) % (MAX_SEED + 1)


def run(plan, experiment):
    if plan.score is None:
        generate(plan, experiment)
    folder = plan.score or experiment.results.path
    stored = splits_of(folder)
    module = sys.modules[__name__]
    shown = held_out_of_run(folder, module) if plan.score else held_out.of_scenario(plan.seed, module)
    experiment.say(f"\nfitted on {len(stored['train'])} trace(s) of the train split, scored on {len(stored['test'])} "
                   f"of the test split of {folder} ({shown})", section="rows")
    started = time.monotonic()
    fits = fitted(plan.detectors, stored["train"])
    scores = score_traces(stored["test"], plan.detectors, {name: params for name, (params, _) in fits.items()})
    lines = leaderboard(scores, fits) + [f"fitted and scored in {time.monotonic() - started:.1f} s; published beside "
                                         "them (their data, their definitions, not rerun here):"] + \
        [f"  {p}" for p in fault_scores.PUBLISHED]
    if plan.score is None:
        lines += fault_scores.emulator_lines(experiment.rows, experiment.wrong)
    experiment.about.update(held_out=shown.held_out, summary=lines,
                            fitted={name: params for name, (params, _) in fits.items()})
    experiment.say("\nleaderboard (test split; precision over alarms, recall over faults; [95% Wilson interval]):",
                   *[f"  {line}" for line in lines])
    for name, figures in scores.items():
        for figure, key in (("precision", "precision"), ("recall", "recall"), ("recall, strong", "recall, strong")):
            share = figures["overall"].get(key)
            if share and share[0] is not None:
                experiment.headline.update({f"{name}: {figure}": round(share[0], 3),
                                            f"{name}: {figure} low": round(share[1], 3),
                                            f"{name}: {figure} high": round(share[2], 3)})
        if figures["overall"].get("F1") is not None:
            experiment.headline[f"{name}: F1"] = round(figures["overall"]["F1"], 3)
        per_hour = figures["overall"]["false alarms per hour"]
        if per_hour is not None:
            experiment.headline[f"{name}: false alarms per hour"] = round(per_hour, 1)


def generate(plan, experiment):
    """Both splits on their emulations: the trials' rows, each watch's trace and labels under
    train/ and test/ of the run folder."""
    experiment.header(f"# {NAME}: test seed {plan.seed}, train seed {train_seed(plan.seed)}; splits: " + ", ".join(
                          f"{name} {sum(len(r.trials) for r in split.runs)} trials on {len(split.runs)} fabric(s)"
                          for name, split in plan.splits.items()))
    experiment.about.update(seed=plan.seed)
    for name, split in plan.splits.items():
        for k, one in enumerate(split.runs):
            experiment.say(f"\n## {name}: {one.topo.describe()}, {one.routing} routing", section="rows")
            fault_localisation.run_one(
                experiment, split, k, one,
                lambda row, split_name=name: experiment.row(dict(row, split=split_name), fault_scores.trial_line(row),
                                                            csv="faultbench.csv", omit=("events", "alarms")),
                under=name)
