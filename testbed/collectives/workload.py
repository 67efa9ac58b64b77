"""A training workload as SimAI's simulator reads it and AICB writes it, replayed with real
collectives.

The file's first line names the parallelism (``HYBRID_TRANSFORMER_FWD_IN_BCKWD``, ``DATA`` ...)
and its parameters (``model_parallel_NPU_group: 8 ep: 1 pp: 1 ...``); the second, how many layer
lines follow. A layer line has 12 whitespace-separated fields: its name, a placeholder (-1), then
for the forward pass, the input gradient and the weight gradient each a compute time (ns), a
collective (NONE, ALLREDUCE, ALLGATHER, REDUCESCATTER, ALLTOALL, BROADCAST, with an optional group
suffix such as _EP or _DP_EP) and its size in bytes, and last the weight update time (ns).

A replay runs, per iteration, every layer's forward pass in order, then every layer's input and
weight gradients in reverse order: each phase's computation is slept by every rank, then its
collective runs between the emulated hosts. Sizes are scaled by the emulated link rate over the
link rate the workload was made for (``scale``), so a collective takes here about as long as on
the real fabric and compute times are slept as written: the iteration keeps the workload's
balance of computation and communication. Every collective spans all of the job's ranks: a
scaled-down job has too few ranks for separate tensor-, expert- and data-parallel groups, so the
file's group suffixes are kept in the report, not in the placement.
"""
import re
from dataclasses import dataclass, field
from pathlib import Path

from testbed.collectives.data import ELEMENT_BYTES
from testbed.collectives.parallelism import Parallelism
from testbed.errors import TestbedError

KINDS = {"ALLREDUCE": "allreduce", "ALLGATHER": "allgather", "REDUCESCATTER": "reducescatter",
         "ALLTOALL": "alltoall", "BROADCAST": "broadcast"}
PHASES = ("forward", "input_grad", "weight_grad")
EMBEDDING = "embedding_layer"      # the layer SimAI leaves out of a pipeline stage's time


@dataclass(frozen=True)
class Phase:
    compute_ns: int
    collective: str      # a key of data.COLLECTIVES, or None
    group: str           # the file's group suffix ("" for the default group, "EP", "DP_EP")
    size: int            # bytes, as written


@dataclass
class Layer:
    name: str
    phases: dict         # {phase name: Phase}
    update_ns: int


@dataclass
class Workload:
    path: str
    parallelism: str
    parameters: dict
    layers: list = field(default_factory=list)

    def collectives(self):
        """The collective types the workload runs, in order of first use."""
        seen = {}
        for layer in self.layers:
            for phase in layer.phases.values():
                if phase.collective and phase.size:
                    seen.setdefault(phase.collective, None)
        return list(seen)

    def compute_s(self):
        """Seconds of computation per iteration, as written."""
        return sum(p.compute_ns for layer in self.layers for p in layer.phases.values()) / 1e9 + \
            sum(layer.update_ns for layer in self.layers) / 1e9

    def number(self, key, default=None):
        """A whole number of the header (``model_parallel_NPU_group: 8``, ``pp_comm 4096``; AICB writes
        some as floats, ``pp_comm 8388608.0``), or default."""
        if key not in self.parameters:
            return default
        try:
            written = float(self.parameters[key])
            if not written.is_integer():
                raise ValueError
            value = int(written)
        except ValueError:
            raise TestbedError(f"{self.path}:1: {key} should be a whole number (got "
                               f"{self.parameters[key]!r})") from None
        if value < 0:
            raise TestbedError(f"{self.path}:1: {key} cannot be negative (got {value})")
        return value

    @property
    def gpus(self):
        """The GPU count the file was made for (``all_gpus``), or None when it does not say."""
        return self.number("all_gpus")

    def groups(self, ranks=None):
        """The job's groups at `ranks` GPUs (default: the file's own count), from its header."""
        gpus = ranks if ranks is not None else self.gpus
        if not gpus:
            raise TestbedError(f"--workload {self.path} names no GPU count (all_gpus in its first line): "
                               "give the ranks to replay it on with --ranks")
        tp = self.number("model_parallel_NPU_group", 1) or 1
        try:
            return Parallelism(gpus, tp=tp, pp=self.number("pp", 1) or 1, ep=self.number("ep", 1) or 1)
        except TestbedError as e:
            raise TestbedError(f"--workload {self.path} on {gpus} GPUs: {e}") from None

    def micro_batches(self):
        """Micro-batches a pipeline stage passes on per iteration: one per virtual stage and
        gradient-accumulation step (vpp x ga), each pp_comm bytes, as SimAI counts the pipeline."""
        return (self.number("vpp", 1) or 1) * (self.number("ga", 1) or 1)

    def pipeline_bytes(self):
        """Bytes a pipeline stage passes its neighbour per iteration each way: pp_comm per micro-batch."""
        return self.number("pp_comm", 0) * self.micro_batches()

    def stage_compute_s(self):
        """A pipeline stage's computation per iteration as SimAI's bubble counts it: every layer's
        forward, input- and weight-gradient compute but the embedding layer's (``Layer.cc``
        leaves ``embedding_layer`` out), no weight update."""
        return sum(p.compute_ns for layer in self.layers if layer.name != EMBEDDING
                   for p in layer.phases.values()) / 1e9

    def sequence(self):
        """[(layer index, layer name, phase name, Phase)] in the order an iteration runs them."""
        forward = [(k, layer.name, "forward", layer.phases["forward"]) for k, layer in enumerate(self.layers)]
        backward = [(k, layer.name, p, layer.phases[p]) for k, layer in reversed(list(enumerate(self.layers)))
                    for p in PHASES[1:]]
        return forward + backward


