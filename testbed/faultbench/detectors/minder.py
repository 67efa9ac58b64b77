"""A Minder-style detector (Minder, NSDI 2025): the machine whose monitoring series departs from its
peers', for several windows in a row. Minder compares each machine's metrics (denoised by a
per-metric model) with every other machine's and alarms on the one farthest from the rest; here a
rank's series per window is what a trace holds of it (its own delay per step, the segments TCP
retransmitted for it, the drops at its host's egress), each scaled across the ranks by their
median and median absolute deviation, and the rank farthest from the others' median is named slow
when it stands more than DISTANCE robust deviations out for CONTINUITY windows in a row. It names
ranks only (a link's fault is named at a rank, or missed). Its parameters were set before it was
scored: Minder's own continuity (in windows, not minutes, at this job's second-long windows) and a
conventional 3.5 robust deviations; ``fit`` chooses both on a train split (GRID)."""
import statistics

from testbed.faultbench.detectors.alarm import Alarm
from testbed.fidelity.diagnosis import window_delays

DISTANCE, CONTINUITY = 3.5, 3


def rank_features(window, ranks, hosts):
    """[per rank: (mean own delay per step, segments retransmitted, drops at its host's egress)]"""
    delays = window_delays(window.timing)
    resent = [0] * ranks
    for iteration in window.timing:
        for r, t in enumerate(iteration):
            resent[r] += sum(segments for _, segments in t.get("retrans", ()))
    drops = [sum(samples[-1][3] - samples[0][3] for port, samples in window.edges.items()
                 if samples and port.split("-eth")[0] == host) for host in hosts]
    return [(statistics.mean(delays[r]) if delays.get(r) else 0.0, resent[r], drops[r]) for r in range(ranks)]


def farthest(features):
    """(rank, its distance): each feature scaled across ranks (median, median absolute deviation),
    a rank's distance the largest of its scaled features."""
    scaled = []
    for column in zip(*features):
        mid = statistics.median(column)
        spread = statistics.median(abs(v - mid) for v in column) or max(abs(mid) * 0.05, 1e-9)
        scaled.append([(v - mid) / (1.4826 * spread) for v in column])
    distance = [max(values) for values in zip(*scaled)]
    rank = max(range(len(distance)), key=distance.__getitem__)
    return rank, distance[rank]


class Minder:
    name = "minder"
    about = "Minder-style: the rank whose series departs from its peers' for 3 windows in a row"
    GRID = {"distance": (2.5, 3.5, 5.0), "continuity": (1, 2, 3)}

    def __init__(self, distance=DISTANCE, continuity=CONTINUITY):
        self.distance, self.continuity = distance, continuity

    def detect(self, trace):
        hosts = trace.manifest["job"]["hosts"]
        alarms, streak, standing = [], [], None
        start = trace.cadence * trace.baseline
        while start + trace.cadence <= trace.duration:
            end = start + trace.cadence
            window = trace.window(start, end)
            if window.timing:
                rank, distance = farthest(rank_features(window, len(hosts), hosts))
                out = distance > self.distance
                streak = streak + [rank] if out and (not streak or streak[-1] == rank) else [rank] if out else []
                if len(streak) >= self.continuity and standing != rank:
                    standing = rank
                    alarms.append(Alarm(end, "rank-slow", f"rank {rank}", f"rank {rank} stood {distance:.1f} robust "
                                        f"deviations from its peers for {len(streak)} windows"))
                if not streak:
                    standing = None
            start = end
        return alarms
