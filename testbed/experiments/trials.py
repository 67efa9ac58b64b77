"""Paired trials over hash draws: each trial draws fresh 5-tuples (``routing.hashing.Draw`` from
seed + trial) and measures every form of the experiment on them, each on a freshly built fabric,
in alternating order so that a drift of the machine falls on every form alike; each figure is then
compared between two forms trial by trial (``report.paired``), and measured against the flow
model per trial."""
import statistics
import time
from dataclasses import dataclass, field

from testbed.experiments.fingerprint import ADDED
from testbed.report.paired import Comparison, trial_order
from testbed.routing.hashing import Draw

MARKED = "+ecn"          # a form's label under ECN marking (``with_marking``): its twin's plus this


@dataclass(frozen=True)
class Form:
    """One form an experiment compares: its label, fabric and routing (with the planned mode's
    flows), its switch ports' traffic classes (None: one FIFO), and its ECN marking threshold K
    with the ranks' congestion control under it (None: the run's settings)."""
    label: str
    topo: object
    routing: str = "ecmp"
    hash: str = "same"
    priority: str | None = None
    flows: tuple = ()
    ecn: int | None = field(default=None, metadata={ADDED: "--compare-ecn"})
    congestion_control: str | None = field(default=None, metadata={ADDED: "--compare-cc"})


def run_trials(experiment, forms, *, trials, seed, measure, mtu, bond="hash", check=True, on_row=None, log=None):
    """measure(emu, form, draw, trial, folder) -> rows of one form in one trial; every row gets
    trial, seed and form (its label). The fabric check runs once per form, on its first fabric.
    on_row(row) sees each row as it comes (default: the experiment keeps it); log(line) the
    emulation's progress (default the experiment's). Returns (rows, {form label: FabricCheck})."""
    rows, checks, started = [], {}, time.monotonic()
    for trial in range(trials):
        for form in trial_order(forms, trial):
            folder = experiment.results.path / f"trial{trial}" / form.label.replace(" ", "_")
            for row in _measured(experiment, form, folder, mtu, check, checks, log, measure,
                                 form, Draw(seed + trial, bond), trial, folder):
                row = dict(row, trial=trial, seed=seed + trial, form=form.label)
                rows.append(row)
                (on_row or experiment.row)(row)
        print(f"  ... {trial + 1} of {trials} trials in {time.monotonic() - started:.0f} s", flush=True)
    return rows, checks


def run_once(experiment, forms, *, measure, mtu, check=True, on_row=None, log=None):
    """One pass over forms that draw nothing to pair (each on a fabric of its own): measure(emu,
    form, folder) -> rows; every row gets form (its label). Returns (rows, {form label: FabricCheck})."""
    rows, checks = [], {}
    for k, form in enumerate(forms):
        folder = experiment.results.path / form.label.replace(" ", "_")
        for row in _measured(experiment, form, folder, mtu, check, checks, log, measure, form, folder):
            row = dict(row, form=form.label)
            rows.append(row)
            (on_row or experiment.row)(row)
        print(f"  ... {k + 1} of {len(forms)} done", flush=True)
    return rows, checks


def _measured(experiment, form, folder, mtu, check, checks, log, measure, *args):
    """The rows measure(emu, *args) gives on a fabric built for the form, checked once per form."""
    with experiment.emulate(form.topo, form.routing, hash=form.hash, folder=folder, mtu=mtu,
                            priority=form.priority, flows=form.flows, log=log, ecn=form.ecn,
                            congestion_control=form.congestion_control) as emu:
        if check and form.label not in checks:
            checks[form.label] = experiment.check(emu.check(), form.label)
        yield from measure(emu, *args)


def check_line(checks):
    """The fabric checks of a run's forms ({label: FabricCheck}) in one line."""
    return "fabric check: " + ", ".join(f"{label} {'PASS' if c.passed else 'FAIL'}" for label, c in checks.items())


def model_trials(forms, draws, evaluate):
    """Paired draws over a model (no emulation): for each draw d, evaluate(form, d) -> a row or a
    list of rows for every form, the forms in alternating order as in run_trials; every row gets
    trial (d) and form. ``compare`` pairs them."""
    rows = []
    for d in range(draws):
        for form in trial_order(forms, d):
            got = evaluate(form, d)
            rows += [dict(row, trial=d, form=form) for row in (got if isinstance(got, list) else [got])]
    return rows


def compare(rows, labels, key, name, digits=2, by="ratio", where=lambda row: True):
    """The figure `key` of form labels[0] against labels[1], paired by trial over every trial the
    rows hold (a form missing from a trial: None, which the comparison names)."""
    trials = sorted({r["trial"] for r in rows if where(r)})
    value = {(r["trial"], r["form"]): r.get(key) for r in rows if where(r)}
    return Comparison(name, tuple(labels), [(value.get((t, labels[0])), value.get((t, labels[1]))) for t in trials],
                      digits, by=by)


def model_lines(rows, labels, name=lambda row: ""):
    """Measured over model per form (and per name(row), e.g. a workload): the median and range over
    trials and what it says, then how many connections took the path hashing gives them."""
    lines = []
    for group in dict.fromkeys(name(r) for r in rows):
        for label in labels:
            ratios = sorted(r["measured_over_model"] for r in rows if name(r) == group and r["form"] == label
                            and r.get("measured_over_model") is not None)
            if not ratios:
                continue
            median = statistics.median(ratios)
            verdict = ("follows from the placement (within 10%)" if abs(median - 1) <= 0.10 else
                       "below the model: TCP shares a bottleneck less fairly than max-min, or the emulator "
                       "was short (see the verdict)" if median < 1 else "above the model: check the capture")
            lines.append(f"  {(group + ' ') if group else ''}{label}: measured/model median {median:.2f} "
                         f"(range {ratios[0]:.2f}-{ratios[-1]:.2f}, {len(ratios)} trials): {verdict}")
    placed = sum(r.get("as_placed", 0) for r in rows)
    total = sum(r.get("connections", 0) for r in rows if "as_placed" in r)
    if total:
        lines.append(f"  paths as the model hashes them: {placed} of {total} connections over every trial")
    return lines


def marking_lines(rows, labels):
    """Per form, the switch ports' figures (``Emulated.switch_queues``) of its rows, means over
    them: the deepest queue, drops and ECN marks."""
    lines = []
    for label in labels:
        mine = [r for r in rows if r["form"] == label and "queue_max_bytes" in r]
        if not mine:
            continue
        mean = {key: statistics.mean(r[key] for r in mine)
                for key in ("queue_max_bytes", "queue_busy_mean_bytes", "fabric_drops", "marked", "ect")}
        lines.append(f"  {label}: deepest queue {mean['queue_max_bytes'] / 1e3:.1f} KB at most, "
                     f"{mean['queue_busy_mean_bytes'] / 1e3:.1f} KB while busy; drops {mean['fabric_drops']:.0f}, "
                     f"marked {mean['marked']:.0f} of {mean['ect']:.0f} ECN-capable packets "
                     f"(means of {len(mine)} runs)")
    return lines
