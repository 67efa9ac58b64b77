"""A page's headline claim as data: the figure of a run it reads and the bound it must meet, as
Mininet's test_hifi states a paper's claim with a tolerance. The same claim is printed with every
run, shown on the scenario's page, and checked by the scenario's smoke test
(``tests/emulation/test_claims.py``), so a regression is seen the day it happens."""
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

    def check(self, headline):
        """{claim, figure, value, verdict, said} on a run's headline figures."""
        value = headline.get(self.figure)
        if value is None:
            verdict, said = "NOT MEASURED", f"{self.figure} not in this run"
        else:
            verdict = "holds" if self.holds(value) else "DOES NOT HOLD"
            said = f"{self.figure} = {value:g}, needs {self.bound()}"
        return {"claim": self.text, "figure": self.figure, "value": value, "verdict": verdict, "said": said}


def check_claims(claims, headline):
    return [claim.check(headline) for claim in claims]
