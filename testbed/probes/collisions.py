"""The collision probe: which flows crossed which switch-to-switch link in each collective step.

Capture: tcpdump on every directed switch-to-switch link (or any set of directed links), at its
switch end in the root namespace: the sending end (`-Q out`), or for a link a host sends on, the
receiving switch port (`-Q in`); immediate mode, bounded by a BPF filter, a snap length of 96 bytes,
a packet cap and a time cap, into one pcap per directed link. Analysis: scapy reads the pcaps back
and attributes every data-carrying packet to its flow by 5-tuple. A flow is one connection, from one
rank to one peer, and keeps its path (a fixed 5-tuple hashes the same way every time), so the
schedule says in which steps it carries data and how much: a link is *collided* in a step when two
or more of that step's flows crossed it. Attributing by schedule, not by clock, keeps ranks that run
a step ahead from blurring the steps. The bytes captured on each link are checked against the
OpenFlow port counters of the switch port where they were captured.

Prediction: with deterministic routes the load of every link in every step follows from the
schedule (`predicted_loads`); with ECMP it depends on the 5-tuple hash and only the probe knows.
"""
import re
import signal
import socket
import struct
import subprocess
import time
from pathlib import Path

from testbed.collectives.data import ELEMENT_BYTES
from testbed.collectives.placements import rank_ips
from testbed.collectives.schedules import rounds, step_pairs
from testbed.emulation import ovs
from testbed.errors import TestbedError
from testbed.routing import link_load
from testbed.topology import interface

SNAPLEN = 96


def predicted_loads(schedule, hosts, topo, routes):
    """For each step, {directed link: flows} when every rank sends at once over `routes`."""
    ip = rank_ips(topo, hosts)
    return [link_load(routes, [(ip[a], ip[b]) for a, b in pairs]) for pairs in step_pairs(schedule, len(hosts))]


def predicted_collided_steps(schedule, hosts, topo, routes):
    """Steps in which two or more flows share a switch-to-switch link, or None without routes."""
    if routes is None:
        return None
    fabric = {link for _, link in topo.fabric_ports()}
    return sum(1 for load in predicted_loads(schedule, hosts, topo, routes)
               if max((n for link, n in load.items() if link in fabric), default=0) >= 2)


class CapturePoint:
    """Where a directed link (named by its sending end) is captured: a switch port, a direction."""

    def __init__(self, topo, sender, port, receiver, receiver_port):
        self.link = (sender, port)
        self.switch_port, self.direction = ((sender, port), "out") if sender in topo.switches \
            else ((receiver, receiver_port), "in")
        self.intf = interface(*self.switch_port)
        self.pcap = f"{self.intf}.{self.direction}.pcap"

    def counted(self, counters):
        """Bytes the switch port's counters saw in this direction."""
        received, sent = counters[self.switch_port]
        return sent if self.direction == "out" else received


class LinkCapture:
    """with LinkCapture(emu, folder) as cap: <traffic>; then cap.packets, cap.counter_bytes, both
    keyed by directed link (sending node, port). links: which ones (default: every directed
    switch-to-switch link), as [(sender, port, receiver, port)]."""

    def __init__(self, emu, folder, links=None, bpf="tcp", max_packets=400000, max_seconds=900):
        self.emu, self.folder = emu, Path(folder)
        self.bpf, self.max_packets, self.max_seconds = bpf, max_packets, max_seconds
        topo = emu.topo
        links = links if links is not None else [d for d in topo.directed_links() if d[0] in topo.switches
                                                 and d[2] in topo.switches]
        self.points = [CapturePoint(topo, *d) for d in links]
        self.procs, self.kernel_drops = [], 0

    def _counters(self):
        return ovs.port_bytes(sorted({p.switch_port for p in self.points}), self.emu.ofctl_targets)

    def __enter__(self):
        self.folder.mkdir(parents=True, exist_ok=True)
        self._before = self._counters()
        for point in self.points:
            self.procs.append(self.emu.spawn(
                ["timeout", str(self.max_seconds), "tcpdump", "-i", point.intf, "-Q", point.direction, "-n", "-U",
                 "--immediate-mode", "-Z", "root", "-s", str(SNAPLEN), "-c", str(self.max_packets),
                 "-w", str(self.folder / point.pcap), self.bpf], switch=point.switch_port[0],
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True))
        for proc in self.procs:   # tcpdump says "listening on ..." once its filter is attached
            line = proc.stderr.readline()
            if "listening" not in line:
                self._stop()
                raise TestbedError(f"tcpdump did not start: {line.strip()}")
        return self

    def __exit__(self, *exc):
        self._drain()
        self._stop()
        after = self._counters()
        self.counter_bytes = {p.link: p.counted(after) - p.counted(self._before) for p in self.points}
        self.packets = {p.link: read_packets(self.folder / p.pcap) for p in self.points}

    def _drain(self, settle=0.3, cap=10.0):
        """Wait until tcpdump has written everything: on SIGINT it stops reading at once. (Without
        --immediate-mode libpcap hands over packets a block at a time, and the last, unfinished
        block was lost: captures came to 0.78-1.00 of the port counters.)"""
        sizes, deadline = None, time.monotonic() + cap
        while time.monotonic() < deadline:
            now = [(self.folder / p.pcap).stat().st_size for p in self.points]
            if now == sizes:
                return
            sizes = now
            time.sleep(settle)

    def _stop(self):
        for proc in self.procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)   # timeout(1) passes it on; tcpdump flushes and reports
        for proc in self.procs:
            try:
                err = proc.communicate(timeout=10)[1]
            except subprocess.TimeoutExpired:
                proc.kill()
                err = proc.communicate()[1]
            found = re.search(r"(\d+) packets dropped by kernel", err or "")
            self.kernel_drops += int(found.group(1)) if found else 0


