"""Load per link and queues at switch ports while a workload runs: how evenly hashing spread the
flows over every tier of a fabric, and what queued where.

    with Observation(emu, folder, queue_ports) as seen: <traffic>
    seen.loads   {directed link: {"flows", "bytes"}}, captured on every link of the fabric
    seen.links   the same as rows a person reads: link (labels), tier, flows, bytes
    seen.tiers   per tier (host->tor, tor->agg, agg->tor, tor->host ...): max/mean load and idle links
    seen.split   per bonded NIC: how unevenly its two downlinks were loaded
    seen.queues  per sampled port: the FIFO's mean and largest backlog; seen.sampler for the series
    seen.paths   per connection (5-tuple) that carried data: {directed link: its data bytes there}
"""
from pathlib import Path

from testbed.probes.collisions import LinkCapture
from testbed.probes.queues import QueueSampler


def link_loads(packets):
    """{link: {"flows": connections (5-tuples) that carried data on it, "bytes": their data-carrying
    bytes on the wire}}, over the whole capture."""
    out = {}
    for link, pkts in packets.items():
        flows, size = set(), 0
        for _, flow, length, data in pkts:
            if data:
                flows.add(flow)
                size += length
        out[link] = {"flows": len(flows), "bytes": size}
    return out


def connection_paths(packets):
    """{(src ip, sport, dst ip, dport): {link: data-carrying bytes on the wire}}: where each
    connection's data went."""
    out = {}
    for link, pkts in packets.items():
        for _, flow, length, data in pkts:
            if data:
                cell = out.setdefault(flow, {})
                cell[link] = cell.get(link, 0) + length
    return out


def tier_loads(topo, loads):
    """Per tier of links (topo.tier: host->tor, tor->agg ...): how many links, the most and the mean
    flows and bytes per link (a link that carried nothing counts as 0), and max/mean of the bytes:
    1.0 is perfectly even, n means one link carried n times the mean."""
    tiers = {}
    for sender, port, receiver, _ in topo.directed_links():
        if (sender, port) in loads:
            tiers.setdefault(topo.tier(sender, receiver), []).append(loads[sender, port])
    out = {}
    for tier, cells in sorted(tiers.items()):
        mean_bytes = sum(c["bytes"] for c in cells) / len(cells)
        out[tier] = {"links": len(cells), "idle_links": sum(1 for c in cells if not c["bytes"]),
                     "max_flows": max(c["flows"] for c in cells),
                     "mean_flows": round(sum(c["flows"] for c in cells) / len(cells), 2),
                     "max_bytes": max(c["bytes"] for c in cells), "mean_bytes": round(mean_bytes),
                     "max_over_mean": round(max(c["bytes"] for c in cells) / mean_bytes, 2) if mean_bytes else None}
    return out


def nic_downlink_split(topo, loads):
    """For each bonded NIC that received data: the busier of its downlinks' share of its bytes
    (0.5 even, 1.0 all on one) and busier/quieter (the HPN paper's "3x apart"; None when one
    carried nothing)."""
    out = {}
    for host in topo.hosts.values():
        down = [loads.get(topo.attachment(nic), {}).get("bytes", 0) for nic in host.ports
                if topo.attachment(nic)]
        if len(down) == 2 and sum(down):
            out[host.name] = {"busier_share": round(max(down) / sum(down), 3),
                              "busier_over_quieter": round(max(down) / min(down), 2) if min(down) else None}
    return out


class Observation:
    def __init__(self, emu, folder, queue_ports=(), interval=0.005):
        self.topo = emu.topo
        self.capture = LinkCapture(emu, Path(folder), links=self.topo.directed_links())
        self.sampler = QueueSampler(queue_ports, interval, netns=emu.port_netns)

    def __enter__(self):
        self.capture.__enter__()
        try:
            self.sampler.__enter__()
        except BaseException:
            self.capture.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc):
        self.sampler.__exit__(*exc)
        self.capture.__exit__(*exc)
        self.loads = link_loads(self.capture.packets)
        self.paths = connection_paths(self.capture.packets)
        self.links = [{"link": f"{self.topo.label(a)}:{ap}->{self.topo.label(b)}", "tier": self.topo.tier(a, b),
                       **self.loads[a, ap]} for a, ap, b, _ in self.topo.directed_links() if (a, ap) in self.loads]
        self.tiers = tier_loads(self.topo, self.loads)
        self.split = nic_downlink_split(self.topo, self.loads)
        self.queues = {port: {"mean_backlog": round(self.sampler.mean_backlog(port)),
                              "max_backlog": self.sampler.max_backlog(port), "drops": self.sampler.drops(port)}
                       for port in self.sampler.ifnames}
        captured = sum(size for pkts in self.capture.packets.values() for _, _, size, _ in pkts)
        counted = sum(self.capture.counter_bytes.values())
        self.capture_over_counters = round(captured / counted, 3) if counted else None

    def summary(self):
        """The observation as flat fields (the same for every run on one fabric, so CSV rows line
        up): per tier max/mean bytes and idle links, the busier downlink's share of a bonded NIC's
        bytes, the queues at the ports facing the NICs, and the capture against the port counters."""
        out = {}
        for tier in sorted({self.topo.tier(a, b) for a, _, b, _ in self.topo.directed_links()}):
            out[f"{tier}_max_over_mean"] = self.tiers.get(tier, {}).get("max_over_mean")
            out[f"{tier}_idle_links"] = self.tiers.get(tier, {}).get("idle_links")
        shares = [s["busier_share"] for s in self.split.values()]
        out["nic_busier_share"] = round(sum(shares) / len(shares), 3) if shares else None
        queues = list(self.queues.values())
        out["mean_queue_bytes"] = round(sum(q["mean_backlog"] for q in queues) / len(queues)) if queues else None
        out["max_queue_bytes"] = max((q["max_backlog"] for q in queues), default=None)
        out["queue_drops"] = sum(q["drops"] for q in queues)
        out["capture_over_port_counters"] = self.capture_over_counters
        return out
