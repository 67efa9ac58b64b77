"""What the API hands back: plain result objects carrying the figures a test asserts on, each with
its row (every measured field) and its verdict."""
from __future__ import annotations

from dataclasses import dataclass, field

from testbed.fidelity.verdict import flag


def _verdict(row: dict) -> str:
    return flag(row) if "emulator_bottleneck" in row else "ok"


@dataclass(frozen=True)
class Collective:
    """One size of a collective's sweep, as nccl-tests prints it: the mean time, algbw and busbw
    (bytes/s over 1e6, busbw with the collective's factor), busbw over the link rate, the results
    that differed from numpy, and the verdict ('ok', or BOTTLENECK / LOSS / ABOVE-LINK: see
    docs/fidelity.md)."""
    algorithm: str
    size: int
    ranks: int
    time_us: float
    algbw_MBps: float
    busbw_MBps: float
    busbw_over_link: float
    wrong: int
    verdict: str
    row: dict = field(repr=False)
    collective: str = "allreduce"

    @property
    def emulator_bottleneck(self) -> bool:
        return self.verdict == "BOTTLENECK"

    @property
    def chose(self) -> str:
        """What `auto` ran at this size (the algorithm itself for any other)."""
        return self.row.get("chose", self.algorithm)

    @classmethod
    def from_row(cls, row: dict) -> Collective:
        return cls(row["algorithm"], row["size"], row["ranks"], row["time_us"], row["algbw_MBps"],
                   row["busbw_MBps"], row["busbw_over_link"], row["wrong"], _verdict(row), row,
                   row.get("collective", "allreduce"))


class Sweep(list):
    """The Collective of each (algorithm, size) measured, in order."""

    def get(self, algorithm: str, size: int) -> Collective:
        for c in self:
            if c.algorithm == algorithm and c.size == size:
                return c
        raise KeyError(f"no {algorithm} at {size} bytes in this sweep")

    def ratio(self, a: str, b: str, size: int, figure: str = "busbw_MBps") -> float:
        """a's figure over b's at `size` (busbw: > 1 when a is faster; time_us: < 1 when it is)."""
        return getattr(self.get(a, size), figure) / getattr(self.get(b, size), figure)

    @property
    def wrong(self) -> int:
        return sum(c.wrong for c in self)


@dataclass(frozen=True)
class Collisions:
    """One trial of an allreduce under the collision probe: steps in which a directed link carried
    two or more of the step's flows, measured on captured packets and predicted from the routes
    (None where hashing decides), busbw over the link, and the capture checked against the
    switch ports' counters (1.0: nothing missed)."""
    algorithm: str
    trial: int
    collided_steps: int
    steps: int
    predicted_collided_steps: int | None
    max_flows_per_link: int
    busbw_over_link: float
    wrong: int
    capture_over_port_counters: float | None
    verdict: str
    row: dict = field(repr=False)

    @classmethod
    def from_row(cls, row: dict) -> Collisions:
        return cls(row["algorithm"], row["trial"], row["collided_steps"], row["steps"],
                   row["predicted_collided_steps"], row["max_flows_per_link"], row["busbw_over_link"],
                   row["wrong"], row["capture_over_port_counters"], _verdict(row), row)


@dataclass(frozen=True)
class Flows:
    """Long-lived TCP flows measured with every link captured: goodput over the source NIC's
    capacity (mean and slowest), per tier the busiest link's bytes over the tier's mean and its idle
    links, the busier of each bonded NIC's two downlinks' share, switch-port queues, the capture
    against the port counters, and measured over the max-min flow model (with a `draw`, whose
    connections the model knows)."""
    flows: list[dict] = field(repr=False)
    goodput_over_nic: float
    min_goodput_over_nic: float
    tiers: dict[str, float]
    idle_links: dict[str, int]
    nic_busier_share: float | None
    mean_queue_bytes: float
    capture_over_port_counters: float | None
    measured_over_model: float | None
    verdict: str
    links: list[dict] = field(repr=False)
    row: dict = field(default_factory=dict, repr=False)      # every figure, flat, for a CSV row
    queue_samples: dict = field(default_factory=dict, repr=False)   # {port: [(time, packets, bytes, drops, sent)]}
    alphas: dict = field(default_factory=dict)      # {"src->dst": DCTCP's mean alpha}, with dctcp senders


@dataclass(frozen=True)
class Together:
    """Collectives run at once, each over its communicator (``api.Comm``): one row per
    communicator (nccl-tests' figures, #wrong, measured over the flow model from the captured
    paths, how many connections took the path hashing gives them), what the capture saw of every
    link (per tier max/mean and idle links, queues, a bonded NIC's split: ``summary``), and the
    verdict over all of them."""
    rows: list[dict]
    summary: dict
    links: list[dict] = field(repr=False)
    queue_samples: dict = field(repr=False)
    verdict: str = "ok"

    def row(self, label: str) -> dict:
        for row in self.rows:
            if row["label"] == label:
                return row
        raise KeyError(f"no communicator {label!r} here")

    @property
    def wrong(self) -> int:
        return sum(r["wrong"] for r in self.rows)


@dataclass(frozen=True)
class FabricCheck:
    """Ping between every pair of NIC ports, one TCP flow over the longest path, parallel flows on
    spread-out paths; each flow's goodput over the link rate. `lines` say it as a person reads it."""
    passed: bool
    single_flow: float
    parallel_min: float
    summary: dict = field(repr=False)
    lines: list[str] = field(default_factory=list, repr=False)
