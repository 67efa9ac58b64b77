"""A streaming drift detector from a maintained library: river's Page-Hinkley test (Page 1954;
Hinkley 1971), as river implements it, on the log of the job's iteration times, fed one iteration
at a time in the order they end. Page-Hinkley accumulates how far each value lies above the running
mean, less a tolerance `delta`, and signals a drift when that sum rises `threshold` above its
least; on log times both are shares of the iteration (delta 0.05 lets a 5% wobble pass). It alarms
on slowdowns only (river's mode "up"), and river restarts the test after each drift, so a job that
stays slow is its new normal. Where it signals, the rank whose own delay per step grew most from
the iterations before to those of the last window is named slow, as Greyhound's second phase does
(``greyhound.slowest_rank``); where none grew, the job slowed at no place (kind "slow"). Its
defaults were set before it was scored: river's own alpha, a tolerance half of Greyhound's 10% and
a threshold of one e-fold of summed excess; ``fit`` chooses delta and threshold on a train split
(GRID)."""
import math

from testbed.faultbench.detectors.alarm import Alarm
from testbed.faultbench.detectors.greyhound import slowest_rank

DELTA, THRESHOLD = 0.05, 1.0
BEFORE = 50              # iterations before the last window the localisation compares it with


class Drift:
    name = "drift"
    about = "river's Page-Hinkley drift test on log iteration time, an alarm on an upward drift"
    GRID = {"delta": (0.02, 0.05, 0.1), "threshold": (0.5, 1.0, 2.0, 4.0)}

    def __init__(self, delta=DELTA, threshold=THRESHOLD):
        self.delta, self.threshold = delta, threshold

    def detect(self, trace):
        warm, its = trace.warm_s, trace.finished
        first = sum(1 for it in its if it["end"] <= warm)
        if first < 2 or first == len(its):
            return []
        from river.drift import PageHinkley  # a second to import: only where it is scored, not every run
        test = PageHinkley(min_instances=first, delta=self.delta, threshold=self.threshold, mode="up")
        alarms = []
        for t, it in enumerate(its):
            test.update(math.log(it["end"] - it["start"]))
            if not test.drift_detected or it["end"] <= warm:
                continue
            last = [i for i, other in enumerate(its[:t + 1]) if other["end"] > it["end"] - trace.cadence] or [t]
            rank = slowest_rank([other["timing"] for other in its[max(0, last[0] - BEFORE):last[0]]],
                                [its[i]["timing"] for i in last])
            alarms.append(Alarm(it["end"], "slow" if rank is None else "rank-slow",
                                "" if rank is None else f"rank {rank}",
                                f"iteration time drifted up (Page-Hinkley, delta {self.delta}, threshold "
                                f"{self.threshold}) at iteration {t}"
                                + ("" if rank is None else f"; rank {rank}'s own delay grew most")))
        return alarms
