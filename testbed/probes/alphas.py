"""DCTCP's alpha per connection, sampled while flows run: the fraction of a sender's bytes that the
switch ports marked, as DCTCP itself estimates it (emulation.dctcp keeps it per connection)."""
import statistics
import threading

from testbed.emulation import dctcp

INTERVAL_S = 0.25


class Alphas:
    """with Alphas(pairs, warm_s): ...; .means: {"src->dst": mean alpha of that pair's senders over
    the samples after their first warm_s seconds}. pairs: (source ip, destination ip)."""

    def __init__(self, pairs, warm_s=1.0):
        self.pairs, self.warm = set(pairs), warm_s
        self.samples = {}                     # (source ip, destination ip) -> [alpha]
        self._stop, self._thread = threading.Event(), None

    def __enter__(self):
        self._thread = threading.Thread(target=self._sample, name="dctcp alphas", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()

    def _sample(self):
        if self._stop.wait(self.warm):
            return
        while not self._stop.is_set():
            for (src, _, dst, _), alpha in dctcp.alphas().items():
                if (src, dst) in self.pairs:          # a sender's; its receiver's socket sends no data
                    self.samples.setdefault((src, dst), []).append(alpha)
            self._stop.wait(INTERVAL_S)

    @property
    def means(self):
        return {f"{src}->{dst}": round(statistics.mean(v), 3) for (src, dst), v in sorted(self.samples.items())}
