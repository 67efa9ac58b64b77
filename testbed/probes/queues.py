"""The egress FIFOs of switch ports, sampled over time."""
import bisect
import contextlib
import threading
import time

from testbed.emulation import shaping
from testbed.topology import interface


class QueueSampler:
    """with QueueSampler(["tb1-eth3", ...]) as q: <traffic>; then q.samples[ifname]: [(wall time,
    packets, bytes, drops since the start, bytes sent since the start)], one every `interval` s (one
    netlink dump of every qdisc per sample, however many interfaces)."""

    def __init__(self, ifnames, interval=0.002, netns=lambda ifname: None):
        """netns(ifname): a pid in the interface's namespace, None for the root namespace
        (Emulation.port_netns)."""
        self.ifnames, self.interval = list(ifnames), interval
        self.groups = {}
        for name in self.ifnames:
            self.groups.setdefault(netns(name), []).append(name)
        self.samples = {name: [] for name in self.ifnames}
        self._done = threading.Event()

    def _poll(self):
        with contextlib.ExitStack() as stack:
            sockets = {pid: stack.enter_context(shaping.netlink(pid)) for pid in self.groups}
            first = self._stats(sockets)
            while not self._done.wait(self.interval):
                now, stats = time.time(), self._stats(sockets)
                for name, s in stats.items():
                    self.samples[name].append((now, s["qlen"], s["backlog"], s["drops"] - first[name]["drops"],
                                               s["bytes"] - first[name]["bytes"]))

    def _stats(self, sockets):
        out = {}
        for pid, names in self.groups.items():
            out.update(shaping.queue_stats_all(sockets[pid], names))
        return out

    def __enter__(self):
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._done.set()
        self._thread.join()

    def max_qlen(self, ifname):
        return max((s[1] for s in self.samples[ifname]), default=0)

    def max_backlog(self, ifname):
        return max((s[2] for s in self.samples[ifname]), default=0)

    def mean_backlog(self, ifname):
        series = self.samples[ifname]
        return sum(s[2] for s in series) / len(series) if series else 0.0

    def drops(self, ifname):
        return self.samples[ifname][-1][3] if self.samples[ifname] else 0

    def backlog_at(self, ifname, t):
        """Bytes queued at wall time t: the last sample taken at or before t."""
        series = self.samples[ifname]
        i = bisect.bisect_right(series, t, key=lambda s: s[0])
        return series[i - 1][2] if i else 0


class SwitchQueues:
    """with SwitchQueues(emulation) as seen: <traffic>; then seen.row: every switch port's FIFO
    sampled every `interval` s and its ECN counters read before and after (with marking on): the
    deepest backlog, the mean of each busy sample's deepest (a sample in which some port held
    packets), the drops and the marks over all ports; seen.sent_by(hosts): the marks on the packets
    those hosts sent."""

    def __init__(self, emulation, interval=0.005):
        self.emulation = emulation
        topo = emulation.topo
        ports = [interface(node, port) for link in topo.links for node, port in link.ends()
                 if node in topo.switches and emulation.here(node)]
        self.sampler = QueueSampler(ports, interval, netns=emulation.port_netns)
        self.row, self._sources = {}, {}     # _sources: per source, its marks in the run

    def _marks(self):
        """({"marked", "ect"} over every port, {source: {"marked", "ect"}} over every port)."""
        totals, sources = {"marked": 0, "ect": 0}, {}
        for classes in self.emulation.ecn_counts().values():
            for counts in classes.values():
                _add(totals, counts)
        for by_source in self.emulation.ecn_sources().values():
            for source, counts in (by_source or {}).items():
                _add(sources.setdefault(source, {"marked": 0, "ect": 0}), counts)
        return totals, sources

    def __enter__(self):
        self._before, self._before_sources = self._marks()
        self.sampler.__enter__()
        return self

    def __exit__(self, *exc):
        self.sampler.__exit__(*exc)
        (after, sources), series = self._marks(), list(self.sampler.samples.values())
        deepest = [max(s[2] for s in at) for at in zip(*series)] if series else []
        busy = [b for b in deepest if b > 0]
        self.row = {"queue_max_bytes": max(deepest, default=0),
                    "queue_busy_mean_bytes": round(sum(busy) / len(busy)) if busy else 0,
                    "fabric_drops": sum(s[-1][3] for s in series if s),
                    **{key: after[key] - self._before[key] for key in after}}
        before = self._before_sources
        self._sources = {source: {key: counts[key] - before.get(source, {}).get(key, 0) for key in counts}
                         for source, counts in sources.items()}

    def sent_by(self, hosts):
        """{"sent_marked", "sent_ect"}: of the packets the hosts sent (from any of their NICs' ports),
        how many switch ports marked, and how many passed them ECN-capable (a packet counted at
        every port it crossed)."""
        topo = self.emulation.topo
        ips = {port.ip for host in hosts for port in topo.hosts[host].ports}
        return {f"sent_{key}": sum(self._sources.get(ip, {}).get(key, 0) for ip in ips) for key in ("marked", "ect")}


def _add(into, counts):
    for key in into:
        into[key] += counts.get(key, 0)
