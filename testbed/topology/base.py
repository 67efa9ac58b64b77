"""A topology as plain data: hosts with NIC ports, switches with roles, links with rate and queue.

Subclasses describe a fabric in ``build()``, as Mininet's ``Topo.build()`` does; nothing here needs
root or Mininet. Addresses: port p of host h<i> is 10.0.p.(i+1) with MAC 02:00:00:pp:ii:ii, one subnet
per port index, for the first 254 hosts, which is as many as an emulation holds (a fabric that is
only modelled goes on with 10.b.p.(i mod 254 + 1), b = i div 254); a fabric whose NICs are bonded
(``shared_nic_address``, HPN's dual-ToR NIC) gives both ports of a host the address and MAC of
port 0. Switch ports are OpenFlow port numbers, assigned in the order links are added. Interface
names follow Mininet's ``<node>-eth<port>``; ``interface()`` is the one place that says so.

A server's **scale-up domain** (``scaleup_domain``: its links' rate over a NIC's, 0 for none), as
NVLink joins a server's accelerators: every two hosts of one server (``Host.server``) get a direct
link of their own, not through any switch, each host one address on it, 10.b.250.(i+1); what two
ranks of one server send each other goes there and never meets the fabric. Its links are not in
``links`` (no switch port, no routing rule): ``scaleup_links`` gives them to the model.
"""
import copy
from dataclasses import dataclass, field

from testbed.errors import TestbedError

EMULATED_HOSTS = 254     # one /24 per NIC port index: the hosts an emulation can address
SCALEUP_SUBNET = 250     # the third byte of a host's scale-up address
MAX_SCALEUP = 64         # a scale-up link at most this many times a NIC's rate
MAX_HOSTS = 254 * 256
DEFAULT_RATE = 10.0      # Mbit/s: one userspace ovs-vswitchd carries 16-32 hosts at this rate (docs/design.md)
DEFAULT_QUEUE = 100      # packets in each egress FIFO


def bytes_per_s(mbit):
    return mbit * 1e6 / 8


def interface(node, port):
    """The name of node's interface for a NIC port index (hosts) or an OpenFlow port (switches)."""
    return f"{node}-eth{port}"


@dataclass(frozen=True)
class Switch:
    name: str            # OVS bridge name (mechanical, prefixed so cleanup can find it)
    label: str           # what a person reads: U0, L3, leaf1, tor.s0.r1.p0 ...
    index: int
    role: str
    plane: int | None = None

    @property
    def dpid(self):
        return self.index + 1


@dataclass(frozen=True)
class NicPort:
    host: str
    port: int
    ip: str
    mac: str

    @property
    def intf(self):
        return interface(self.host, self.port)

    @property
    def subnet(self):
        return int(self.ip.split(".")[2])


@dataclass
class Host:
    name: str
    index: int
    server: int
    rail: int | None = None
    ports: list = field(default_factory=list)


@dataclass(frozen=True)
class Link:
    """A full-duplex link; a host end is a NIC port index, a switch end an OpenFlow port."""
    a: str
    a_port: int
    b: str
    b_port: int
    rate: float          # Mbit/s
    queue: int           # packets

    @property
    def bytes_per_s(self):
        return bytes_per_s(self.rate)

    def ends(self):
        return [(self.a, self.a_port), (self.b, self.b_port)]


def with_scaleup(topo, ratio):
    """topo with every server's scale-up domain at `ratio` times a NIC's rate (0: none), checked."""
    if not (ratio == 0 or 1 <= ratio <= MAX_SCALEUP):
        raise TestbedError(f"--scaleup must be 0 (no scale-up domain) or between 1 and {MAX_SCALEUP} times a NIC's "
                           f"rate (got {ratio:g})")
    if ratio and any(s.role == "scaleup" for s in topo.switches.values()):
        raise TestbedError(f"{topo.name}'s servers have a scale-up bridge of their own: leave --scaleup out")
    topo.scaleup_domain = float(ratio)
    return topo


def positive_int(name, value):
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise TestbedError(f"{name} must be a positive whole number (got {value!r})")
    return value


