"""A page's headline claim as data: the figure of a run it reads and the bound it must meet, as
Mininet's test_hifi states a paper's claim with a tolerance. The same claim is printed with every
run, shown on the scenario's page, and checked by the scenario's smoke test
(``tests/emulation/test_claims.py``), so a regression is seen the day it happens.

A paired gain ("...: gain", with its "gain low" and "gain high") is judged on its 95% interval, not
its mean: the claim holds when the whole interval meets the bound, DOES NOT HOLD when none of it
does, and is "not shown" when the interval lies on both sides (a few noisy trials prove nothing
either way). A figure without an interval is judged on its value."""
from dataclasses import dataclass


@dataclass(frozen=True)
class Claim:
    text: str                   # what the page says, in words
    figure: str                 # the headline figure (``Experiment.headline``) it reads
    at_least: float | None = None
    at_most: float | None = None

    def holds(self, value):
        return (self.at_least is None or value >= self.at_least) and (self.at_most is None or value <= self.at_most)

    def bound(self):
        return " and ".join(f"{op} {v:g}" for op, v in ((">=", self.at_least), ("<=", self.at_most)) if v is not None)

    def interval(self, headline):
        """(low, high) of a gain's 95% interval in the headline, or None."""
        lo, hi = headline.get(self.figure + " low"), headline.get(self.figure + " high")
        return (lo, hi) if isinstance(lo, (int, float)) and isinstance(hi, (int, float)) else None

    def check(self, headline):
        """{claim, figure, value, verdict, said, at_least, at_most} on a run's headline figures."""
        bounds = {"at_least": self.at_least, "at_most": self.at_most}
        value = headline.get(self.figure)
        if value is None:
            return {"claim": self.text, "figure": self.figure, "value": None, "verdict": "NOT MEASURED",
                    "said": f"{self.figure} not in this run", **bounds}
        ranged = self.interval(headline)
        if ranged is None:
            verdict = "holds" if self.holds(value) else "DOES NOT HOLD"
            said = f"{self.figure} = {value:g}, needs {self.bound()}"
        else:
            lo, hi = ranged
            wholly_out = ((self.at_least is not None and hi < self.at_least)
                          or (self.at_most is not None and lo > self.at_most))
            verdict = ("holds" if self.holds(lo) and self.holds(hi) else
                       "DOES NOT HOLD" if wholly_out else "not shown")
            said = f"{self.figure} = {value:g} [{lo:g}, {hi:g}], needs {self.bound()} over the 95% interval"
        return {"claim": self.text, "figure": self.figure, "value": value, "verdict": verdict, "said": said, **bounds}


def check_claims(claims, headline):
    return [claim.check(headline) for claim in claims]


def unfounded(kept, headline):
    """The kept verdicts (a record's) that its own figures and bounds do not give: a figure other
    than the headline's, or, where the record keeps the bound, another verdict."""
    def follows(c):
        if c.get("value") is not None and headline.get(c["figure"]) != c["value"]:
            return False
        return "at_least" not in c or Claim(c["claim"], c["figure"], c["at_least"], c["at_most"]).check(headline) == c
    return [c for c in kept if not follows(c)]


def refuted(checked):
    """The checked claims a run contradicts or could not measure (what a smoke test fails on)."""
    return [c for c in checked if c["verdict"] in ("DOES NOT HOLD", "NOT MEASURED")]
