"""A Greyhound-style detector (Falcon/Greyhound, USENIX ATC 2025): Bayesian online change-point
detection (Adams and MacKay 2007) on the job's iteration times, and an alarm where the iterations
since a change point are `shift` (10%, Greyhound's) or more slower than those before it. Then, as
the paper's second phase localises a slowdown by profiling the ranks, the rank whose own delay per
step (``fidelity.diagnosis.own_delays``) grew most across the change is named slow; where none grew,
the alarm says the job slowed at no place (kind "slow"). Its defaults were set from the papers
before it was scored: a constant hazard of one change in 50 iterations, a Normal-Gamma prior on log
iteration time fitted to the job's first iterations, a change taken where the most probable run
length falls behind the current segment, judged once it holds two iterations; ``fit`` chooses the
shift and the hazard on a train split (GRID)."""
import math

import numpy as np

from testbed.faultbench.detectors.alarm import Alarm
from testbed.fidelity.diagnosis import window_delays

HAZARD = 1 / 50          # the prior probability of a change at each iteration
SHIFT = 0.10             # Greyhound's: an alarm on a slowdown of 10% or more
LEAST = 2                # iterations a new segment holds before it is judged
MAX_RUN = 400            # run lengths kept (older ones carry no weight left)


def student_t_logpdf(x, mu, scale2, nu):
    from scipy.special import gammaln  # a third of a second to import: only where it is scored
    return (gammaln((nu + 1) / 2) - gammaln(nu / 2) - 0.5 * np.log(nu * math.pi * scale2)
            - (nu + 1) / 2 * np.log1p((x - mu) ** 2 / (nu * scale2)))


class ChangePoints:
    """Bayesian online change-point detection with a Normal-Gamma prior (unknown mean and variance):
    ``update(x)`` returns the most probable run length after x."""

    def __init__(self, mu, var, hazard=HAZARD):
        self.hazard = hazard
        self.prior = (mu, 1.0, 1.0, var)                  # mu, kappa, alpha, beta
        self.mu, self.kappa, self.alpha, self.beta = (np.array([p]) for p in self.prior)
        self.log_r = np.array([0.0])

    def update(self, x):
        scale2 = self.beta * (self.kappa + 1) / (self.alpha * self.kappa)
        log_pred = student_t_logpdf(x, self.mu, scale2, 2 * self.alpha)
        grow = self.log_r + log_pred + math.log(1 - self.hazard)
        change = np.logaddexp.reduce(self.log_r + log_pred + math.log(self.hazard))
        log_r = np.append(change, grow)
        self.log_r = (log_r - np.logaddexp.reduce(log_r))[:MAX_RUN]
        mu = (self.kappa * self.mu + x) / (self.kappa + 1)
        beta = self.beta + self.kappa * (x - self.mu) ** 2 / (2 * (self.kappa + 1))
        mu0, kappa0, alpha0, beta0 = self.prior
        self.mu = np.append(mu0, mu)[:MAX_RUN]
        self.kappa = np.append(kappa0, self.kappa + 1)[:MAX_RUN]
        self.alpha = np.append(alpha0, self.alpha + 0.5)[:MAX_RUN]
        self.beta = np.append(beta0, beta)[:MAX_RUN]
        return int(np.argmax(self.log_r))


def slowest_rank(before, after):
    """The rank whose mean own delay per step grew most from the iterations `before` to `after`
    (each [per rank timing]), or None where none grew."""
    was, now = window_delays(before), window_delays(after)
    growth = {r: np.mean(now[r]) - np.mean(was[r]) for r in now if now[r] and was.get(r)}
    rank = max(growth, key=growth.get, default=None)
    return rank if rank is not None and growth[rank] > 0 else None


class Greyhound:
    name = "greyhound"
    about = "Greyhound-style: Bayesian change points in iteration time, an alarm on a >= 10% slowdown"
    GRID = {"shift": (0.05, 0.1, 0.2, 0.4), "hazard": (1 / 20, 1 / 50, 1 / 200)}

    def __init__(self, shift=SHIFT, hazard=HAZARD):
        self.shift, self.hazard = shift, hazard

    def detect(self, trace):
        warm, its = trace.warm_s, trace.finished
        times = [(it["end"], math.log(it["end"] - it["start"])) for it in its]
        first = [x for t, x in times if t <= warm]
        if len(first) < 2 or len(first) == len(times):
            return []
        detector = ChangePoints(float(np.mean(first)), max(float(np.var(first)), 1e-4), self.hazard)
        series = [x for _, x in times]
        alarms, segment, judged, slow = [], 0, True, False
        for t, (at, x) in enumerate(times):
            start = t - detector.update(x)
            if start > segment:                              # a newer change is now the most probable
                segment, judged = start, False
            if judged or at <= warm or t - segment + 1 < LEAST:
                continue
            judged, before = True, series[max(0, segment - 50):segment]
            shift = math.exp(float(np.mean(series[segment:t + 1])) - float(np.mean(before))) - 1
            if shift >= self.shift and not slow:
                rank = slowest_rank([it["timing"] for it in its[max(0, segment - 50):segment]],
                                    [it["timing"] for it in its[segment:t + 1]])
                alarms.append(Alarm(at, "slow" if rank is None else "rank-slow", "" if rank is None else f"rank {rank}",
                                    f"iteration time {shift:+.0%} from iteration {segment} on, a change point "
                                    "(BOCPD)" + ("" if rank is None else f"; rank {rank}'s own delay grew most")))
            if abs(shift) >= self.shift:
                slow = shift > 0                             # slowed, or back
        return alarms
