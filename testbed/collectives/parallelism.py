"""A training job's parallelism: which ranks form each communication group, as Megatron orders the
ranks and SimAI's simulator forms its groups (aliyun/SimAI, MockNcclGroup and Workload.cc).

Ranks are ordered tensor-parallel innermost, then data parallel, then pipeline stage:
rank = tp_rank + tp * (dp_rank + dp * pp_rank), with dp = gpus / (tp * pp). Within a pipeline stage:

- TP: the tp consecutive ranks of one (dp_rank, stage);
- DP: the dp ranks of one (tp_rank, stage), tp apart;
- EP: ep consecutive data-parallel ranks of one tp_rank (expert parallelism carved out of the
  data-parallel dimension), so ep must divide dp;
- DP_EP: the dp / ep ranks of one tp_rank that hold the same experts (data-parallel indices ep
  apart);
- PP: the pp ranks of one (tp_rank, dp_rank), one per stage, which pass activations forward and
  gradients back point to point.

A workload file's collectives name their group by phase and suffix (SimAI's Workload.cc): in the
forward pass and the input gradient a plain name is TP, in the weight gradient DP; ``_EP`` is EP and
``_DP_EP`` is DP_EP in any phase.
"""
from dataclasses import dataclass

from testbed.errors import TestbedError

KINDS = ("TP", "DP", "EP", "DP_EP", "PP")


def group_kind(phase, suffix):
    """The group a workload phase's collective runs in: its suffix's, else TP (forward pass and
    input gradient) or DP (weight gradient)."""
    if suffix in ("EP", "DP_EP"):
        return suffix
    if suffix:
        raise TestbedError(f"unknown group suffix _{suffix}: a workload names _EP or _DP_EP, or none")
    return "DP" if phase == "weight_grad" else "TP"


@dataclass(frozen=True)
class Parallelism:
    gpus: int
    tp: int = 1
    pp: int = 1
    ep: int = 1

    def __post_init__(self):
        for name in ("gpus", "tp", "pp", "ep"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise TestbedError(f"the job's {name} must be a positive whole number (got {value!r})")
        if self.gpus % (self.tp * self.pp):
            raise TestbedError(f"tensor parallel {self.tp} x pipeline parallel {self.pp} does not divide the job's "
                               f"{self.gpus} GPUs: the data-parallel size must be a whole number")
        if self.dp % self.ep:
            raise TestbedError(f"expert parallel {self.ep} does not divide the data-parallel size {self.dp} "
                               f"({self.gpus} GPUs / (tp {self.tp} x pp {self.pp})): experts are spread over "
                               "data-parallel ranks")

    @property
    def dp(self):
        return self.gpus // (self.tp * self.pp)

    @property
    def dp_ep(self):
        return self.dp // self.ep

    def rank(self, tp_rank, dp_rank, stage):
        return tp_rank + self.tp * (dp_rank + self.dp * stage)

    def size(self, kind):
        return {"TP": self.tp, "DP": self.dp, "EP": self.ep, "DP_EP": self.dp_ep, "PP": self.pp}[kind]

    def groups(self, kind):
        """Every group of `kind` (KINDS), each a list of ranks in the group's own order."""
        r = self.rank
        stages, tps, dps = range(self.pp), range(self.tp), range(self.dp)
        if kind == "TP":
            return [[r(t, d, p) for t in tps] for p in stages for d in dps]
        if kind == "DP":
            return [[r(t, d, p) for d in dps] for p in stages for t in tps]
        if kind == "EP":
            return [[r(t, block * self.ep + e, p) for e in range(self.ep)]
                    for p in stages for block in range(self.dp_ep) for t in tps]
        if kind == "DP_EP":
            return [[r(t, e + self.ep * m, p) for m in range(self.dp_ep)]
                    for p in stages for e in range(self.ep) for t in tps]
        if kind == "PP":
            return [[r(t, d, p) for p in stages] for d in dps for t in tps]
        raise TestbedError(f"unknown group kind {kind!r}: one of {', '.join(KINDS)}")

    def describe(self):
        return (f"{self.gpus} GPUs: tp {self.tp} x dp {self.dp} x pp {self.pp}"
                + (f", ep {self.ep} (dp_ep {self.dp_ep})" if self.ep > 1 else ""))
