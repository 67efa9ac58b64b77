"""k senders to one receiver at once, round after round, for each fan-in k: the bottleneck queue,
drops, completion times, and how well the probes' estimate agrees with the FIFO
(``probes.incast``)."""
import numpy as np

from testbed.probes.incast import agreement, one_round, roles


def run_fanins(emu, fanins, size, rounds, interval, on_fanin=None, congestion_control=None):
    """One row per fan-in (queue depth, drops, completion p50/p99 against the ideal, how well probes
    and FIFO agree, the verdict) and the time series of every queue sample and probe;
    on_fanin(row, its part of the series) is called as each fan-in is measured. congestion_control:
    the senders' (None: the run's, --cc, else the hosts' default)."""
    topo = emu.topo
    link_bytes = topo.bytes_per_s
    frame = emu.mtu + 14
    receiver, prober, senders = roles(topo, fanins)
    rows, series = [], []
    for k in fanins:
        done, max_q, max_b, drops, diffs, bottleneck, mine, tcp = [], 0, 0, 0, [], False, [], []
        peak_cores, busiest = 0.0, {"busiest_core": 0.0, "busiest_core_name": "", "machine_busy": 0.0}
        for r in range(rounds):
            completion, queue, port, probes, cpu, senders_tcp = one_round(emu, receiver, prober, senders[:k], size,
                                                                          interval, congestion_control)
            done += completion
            tcp += senders_tcp
            max_q, max_b = max(max_q, queue.max_qlen(port)), max(max_b, queue.max_backlog(port))
            drops += queue.drops(port)
            pairs = agreement(probes, queue, port, link_bytes)
            diffs += [abs(p - q) / frame for _, p, q in pairs]
            bottleneck |= cpu["emulator_bottleneck"]
            peak_cores = max(peak_cores, cpu["ovs_vswitchd_cores"])
            if cpu["busiest_core"] >= busiest["busiest_core"]:     # the round whose busiest core was busiest
                busiest = {key: cpu[key] for key in busiest}
            mine += [{"fanin": k, "round": r, "kind": "qdisc", "time": t, "packets": n, "bytes": b, "drops": d}
                     for t, n, b, d, _ in queue.samples[port]]
            mine += [{"fanin": k, "round": r, "kind": "probe", "time": s, "packets": "", "bytes": round(p),
                      "drops": ""} for s, p, _ in pairs]
        row = {"fanin": k, "rounds": rounds, "max_queue_packets": max_q, "max_backlog_bytes": max_b,
               "drops": drops, "retransmits": sum(t["retransmits"] for t in tcp),
               "timeouts": None if any(t["timeouts"] is None for t in tcp) else sum(t["timeouts"] for t in tcp),
               "p50_done_ms": round(float(np.percentile(done, 50)) * 1e3, 1),
               "p99_done_ms": round(float(np.percentile(done, 99)) * 1e3, 1),
               "ideal_ms": round(k * size / link_bytes * 1e3, 1),
               "probe_qdisc_median_diff_frames": round(float(np.median(diffs)), 2) if diffs else None,
               "probes": len(diffs), "emulator_bottleneck": bottleneck, "ovs_vswitchd_cores": peak_cores,
               **busiest}
        rows.append(row)
        series += mine
        if on_fanin:
            on_fanin(row, mine)
    return rows, series
