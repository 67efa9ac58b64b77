"""nccl-tests' metrics: algbw = bytes / time, busbw = algbw times the collective's factor (allreduce
2(p-1)/p; allgather, reduce-scatter, alltoall (p-1)/p; broadcast, sendrecv 1); busbw / link rate is
the efficiency, 1.0 the physical limit."""
import numpy as np

from testbed.collectives.data import COLLECTIVES, ELEMENT_BYTES


def bandwidths(size_bytes, seconds, ranks, collective="allreduce"):
    """nccl-tests' algbw and busbw, bytes per second."""
    algbw = size_bytes / seconds
    return algbw, algbw * COLLECTIVES[collective].busbw_factor(ranks)


def result_row(algorithm, size_bytes, times, wrong, ranks, link_mbit, ports=1, collective="allreduce"):
    """One row of the nccl-tests-style table from the timed iterations: the mean time (nccl-tests'
    figure, from which algbw and busbw come), the median and the 99th percentile. busbw above what
    a NIC's `ports` links carry cannot happen on faithful links: such a row is marked (above_link).
    A NIC of several ports (HPN7's bonded dual-port NIC) also gets busbw over its capacity."""
    mean = float(np.mean(times))
    algbw, busbw = bandwidths(size_bytes, mean, ranks, collective)
    over = busbw * 8 / (link_mbit * 1e6)
    row = {"collective": collective, "algorithm": algorithm, "size": size_bytes, "count": size_bytes // ELEMENT_BYTES,
           "time_us": round(mean * 1e6, 1), "median_us": round(float(np.median(times)) * 1e6, 1),
           "p99_us": round(float(np.percentile(times, 99)) * 1e6, 1), "iterations": len(times),
           "algbw_MBps": round(algbw / 1e6, 4), "busbw_MBps": round(busbw / 1e6, 4),
           "busbw_over_link": round(over, 3), "above_link": over > ports, "wrong": wrong}
    if ports > 1:
        row["busbw_over_nic"] = round(over / ports, 3)
    return row


def phase_of(t, spans):
    """'before', a window's name, or 'after <name>' for time t against spans [(name, (from, to))]."""
    phase = "before"
    for name, (a, b) in spans:
        if t < a:
            break
        phase = name if t <= b else f"after {name}"
    return phase


def failure_timeline(iterations, windows, started, ended, size, ranks, link_mbit):
    """A collective's iterations against failure windows. iterations: [{"start", "end", "time",
    "wrong"}]; windows: {name: (from, to)} in seconds since `started`. Returns per iteration its
    phase and busbw/link, and the summary: the longest stall (time without an iteration completing,
    from `started` to `ended`), and for each window the iterations per second completed in it and after it
    (until the next window), relative to before the first."""
    spans = sorted(windows.items(), key=lambda w: w[1][0])
    ends = [it["end"] - started for it in iterations]
    rows = []
    for it, end in zip(iterations, ends):
        _, busbw = bandwidths(size, it["time"], ranks)
        rows.append({"iteration": len(rows), "start_s": round(it["start"] - started, 3), "end_s": round(end, 3),
                     "seconds": round(it["time"], 4), "busbw_over_link": round(busbw * 8 / (link_mbit * 1e6), 3),
                     "wrong": it["wrong"], "phase": phase_of(end, spans)})
    last = max(ends, default=0.0)
    rate = lambda a, b: sum(1 for e in ends if a <= e < b) / (b - a) if b > a else None
    before = rate(0.0, spans[0][1][0] if spans else last)
    marks = [0.0] + ends + [ended - started]
    summary = {"iterations": len(rows), "longest_stall_s": round(max(b - a for a, b in zip(marks, marks[1:])), 2),
               "iterations_per_s_before": round(before, 2) if before else None,
               "wrong": sum(it["wrong"] for it in iterations)}
    relative = lambda r: round(r / before, 3) if before and r is not None else None
    for k, (name, (a, b)) in enumerate(spans):
        following = spans[k + 1][1][0] if k + 1 < len(spans) else last
        summary[name] = {"during_over_before": relative(rate(a, b)), "after_over_before": relative(rate(b, following))}
    return rows, summary


REFERENCE = {"link_gbit": 100.0, "step_us": 5.0}   # a real fabric to scale emulated sizes to


def hockney(rows, ranks, steps, collective="allreduce"):
    """The alpha-beta (Hockney) model fitted to one algorithm's sweep, t = steps * alpha +
    n * busbw factor * beta (allreduce: 2n(p-1)/p), by least squares on the relative error, so
    small and large sizes count alike: alpha, the time per step, and beta, the time per byte of
    the bandwidth term; None with fewer than two sizes."""
    if len({r["size"] for r in rows}) < 2:
        return None
    t = np.array([r["time_us"] / 1e6 for r in rows])
    x = np.array([r["size"] * COLLECTIVES[collective].busbw_factor(ranks) for r in rows])
    (a, b), *_ = np.linalg.lstsq(np.stack([1 / t, x / t], axis=1), np.ones(len(t)), rcond=None)
    return {"alpha_us": round(a / steps * 1e6, 1), "beta_ns_per_byte": round(b * 1e9, 2),
            "fitted_mbit": round(8 / b / 1e6, 2) if b > 0 else None, "steps": steps}


def real_size(size, fit, reference=REFERENCE):
    """The message size on the reference fabric whose bandwidth term bears the same ratio to its
    latency term as `size` does here: the emulation scales bandwidth by four orders of magnitude
    but its per-step latency by far less, so an emulated size stands for a larger real one."""
    beta_ref = 8 / (reference["link_gbit"] * 1e9)
    return size * (fit["beta_ns_per_byte"] * 1e-9 / beta_ref) * (reference["step_us"] / fit["alpha_us"])