class Topology:
    """Base class: call the add_* helpers from build()."""
    shared_nic_address = False   # True: a host's NIC ports share one IP and MAC (one bonded NIC)
    notes = ()                   # what a user should be told about how the fabric was read, one line each

    def __init__(self, rate=DEFAULT_RATE, queue=DEFAULT_QUEUE, delay=0.0, scaleup_domain=0.0):
        if not rate > 0:
            raise TestbedError(f"link rate must be positive (got {rate!r} Mbit/s): use e.g. --rate 10")
        positive_int("queue (packets)", queue)
        self.rate, self.queue, self.scaleup_domain = float(rate), queue, 0.0
        self.delay = delay       # ms one-way delay of every link (netem; see switch_delay); 0: none
        self.hosts, self.switches, self.links = {}, {}, []
        self._ports_used = {}
        self.build()
        with_scaleup(self, scaleup_domain)

    def build(self):
        raise NotImplementedError

    @property
    def name(self):
        return type(self).__name__

    @property
    def bytes_per_s(self):
        """The link rate in bytes per second (every link of a fabric runs at the same rate)."""
        return bytes_per_s(self.rate)

    def add_switch(self, label, role, plane=None):
        index = len(self.switches)
        switch = Switch(f"tb{index + 1}", label, index, role, plane)
        self.switches[switch.name] = switch
        self._ports_used[switch.name] = 0
        return switch

    def add_host(self, server, rail=None):
        index = len(self.hosts)
        if index >= MAX_HOSTS:
            raise TestbedError(f"at most {MAX_HOSTS} hosts fit the addressing plan: choose a smaller topology")
        host = Host(f"h{index}", index, server, rail)
        self.hosts[host.name] = host
        self._ports_used[host.name] = 0
        return host

    def _next_port(self, node):
        """Switch ports are OpenFlow numbers from 1; host ports are NIC port indices from 0."""
        port = self._ports_used[node]
        self._ports_used[node] += 1
        if node in self.switches:
            return port + 1
        index = self.hosts[node].index
        subnet = 0 if self.shared_nic_address else port
        block, number = divmod(index, EMULATED_HOSTS)
        self.hosts[node].ports.append(NicPort(
            node, port, f"10.{block}.{subnet}.{number + 1}",
            f"02:00:00:{subnet:02x}:{index >> 8:02x}:{index & 0xFF:02x}"))
        return port

    def add_link(self, a, b, rate=None):
        """A link at the fabric's rate, or its own (Mbit/s)."""
        a, b = getattr(a, "name", a), getattr(b, "name", b)
        link = Link(a, self._next_port(a), b, self._next_port(b), rate or self.rate, self.queue)
        self.links.append(link)
        return link

    # --- the scale-up domain ---------------------------------------------------------------
    def same_server(self, a, b):
        """Whether hosts a and b are two accelerators of one server joined by its scale-up domain."""
        return bool(self.scaleup_domain) and a != b and self.hosts[a].server == self.hosts[b].server

    def scaleup_ip(self, host):
        block, number = divmod(self.hosts[host].index, EMULATED_HOSTS)
        return f"10.{block}.{SCALEUP_SUBNET}.{number + 1}"

    def scaleup_port(self, host, peer):
        """The name of host's end of its scale-up link to peer (a port of no switch)."""
        return f"su{self.hosts[peer].index}"

    def scaleup_pairs(self):
        """[(a, b)]: every two hosts of one server, a before b, where there is a scale-up domain."""
        if not self.scaleup_domain:
            return []
        by = {}
        for host in sorted(self.hosts.values(), key=lambda h: h.index):
            by.setdefault(host.server, []).append(host.name)
        return [(a, b) for hosts in by.values() for i, a in enumerate(hosts) for b in hosts[i + 1:]]

    def scaleup_links(self):
        """The scale-up domain's links, ends named (host, scaleup_port): for the model."""
        return [Link(a, self.scaleup_port(a, b), b, self.scaleup_port(b, a), self.rate * self.scaleup_domain,
                     self.queue) for a, b in self.scaleup_pairs()]

    # --- queries --------------------------------------------------------------------------
    def nic_ports(self):
        return [p for h in self.hosts.values() for p in h.ports]

    @property
    def multi_port(self):
        """Whether a host's NIC has two ports or more (a port of it can go down alone)."""
        return any(len(h.ports) > 1 for h in self.hosts.values())

    def addresses(self):
        """{ip: [the NIC ports that carry it]}: one port each, or a bonded NIC's ports."""
        out = {}
        for nic in self.nic_ports():
            out.setdefault(nic.ip, []).append(nic)
        return out

    def peers(self, nic):
        """[(ip, mac)] of the other hosts' NICs that nic reaches: those on its subnet."""
        found = {p.ip: p.mac for p in self.nic_ports() if p.host != nic.host and p.subnet == nic.subnet}
        return sorted(found.items(), key=lambda item: tuple(map(int, item[0].split("."))))

    def attachment(self, nic):
        """(switch name, switch port) a NIC port is cabled to, or None if its link is gone."""
        return self._far_ends().get((nic.host, nic.port))

    def _far_ends(self):
        """{(node, port): (node, port) at the link's other end}, for the links as they are now (a
        view made by without() has a list of its own)."""
        if getattr(self, "_ends_of", None) is not self.links:
            self._far, self._ends_of = {}, self.links
            for link in self.links:
                (a, ap), (b, bp) = link.ends()
                self._far[a, ap], self._far[b, bp] = (b, bp), (a, ap)
        return self._far

    def link_at(self, node, port):
        """The link whose end is (node, port), or None."""
        return next((link for link in self.links if (node, port) in link.ends()), None)

    def without(self, links):
        """The same fabric with some links gone (failed), for routing around them."""
        view = copy.copy(self)
        view.links = [link for link in self.links if link not in set(links)]
        return view

    def fabric_links(self):
        """The switch-to-switch links."""
        return [link for link in self.links if link.a in self.switches and link.b in self.switches]

    def switch_ports(self):
        """(interface, link) for every switch end of a link: the interfaces in the root namespace."""
        return [(interface(node, port), link) for link in self.links
                for node, port in link.ends() if node in self.switches]

    def switch_delay(self, link):
        """The netem delay (ms) at a switch's end of link; hosts' ends get none. A host's egress must
        not have netem: netem releases a packet from its socket as it takes it, which blinds TCP's
        small-queue limit to the host's NIC queue, and that queue then fills, with the ACKs of the
        host's incoming flow behind it. The switch end of a host's link holds its packets for both
        directions instead: every host-to-host path starts and ends on such a link, so each path
        keeps `delay` per link, one way."""
        return self.delay * (2 if self.is_host_link(link) else 1)

    def is_host_link(self, link):
        return link.a in self.hosts or link.b in self.hosts

    def fabric_ports(self):
        """[(interface, (switch, port))] for the sending end of every directed switch-to-switch link."""
        return [(interface(node, port), (node, port)) for link in self.fabric_links() for node, port in link.ends()]

    def directed_links(self):
        """[(sender, its port, receiver, its port)] for both directions of every link."""
        return [(a, ap, b, bp) for link in self.links
                for (a, ap), (b, bp) in (link.ends(), link.ends()[::-1])]

    def label(self, node):
        """What a person calls a node: a switch's label, a host's name."""
        return self.switches[node].label if node in self.switches else node

    def tier(self, sender, receiver):
        """What a directed link joins, by role: 'host->tor', 'tor->agg', 'upper->lower' ..."""
        role = lambda node: self.switches[node].role if node in self.switches else "host"
        return f"{role(sender)}->{role(receiver)}"

    def transit(self, switch, dst_nic):
        """The out ports `switch` may use towards dst_nic, where the fabric's design narrows its
        equal-cost ones; None: any of them. A scale-up bridge (role 'scaleup') sends a message for
        a host that does not hang off it out to the rail switch (role 'rail', its plane the rail's
        number) of the destination's rail: a rail-only fabric's rule (``topology.railonly``)."""
        if self.switches[switch].role != "scaleup":
            return None
        rail = self.hosts[dst_nic.host].rail
        ports, local = set(), False
        for link in self.links:
            for (node, port), (other, _) in (link.ends(), link.ends()[::-1]):
                if node != switch:
                    continue
                if other == dst_nic.host:
                    local = True
                elif other in self.switches and self.switches[other].role == "rail" and \
                        self.switches[other].plane == rail:
                    ports.add(port)
        return None if local else ports

    def switch_adjacency(self):
        """{switch: [(local port, neighbour switch, neighbour port)]}, sorted by local port."""
        adj = {s: [] for s in self.switches}
        for link in self.fabric_links():
            adj[link.a].append((link.a_port, link.b, link.b_port))
            adj[link.b].append((link.b_port, link.a, link.a_port))
        return {s: sorted(v) for s, v in adj.items()}

    def describe(self):
        return (f"{self.name}: {len(self.hosts)} hosts, {len(self.switches)} switches, "
                f"{len(self.links)} links at {self.rate:g} Mbit/s" + (f" + {self.delay:g} ms" if self.delay else "")
                + (f"; each server's scale-up domain at {self.scaleup_domain:g}x" if self.scaleup_domain else ""))

    @property
    def spec(self):
        """The --topology form that builds this fabric again (see spec.from_spec)."""
        raise NotImplementedError

    def to_dict(self):
        return {
            "name": self.name,
            "spec": self.spec,
            "rate_mbit": self.rate,
            "queue_packets": self.queue,
            "delay_ms": self.delay,
            "shared_nic_address": self.shared_nic_address,
            "switches": [vars(s) | {"dpid": s.dpid} for s in self.switches.values()],
            "hosts": [{"name": h.name, "server": h.server, "rail": h.rail,
                       "ports": [dict(vars(p)) for p in h.ports]} for h in self.hosts.values()],
            "links": [dict(vars(link)) for link in self.links],
            **({"scaleup_domain": self.scaleup_domain} if self.scaleup_domain else {}),
        }
