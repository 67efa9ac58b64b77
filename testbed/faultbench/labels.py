"""The labels of a trace: what was injected, where, how hard, from when to when, and what it cost
the job, one row per fault (two for a trial with two at once) and one per fault-free trial, in
`labels.parquet` beside the trace's folder, never in it: a detector reads the trace alone.

    trial, trial_start, trial_end   the trial and its span (seconds on the trace's clock)
    kind, place, magnitude          as injected (kind "none": a fault-free trial); magnitude on the
                                    kind's own scale (a slowed link's share of its rate, a slowed
                                    rank's of the CPU it used, a hang's seconds; null for the rest)
    start, end                      the fault's span (null for a fault-free trial)
    expected_kind, expected_place   what a detector names it as (``detectors.Alarm``); a link's
                                    place is its two ends, "a-b", in either order
    busbw_before, busbw_during      the job's bus bandwidth before and during it, MB/s
    second_job_s, straggler         the confounders in the trial: seconds of a second job's traffic,
                                    a rank held back from the start (no fault)
"""
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from testbed.errors import TestbedError
from testbed.report.fault_scores import magnitude

FILE = "labels.parquet"
COLUMNS = [("trial", pa.int32()), ("trial_start", pa.float64()), ("trial_end", pa.float64()),
           ("kind", pa.string()), ("place", pa.string()), ("magnitude", pa.float64()),
           ("start", pa.float64()), ("end", pa.float64()),
           ("expected_kind", pa.string()), ("expected_place", pa.string()),
           ("busbw_before", pa.float64()), ("busbw_during", pa.float64()),
           ("second_job_s", pa.float64()), ("straggler", pa.string())]


def from_rows(rows):
    """Label rows from a fault trial's rows (``experiments.fault_trials.run_trial``)."""
    out = []
    for r in rows:
        faulty = r["injected"] != "none"
        lasting = r["lasting_s"] if faulty and r["lasting_s"] is not None else None
        end = r["undone_s"] if lasting is None else min(r["undone_s"], r["inject_s"] + lasting)
        out.append({"trial": r["trial"], "trial_start": r["start_s"], "trial_end": r["end_s"], "kind": r["injected"],
                    "place": r["where"], "magnitude": magnitude(r) if faulty else None,
                    "start": r["inject_s"] if faulty else None, "end": round(end, 3) if faulty else None,
                    "expected_kind": r["expected"], "expected_place": r["expected_where"],
                    "busbw_before": r["busbw_before_MBps"], "busbw_during": r["busbw_during_MBps"],
                    "second_job_s": r["second_job_s"], "straggler": r["straggler"]})
    return out


def write(path, rows):
    """Label rows (``from_rows``) into the Parquet file `path`."""
    pq.write_table(pa.Table.from_pylist(rows, schema=pa.schema(COLUMNS)), path)
    return Path(path)


def read(path):
    """[label row] from `path`, or one line saying why not."""
    try:
        table = pq.read_table(path)
    except (OSError, pa.ArrowInvalid) as e:
        raise TestbedError(f"{path}: not a labels file ({str(e).splitlines()[0]}): give the {FILE} a run wrote "
                           "beside its trace") from None
    if table.schema.names != [name for name, _ in COLUMNS]:
        raise TestbedError(f"{path}: its columns are not a labels file's ({', '.join(n for n, _ in COLUMNS)})")
    return table.to_pylist()
