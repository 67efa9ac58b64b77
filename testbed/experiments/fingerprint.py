"""What a run does, as a hash: the fingerprint a run's record carries and a page's staleness is
judged by.

A run is what its plan says (``prepare(args)``: the fabrics as data, the schedules and their
placements, sizes, forms, workload phases) plus how the emulation treats packets (``MODEL``: the
switch ports' classes, the ranks' protocol), not the code that carries it out: a comment, a
docstring or a refactor changes no fingerprint, a change of what is measured changes the part it
touches. The plan is turned into plain data (``canonical``) part by part, one part per field of the
plan and one for each fabric's routing rules and each placed schedule's steps, and each part is
hashed on its own, so a stale page names what changed. A seed is not a part of its own: what it
draws (hash draws, placements, faults) is in the parts it decides, and a run whose seed was drawn
is fingerprinted with the seed it drew. A fabric's routes are computed for the modes its run may
install (deterministic, ECMP) where it is emulated, and for the flows a plan has placed by the
planner (``plan.planned``); a modelled fabric is its data alone.

Beside the plan, the fingerprint keeps the code half (``code``: ``code_half``), a hash of each file
that measures, judges and scores the scenario's runs: a change there leaves a page's run what its
command does, measured with older code.
"""
import argparse
import dataclasses
import enum
import hashlib
import json
import math
from pathlib import Path

from testbed import routing
from testbed.collectives.schedules import BySize, Schedule
from testbed.emulation import shaping
from testbed.experiments import code_half
from testbed.programs import rank
from testbed.topology import Topology

ROOT = Path(__file__).resolve().parents[2]
LEFT_OUT = {"seed"}          # drawn anew by a run that is not given one: not what the run does
# A dataclass field added after runs were kept, with this key in its metadata, is left out where it
# holds its default: there the run does what the runs before the field did (a new option, off).
ADDED = "added"
SAMPLE_COUNT = 64            # elements per rank at which a placed schedule's steps are written out


def model():
    """How the emulation treats packets, where no plan says it: the switch ports' control class
    (a rank's clear-to-sends and ACKs served first), the ranks' congestion control and eager limit.
    A change here changes every emulated run."""
    return {"control_dscp": shaping.CONTROL_DSCP, "high_dscp": shaping.HIGH_DSCP,
            "congestion_control": rank.CONGESTION_CONTROL, "eager_limit": rank.EAGER_LIMIT,
            "burst": "one frame"}


