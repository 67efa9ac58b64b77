"""nccl-tests' metrics: algbw = bytes / time, busbw = algbw * 2(p-1)/p; busbw / link rate is the
efficiency, 1.0 the physical limit."""
import numpy as np

from testbed.collectives.data import ELEMENT_BYTES


def bandwidths(size_bytes, seconds, ranks):
    """nccl-tests' algbw and busbw, bytes per second."""
    algbw = size_bytes / seconds
    return algbw, algbw * 2 * (ranks - 1) / ranks


def result_row(algorithm, size_bytes, times, wrong, ranks, link_mbit):
    """One row of the nccl-tests-style table, from the timed iterations (median time)."""
    median = float(np.median(times))
    algbw, busbw = bandwidths(size_bytes, median, ranks)
    return {"algorithm": algorithm, "size": size_bytes, "count": size_bytes // ELEMENT_BYTES,
            "time_us": round(median * 1e6, 1), "p99_us": round(float(np.percentile(times, 99)) * 1e6, 1),
            "algbw_MBps": round(algbw / 1e6, 4), "busbw_MBps": round(busbw / 1e6, 4),
            "busbw_over_link": round(busbw * 8 / (link_mbit * 1e6), 3), "wrong": wrong}