def _kind(text, where):
    if text == "NONE":
        return None, ""
    base, _, group = text.partition("_")
    if base not in KINDS:
        raise TestbedError(f"{where}: unknown collective {text!r}: this replay knows "
                           f"{', '.join(KINDS)} (with an optional group suffix such as _EP), and NONE")
    return KINDS[base], group


def _int(text, what, where):
    try:
        value = int(float(text))
    except ValueError:
        raise TestbedError(f"{where}: {what} should be a number (got {text!r})") from None
    if value < 0:
        raise TestbedError(f"{where}: {what} cannot be negative (got {text!r})")
    return value


def read(path):
    """The workload in a SimAI workload file, checked line by line (a bad line: one error naming
    the file, the line and the fix)."""
    path = Path(path)
    try:
        lines = [line for line in path.read_text().splitlines() if line.strip()]
    except (OSError, UnicodeDecodeError) as e:
        raise TestbedError(f"--workload {path}: cannot read it ({e.__class__.__name__}): give a SimAI workload file") \
            from None
    if len(lines) < 3:
        raise TestbedError(f"--workload {path}: a SimAI workload file has a parallelism line, a layer count and "
                           "one line per layer")
    head = lines[0].split()
    parameters = dict(re.findall(r"(\S+):\s+(\S+)", lines[0]))
    pp_comm = re.search(r"\bpp_comm\s+(\S+)", lines[0])          # written without a colon by some AICB versions
    if pp_comm:
        parameters["pp_comm"] = pp_comm.group(1)
    count = _int(lines[1].strip(), "the layer count", f"{path}:2")
    if count != len(lines) - 2:
        raise TestbedError(f"{path}:2: says {count} layers but {len(lines) - 2} layer lines follow: "
                           "correct the count")
    workload = Workload(str(path), head[0], parameters)
    for number, line in enumerate(lines[2:], start=3):
        where = f"{path}:{number}"
        cells = line.split()
        if len(cells) != 12:
            raise TestbedError(f"{where}: a layer line has 12 fields (name, -1, then compute time, collective and "
                               f"size for forward, input gradient and weight gradient, and the update time); "
                               f"got {len(cells)}")
        phases = {}
        for k, name in enumerate(PHASES):
            compute, kind, size = cells[2 + 3 * k: 5 + 3 * k]
            collective, group = _kind(kind, where)
            phases[name] = Phase(_int(compute, f"{name} compute time", where), collective, group,
                                 _int(size, f"{name} size", where))
        workload.layers.append(Layer(cells[0], phases, _int(cells[11], "the update time", where)))
    if not workload.collectives():
        raise TestbedError(f"--workload {path}: no layer runs a collective: nothing to replay on the network")
    for key in ("all_gpus", "model_parallel_NPU_group", "ep", "pp", "vpp", "ga", "pp_comm", "checkpoints",
                "checkpoint_initiates"):
        workload.number(key)                       # a header value that is no number: refused here
    if workload.number("checkpoints", 0) or workload.number("checkpoint_initiates", 0):
        raise TestbedError(f"--workload {path}:1: activation recomputation (checkpoints: "
                           f"{workload.number('checkpoints', 0)}) is not replayed: the forward pass SimAI runs again "
                           "inside the backward pass would be left out; give a file with checkpoints: 0 (as AICB "
                           "writes them)")
    if workload.gpus:
        workload.groups()                          # groups that do not divide the GPUs: refused here
    return workload


def scaled_count(size, scale, ranks):
    """Elements of a collective of `size` real bytes at `scale`, a whole number of blocks of one
    element or more per rank (as every collective's algorithms can take)."""
    elements = max(1, round(size * scale / ELEMENT_BYTES / ranks)) * ranks
    return elements


def data_parallel(ranks, gradient_bytes, compute_s):
    """A synthetic data-parallel job as a workload: per iteration `compute_s` of computation, then an
    allreduce of `gradient_bytes` over all its ranks (the weight gradient's, in the DP group)."""
    phases = {"forward": Phase(round(compute_s * 1e9), None, "", 0), "input_grad": Phase(0, None, "", 0),
              "weight_grad": Phase(0, "allreduce", "", gradient_bytes)}
    return Workload(f"allreduce:{ranks}:{gradient_bytes}:{compute_s * 1e3:g}", "DATA", {"all_gpus": str(ranks)},
                    [Layer("gradients", phases, 0)])
