"""Where hashing puts a connection: Open vSwitch's select-group hash reproduced bit for bit, and a
bonded NIC's choice of port, so that a connection's path through an ECMP fabric follows from its
5-tuple without emulating it (the model of ``fidelity.flowmodel``, at any size).

Open vSwitch 3.1's ``dp_hash`` selection method with the symmetric L3/L4 algorithm (what the
controller installs, ``controllers/path_installer.py``) hashes a TCP packet as
``flow_hash_symmetric_l3l4`` does: murmur3 steps over (source ^ destination address), the protocol
and (source ^ destination port), seeded and finished with the group's basis; the datapath keeps
max(16, next power of two >= buckets) hash values, and with equal weights the Webster method gives
value v to bucket v mod n. The buckets are the group's ports in the plan's order. Checked against
the emulation: every captured connection took the link this predicts (tests/emulation/test_hashing.py).

The bonded NIC's port: ``round-robin`` puts a NIC's i-th connection on port i mod ports (an RDMA
NIC in LAG mode placing queue pairs in turn); ``hash`` hashes the 5-tuple. The emulated hosts hash
with Linux's multipath hash, which cannot be reproduced here (a keyed SipHash): the model stands
in the same Open vSwitch function with a basis of the host's own, as independent of the switches'
choices as Linux's is. A draw takes round-robin's connections from source ports of their turn's
NIC port (``turn_ports``), and a policy-routing rule on each bonded host sends that range out of
that port (``routing.plan``); binding the socket to the port instead (SO_BINDTODEVICE) would also
refuse the replies that come back on the NIC's other port.
"""
import random
import socket
import struct
from dataclasses import dataclass

from testbed.errors import TestbedError

BONDS = ("hash", "round-robin")
# Source ports a draw hands out: below the kernel's ephemeral range (32768 up), so that no
# connection the kernel numbers itself can hold one, and above the workloads' listening ports;
# hashed connections take HASH_PORTS, round-robin's TURN_PORTS, split among a NIC's ports.
HASH_PORTS = range(10000, 20000)
TURN_PORTS = range(20000, 32000)


def turn_ports(port, ports):
    """The source ports of round-robin connections that leave by NIC port `port` of `ports`."""
    size = len(TURN_PORTS) // ports
    return range(TURN_PORTS.start + port * size, TURN_PORTS.start + (port + 1) * size)
HOST_BASIS = 0x5BD1E995        # the model's host stage: a basis no switch uses
MASK = 0xFFFFFFFF


def _rotate(x, k):
    return ((x << k) | (x >> (32 - k))) & MASK


def _mhash_add(h, data):
    if data:
        data = (data * 0xCC9E2D51) & MASK
        data = (_rotate(data, 15) * 0x1B873593) & MASK
        h ^= data
    return (_rotate(h, 13) * 5 + 0xE6546B64) & MASK


def _mhash_finish(h):
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & MASK
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & MASK
    return h ^ (h >> 16)


def _word(ip):
    """An IPv4 address as Open vSwitch reads it: network byte order loaded as a little-endian word."""
    return struct.unpack("<I", socket.inet_aton(ip))[0]


def ovs_hash(src_ip, dst_ip, sport, dport, basis=0, proto=socket.IPPROTO_TCP):
    """Open vSwitch's flow_hash_symmetric_l3l4 of a TCP packet (the same both ways)."""
    ports = sport ^ dport
    h = _mhash_add(basis, _word(src_ip) ^ _word(dst_ip))
    h = _mhash_add(h, proto)
    h = _mhash_add(h, ((ports & 0xFF) << 8) | (ports >> 8))    # a big-endian 16-bit field, loaded
    return _mhash_finish(h ^ basis)


def bucket(hash_value, buckets):
    """The bucket a select group of `buckets` equal-weight buckets gives a dp_hash value."""
    values = max(16, 1 << (buckets - 1).bit_length())
    return (hash_value & (values - 1)) % buckets


@dataclass(frozen=True)
class Connection:
    """One TCP connection of a workload: its 5-tuple (the source and destination hosts' first
    address), and its number among its source NIC's connections (round-robin's turn)."""
    src: str
    dst: str
    sport: int
    dport: int
    turn: int = 0


