"""The egress FIFO of one interface in the root namespace (a switch port), sampled over time."""
import bisect
import threading
import time

from testbed.emulation import shaping


class QueueSampler:
    """with QueueSampler("tb1-eth3") as q: <traffic>; then q.samples: [(wall time, packets, bytes,
    drops since the start)], one every `interval` s, and q.max_qlen, q.drops."""

    def __init__(self, ifname, interval=0.002):
        self.ifname, self.interval, self.samples = ifname, interval, []
        self._done = threading.Event()

    def _poll(self):
        with shaping.netlink() as ipr:
            first = shaping.queue_stats(ipr, self.ifname)["drops"]
            while not self._done.wait(self.interval):
                stats = shaping.queue_stats(ipr, self.ifname)
                self.samples.append((time.time(), stats["qlen"], stats["backlog"], stats["drops"] - first))

    def __enter__(self):
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._done.set()
        self._thread.join()

    @property
    def max_qlen(self):
        return max((s[1] for s in self.samples), default=0)

    @property
    def drops(self):
        return self.samples[-1][3] if self.samples else 0

    def backlog_at(self, t):
        """Bytes queued at wall time t: the last sample taken at or before t."""
        i = bisect.bisect_right(self.samples, t, key=lambda s: s[0])
        return self.samples[i - 1][2] if i else 0
