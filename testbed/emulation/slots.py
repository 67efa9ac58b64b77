"""Slots brought to life (``--slots N``): each slot a network namespace with its own ovsdb-server
and userspace ovs-vswitchd (a userspace datapath opens a tap named ``ovs-netdev``, so a second one
needs a namespace of its own), the switches of the slot (``topology.partition``) and their ports; the
hosts stay in their own namespaces, cabled to their slot's switches.

- The controller stays one process on 127.0.0.1 in the root namespace. A slot's switches reach it
  through a unix socket (not bound to any network namespace) that ``socat`` relays to that port.
- A link between two slots is a VXLAN device at each end, named and numbered as the port it
  replaces, one VNI per link, ``df set`` (else a frame too big for the underlay is silently
  fragmented), over a veth pair that joins the two slots' namespaces (MTU: fabric MTU + 50).
  Shaping, counters and link failures treat it as any other switch port.
- Every process a slot runs is on the run record; the namespace goes with its last process.
"""
import subprocess
import tempfile
import time
from pathlib import Path

from mininet.node import Node

from testbed.emulation import ovs
from testbed.errors import TestbedError
from testbed.topology import interface

SCHEMA = Path("/usr/share/openvswitch/vswitch.ovsschema")
VXLAN_PORT = 4789
def underlay_address(pair, side):
    """The underlay address of one end (side 0 or 1) of the veth pair numbered `pair`: a /30 of
    10.254.0.0/16, inside the two slots' namespaces only."""
    base = 4 * pair
    return f"10.254.{base // 256}.{base % 256 + 1 + side}"


