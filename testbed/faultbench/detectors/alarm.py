from dataclasses import dataclass

KINDS = ("link-slow", "link-down", "switch-down", "rank-slow", "rank-hung", "slow")


@dataclass(frozen=True)
class Alarm:
    """An incident a detector raised: when (seconds on the trace's clock: the end of the data it
    rests on), what (one of KINDS; "slow" where a detector tells a slowdown but not its kind) and
    where ("a-b" for a link by its ends' labels, a switch's label, "rank N", or "" where it cannot
    tell), and what it rests on, in words."""
    time: float
    kind: str
    place: str
    evidence: str

    def to_dict(self):
        return {"time": round(self.time, 3), "kind": self.kind, "place": self.place, "evidence": self.evidence}
