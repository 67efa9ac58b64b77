"""The engine's fault benchmark (``testbed.faultbench``): the traces a run kept, every detector on
them, its score and the leaderboard; whether the traces were held out from the detectors."""
import functools
import json
from pathlib import Path

from testbed.errors import TestbedError
from testbed.experiments import code_half, held_out, record
from testbed.faultbench import labels, score, trace
from testbed.faultbench.detectors import DETECTORS
from testbed.faultbench.fit import fit
from testbed.report.fault_scores import said

SPLITS = ("train", "test")


def trace_folders(folder, split="test"):
    """The traces of a split under `folder` (its test split by default); where it has no splits
    (a fault_localisation run), every trace is the test split's and the train split is empty."""
    folder = Path(folder)
    if not any((folder / name).is_dir() for name in SPLITS):
        root = folder if split == "test" and folder.is_dir() else None
    else:
        root = folder / split if (folder / split).is_dir() else None
    return sorted(manifest.parent for manifest in root.rglob(trace.MANIFEST)) if root else []


def labels_of(folder):
    return folder.parent / f"{folder.name}-labels.parquet"


def read_split(folders):
    """[(trace, labels)] of the traces in `folders`, each read once (``trace.read`` checks its
    format and each table's bytes) with the labels beside it: one line saying why not."""
    split = []
    for folder in folders:
        read = trace.read(folder)
        if not labels_of(folder).is_file():
            raise TestbedError(f"{folder}: its labels ({labels_of(folder).name}) are not beside it: a trace is scored "
                               "against the labels its run wrote")
        split.append((read, labels.read(labels_of(folder))))
    return split


def splits_of(folder):
    """{"train", "test": [(trace, labels)]} of the traces a run kept in `folder` (``read_split``),
    read and checked once in a process while their manifests are unchanged: a scenario's prepare,
    its fingerprint's and its run share them."""
    folders = trace_folders(folder, "train") + trace_folders(folder)
    return _splits(str(folder), tuple((str(f), (f / trace.MANIFEST).stat().st_mtime_ns) for f in folders))


@functools.lru_cache(maxsize=2)
def _splits(folder, _manifests):
    return {split: read_split(trace_folders(folder, split)) for split in SPLITS}


def fitted(detectors, train):
    """{detector: (its parameters, their F1 on train)}: each fitted on the train split (``fit``)."""
    return {name: fit(DETECTORS[name], train) for name in detectors}


def score_traces(test, detectors, params=None):
    """{detector: ``score.figures``} over the test split ([(trace, labels)]); a detector sees a
    trace and nothing else, with the parameters fitting chose (params: {detector: parameters}),
    the scorer the detector's alarms and the trace's labels."""
    out = {}
    for name in detectors:
        detector = DETECTORS[name](**(params or {}).get(name, {}))
        each = [score.score(detector.detect(t), truth, [it["end"] for it in t.iterations]) for t, truth in test]
        out[name] = score.figures(score.combined(each))
    return out


def leaderboard(scores, fits=None):
    """Lines: per detector its parameters (as fitted, where fits {detector: (parameters, train F1)}
    has them), its overall figures, then per C4 class where it has faults or alarms."""
    lines = []
    for name, figures in scores.items():
        o = figures["overall"]
        params, train_f1 = (fits or {}).get(name, ({}, None))
        per_hour = "-" if o["false alarms per hour"] is None else f"{o['false alarms per hour']:.1f}"
        detect = "-" if o["detect_s"] is None else f"{o['detect_s']:.1f} s ({o['detect_iterations']:g} iterations)"
        lines.append(f"{name:10s} {DETECTORS[name].about}")
        if getattr(DETECTORS[name], "GRID", None):
            lines.append("  " + (f"fitted on the train split: {', '.join(f'{k} {v:g}' for k, v in params.items())} "
                                 f"(F1 {train_f1:.2f} there)" if params else "its defaults (no train split to fit on)"))
        lines.append(f"  overall   precision {said(o['precision']):18s} recall {said(o['recall']):18s} F1 "
                     f"{'-' if o['F1'] is None else format(o['F1'], '.2f')}; strong faults' recall "
                     f"{said(o['recall, strong'])}; noticed (any alarm while active) {said(o['noticed'])}")
        lines.append(f"            {o['faults']} faults, {o['alarms']} alarms ({o['outside']} before the first "
                     f"trial, not scored); false alarms {per_hour} per hour of fault-free time "
                     f"({o['fault-free hours'] * 60:.1f} min); median time to detect {detect}")
        for c, f in figures.items():
            if c != "overall":
                lines.append(f"  {c:13s} precision {said(f['precision']):18s} recall {said(f['recall']):18s} F1 "
                             f"{'-' if f['F1'] is None else format(f['F1'], '.2f')} ({f['faults']} faults, "
                             f"{f['alarms']} alarms)")
    return lines


def held_out_of_run(folder, module):
    """HeldOut of the traces of a kept run (its record.json) for this tree's detectors: not held out
    where the method's code changed since the run (the change could be fitted to them), else as
    the run's record stood when it started (``held_out.of_record``)."""
    path = Path(folder) / "record.json"
    try:
        kept = json.loads(path.read_text())
    except (OSError, ValueError):
        return held_out.HeldOut(None, False, f"no readable {path.name} in {folder}: whether its traces were held out "
                                             "cannot be told")
    now, then = code_half.of(module), kept["fingerprint"].get("code", {})
    changed = [p for p in held_out.method_files(module) if now.get(p) != then.get(p)]
    if changed:
        return held_out.HeldOut(kept.get("seed"), False, f"{', '.join(changed)} changed since these traces were made: "
                                                         "the change could be fitted to them")
    return held_out.of_record(kept, module, record.history(module.NAME, {module.NAME: module}))
