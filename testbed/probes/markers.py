"""What the ECN markers at the switch ports (emulation.ecn) hold, read with the bpf(2) system call
(a bpftool process per read would take 5-10 ms, several frames' time at these rates): how closely
the virtual queue of the data class follows the real FIFO behind it, beside the FIFO's backlog that
the queue sampler reads over netlink (``VirtualQueue``); each port's counts per class, read at once
(``Counters``, which the controller reads too); and how many packets each port has marked, over
time (``MarkSampler``)."""
import bisect
import ctypes
import os
import statistics
import struct
import threading
import time

from testbed.emulation.bpfmaps import lookup, map_fd
from testbed.emulation.ecn import CLASSES, CONFIG, QUEUES, Config, VirtualQueues

COUNTS = ("packets", "ect", "marked", "over")     # the marker's struct counts, u64 each


class Counters:
    """with Counters({port: its marker's ecn_counts map id}) as c: c.read(): {port: {class:
    {"packets", "ect", "marked", "over"}}} since the marker was attached, every port's in one go
    (a port whose map cannot be read left out); the maps stay open until the block ends."""

    def __init__(self, map_ids):
        self.map_ids, self._fds = dict(map_ids), {}

    def __enter__(self):
        try:
            for port, map_id in self.map_ids.items():
                self._fds[port] = map_fd(map_id, port)
        except OSError:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc):
        for fd in self._fds.values():
            os.close(fd)
        self._fds = {}

    def read(self):
        out = {}
        for port, fd in self._fds.items():
            classes = {cls: self._lookup(fd, index) for index, cls in enumerate(CLASSES)}
            if None not in classes.values():
                out[port] = classes
        return out

    @staticmethod
    def _lookup(fd, index):
        value = ctypes.create_string_buffer(8 * len(COUNTS))
        if not lookup(fd, ctypes.c_uint32(index), value):
            return None
        return dict(zip(COUNTS, struct.unpack_from(f"{len(COUNTS)}Q", value), strict=True))


class VirtualQueue:
    """with VirtualQueue(queues map id, config map id) as vq: <traffic>; vq.samples: [(wall time,
    bytes the marker's data class holds)]; vq.against(fifo samples): how far apart the two queues
    were."""

    def __init__(self, map_id, config_map_id, interval=0.002):
        self.map_id, self.config_map_id, self.interval = map_id, config_map_id, interval
        self.samples, self._done, self._thread = [], threading.Event(), None

    def __enter__(self):
        self._fd = map_fd(self.map_id, "its port")
        self._config_fd = map_fd(self.config_map_id, "its port")
        self._thread = threading.Thread(target=self._poll, name="virtual queue", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._done.set()
        self._thread.join()
        os.close(self._fd)
        os.close(self._config_fd)

    def _read(self):
        queues, config = ctypes.create_string_buffer(QUEUES.size), ctypes.create_string_buffer(CONFIG.size)
        if not (lookup(self._fd, ctypes.c_uint32(0), queues) and lookup(self._config_fd, ctypes.c_uint32(0), config)):
            return None
        *backlog, at_ns = QUEUES.unpack_from(queues.raw)
        now_ns = time.monotonic_ns()          # the program's clock (bpf_ktime_get_ns)
        return VirtualQueues(Config.unpacked(config.raw), backlog, at_ns).backlog(now_ns)

    def _poll(self):
        while not self._done.wait(self.interval):
            backlog = self._read()
            if backlog is not None:
                self.samples.append((time.time(), backlog))

    def against(self, fifo, frame):
        """{median and p95 |virtual - FIFO| in frames, the virtual queue's median over the FIFO's}
        over the virtual samples taken while either queue held a frame or more, each paired with the
        FIFO sample nearest in time (fifo: the queue sampler's [(time, packets, bytes, ...)])."""
        times = [s[0] for s in fifo]
        pairs = []
        for t, virtual in self.samples:
            i = bisect.bisect_left(times, t)
            near = min((j for j in (i - 1, i) if 0 <= j < len(fifo)), key=lambda j: abs(times[j] - t), default=None)
            if near is not None and max(virtual, fifo[near][2]) >= frame:
                pairs.append((virtual, fifo[near][2]))
        if not pairs:
            return {"marker_vs_fifo_median_frames": None, "marker_vs_fifo_p95_frames": None,
                    "marker_over_fifo": None}
        gaps = sorted(abs(v - f) / frame for v, f in pairs)
        fifo_median = statistics.median(f for _, f in pairs)
        return {"marker_vs_fifo_median_frames": round(statistics.median(gaps), 2),
                "marker_vs_fifo_p95_frames": round(gaps[int(0.95 * (len(gaps) - 1))], 2),
                "marker_over_fifo": round(statistics.median(v for v, _ in pairs) / fifo_median, 3)
                if fifo_median else None}


class MarkSampler:
    """with MarkSampler({port: its marker's ecn_counts map id}) as m: <traffic>; then m.samples[port]:
    [(wall time, packets the marker has set CE on since it was attached, all classes)], one every
    `interval` s, as the queue sampler keeps its samples (a switch's ECN counters, as an operator's
    telemetry reads them)."""

    def __init__(self, map_ids, interval=0.25):
        self.counters, self.interval = Counters(map_ids), interval
        self.samples = {port: [] for port in map_ids}
        self._done, self._thread = threading.Event(), None

    def __enter__(self):
        self.counters.__enter__()
        self._thread = threading.Thread(target=self._poll, name="ECN marks", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._done.set()
        if self._thread is not None:
            self._thread.join()
        self.counters.__exit__()

    def _poll(self):
        while True:
            now = time.time()
            for port, classes in self.counters.read().items():
                self.samples[port].append((now, sum(counts["marked"] for counts in classes.values())))
            if self._done.wait(self.interval):
                return
