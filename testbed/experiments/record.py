"""A run's record: what ran, on what, from which code, and what it found, as one JSON file (asv and
pytest-benchmark keep results the same way: a record per run, pages drawn from records).

Every run writes ``record.json`` into its folder; ``run_scenario.py NAME --record`` also keeps it
under ``docs/records/NAME/``, where older records stay (a page's history is drawn from them). The
provenance is taken by the code, never typed: the commit and whether the tree held uncommitted
changes (and which files), the command that reruns the run exactly (its drawn seed included),
versions, the machine (cores, calibration), the wall time, and the run's fingerprint
(``fingerprint``: a hash of what the plan does; its ``code``, of the code that measured it). The
findings are the headline figures, the claims as the run judged them (with their bounds), and the
output by section (header, fabric checks, rows, summary).
"""
import json
import os
import platform
import shlex
import subprocess
from pathlib import Path

from testbed.emulation import capacity
from testbed.errors import TestbedError
from testbed.experiments import code_half
from testbed.experiments.claims import unfounded
from testbed.report import markdown

FORMAT = 1
ROOT = Path(__file__).resolve().parents[2]
RECORDS = ROOT / "docs" / "records"
REQUIRED = ("format", "scenario", "command", "started", "seconds", "status", "commit", "dirty", "fingerprint",
            "headline", "output")
# options that say where a run writes or whether it keeps a record, not what it does
NOT_THE_RUN = {"--results": 1, "--record": 0}