class Draw:
    """One trial's hash draw: a fresh source port for every connection a workload opens, from a
    seed, so that two forms of a fabric (or two algorithms) run on the same 5-tuples, and each
    source NIC's turns for round-robin (NICs of `ports` ports). A workload asks for its
    connections in a fixed order; a host never gets one port twice."""

    def __init__(self, seed, bond="hash", ports=2):
        if bond not in BONDS:
            raise TestbedError(f"unknown bond {bond!r}: use one of {', '.join(BONDS)}")
        self.seed, self.bond, self.ports = seed, bond, ports
        self._rng = random.Random(seed)
        self._pools = [HASH_PORTS] if bond == "hash" else [turn_ports(p, ports) for p in range(ports)]
        self._turns, self._used = {}, {}

    def connection(self, src, dst, dport):
        turn = self._turns.get(src, 0)
        pool, used = self._pools[turn % len(self._pools)], self._used.setdefault(src, set())
        if len(used) >= len(pool) // 2:
            raise TestbedError(f"a draw gives a host at most {len(pool) // 2} connections")
        self._turns[src] = turn + 1
        while (sport := self._rng.choice(pool)) in used:
            pass
        used.add(sport)
        return Connection(src, dst, sport, dport, turn)


class Placer:
    """A connection's path, as the emulation forwards it: the source host's port (the bond), then at
    each switch the plan's rule for its destination, hashed where it lists several ports.

        placer = Placer(topo, routing.plan(topo, "ecmp", "same"), bond="round-robin")
        placer.path(Connection("h0", "h4", 20001, 7000))   # [(node, port) of each link it sends on]
    """

    def __init__(self, topo, plan, bond="hash"):
        if bond not in BONDS:
            raise TestbedError(f"unknown bond {bond!r}: use one of {', '.join(BONDS)}")
        self.topo, self.bond = topo, bond
        self.seeds = plan.seeds
        self.rules = {}
        for dpid, entries in plan.rules.items():
            for src, dst, ports in entries:
                self.rules[dpid, src, dst] = ports
        self.dpid = {name: s.dpid for name, s in topo.switches.items()}
        self.peer = {}
        for link in topo.links:
            (a, ap), (b, bp) = link.ends()
            self.peer[a, ap], self.peer[b, bp] = (b, bp), (a, ap)
        self.ip = {h.name: h.ports[0].ip for h in topo.hosts.values()}
        self.live = {h.name: [nic.port for nic in h.ports if (h.name, nic.port) in self.peer]
                     for h in topo.hosts.values()}
        self.plan = plan                     # deterministic and planned: a bonded host's port per destination

    def host_port(self, conn):
        ports = self.live[conn.src]
        if not ports:
            raise TestbedError(f"{conn.src} has no NIC port with a link")
        if len(ports) == 1:
            return ports[0]
        route = self.plan.route(self.ip[conn.src], self.ip[conn.dst], conn.sport)
        if route is not None and route.src.port in ports:
            return route.src.port
        if self.bond == "round-robin":
            return ports[conn.turn % len(ports)]
        h = ovs_hash(self.ip[conn.src], self.ip[conn.dst], conn.sport, conn.dport, HOST_BASIS)
        return ports[bucket(h, len(ports))]

    def path(self, conn):
        """[(node, port)]: the sending end of every link the connection's data crosses."""
        if conn.src not in self.ip or conn.dst not in self.ip:
            raise TestbedError(f"{conn.src} -> {conn.dst}: no such host in {self.topo.name}")
        if self.topo.same_server(conn.src, conn.dst):       # the server's scale-up link: no switch, no hash
            return [(conn.src, self.topo.scaleup_port(conn.src, conn.dst))]
        src, dst = self.ip[conn.src], self.ip[conn.dst]
        hop = (conn.src, self.host_port(conn))
        links = [hop]
        node, _ = self.peer[hop]
        while node != conn.dst:
            dpid = self.dpid.get(node)
            ports = self.rules.get((dpid, src, dst)) or self.rules.get((dpid, None, dst))
            if dpid is None or not ports:
                raise TestbedError(f"{conn.src} -> {conn.dst}: no route at {node}")
            if len(ports) > 1:
                ports = [ports[bucket(ovs_hash(src, dst, conn.sport, conn.dport, self.seeds.get(dpid, 0)),
                                      len(ports))]]
            links.append((node, ports[0]))
            if len(links) > 64:
                raise TestbedError(f"{conn.src} -> {conn.dst}: the routes loop")
            node, _ = self.peer[node, ports[0]]
        return links
