"""Paired comparisons over trials: two forms (of a fabric, or two algorithms) measured on the same
hash draw in each trial, each compared figure as a mean with its 95% confidence interval, and the
gain of one over the other as a ratio with its interval.

The pairing: trial t draws fresh 5-tuples from seed + t (``routing.hashing.Draw``) and runs both
forms on them, one right after the other, the first form first in even trials and second in odd
ones, so that a drift of the machine over the run falls on both alike. The gain of trial t is
b_t / a_t - 1; its interval is Student's t over the trials' gains (paired: the draw's own luck,
which both forms share, cancels out of each ratio), or the bootstrap's where Student's t would
reach below what the figure can be (a negative queue, a gain below -100%); trials that all read
alike give no interval. A figure that can be zero (a queue, drops,
idle links) is compared by its difference b_t - a_t instead: a ratio over a zero baseline is no
number, and leaving those trials out would keep only the trials that favour one form. An interval
that excludes zero shows a difference at 95% confidence; one that includes it shows none, which is
not the same as showing there is none. Every line says how many trials it is over, and why any
trial is left out.
"""
import math
from dataclasses import asdict, dataclass

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


def interval(values, confidence=CONFIDENCE, floor=None):
    """The mean of values and its two-sided Student-t interval; where the figure cannot go below
    `floor` (a queue, a time: 0; a gain by ratio: -1) and the t-interval does, the bootstrap's
    instead (``resampled``), which stays inside what was measured. Values all alike give no
    interval (nan ends): their spread, zero, says nothing of the figure's (frame-quantised medians
    read the same in every trial)."""
    values = [float(v) for v in values if v is not None and math.isfinite(v)]
    n = len(values)
    if not n:
        return Estimate(math.nan, math.nan, math.nan, 0)
    mean = sum(values) / n
    if n < 2 or max(values) == min(values):
        return Estimate(mean, math.nan, math.nan, n)
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    from scipy import stats  # seconds to import: only a run that compares pays for it
    half = float(stats.t.ppf(0.5 + confidence / 2, n - 1)) * sd / math.sqrt(n)
    if floor is not None and mean - half < floor:
        return resampled(values, confidence)
    return Estimate(mean, mean - half, mean + half, n)


def resampled(values, confidence=CONFIDENCE, seed=0):
    """The mean of values and its percentile bootstrap interval: it stays inside the values' range,
    so a figure bounded below (a share, a ratio of bandwidths) never reads below its bound, where a
    Student-t interval on three skewed trials does; with few trials it is too narrow, not too wide."""
    values = [float(v) for v in values if v is not None and math.isfinite(v)]
    n = len(values)
    if n < 2 or max(values) == min(values):
        return interval(values)
    from scipy import stats
    found = stats.bootstrap((values,), lambda x, axis=-1: x.mean(axis=axis), confidence_level=confidence,
                            method="percentile", n_resamples=9999, random_state=seed).confidence_interval
    return Estimate(sum(values) / n, float(found.low), float(found.high), n)


BY = ("ratio", "difference")


def _measured(v):
    return v is not None and math.isfinite(v)


def gains(pairs):
    """b / a - 1 for each (a, b) pair in which both were measured and a is not zero."""
    return [b / a - 1 for a, b in pairs if _measured(a) and _measured(b) and a]


def differences(pairs):
    """b - a for each (a, b) pair in which both were measured."""
    return [b - a for a, b in pairs if _measured(a) and _measured(b)]


def trial_order(forms, trial):
    """The forms in the order trial `trial` runs them: alternating, so drift falls on both."""
    return list(forms) if trial % 2 == 0 else list(forms)[::-1]


