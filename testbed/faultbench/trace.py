"""A trace: what an operator's monitor saw of a watched job, and nothing else, as a folder that
pandas, polars or DuckDB read:

    manifest.json         the format and its version, the job, the monitor's cadence, each
                          table's rows and SHA-256
    fabric.json           the fabric, in the form --topology FILE.json reads
    iterations.parquet    iteration, start, end: each allreduce of the job
    rank_starts.parquet   iteration, rank, start: when each rank began it
    steps.parquet         iteration, rank, step, sent, end, sender, receiver, rendezvous: each
                          step's send and end, the ranks it received from and sent to, whether
                          it waited for its receiver's clear-to-send
    retransmissions.parquet  iteration, rank, peer, segments: TCP's retransmissions per peer
                          (a launched job: rank 0, the job; each peer, one of its connections)
    switch_queues.parquet time, port, packets, bytes, drops, sent_bytes: every switch port's
                          egress FIFO, sampled (drops and bytes sent since the watch began)
    host_queues.parquet   the same for the ranks' hosts' own egress FIFOs
    ecn_marks.parquet     time, port, marked: packets marked since the marker was attached
                          (empty where ports do not mark)
    port_events.parquet   time, switch, port, up: the port changes the controller logged
    paths.parquet         rank, peer, link: the links each rank's data to a peer crosses, by
                          their index in fabric.json (empty where the kernel picked the ports)

Times are seconds from the watch's start on one clock. What was injected is never here: it is
in the labels, a file of their own (``faultbench.labels``). ``read`` refuses, in one line, a
folder of another format or version and a table whose bytes are not those the manifest lists."""
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from testbed.errors import TestbedError
from testbed.fidelity.windows import window_of
from testbed.topology import fabric_file

FORMAT, VERSION = "testbed-fault-trace", 1
MANIFEST, FABRIC = "manifest.json", "fabric.json"
SAMPLE = [("time", pa.float64()), ("port", pa.string()), ("packets", pa.int64()), ("bytes", pa.int64()),
          ("drops", pa.int64()), ("sent_bytes", pa.int64())]
TABLES = {
    "iterations": [("iteration", pa.int32()), ("start", pa.float64()), ("end", pa.float64())],
    "rank_starts": [("iteration", pa.int32()), ("rank", pa.int32()), ("start", pa.float64())],
    "steps": [("iteration", pa.int32()), ("rank", pa.int32()), ("step", pa.int32()), ("sent", pa.float64()),
              ("end", pa.float64()), ("sender", pa.int32()), ("receiver", pa.int32()), ("rendezvous", pa.bool_())],
    "retransmissions": [("iteration", pa.int32()), ("rank", pa.int32()), ("peer", pa.int32()),
                        ("segments", pa.int64())],
    "switch_queues": SAMPLE,
    "host_queues": SAMPLE,
    "ecn_marks": [("time", pa.float64()), ("port", pa.string()), ("marked", pa.int64())],
    "port_events": [("time", pa.float64()), ("switch", pa.string()), ("port", pa.int32()), ("up", pa.bool_())],
    "paths": [("rank", pa.int32()), ("peer", pa.int32()), ("link", pa.int32())],
}


def write(folder, *, topo, job, cadence, baseline, duration, iterations, queues, edges, marks, events, paths):
    """A trace of a watch into `folder` (made; it must not hold one): job {"algorithm", "hosts",
    "bytes", "routing"}; iterations [{"start", "end", "timing"}] (``programs.rank``), queues,
    edges and marks {port: [(time, ...)]}, events [(time, switch, port, up)], all on the trace's
    clock; paths {(rank, peer): links} or None. Returns the folder."""
    folder = Path(folder)
    folder.mkdir(parents=True)
    rows = {name: {column: [] for column, _ in columns} for name, columns in TABLES.items()}

    def add(table, *values):
        for (column, _), value in zip(TABLES[table], values):
            rows[table][column].append(value)
    for i, it in enumerate(iterations):
        add("iterations", i, it["start"], it["end"])
        for rank, timing in enumerate(it["timing"]):
            add("rank_starts", i, rank, timing["start"])
            for k, (sent, end, sender, receiver, rendezvous) in enumerate(timing["steps"]):
                add("steps", i, rank, k, sent, end, sender, receiver, bool(rendezvous))
            for peer, segments in timing.get("retrans", ()):
                add("retransmissions", i, rank, peer, segments)
    for table, sampled in (("switch_queues", queues), ("host_queues", edges), ("ecn_marks", marks)):
        for port, samples in sorted(sampled.items()):
            for t, *values in samples:
                add(table, t, port, *values)
    for event in events:
        add("port_events", *event)
    index = {link: k for k, link in enumerate(topo.links)}
    for (rank, peer), links in sorted((paths or {}).items()):
        for k in sorted(index[link] for link in links):
            add("paths", rank, peer, k)
    tables = {}
    for name, columns in TABLES.items():
        file = folder / f"{name}.parquet"
        pq.write_table(pa.table(rows[name], schema=pa.schema(columns)), file)
        tables[name] = {"rows": len(rows[name][columns[0][0]]), "sha256": _digest(file)}
    (folder / FABRIC).write_text(json.dumps(topo.to_dict(), indent=1))
    (folder / MANIFEST).write_text(json.dumps(
        {"format": FORMAT, "version": VERSION, "fabric": {"name": topo.name, "spec": topo.spec, "file": FABRIC},
         "job": job, "monitor": {"cadence_s": cadence, "baseline_windows": baseline},
         "duration_s": round(duration, 3), "paths_known": paths is not None, "tables": tables}, indent=1))
    return folder


