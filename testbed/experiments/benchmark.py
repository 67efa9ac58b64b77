"""The engine's fault benchmark (``testbed.faultbench``): the traces a run kept, every detector on
them, its score and the leaderboard; whether the traces were held out from the detectors."""
import json
from pathlib import Path

from testbed.errors import TestbedError
from testbed.experiments import code_half, held_out, record
from testbed.faultbench import labels, score, trace
from testbed.faultbench.detectors import DETECTORS

SPLITS = ("train", "test")


def trace_folders(folder):
    """The traces under `folder`: its test split's where it has one, else every trace in it."""
    folder = Path(folder)
    if not folder.is_dir():
        return []
    root = folder / "test" if (folder / "test").is_dir() else folder
    return sorted(manifest.parent for manifest in root.rglob(trace.MANIFEST))


def labels_of(folder):
    return folder.parent / f"{folder.name}-labels.parquet"


def check_traces(folders):
    """Each trace checked (``trace.check``) and its labels beside it, read: one line saying why not."""
    for folder in folders:
        trace.check(folder)
        if not labels_of(folder).is_file():
            raise TestbedError(f"{folder}: its labels ({labels_of(folder).name}) are not beside it: a trace is scored "
                               "against the labels its run wrote")
        labels.read(labels_of(folder))


def score_traces(folders, detectors):
    """{detector: ``score.figures``} over the traces, each read once; a detector sees a trace and
    nothing else, the scorer the detector's alarms and the trace's labels."""
    traces = [trace.read(folder) for folder in folders]
    truth = [labels.read(labels_of(folder)) for folder in folders]
    out = {}
    for name in detectors:
        detector = DETECTORS[name]()
        each = [score.score(detector.detect(t), truth_of, [it["end"] for it in t.iterations])
                for t, truth_of in zip(traces, truth)]
        out[name] = score.figures(score.combined(each))
    return out


def said(share):
    return "-" if share is None or share[0] is None else f"{share[0]:.2f} [{share[1]:.2f}, {share[2]:.2f}]"


def leaderboard(scores):
    """Lines: per detector its overall figures, then per C4 class where it has faults or alarms."""
    lines = []
    for name, figures in scores.items():
        o = figures["overall"]
        per_hour = "-" if o["false alarms per hour"] is None else f"{o['false alarms per hour']:.1f}"
        detect = "-" if o["detect_s"] is None else f"{o['detect_s']:.1f} s ({o['detect_iterations']:g} iterations)"
        lines.append(f"{name:10s} {DETECTORS[name].about}")
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