def canonical(value, _seen=()):
    """value as JSON-able data that says what it is and nothing of where it lives in memory."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if id(value) in _seen:
        return "<cycle>"
    seen = (*_seen, id(value))
    if isinstance(value, enum.Enum):
        return value.name
    if isinstance(value, Path):
        return file_data(value)
    if isinstance(value, Topology):
        return {"topology": value.to_dict()}
    if isinstance(value, Schedule):
        return {"schedule": value.name, "class": type(value).__name__, "args": canonical(value.args(), seen)}
    if isinstance(value, dict):
        return {str(k): canonical(v, seen) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))
                if k not in LEFT_OUT}
    if isinstance(value, (list, tuple)):
        return [canonical(v, seen) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((canonical(v, seen) for v in value), key=lambda v: json.dumps(v, sort_keys=True))
    if callable(value) and hasattr(value, "__qualname__"):
        return f"{getattr(value, '__module__', '')}.{value.__qualname__}"
    own = fields(value) if dataclasses.is_dataclass(value) or hasattr(value, "__dict__") else None
    if own is None:
        return repr(value)
    return {"class": type(value).__name__,
            **{k: canonical(v, seen) for k, v in sorted(own.items()) if k not in LEFT_OUT and not k.startswith("_")}}


def file_data(path):
    """A file named in a plan: by its place in the repository, or by its content elsewhere, so the
    same file gives the same fingerprint on every machine."""
    path = Path(path)
    resolved = path.resolve()
    if resolved.is_relative_to(ROOT):
        return {"file": resolved.relative_to(ROOT).as_posix()}
    try:
        return {"file": path.name, "sha256": hashlib.sha256(resolved.read_bytes()).hexdigest()}
    except OSError:
        return {"file": str(path)}


def digest(data):
    return hashlib.sha256(json.dumps(data, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:16]


def fields(plan):
    """A plan's (or any value's) own fields: a dataclass's (an added one left out where it holds
    its default), or its attributes."""
    if dataclasses.is_dataclass(plan):
        return {f.name: getattr(plan, f.name) for f in dataclasses.fields(plan)
                if not (f.metadata.get(ADDED) and getattr(plan, f.name) == f.default)}
    return dict(vars(plan))


def placed_schedules(value, found, _seen=()):
    """Every (schedule, hosts) pair anywhere in value: a placed collective."""
    if id(value) in _seen or isinstance(value, (str, bytes, int, float, Topology)) or value is None:
        return found
    seen = (*_seen, id(value))
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], Schedule) and \
            isinstance(value[1], (list, tuple)) and all(isinstance(h, str) for h in value[1]):
        found.append(value)
        return found
    if isinstance(value, dict):
        items = value.values()
    elif isinstance(value, (list, tuple, set, frozenset)):
        items = value
    elif dataclasses.is_dataclass(value) or hasattr(value, "__dict__"):
        items = fields(value).values() if dataclasses.is_dataclass(value) else vars(value).values()
    else:
        return found
    for item in items:
        placed_schedules(item, found, seen)
    return found


def steps(schedule, hosts):
    """A placed schedule's steps, every rank's, at SAMPLE_COUNT elements per rank, with its hosts
    (a choice by size: each of its choices')."""
    if isinstance(schedule, BySize):
        return {"schedule": schedule.name, "choices": {n: steps(s, hosts) for n, s in schedule.choices.items()}}
    ranks = len(hosts)
    count = SAMPLE_COUNT * ranks
    return {"schedule": schedule.name, "hosts": list(hosts),
            "steps": [[dataclasses.astuple(s) for s in schedule.steps(r, ranks, count)] for r in range(ranks)]}


def routes(topo):
    """The rules the controller installs on an emulated fabric, for the modes a run may ask."""
    return {mode: routing.plan(topo, mode).to_dict() for mode in ("deterministic", "ecmp")}


def fingerprint(plan, settings=None):
    """{"hash": the run's, "parts": {part: hash}}: a part per plan field, 'fabric N routes' per
    emulated fabric, 'planned N routes' per (fabric, flows) a plan's ``planned`` lists (the paths
    a planner gives those flows), 'schedules' for every placed schedule's steps, 'model' and
    'settings' (slots, CPU placement: how the run's emulation is laid out)."""
    parts = {name: digest(canonical(value)) for name, value in fields(plan).items()
             if name not in LEFT_OUT and not name.startswith("_")}      # _field: what the plan says, not does
    for k, topo in enumerate(getattr(plan, "fabrics", ()) or ()):
        parts[f"fabric {k} routes"] = digest(routes(topo))
    for k, (topo, flows) in enumerate(getattr(plan, "planned", ()) or ()):
        parts[f"planned {k} routes"] = digest(routing.plan(topo, "planned", flows=flows).to_dict())
    placed = placed_schedules(fields(plan), [])
    if placed:
        parts["schedules"] = digest([steps(s, h) for s, h in placed])
    if getattr(plan, "fabrics", ()):
        parts["model"] = digest(model())
    if settings:
        parts["settings"] = digest(canonical(settings))
    return {"hash": digest(parts), "parts": parts}


def changed(old, new):
    """The plan's parts that differ between two fingerprints, named."""
    a, b = old.get("parts", {}), new.get("parts", {})
    return sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))


def of_run(module, args, seed=None):
    """The fingerprint of what `args` ask of a scenario module (parsed by run_scenario.py's parser):
    its plan, with `seed` where the run drew it (args give none; a plan with no seed, such as a
rescoring of stored traces, draws none), the emulation's layout (slots, CPU
    placement, machines), and the scenario's code half."""
    args = argparse.Namespace(**vars(args))
    if getattr(args, "seed", 0) is None and seed is not None:
        args.seed = seed
    settings = {"slots": getattr(args, "slots", 1), "cpu_placement": getattr(args, "cpu_placement", "auto"),
                "machines": bool(getattr(args, "machines", None)),
                "control_class": getattr(args, "control_class", "on")}
    if getattr(args, "ecn", None):         # marking on: a run its drop-tail records do not stand for
        settings["ecn"] = args.ecn
    if getattr(args, "cc", None):          # likewise a congestion control chosen for the run
        settings["cc"] = args.cc
    return {**fingerprint(module.prepare(args), settings), "code": code_half.of(module, args)}
