"""Paired comparisons over trials: two forms (of a fabric, or two algorithms) measured on the same
hash draw in each trial, each compared figure as a mean with its 95% confidence interval, and the
gain of one over the other as a ratio with its interval.

The pairing: trial t draws fresh 5-tuples from seed + t (``routing.hashing.Draw``) and runs both
forms on them, one right after the other, the first form first in even trials and second in odd
ones, so that a drift of the machine over the run falls on both alike. The gain of trial t is
b_t / a_t - 1; its interval is Student's t over the trials' gains (paired: the draw's own luck,
which both forms share, cancels out of each ratio). An interval that excludes zero shows a
difference at 95% confidence; one that includes it shows none, which is not the same as showing
there is none.
"""
import math
from dataclasses import asdict, dataclass

from scipy import stats

CONFIDENCE = 0.95


@dataclass(frozen=True)
class Estimate:
    mean: float
    lo: float        # the interval's ends; nan with fewer than two trials
    hi: float
    n: int

    def excludes(self, value=0.0):
        return bool(self.lo > value or self.hi < value)

    def to_dict(self):
        return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in asdict(self).items()}


def interval(values, confidence=CONFIDENCE):
    """The mean of values and its two-sided Student-t interval."""
    values = [float(v) for v in values if v is not None and math.isfinite(v)]
    n = len(values)
    if not n:
        return Estimate(math.nan, math.nan, math.nan, 0)
    mean = sum(values) / n
    if n < 2:
        return Estimate(mean, math.nan, math.nan, n)
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    half = float(stats.t.ppf(0.5 + confidence / 2, n - 1)) * sd / math.sqrt(n)
    return Estimate(mean, mean - half, mean + half, n)


def gains(pairs):
    """b / a - 1 for each (a, b) pair in which both were measured and a is not zero."""
    return [b / a - 1 for a, b in pairs if a is not None and b is not None and a]


def trial_order(forms, trial):
    """The forms in the order trial `trial` runs them: alternating, so drift falls on both."""
    return list(forms) if trial % 2 == 0 else list(forms)[::-1]


@dataclass
class Comparison:
    """One figure compared over paired trials: pairs[t] = (form a's value, form b's value)."""
    name: str
    labels: tuple          # (form a, form b), as a person names them
    pairs: list
    digits: int = 2

    @property
    def a(self):
        return interval([a for a, _ in self.pairs])

    @property
    def b(self):
        return interval([b for _, b in self.pairs])

    @property
    def gain(self):
        return interval(gains(self.pairs))

    def line(self):
        a, b, gain = self.a, self.b, self.gain
        return (f"{self.name}: {self.labels[0]} {figure(a, self.digits)}, {self.labels[1]} {figure(b, self.digits)}; "
                f"{self.labels[1]} {percent(gain)} {verdict(gain)}")

    def to_dict(self):
        return {"name": self.name, "labels": list(self.labels), "pairs": self.pairs,
                "a": self.a.to_dict(), "b": self.b.to_dict(), "gain": self.gain.to_dict(),
                "gain_excludes_zero": self.gain.excludes(0.0)}


def figure(e, digits=2):
    """'0.48 [0.44, 0.52]' (no interval with one trial)."""
    if not e.n:
        return "-"
    if math.isnan(e.lo):
        return f"{e.mean:.{digits}f}"
    return f"{e.mean:.{digits}f} [{e.lo:.{digits}f}, {e.hi:.{digits}f}]"


def percent(e):
    """'+69% [+60%, +78%]' for a gain."""
    if not e.n:
        return "-"
    if math.isnan(e.lo):
        return f"{100 * e.mean:+.0f}%"
    return f"{100 * e.mean:+.0f}% [{100 * e.lo:+.0f}%, {100 * e.hi:+.0f}%]"


def verdict(e):
    if e.n < 2:
        return f"({e.n} trial: no interval)"
    said = "excludes zero" if e.excludes(0.0) else "includes zero: no difference shown"
    return f"({e.n} paired trials; the 95% interval {said})"