@dataclass
class Comparison:
    """One figure compared over paired trials: pairs[t] = (form a's value, form b's value). by:
    'ratio' (the gain is b / a - 1) or 'difference' (b - a, for a figure that can be zero);
    bounded: each form's figure is bounded below (a share, a ratio of bandwidths), so its interval is
    the bootstrap's (``resampled``), inside what the trials measured."""
    name: str
    labels: tuple          # (form a, form b), as a person names them
    pairs: list
    digits: int = 2
    by: str = "ratio"
    bounded: bool = False

    def __post_init__(self):
        if self.by not in BY:
            raise ValueError(f"by must be one of {BY} (got {self.by!r})")

    @property
    def a(self):
        return self._form([a for a, _ in self.pairs])

    @property
    def b(self):
        return self._form([b for _, b in self.pairs])

    def _form(self, values):
        """A form's figure: measured quantities (times, queues, rates) are never below zero."""
        return resampled(values) if self.bounded else interval(values, floor=0.0)

    @property
    def gain(self):
        """b over a less one (by ratio; never below -100%), or b less a (by difference), per trial:
        mean and interval."""
        if self.by == "ratio":
            return interval(gains(self.pairs), floor=-1.0)
        return interval(differences(self.pairs))

    @property
    def left_out(self):
        """[(trial, why)] for every trial the gain is not over."""
        out = []
        for t, (a, b) in enumerate(self.pairs):
            missing = [label for label, v in zip(self.labels, (a, b)) if not _measured(v)]
            if missing:
                out.append((t, f"no {' or '.join(missing)} value"))
            elif self.by == "ratio" and not a:
                out.append((t, f"{self.labels[0]} was 0, a ratio's baseline"))
        return out

    def line(self):
        a, b, gain = self.a, self.b, self.gain
        effect = percent(gain) if self.by == "ratio" else signed(gain, self.digits)
        return (f"{self.name}: {self.labels[0]} {figure(a, self.digits)}, {self.labels[1]} {figure(b, self.digits)}; "
                f"{self.labels[1]} {effect}{'' if self.by == 'ratio' else ' (difference)'} "
                f"{verdict(gain, len(self.pairs), self.left_out)}")

    def row(self, names=("a", "b")):
        """One flat CSV row: each form's mean and interval under `names`, the gain's, and the trials."""
        row = {}
        for label, e in ((names[0], self.a), (names[1], self.b), ("gain", self.gain)):
            row.update({label: _clean(e.mean), f"{label}_lo": _clean(e.lo), f"{label}_hi": _clean(e.hi)})
        return dict(row, by=self.by, excludes_zero=self.gain.excludes(0.0), trials=len(self.pairs),
                    paired=self.gain.n, left_out="; ".join(f"trial {t}: {why}" for t, why in self.left_out))

    def headline(self, name=None):
        """The figures a run's record keeps: each form's mean, and the gain's mean and interval."""
        name = name or self.name
        return {f"{name}: {self.labels[0]}": _clean(self.a.mean), f"{name}: {self.labels[1]}": _clean(self.b.mean),
                f"{name}: gain": _clean(self.gain.mean), f"{name}: gain low": _clean(self.gain.lo),
                f"{name}: gain high": _clean(self.gain.hi)}

    def to_dict(self):
        return {"name": self.name, "labels": list(self.labels), "pairs": self.pairs, "by": self.by,
                "a": self.a.to_dict(), "b": self.b.to_dict(), "gain": self.gain.to_dict(),
                "gain_excludes_zero": self.gain.excludes(0.0), "trials": len(self.pairs),
                "left_out": [{"trial": t, "why": why} for t, why in self.left_out]}


def _clean(v):
    return None if v is None or (isinstance(v, float) and math.isnan(v)) else round(v, 4)


def _said(e, form):
    """The estimate in words: form(value) for the mean, then [lo, hi] where there is an interval."""
    if not e.n:
        return "-"
    if math.isnan(e.lo):
        return form(e.mean) + (f" (all {e.n} alike)" if e.n > 1 else "")
    return f"{form(e.mean)} [{form(e.lo)}, {form(e.hi)}]"


def wilson(k, n, confidence=CONFIDENCE):
    """The share k/n with its Wilson score interval: (share, low, high), or Nones when n is 0."""
    if not n:
        return None, None, None
    from scipy import stats
    ci = stats.binomtest(k, n).proportion_ci(confidence, method="wilson")
    return k / n, ci.low, ci.high


def figure(e, digits=2):
    """'0.48 [0.44, 0.52]' (no interval with one trial)."""
    return _said(e, lambda v: f"{v:.{digits}f}")


def percent(e):
    """'+69% [+60%, +78%]' for a gain; below 10% with a decimal ('+0.4% [-0.2%, +1.0%]')."""
    return _said(e, lambda v: f"{100 * v:+.0f}%" if abs(100 * v) >= 9.95 else f"{100 * v:+.1f}%")


def signed(e, digits=2):
    """'-1.25 [-1.90, -0.60]' for a difference."""
    return _said(e, lambda v: f"{v:+.{digits}f}")


def verdict(e, trials=None, left_out=()):
    """'(7 of 8 paired trials, trial 3 left out: ...; the 95% interval excludes zero)'."""
    over = f"{e.n} paired trial{'s' if e.n != 1 else ''}" if trials in (None, e.n) else \
        f"{e.n} of {trials} paired trials"
    if left_out:
        shown = "; ".join(f"trial {t}: {why}" for t, why in left_out[:3])
        more = f"; {len(left_out) - 3} more" if len(left_out) > 3 else ""
        over += f" ({len(left_out)} left out: {shown}{more})"
    if e.n < 2:
        return f"({over}: no interval)"
    if math.isnan(e.lo):
        return f"({over}, all alike: no interval, no difference shown)"
    said = "excludes zero" if e.excludes(0.0) else "includes zero: no difference shown"
    return f"({over}; the 95% interval {said})"
