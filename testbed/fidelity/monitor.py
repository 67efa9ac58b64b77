"""An operator's monitor over a running job: it is told nothing about faults, neither what nor when.

Windows of CADENCE_S follow one another on a grid that starts when the watch starts. When a window
has ended, the detector (``fidelity.diagnosis``) compares it with the monitor's own baseline: the
last BASELINE_WINDOWS windows that raised no alarm, taken together, and the ranks' timings of the
last BASELINE_WINDOWS of those in which iterations ended (a job whose iterations outlast a window,
as a straggler's do, ends none in some: a baseline of such windows held no timings, and every
iteration after it stood out). A window the detector finds
something in raises an alarm (its end, its span, the finding) and stays out of the baseline, so a
fault that lasts keeps being compared with the job before it; a window that raises none joins the
baseline, which so follows the job's drift; an undecided window (a queue grew too briefly to tell
a slow link from congestion) does neither. The first BASELINE_WINDOWS windows only fill it.
Consecutive windows that raise the same finding are one incident, as an operator's alerting counts
them: the first raises it (``Alarm.new``), the others keep it standing. An alarm that stands
STANDING_WINDOWS windows in a row, whatever it names, is the job's new normal (a shift that is not a
fault, such as a standing queue left behind by TCP, or a fault the operator has been told of): its
last windows become the baseline, so that the next change is seen against it rather than against
a job that no longer runs. Greyhound's change-point detector restarts its run length at a change
for the same reason; without it one such shift kept the monitor alarming every window after it.
What an alarm rests on is the window's own data: the iterations that ended in it, the queue
samples and the port events taken in it (``api.Watch.window``), and the port events before it that
still bear on it, which the monitor keeps (a link still down, or back up only just: its paths'
retransmissions are TCP's recovery, not a lossy link). With ECN marking, a window that raises
nothing but in which ports marked is congestion, not a fault: ``congested`` keeps those.
"""
import dataclasses
from collections import deque
from dataclasses import dataclass

from testbed.fidelity.diagnosis import UNDECIDED, Finding, Window, diagnose, marking, recent_events

CADENCE_S = 1.0          # a window's length: two to five iterations of the watched allreduce
BASELINE_WINDOWS = 4     # the healthy windows the current one is compared with
STANDING_WINDOWS = 10    # an alarm standing this long (10 s) is the new normal: re-baselined


@dataclass(frozen=True)
class Alarm:
    at: float              # the end of the window that raised it (monotonic seconds)
    span: tuple            # (start, end) of that window
    finding: Finding
    new: bool = True       # the first window of its incident (the window before raised another or none)

    def to_dict(self):
        return {"at": round(self.at, 3), "span": [round(t, 3) for t in self.span], "new": self.new,
                **self.finding.to_dict()}


def merged(windows):
    """One Window of several: their iterations, queue samples and port events together."""
    queues, edges, marks = {}, {}, {}
    for w in windows:
        for port, samples in w.queues.items():
            queues.setdefault(port, []).extend(samples)
        for port, samples in w.edges.items():
            edges.setdefault(port, []).extend(samples)
        for port, samples in w.marks.items():
            marks.setdefault(port, []).extend(samples)
    return Window([it for w in windows for it in w.timing], queues, [e for w in windows for e in w.events],
                  tuple(windows), edges, marks=marks)


class Monitor:
    """Monitor(topo, window_of, started): window_of(start, end) -> Window, on the monotonic clock;
    paths, where known, the links each rank's data to each peer crosses (``diagnosis.loss_finding``);
    ``poll(now)`` judges every window that has ended by `now` and returns the alarms they raised;
    ``alarms`` keeps every one, ``undecided`` the end of every window it could not yet judge."""

    def __init__(self, topo, window_of, started, cadence=CADENCE_S, baseline=BASELINE_WINDOWS,
                 standing=STANDING_WINDOWS, paths=None):
        if cadence <= 0 or baseline < 1 or standing < baseline:
            raise ValueError("a monitor needs a cadence above 0 s, a baseline of 1 window or more and "
                             "a standing alarm at least as long as its baseline")
        self.topo, self.window_of, self.cadence, self.standing = topo, window_of, cadence, standing
        self.paths = paths                # {(rank, peer): links its data crosses}, for lossy links; or None
        self.next = started
        self.healthy = deque(maxlen=baseline)
        self.timed = deque(maxlen=baseline)   # the healthy windows in which iterations ended
        self.streak = []                  # (window, finding) of the alarm standing now
        self.alarms, self.judged, self.rebased = [], 0, 0
        self.undecided = []               # the ends of the windows left undecided
        self.congested = []               # (end, {port: marks}) of the windows with ECN marks and no fault
        self.events = []                  # every port event seen, for the windows after it

    def poll(self, now):
        raised = []
        while self.next + self.cadence <= now:
            span = (self.next, self.next + self.cadence)
            window = dataclasses.replace(self.window_of(*span), earlier=recent_events(self.events, span[0]),
                                         history=list(self.events))
            self.events += window.events
            finding = diagnose(self.topo, self.baseline(), window, self.paths) \
                if len(self.healthy) == self.healthy.maxlen else None
            if finding is not None and finding.kind == UNDECIDED:
                self.undecided.append(span[1])     # neither an alarm nor healthy: the next window tells
            elif finding is not None and finding.kind != "none":
                new = not self.streak or (self.streak[-1][1].kind, self.streak[-1][1].where) != \
                    (finding.kind, finding.where)
                raised.append(Alarm(span[1], span, finding, new))
                self.streak.append((window, finding))
                if len(self.streak) >= self.standing:
                    self.keep(w for w, _ in self.streak[-self.healthy.maxlen:])
                    self.streak, self.rebased = [], self.rebased + 1
            else:
                if window.timing or finding is None:
                    self.streak = []       # iterations ended in it and raised nothing: the incident is over
                self.keep([window])
                marked = marking(self.topo, window) if finding is not None else {}
                if marked:
                    self.congested.append((span[1], marked))
            if finding is not None:
                self.judged += 1
            self.next = span[1]
        self.alarms += raised
        return raised

    def keep(self, windows):
        """Healthy `windows` into the baseline."""
        for window in windows:
            self.healthy.append(window)
            if window.timing:
                self.timed.append(window)

    def baseline(self):
        """The healthy windows merged, with the timings of those that held any."""
        return dataclasses.replace(merged(self.healthy), timing=[it for w in self.timed for it in w.timing])

    def between(self, start, end):
        """The alarms raised by windows that ended in (start, end]."""
        return [a for a in self.alarms if start < a.at <= end]
