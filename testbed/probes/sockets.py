"""The TCP connections of hosts and the segments each has retransmitted, as a host agent reads them
without the program's help: ``ss`` (the kernel's inet_diag, the TCP_INFO of every socket) in each
host's network namespace, sampled over time."""
import bisect
import re
import subprocess
import threading
import time

# "10.0.0.1:41234 10.0.0.2:29500", or IPv4-mapped on an IPv6 socket: "[::ffff:10.0.0.1]:41234"
ENDS = re.compile(r"(?:\[::ffff:)?(\d+\.\d+\.\d+\.\d+)\]?:(\d+)\s+(?:\[::ffff:)?(\d+\.\d+\.\d+\.\d+)\]?:(\d+)")
RETRANS = re.compile(r"\bretrans:\d+/(\d+)")
DSACK = re.compile(r"\bdsack_dups:(\d+)")


def parse(text, host_of):
    """{(src host, sport, dst host, dport): segments retransmitted in the connection's life that the
    peer had not received} from ``ss -tinHO`` output: TCP's retransmissions less those the peer
    reported as duplicates (DSACK), which were not lost (a tail-loss probe or a timer that fired
    early, which a saturated machine's delays make common); connections whose ends are not both
    the fabric's hosts (host_of: {ip: host}) or are both on one host are left out."""
    out = {}
    for line in text.splitlines():
        ends = ENDS.search(line)
        if not ends:
            continue
        src, sport, dst, dport = ends.groups()
        if src not in host_of or dst not in host_of or host_of[src] == host_of[dst]:
            continue
        resent, duplicates = RETRANS.search(line), DSACK.search(line)
        lost = (int(resent.group(1)) if resent else 0) - (int(duplicates.group(1)) if duplicates else 0)
        out[host_of[src], int(sport), host_of[dst], int(dport)] = max(0, lost)
    return out


class SocketSampler:
    """with SocketSampler({host: pid in its namespace}, {ip: host}) as s: ...; then s.samples:
    [(monotonic time, {(src host, sport, dst host, dport): segments retransmitted so far})], one
    every `interval` s, every host's established connections read in turn."""

    def __init__(self, netns, host_of, interval=0.5):
        self.netns, self.host_of, self.interval = dict(netns), dict(host_of), interval
        self.samples = []
        self._done = threading.Event()

    def read(self):
        """Every host's connections now, read in all hosts at once (a sample's hosts in one span)."""
        runs = [subprocess.Popen(["nsenter", "-t", str(pid), "-n", "ss", "-tinHO", "state", "established"],
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
                for pid in self.netns.values()]
        out = {}
        for run in runs:
            out.update(parse(run.communicate()[0], self.host_of))
        return out

    def _poll(self):
        while not self._done.is_set():
            self.samples.append((time.monotonic(), self.read()))
            self._done.wait(self.interval)

    def at(self, t):
        """The counts of the last sample taken at or before monotonic time t ({} before the first)."""
        samples = list(self.samples)
        i = bisect.bisect_right(samples, t, key=lambda s: s[0])
        return samples[i - 1][1] if i else {}

    def __enter__(self):
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._done.set()
        self._thread.join()