class Slot:
    """One slot's namespace and daemons. The holder is a Mininet node whose shell owns the namespace."""

    def __init__(self, index, holder, directory):
        self.index, self.holder, self.dir = index, holder, Path(directory)
        self.db = self.dir / "db.sock"
        self.controller_socket = self.dir / "controller.sock"
        self.vswitchd = None

    @property
    def netns(self):
        return f"/proc/{self.holder.pid}/ns/net"

    @property
    def pid(self):
        """A pid in the slot's namespace, for netlink (shaping.netlink)."""
        return self.holder.pid

    def mgmt(self, bridge):
        return f"unix:{self.dir / (bridge + '.mgmt')}"

    def start(self, spawn):
        """ovsdb-server and ovs-vswitchd; spawn(args, env) starts a process inside the slot's
        namespace and records it."""
        env = {"OVS_RUNDIR": str(self.dir), "OVS_LOGDIR": str(self.dir), "OVS_DBDIR": str(self.dir),
               "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}
        created = subprocess.run(["ovsdb-tool", "create", str(self.dir / "conf.db"), str(SCHEMA)],
                                 capture_output=True, text=True)
        if created.returncode:
            raise TestbedError(f"slot {self.index}: ovsdb-tool create failed: {created.stderr.strip()}")
        self.holder.cmd("sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1")
        spawn(["ovsdb-server", str(self.dir / "conf.db"), f"--remote=punix:{self.db}",
               f"--unixctl={self.dir / 'ovsdb.ctl'}", f"--log-file={self.dir / 'ovsdb.log'}"], env)
        self._wait_for(self.db, "ovsdb-server")
        ovs.vsctl(f"--db=unix:{self.db}", "--no-wait", "init")
        self.vswitchd = spawn(["ovs-vswitchd", f"unix:{self.db}", f"--unixctl={self.dir / 'vswitchd.ctl'}",
                               f"--log-file={self.dir / 'vswitchd.log'}"], env)
        self._wait_for(self.dir / "vswitchd.ctl", "ovs-vswitchd")

    def relay(self, host, port):
        """The command, run in the root namespace, that carries the slot's switches' controller
        connections from its unix socket to the controller at host:port (the loopback, or the head
        of a run across machines)."""
        return ["socat", f"UNIX-LISTEN:{self.controller_socket},fork", f"TCP:{host}:{port}"]

    def _wait_for(self, path, what, timeout=10.0):
        deadline = time.monotonic() + timeout
        while not Path(path).exists():
            if time.monotonic() > deadline:
                raise TestbedError(f"slot {self.index}: {what} did not start within {timeout:.0f} s: see {self.dir}")
            time.sleep(0.05)

    def vsctl(self, *args):
        out = ovs.vsctl(f"--db=unix:{self.db}", *args)
        if out.returncode:
            raise TestbedError(f"slot {self.index}: ovs-vsctl {' '.join(args)[:80]} failed: {out.stderr.strip()}")
        return out


class SlotHolder(Node):
    """The shell that owns a slot's network namespace."""

    def __init__(self, name, record=None, **params):
        self.record = record
        super().__init__(name, inNamespace=True, **params)

    def startShell(self, mnopts=None):
        super().startShell(mnopts)
        self.record.add(pids=[self.pid])


def make_directory():
    """A short path for a slot's sockets (a unix socket path has 108 bytes at most)."""
    return tempfile.mkdtemp(prefix="tbslot")


def join(slots, cut_links, mtu):
    """The underlay (a veth pair between every two slots that share a cut link) and a VXLAN device
    at each end of every cut link, in the slots' namespaces."""
    pairs = {}
    for cut in cut_links:
        a, b = sorted(cut.slots)
        pairs.setdefault((a, b), len(pairs))
    for (a, b), n in pairs.items():
        ends = (f"ul{a}-{b}", f"ul{b}-{a}")
        run(["ip", "link", "add", ends[0], "netns", str(slots[a].pid), "mtu", str(mtu + 50), "type", "veth",
             "peer", "name", ends[1], "netns", str(slots[b].pid), "mtu", str(mtu + 50)])
        for side, (slot, end) in enumerate(((slots[a], ends[0]), (slots[b], ends[1]))):
            slot.holder.cmd(f"ip addr add {underlay_address(n, side)}/30 dev {end} && ip link set {end} up")
    for cut in cut_links:
        a, b = sorted(cut.slots)
        n = pairs[a, b]
        for node, port in cut.link.ends():
            here = cut.slots[0] if node == cut.link.a else cut.slots[1]
            local, remote = (0, 1) if here == a else (1, 0)
            name = interface(node, port)
            out = slots[here].holder.cmd(
                f"ip link add {name} mtu {mtu} type vxlan id {cut.vni} local {underlay_address(n, local)} "
                f"remote {underlay_address(n, remote)} dstport {VXLAN_PORT} df set && ip link set {name} up "
                "&& echo made")
            if "made" not in out:
                raise TestbedError(f"slot {here}: could not make the VXLAN device {name}: {out.strip()[-200:]}")
    return pairs


def join_machines(slots, cut_links, mtu, underlay):
    """The end here of every cut link between a slot here and one on another machine: a VXLAN device
    made in this namespace, so that its UDP socket stays on the machine's underlay (underlay: {slot
    index: its machine's underlay address}), then moved into its slot's namespace."""
    for cut in cut_links:
        for node, port in cut.link.ends():
            here = cut.slots[0] if node == cut.link.a else cut.slots[1]
            if not slots[here]:
                continue
            there = cut.slots[1] if here == cut.slots[0] else cut.slots[0]
            name = interface(node, port)
            run(["ip", "link", "add", name, "mtu", str(mtu), "type", "vxlan", "id", str(cut.vni),
                 "local", underlay[here], "remote", underlay[there], "dstport", str(VXLAN_PORT), "df", "set"])
            run(["ip", "link", "set", name, "netns", str(slots[here].pid)])
            out = slots[here].holder.cmd(f"ip link set {name} up && echo up")
            if "up" not in out:
                raise TestbedError(f"slot {here}: could not bring the VXLAN device {name} up: {out.strip()[-200:]}")


def udp_counters(pid):
    """The UDP counters of pid's network namespace: {"InErrors": n, "RcvbufErrors": n, ...}."""
    lines = [line.split() for line in Path(f"/proc/{pid}/net/snmp").read_text().splitlines()
             if line.startswith("Udp:")]
    return {name: int(value) for name, value in zip(lines[0][1:], lines[1][1:])} if len(lines) == 2 else {}


def run(args):
    out = subprocess.run(args, capture_output=True, text=True)
    if out.returncode:
        raise TestbedError(f"{' '.join(args[:4])} ... failed: {out.stderr.strip()}")