def _digest(file):
    return hashlib.sha256(Path(file).read_bytes()).hexdigest()


@dataclass
class Trace:
    """A trace as read: its manifest, its fabric (a Topology), and each signal in the form a
    running watch keeps it, so that ``window`` gives a detector what the live monitor had."""
    folder: Path
    manifest: dict
    topo: object
    iterations: list        # [{"start", "end", "timing": [per rank {"start", "steps", "retrans"}]}]
    queues: dict            # {port: [(time, packets, bytes, drops, sent_bytes)]}
    edges: dict
    marks: dict             # {port: [(time, marked)]}
    events: list            # [(time, switch, port, up)]
    paths: dict | None      # {(rank, peer): frozenset of Links}

    @property
    def duration(self):
        return self.manifest["duration_s"]

    @property
    def cadence(self):
        return self.manifest["monitor"]["cadence_s"]

    @property
    def baseline(self):
        return self.manifest["monitor"]["baseline_windows"]

    @property
    def warm_s(self):
        """The end of the first windows, the ones the rules' baseline fills: a detector fitted on the
        job's own start judges nothing before it."""
        return self.cadence * (self.baseline + 1)

    @property
    def finished(self):
        """The iterations that took time, in the order they ended."""
        return sorted((it for it in self.iterations if it["end"] > it["start"]), key=lambda it: it["end"])

    def window(self, start, end):
        return window_of(self.iterations, self.queues, self.edges, self.marks, self.events, start, end)

    def table(self, name):
        """One of the trace's tables, as pyarrow reads it (``.to_pandas()`` for a DataFrame)."""
        return pq.read_table(self.folder / f"{name}.parquet")


def check(folder):
    """The manifest of the trace in `folder`, once its format and version and each table's bytes
    (against the manifest's SHA-256) are checked; one line saying why not otherwise."""
    folder = Path(folder)
    try:
        manifest = json.loads((folder / MANIFEST).read_text())
    except (OSError, ValueError) as e:
        raise TestbedError(f"{folder}: not a trace ({MANIFEST}: {e.__class__.__name__}): give a folder a watched "
                           "run wrote (its traceN)") from None
    if (manifest.get("format"), manifest.get("version")) != (FORMAT, VERSION):
        raise TestbedError(f"{folder}: a trace of format {manifest.get('format')} version {manifest.get('version')}; "
                           f"this testbed reads {FORMAT} version {VERSION}: regenerate it with this testbed")
    for name in TABLES:
        file, listed = folder / f"{name}.parquet", manifest.get("tables", {}).get(name)
        if listed is None or not file.is_file() or _digest(file) != listed["sha256"]:
            raise TestbedError(f"{file}: missing, truncated or changed since the trace was written (its SHA-256 "
                               "differs from the manifest's): regenerate the trace")
    return manifest


def read(folder):
    """The trace in `folder`, checked (``check``), its columns against the format's."""
    folder = Path(folder)
    manifest = check(folder)
    tables = {}
    for name, columns in TABLES.items():
        file = folder / f"{name}.parquet"
        table = pq.read_table(file)
        rows = manifest["tables"][name]["rows"]
        if table.schema.names != [column for column, _ in columns] or table.num_rows != rows:
            raise TestbedError(f"{file}: its columns or rows are not those of {FORMAT} version {VERSION}")
        tables[name] = table.to_pylist()
    topo = fabric_file.load(str(folder / FABRIC), 1, 1)
    return Trace(folder, manifest, topo, _iterations(tables), _samples(tables["switch_queues"]),
                 _samples(tables["host_queues"]), _samples(tables["ecn_marks"]),
                 [(e["time"], e["switch"], e["port"], e["up"]) for e in tables["port_events"]],
                 _paths(tables["paths"], topo) if manifest["paths_known"] else None)


def _iterations(tables):
    out = [{"start": it["start"], "end": it["end"], "timing": []} for it in tables["iterations"]]
    for row in tables["rank_starts"]:
        out[row["iteration"]]["timing"].append({"start": row["start"], "steps": [], "retrans": []})
    for row in tables["steps"]:
        out[row["iteration"]]["timing"][row["rank"]]["steps"].append(
            [row["sent"], row["end"], row["sender"], row["receiver"], row["rendezvous"]])
    for row in tables["retransmissions"]:
        out[row["iteration"]]["timing"][row["rank"]]["retrans"].append([row["peer"], row["segments"]])
    return out


def _samples(rows):
    out = {}
    for row in rows:
        values = list(row.values())
        out.setdefault(row["port"], []).append((values[0], *values[2:]))
    return out


def _paths(rows, topo):
    out = {}
    for row in rows:
        out.setdefault((row["rank"], row["peer"]), set()).add(topo.links[row["link"]])
    return {pair: frozenset(links) for pair, links in out.items()}
