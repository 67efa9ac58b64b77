"""A fault injected into a launched program while the operator's monitor watches it
(``runs.launch_watch``), told nothing of it, scored as a fault trial is (``fault_trials``): the
first new alarm after the injection, named right or not, how soon; the alarms before it false.

The watch starts at the program's first step (its start-up, importing and connecting, is not the
job). The monitor fills its baseline, then the fault starts at its time after the first step (or
as soon as the baseline is filled), lasts `fault_for` seconds (with `react`, the controller routes
around a switch link the monitor names slow), and the job settles for two steps."""
import dataclasses
import statistics
import time

from testbed.errors import RunFailure
from testbed.experiments.fault_trials import EXPECTED, _at_once, expected_place, first_alarm, outcome, while_faulty
from testbed.faultbench import labels as fault_labels
from testbed.fidelity.diagnosis import Finding

STEP_WAIT_S = 180.0      # the program's start-up: its first step must come within this
SETTLE_STEPS = 2


class NoSteps(RunFailure):
    pass


def first_step(launched, limit=STEP_WAIT_S):
    """Wait until every rank of the launched program has reported a step; NoSteps if that does not
    come within `limit` seconds or the program ends first."""
    deadline = time.monotonic() + limit
    while not all(mine for mine in launched.step_times()):
        running = any(p.poll() is None for p in launched.procs)
        if not running or time.monotonic() > deadline:
            how = "ended" if not running else f"ran {limit:g} s"
            raise NoSteps(f"the program {how} without a step reported by every rank: --inject and --react "
                          "watch its steps (call testbed.step(seconds) once a step, or print "
                          "'testbed-step SECONDS END' with END the wall-clock time)")
        time.sleep(0.1)


def median_step(watch, start, end, begun=False):
    """The median length of the job's steps that ended in (start, end] (with `begun`, that also
    began after `start`), seconds, or None."""
    spans = [it["end"] - it["start"] for it in watch.ran(start, end) if not begun or it["start"] >= start]
    return statistics.median(spans) if spans else None


def run_fault(emu, launched, fault, fault_for, react=False, settle_limit=20.0):
    """The fault on the launched program, watched from its first step: the row (what was injected
    and found, when, the false alarms before it, the steps before, during and after, what rerouting
    did) and the watch's trace folder."""
    fault = dataclasses.replace(fault, lasting=fault.lasting or fault_for)    # so its labels end with it
    first_step(launched)
    with emu.watch_launch(launched) as watch:
        row = _watched(emu, watch, fault, fault_for, react, settle_limit)
        trace = watch.save(launched.folder / "trace")
    fault_labels.write(launched.folder / fault_labels.FILE, fault_labels.from_rows([row]))
    return row, trace


def _watched(emu, watch, fault, fault_for, react, settle_limit):
    topo, monitor = emu.topo, watch.monitor
    watch.wait(watch.started + max(fault.at, monitor.cadence * (monitor.healthy.maxlen + 1)))
    inject = watch.now()
    events = emu.fault(_at_once(fault), watch, end=fault_for)
    during, timeline, reacted, undone = while_faulty(emu, watch, events, inject + fault_for, react)
    ended_early = not watch.alive()
    deadline = undone + settle_limit
    while watch.alive() and watch.now() < deadline and len(watch.ran(undone, watch.now())) < SETTLE_STEPS:
        time.sleep(0.05)
    watch.wait(watch.now() + monitor.cadence)
    end = watch.now()
    monitor.poll(end)
    wanted = (EXPECTED[fault.kind], expected_place(fault, topo))
    shown = first_alarm(monitor.between(inject, end), wanted)
    found = shown.finding if shown else Finding("none", "", 1.0, "no alarm")
    clock = lambda t: round(t - watch.started, 3)
    step = lambda a, b, begun=False: None if median_step(watch, a, b, begun) is None else \
        round(median_step(watch, a, b, begun), 4)
    row = {"fault": fault.describe(), **outcome(fault, wanted, found, shown and shown.at - inject),
           "trial": 0, "start_s": 0.0, "inject_s": clock(inject), "undone_s": clock(undone), "end_s": clock(end),
           "false_alarms": sum(a.new for a in monitor.between(watch.started, inject)),
           "alarms": [dict(a.to_dict(), at=clock(a.at)) for a in monitor.between(watch.started, end)],
           "steps": len(watch.ran(watch.started, end)),
           "step_before_s": step(watch.started, inject), "step_during_s": step(inject, undone),
           "step_after_s": step(undone, end), "events": [e.what for e in timeline.done],
           "event_error": timeline.error, "ended_during_fault": ended_early,
           "emulator_bottleneck_during": during["emulator_bottleneck"],
           # what a fault trial's labels hold that a launched program does not report
           "busbw_before_MBps": None, "busbw_during_MBps": None, "second_job_s": None, "straggler": None}
    if react:
        row.update(react_s=None if reacted is None else round(reacted - inject, 2),
                   step_after_react_s=None if reacted is None else step(reacted, undone, begun=True))
    return row
