"""Run real socket allreduce: one worker process per rank, driven over its stdin/stdout.

A launcher starts a rank's process where it belongs: on loopback (no root, for fast tests) or
inside its emulated host. The coordinator is a barrier: every rank finishes iteration i before any
starts i+1. An iteration's time runs from the first rank's start to the last rank's end, on the
machine-wide monotonic clock that every namespace shares.
"""
import json
import queue
import subprocess
import sys
import threading
import time

import numpy as np

from testbed.controller import PROJECT, free_port
from testbed.errors import TestbedError
from testbed.placements import rank_ips

WORKER = [sys.executable, "-m", "testbed.worker"]
ELEMENT = 4   # float32


class AllreduceError(TestbedError):
    pass


def loopback_launcher(ranks):
    """(addresses, launch) for ranks on 127.0.0.1, each on a free port."""
    addresses = [("127.0.0.1", free_port()) for _ in range(ranks)]

    def launch(rank, argv):
        return subprocess.Popen(argv, cwd=PROJECT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
    return addresses, launch


def emulation_launcher(emu, hosts, port=7000):
    """(addresses, launch) for rank r inside host hosts[r], on its first NIC port."""
    addresses = [(ip, port) for ip in rank_ips(emu.topo, hosts)]

    def launch(rank, argv):
        return emu.popen(hosts[rank], argv, cwd=PROJECT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    return addresses, launch


class Coordinator:
    """with Coordinator(algorithm, addresses, launch) as c: c.run(count, iterations)"""

    def __init__(self, algorithm, addresses, launch, timeout=20.0, sockbuf=1 << 20, streams=1, pacing=None,
                 eager_limit=None):
        """pacing: bytes/s each connection is paced at (None: not paced); eager_limit: messages up to
        this many bytes are sent without waiting for the receiver (None: the worker's default)."""
        self.algorithm, self.addresses, self.launch = algorithm, addresses, launch
        self.timeout, self.sockbuf, self.streams, self.pacing = timeout, sockbuf, streams, pacing
        self.eager_limit = eager_limit
        self.procs, self.replies = [], queue.Queue()

    def __enter__(self):
        try:
            for rank in range(len(self.addresses)):
                cfg = {"rank": rank, "ranks": len(self.addresses), "algorithm": self.algorithm,
                       "addresses": self.addresses, "timeout": self.timeout, "sockbuf": self.sockbuf,
                       "streams": self.streams, "pacing": self.pacing, "eager_limit": self.eager_limit}
                proc = self.launch(rank, WORKER + [json.dumps(cfg)])
                self.procs.append(proc)
                threading.Thread(target=self._read, args=(rank, proc), daemon=True).start()
            self._collect("ready", self.timeout + 30)
        except BaseException:
            self._stop()
            raise
        return self

    def __exit__(self, *exc):
        self._stop()

    def _read(self, rank, proc):
        for line in proc.stdout:
            try:
                self.replies.put((rank, json.loads(line)))
            except ValueError:
                self.replies.put((rank, {"error": f"rank {rank} said: {line.strip()}"}))
        self.replies.put((rank, None))

    def _collect(self, key, timeout):
        """One reply with `key` from every rank within timeout s, or an AllreduceError."""
        got, deadline = {}, time.monotonic() + timeout
        while len(got) < len(self.procs):
            try:
                rank, msg = self.replies.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                missing = sorted(set(range(len(self.procs))) - set(got))
                raise AllreduceError(f"{self.algorithm}: ranks {missing} did not answer within {timeout:.0f} s") \
                    from None
            if msg is None:
                raise AllreduceError(f"{self.algorithm}: rank {rank} exited (code {self.procs[rank].wait()})")
            if "error" in msg:
                raise AllreduceError(f"{self.algorithm}: {msg['error']}")
            if key in msg:
                got[rank] = msg
        return [got[r] for r in range(len(self.procs))]

    def iterate(self, count, iteration, timeout):
        """One barrier-synchronised allreduce: its time, #wrong, and when each step ended (the
        last rank's end, from the iteration's start): the view that shows a straggling flow."""
        for rank, proc in enumerate(self.procs):
            try:
                proc.stdin.write(json.dumps({"count": count, "iteration": iteration}) + "\n")
                proc.stdin.flush()
            except OSError:   # its pipe broke: the worker is gone
                raise AllreduceError(f"{self.algorithm}: rank {rank} exited (code {proc.wait()})") from None
        replies = self._collect("iteration", timeout)
        start = min(r["t0"] for r in replies)
        # step i of the collective ends when its last rank ends it
        step_ends = [max(ends) - start for ends in zip(*(r["steps"] for r in replies))]
        return {"time": max(r["t1"] for r in replies) - start, "step_ends": step_ends,
                "wrong": sum(r["wrong"] for r in replies)}

    def run(self, count, iterations, warmup=1, timeout=120.0):
        """Times (s) of the timed iterations and the total #wrong over all of them, warmup included."""
        results = [self.iterate(count, i, timeout) for i in range(warmup + iterations)]
        return [r["time"] for r in results[warmup:]], sum(r["wrong"] for r in results)

    def _stop(self):
        for proc in self.procs:
            try:
                if proc.poll() is None:
                    proc.stdin.write(json.dumps({"quit": True}) + "\n")
                    proc.stdin.flush()
            except (BrokenPipeError, OSError, ValueError):
                pass
        deadline = time.monotonic() + 5
        for proc in self.procs:
            try:
                proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def bandwidths(size_bytes, seconds, ranks):
    """nccl-tests' algbw and busbw, bytes per second."""
    algbw = size_bytes / seconds
    return algbw, algbw * 2 * (ranks - 1) / ranks


def summarize(algorithm, size_bytes, times, wrong, ranks, link_mbit):
    median = float(np.median(times))
    algbw, busbw = bandwidths(size_bytes, median, ranks)
    return {"algorithm": algorithm, "size": size_bytes, "count": size_bytes // ELEMENT,
            "time_us": round(median * 1e6, 1), "p99_us": round(float(np.percentile(times, 99)) * 1e6, 1),
            "algbw_MBps": round(algbw / 1e6, 4), "busbw_MBps": round(busbw / 1e6, 4),
            "busbw_over_link": round(busbw * 8 / (link_mbit * 1e6), 3), "wrong": wrong}


COLUMNS = [("algorithm", "11s"), ("size", "9d"), ("count", "8d"), ("time_us", "11.1f"), ("p99_us", "11.1f"),
           ("algbw_MBps", "10.3f"), ("busbw_MBps", "10.3f"), ("busbw_over_link", "10.2f"), ("wrong", "7d")]
HEADINGS = ["algorithm", "size(B)", "count", "time(us)", "p99(us)", "algbw(MB/s)", "busbw(MB/s)",
            "busbw/link", "#wrong"]


def table_header():
    widths = [int(fmt.rstrip("sdf").split(".")[0]) for _, fmt in COLUMNS]
    return "# " + " ".join(f"{h:>{w}}" if i else f"{h:<{w}}" for i, (h, w) in enumerate(zip(HEADINGS, widths)))


def table_row(row):
    cells = [f"{row[key]:{fmt}}" if fmt.endswith("s") else f"{row[key]:>{fmt}}" for key, fmt in COLUMNS]
    return "  " + " ".join(cells)