def git(*args):
    """git's output in the repository, or None where there is no git or no repository."""
    try:
        # safe.directory: a tree owned by another user (the lab VM's /vagrant, run as root) is still ours
        done = subprocess.run(["git", "-c", f"safe.directory={ROOT}", "-C", str(ROOT), *args], capture_output=True,
                              text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.rstrip() if done.returncode == 0 else None


def provenance():
    """{commit, dirty, changed}: HEAD's commit and the tracked files that differ from it."""
    changed = git("status", "--porcelain", "--untracked-files=no")
    return {"commit": git("rev-parse", "HEAD"), "dirty": bool(changed),
            "changed": [line[3:] for line in changed.splitlines()] if changed else []}


def known_commit(commit):
    """Whether a commit is in this clone's history: True, False, or None where the clone cannot
    tell (no git, or a shallow clone that may lack it)."""
    if git("rev-parse", "--git-dir") is None:
        return None
    if git("cat-file", "-e", f"{commit}^{{commit}}") is not None:
        return True
    return None if git("rev-parse", "--is-shallow-repository") == "true" else False


def machine(datapath):
    found, why = capacity.load()
    return {"cores": os.cpu_count(), "kernel": platform.release(), "datapath": datapath,
            "calibration": {f"{mtu} {placement}": mbit for (mtu, placement), mbit in found.figures.items()}
            if found else why}


def split_program(argv):
    """(the testbed's arguments, the launched program's from its "--" on): a program's own
    options are never the testbed's."""
    cut = argv.index("--") if "--" in argv else len(argv)
    return list(argv[:cut]), list(argv[cut:])


def with_options(argv, *options):
    """argv with options added to the testbed's arguments, before a launched program's."""
    ours, program = split_program(argv)
    return [*ours, *options, *program]


def without_location(argv):
    """argv less the options that say where the run writes or whether it keeps a record."""
    ours, program = split_program(argv)
    out, skip = [], 0
    for arg in ours:
        if skip:
            skip -= 1
            continue
        name = arg.split("=", 1)[0]
        if name in NOT_THE_RUN:
            skip = NOT_THE_RUN[name] if "=" not in arg else 0
            continue
        out.append(arg)
    return out + program


def command_key(argv):
    """What a run was asked, for grouping records of the same command: its arguments less where
    it wrote and its seed."""
    ours, program = split_program(without_location(argv))
    out, skip = [], False
    for arg in ours:
        if skip:
            skip = False
        elif arg == "--seed":
            skip = True
        elif not arg.startswith("--seed="):
            out.append(arg)
    return out + program


def rerun(argv, seed, *also):
    """The command that reruns the run exactly: its arguments, and the seed it drew if it drew one;
    also: options to add (``--record``)."""
    args = without_location(argv)
    if seed is not None and not any(a == "--seed" or a.startswith("--seed=") for a in split_program(args)[0]):
        args = with_options(args, "--seed", str(seed))
    return "run_scenario.py " + shlex.join(with_options(args, *also))


def make(scenario, argv, plan, fingerprint, experiment, status, code, datapath, ovs_version, fitted=None):
    """The record of a run that has ended (however it ended); fitted: the --rate a default was
    lowered to (emulation.fitting), which the command that reruns it names."""
    seed = getattr(plan, "seed", None)
    command = rerun(with_options(argv, "--rate", f"{fitted:g}") if fitted is not None else argv, seed)
    return {"format": FORMAT, "scenario": scenario, "command": command, "argv": list(argv),
            **({"fitted_rate": fitted} if fitted is not None else {}),
            "key": command_key(argv), "seed": seed, "started": experiment.results.started,
            "seconds": experiment.seconds, "status": status, "exit_code": code, **provenance(),
            "versions": markdown.versions(ovs_version), "machine": machine(datapath),
            "fingerprint": fingerprint, "headline": experiment.headline,
            "claims": experiment.about.get("claims", []), "output": experiment.output,
            "folder": str(experiment.results.path)}


def save(record, folder):
    """record.json in the run's folder."""
    return folder.json("record.json", record)


def keep(record):
    """The record under docs/records/SCENARIO/, named by its start and commit; its path."""
    stamp = record["started"].replace("-", "").replace(":", "").replace("T", "-")
    commit = (record["commit"] or "nocommit")[:7] + ("-dirty" if record["dirty"] else "")
    path = RECORDS / record["scenario"] / f"{stamp}-{commit}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    kept = dict(record, folder=None)
    path.write_text(json.dumps(kept, indent=1) + "\n")
    return path


def load(path, scenarios):
    """A kept record, checked: it parses, names a known scenario, and its commit is in the history
    (where the clone can tell). Refused in one line otherwise."""
    path = Path(path)
    where = path.relative_to(ROOT).as_posix() if path.is_absolute() and path.is_relative_to(ROOT) else str(path)
    try:
        record = json.loads(path.read_text())
    except OSError as e:
        raise TestbedError(f"record {where}: cannot read it ({e.strerror})") from None
    except ValueError as e:
        raise TestbedError(f"record {where} does not parse ({e}): make it again with run_scenario.py NAME --record") \
            from None
    missing = [k for k in REQUIRED if not isinstance(record, dict) or k not in record]
    if missing:
        raise TestbedError(f"record {where} lacks {', '.join(missing)}: make it again with run_scenario.py NAME "
                           "--record")
    if record["scenario"] not in scenarios:
        raise TestbedError(f"record {where} names an unknown scenario {record['scenario']!r}: "
                           "run_scenario.py --list names them")
    if not record["commit"] or known_commit(record["commit"]) is False:
        raise TestbedError(f"record {where} names commit {record['commit']}, which is not in this repository's "
                           "history: a record must come from committed code")
    wrong = unfounded(record.get("claims") or [], record["headline"])
    if wrong:
        raise TestbedError(f"record {where} keeps verdicts its figures do not give ({wrong[0]['claim']}: "
                           f"{wrong[0]['verdict']}): a record's verdicts are the run's; restore it from git")
    gone = code_half.missing(record["fingerprint"].get("code", {}))
    if gone:
        raise TestbedError(f"record {where}: its code half names {', '.join(gone)}, not in the tree: measure the run "
                           "again (run_scenario.py --stale gives the command) and remove this record")
    record["path"] = where
    return record


def history(scenario, scenarios):
    """Every kept record of a scenario, oldest first."""
    return sorted((load(p, scenarios) for p in (RECORDS / scenario).glob("*.json")), key=lambda r: r["started"])