ETHERNET, IPV4, TCP_PROTO = 1, 0x0800, 6
ETH_HEADER = struct.Struct("!12xH")
IP_HEADER = struct.Struct("!BxH5xB2x4s4s")
TCP_HEADER = struct.Struct("!HH8xB")


def read_packets(path):
    """[(wall time, flow 5-tuple, bytes on the wire, carries data)] from a pcap of Ethernet frames.
    scapy reads the file; the three headers' few fields are unpacked here, since dissecting every
    packet with scapy's layers took 9 s for the 68,576 packets of one hpn7_planes trial."""
    from scapy.utils import RawPcapReader
    out = []
    with RawPcapReader(str(path)) as reader:
        if reader.linktype != ETHERNET:
            raise TestbedError(f"{path}: a capture of link type {reader.linktype}, not Ethernet")
        per_second = 1e9 if getattr(reader, "nano", False) else 1e6
        for frame, meta in reader:
            if len(frame) < 54 or ETH_HEADER.unpack_from(frame)[0] != IPV4:
                continue
            version_ihl, ip_len, proto, src, dst = IP_HEADER.unpack_from(frame, 14)
            ihl = 4 * (version_ihl & 0x0F)
            if proto != TCP_PROTO or len(frame) < 14 + ihl + 13:
                continue
            sport, dport, offset = TCP_HEADER.unpack_from(frame, 14 + ihl)
            payload = ip_len - ihl - 4 * (offset >> 4)
            flow = (socket.inet_ntoa(src), sport, socket.inet_ntoa(dst), dport)
            out.append((meta.sec + meta.usec / per_second, flow, meta.wirelen, payload > 0))
    return out


def flows_by_link(packets):
    """{link: {(src ip, dst ip): data bytes on the wire}} (one connection per direction and peer)."""
    out = {}
    for link, pkts in packets.items():
        for _, (src, _, dst, _), size, data in pkts:
            if data:
                cell = out.setdefault(link, {})
                cell[src, dst] = cell.get((src, dst), 0) + size
    return out


def step_flows(schedule, hosts, topo, count):
    """For each step, {(src ip, dst ip): bytes the schedule sends}."""
    ip = rank_ips(topo, hosts)
    plans = [schedule.steps(r, len(hosts), count) for r in range(len(hosts))]
    return [{(ip[r], ip[d]): ELEMENT_BYTES * (plans[r][i].send[1] - plans[r][i].send[0]) for r, d, i, _ in moved}
            for moved in rounds(schedule, len(hosts), count)]


def per_step(by_link, steps):
    """For each step and link its flows crossed: the flows, their bytes (each flow's bytes on the
    link shared among its steps in proportion to what the schedule sends), collided or not."""
    totals = {}
    for flows in steps:
        for flow, size in flows.items():
            totals[flow] = totals.get(flow, 0) + size
    rows = []
    for step, flows in enumerate(steps):
        for link, seen in sorted(by_link.items()):
            here = [f for f in flows if seen.get(f) and flows[f]]
            if here:
                rows.append({"step": step, "link": f"{link[0]}:{link[1]}", "flows": len(here),
                             "bytes": round(sum(seen[f] * flows[f] / totals[f] for f in here)),
                             "collided": len(here) >= 2})
    return rows


def steps_summary(rows, steps):
    """Per step: links used, collided links (2+ of the step's flows), the most flows on one link."""
    out = []
    for step in range(steps):
        mine = [r for r in rows if r["step"] == step]
        out.append({"step": step, "links_used": len(mine),
                    "collided_links": [r["link"] for r in mine if r["collided"]],
                    "max_flows_per_link": max((r["flows"] for r in mine), default=0)})
    return out
