"""A Topology brought to life: Mininet hosts, Open vSwitch switches, shaped links, installed routes.

    with Emulation(topo, routing.plan(topo), run_dir) as emu:
        emu.host("h0").cmd("ping -c1 10.0.0.2")

Whatever happens inside the block (an exception, Ctrl-C, SIGTERM), everything the run created is
removed on the way out; what a killed run leaves is found and removed by ``runrecord``.
"""
import contextlib
import json
import os
import signal
import subprocess
import time
from pathlib import Path

from mininet.link import Intf, Link
from mininet.log import setLogLevel
from mininet.net import Mininet
from mininet.node import Host, OVSSwitch
from mininet.util import errRun

from testbed.emulation import cores, dctcp, drops, ovs, preflight, runrecord, sendbuffer, shaping, slots, txcompletion
from testbed.emulation import ecn as ecn_marking
from testbed.emulation.controller import Controller, wait_for_rules
from testbed.emulation.controller import congestion as controller_congestion  # noqa: I001
from testbed.emulation.cpu import CpuMonitor
from testbed.emulation.processes import LOOPBACK, POPEN, Program, argv
from testbed.emulation.watchdog import Watchdog
from testbed.errors import TestbedError
from testbed.interrupts import interrupted, interruptible, shielded
from testbed.topology import interface, simai
from testbed.topology.partition import partition

# The userspace datapath's work is per packet: jumbo frames carry the same load for less CPU (bench/).
DEFAULT_MTU = 9000
IP_BASE = "10.0.0.0/16"
HOST_HASH_SEED = 0x7E57BED   # the bonded hosts' multipath hash seed: any fixed value but 0 (random)
# The controller speaks 1.5 (select groups with a hash basis); ovs-ofctl reads flows and counters in 1.3.
OPENFLOW_VERSIONS = "OpenFlow13,OpenFlow15"
SCALEUP_PORTS = 100          # a host's scale-up links' port numbers: 100 + the peer's index


class ControllerAddress:
    """Where the switches find the controller. Not a Mininet controller node: RemoteController
    probes the port with telnet, which can hang once os-ken listens, and brings a shell of its own."""
    name, protocol = "c0", "tcp"

    def __init__(self, ip, port):
        self.ip, self.port = ip, port

    def IP(self):
        return self.ip


def in_namespaces(shells):
    """Pids of every process (other than the shells and this one) in the network namespaces of the
    given shell pids."""
    def netns(pid):
        try:
            return os.stat(f"/proc/{pid}/ns/net").st_ino
        except OSError:
            return None
    ours = {netns(pid) for pid in shells} - {None, netns(os.getpid())}
    return [int(p.name) for p in Path("/proc").iterdir()
            if p.name.isdigit() and int(p.name) not in shells and int(p.name) != os.getpid() and netns(p.name) in ours]


class RecordedShell:
    """A Mininet node whose shell pid is on the run record from the moment it exists."""

    def __init__(self, name, record=None, **params):
        self.record = record
        super().__init__(name, **params)

    def startShell(self, mnopts=None):
        super().startShell(mnopts)
        self.record.add(pids=[self.pid])


class TestbedHost(RecordedShell, Host):
    pass


class TestbedSwitch(RecordedShell, OVSSwitch):
    """An OVS bridge tagged with the run that made it, in the same transaction that creates it."""

    def __init__(self, name, controller=None, **params):
        self.controller = controller
        super().__init__(name, **params)

    @classmethod
    def setup(cls):
        """Mininet's check gives ovs-vsctl 1 s and exits the process; preflight checks OVS instead."""
        cls.OVSVersion = ovs.version()

    def bridgeOpts(self):
        return super().bridgeOpts() + f" external_ids:{runrecord.TAG}={self.record.run_id}"

    def start(self, controllers):
        super().start([self.controller])


class SlotSwitch(TestbedSwitch):
    """A switch of a slot (emulation.slots): its shell, and so its ports, in the slot's namespace; its
    bridge in the slot's own database. Its controller is set once the bridge exists (set_controller)."""

    def __init__(self, name, slot=None, **params):
        self.slot = slot
        super().__init__(name, **params)

    def _popen(self, cmd, **params):
        return super()._popen(["nsenter", f"--net={self.slot.netns}", *cmd], **params)

    def vsctl(self, *args, **kwargs):
        return super().vsctl(f"--db=unix:{self.slot.db}", *args, **kwargs)

    def dpctl(self, *args):
        return self.cmd("ovs-ofctl", args[0], self.slot.mgmt(self.name), *args[1:])

    @classmethod
    def batchStartup(cls, switches, run=errRun):
        """Mininet's batch, run against each slot's database."""
        for db in sorted({str(s.slot.db) for s in switches}):
            group = [s for s in switches if str(s.slot.db) == db]
            OVSSwitch.batchStartup.__func__(
                cls, group, run=lambda cmds, db=db, **kw: run(cmds.replace("ovs-vsctl", f"ovs-vsctl --db=unix:{db}", 1),
                                                              **kw))
        return switches

    def start(self, controllers):
        OVSSwitch.start(self, [])

    def set_controller(self):
        self.slot.vsctl("set-controller", self.name, f"unix:{self.slot.controller_socket}")


class Emulation:
    def __init__(self, topo, routing, run_dir, mtu=DEFAULT_MTU, log=print, refuse_overload=True, cpu_placement="auto",
                 slot_count=1, share=None, priority=None, control_class=True, ecn=None, congestion_control=None):
        """routing: the RoutingPlan the controller installs. The topology and the plan are written
        into run_dir as topology.json and routing.json, so a result can be understood and replayed.
        refuse_overload=False lets a benchmark offer more than the emulator carries faithfully.
        cpu_placement: auto, pinned or none (emulation.cores). slot_count: how many slots
        (ovs-vswitchd each) to split the fabric into (emulation.slots). share: build only these
        slots of a fabric split across machines (machines.part; the controller runs on the head).
        priority: 'strict' or 'weighted' traffic classes on every switch port by DS field
        (emulation.shaping), or None: one FIFO per port. control_class: serve the ranks' clear-to-sends
        and ACKs (DS field CONTROL_DSCP) first at every switch port (emulation.shaping; not on a link
        with delay, whose netem has one FIFO). ecn: K, bytes: every switch port marks CE on ECN-capable
        packets above K (emulation.ecn) and the hosts' TCP asks for ECN; None: drop-tail only.
        congestion_control: the ranks' connections' and the flows' (cubic, bbr, reno or dctcp:
        emulation.dctcp); None: the ranks' CUBIC, the flows' machine default."""
        self.topo, self.routing, self.run_dir, self.mtu, self.log = topo, routing, Path(run_dir), mtu, log
        self.refuse_overload, self.cpu_requested, self.priority = refuse_overload, cpu_placement, priority
        self.control_class, self.ecn = control_class, ecn
        self._marking = (ecn, 1.0)        # (K, drain) of the markers on the switch ports (_mark_ports)
        if ecn:
            ecn_marking.check(ecn, min(link.queue for link in topo.links), mtu)
        if congestion_control:
            dctcp.check(congestion_control)
        self.congestion_control = congestion_control
        self.dctcp = None                 # DCTCP's struct_ops id, once registered for this run
        if topo.scaleup_domain and (slot_count > 1 or share):
            raise TestbedError("a scale-up domain joins a server's hosts directly, within one slot: run it without "
                               "--slots and --machines, or leave --scaleup out")
        self.partition = partition(topo, slot_count) if slot_count > 1 else None
        self.share = share
        self.slots = []     # by slot index; None for a slot built on another machine
        self.slot_vswitchds = []        # their ovs-vswitchd pids, counted in the CPU verdict
        self.ofctl_targets = {}         # a slot's bridge: its management socket, for ovs-ofctl
        self.net = self.controller = self.record = self.watchdog = None
        self.datapath = self.cpu_placement = None
        self._signals = interruptible()

    @property
    def control_dscp(self):
        """The DS field a rank's listener gives its clear-to-sends and ACKs: the control class's,
        where the switch ports have one; None where not (the class off, links with delay) and under
        jobs' traffic classes (``priority``), where a job's class must hold for all its packets: a
        one-frame collective's data rides its accepted connections, which the control class would
        lift above a high-priority job's."""
        if self.priority or not self.control_class or self.topo.delay:
            return None
        return shaping.CONTROL_DSCP

    # --- lifecycle ------------------------------------------------------------------------
    def __enter__(self):
        try:
            self.datapath, self.cpu_placement = preflight.require_share(self.topo, self.mtu) if self.share else \
                preflight.require_emulation(self.topo, self.mtu, self.refuse_overload, self.cpu_requested,
                                            slot_count=self.partition.count if self.partition else 1)
        except BaseException:
            runrecord.release_lock()
            raise
        self._signals.__enter__()
        try:
            self._start()
        except BaseException as e:
            self._teardown(e)
            raise
        return self

    def __exit__(self, _type, error, _tb):
        self._teardown(error)

    def _start(self):
        topo, started = self.topo, time.monotonic()
        if self.datapath == "kernel" and not ovs.load_kernel_datapath():
            raise TestbedError("the kernel's openvswitch module would not load: see dmesg")
        self.record = runrecord.RunRecord.create()
        self.record.add(bridges=[s for s in topo.switches if self.here(s)],
                        interfaces=[intf for intf, link in topo.switch_ports() if self.here(intf.split("-eth")[0])])
        self.run_dir.mkdir(parents=True, exist_ok=True)
        topology_file, plan_file = self.run_dir / "topology.json", self.run_dir / "routing.json"
        topology_file.write_text(json.dumps(topo.to_dict(), indent=1))
        for name, text in simai.exports(topo).items():
            (self.run_dir / name).write_text(text)
        plan_file.write_text(json.dumps(self.routing.to_dict()))
        if self.partition:
            (self.run_dir / "slots.json").write_text(json.dumps(self.partition.to_dict(), indent=1))
        if not self.share:
            self.controller = Controller(self.routing, plan_file, topology_file, self.run_dir)
            self.record.add(pids=[self.controller.start()])

        setLogLevel("warning")
        self.log(f"building {topo.describe()} (OVS {ovs.datapath_name(self.datapath)}, MTU {self.mtu}, "
                 f"{self.describe_placement()}{self.describe_slots()})")
        net = self.net = Mininet(topo=None, build=False, controller=None, ipBase=IP_BASE,
                                 autoSetMacs=False, waitConnected=False)
        address = self.controller and ControllerAddress(LOOPBACK, self.controller.port)
        if self.partition:
            self._start_slots()
        for s in [s for s in topo.switches.values() if self.here(s.name)]:
            where = {"cls": SlotSwitch, "slot": self.slots[self.partition.slot_of[s.name]]} if self.slots \
                else {"cls": TestbedSwitch}
            net.addSwitch(s.name, record=self.record, controller=address, dpid=f"{s.dpid:016x}",
                          datapath=self.datapath, protocols=OPENFLOW_VERSIONS, failMode="secure", **where)
        for h in [h for h in topo.hosts.values() if self.here(h.name)]:
            net.addHost(h.name, cls=TestbedHost, record=self.record, ip=None)
        cut = {c.link for c in self.partition.cut_links()} if self.partition else set()
        for link in topo.links:
            if link not in cut and self.here(link.a):
                net.addLink(link.a, link.b, port1=link.a_port, port2=link.b_port, cls=Link,
                            **self._address_params(link.a, link.a_port, "1"),
                            **self._address_params(link.b, link.b_port, "2"))
        for a, b in topo.scaleup_pairs():      # a server's scale-up domain: host to host, no switch
            net.addLink(a, b, port1=SCALEUP_PORTS + topo.hosts[b].index, port2=SCALEUP_PORTS + topo.hosts[a].index,
                        intfName1=f"{a}-{topo.scaleup_port(a, b)}", intfName2=f"{b}-{topo.scaleup_port(b, a)}",
                        cls=Link)
        try:
            net.build()
            if self.partition:
                self._cut_links()
            self.kernel_congestion_control(self.congestion_control)
            self._configure_hosts()
            net.start()
            for switch in net.switches:
                if isinstance(switch, SlotSwitch):
                    switch.set_controller()
            # After start: adding a port to OVS deletes the root qdisc of its interface.
            self._shape_switch_ports()
            if self.datapath == "kernel":
                txcompletion.free_on_send([intf for intf, link in topo.switch_ports() if topo.is_host_link(link)])
        except SystemExit:  # Mininet reports errors with exit(1)
            raise TestbedError("Mininet gave up building the network (its message is above)") from None
        mine = {s.name: s.dpid for s in topo.switches.values() if self.here(s.name)}
        waited = wait_for_rules(self.routing, mine, self.controller, self.ofctl_targets)
        if self.datapath == "user":
            self._size_send_buffers()
        if self.cpu_placement == "pinned":
            self.record.pin(ovs.vswitchd_pid(), {cores.switch_core()})
        if not self.share:     # on a machine of a split run the head watches (machines.engine)
            self.watchdog = Watchdog(self._vital_parts()).__enter__()
        self.log(f"fabric up in {time.monotonic() - started:.1f} s "
                 f"(controller installed {self.routing.rule_count} {self.routing.mode} rules in {waited:.1f} s)")

    def here(self, node):
        """Whether a switch or host is built by this emulation (all of them unless it is a share)."""
        return not self.share or self.partition.slot_of[node] in self.share.slots

    @property
    def built_slots(self):
        return [slot for slot in self.slots if slot]

    def _start_slots(self):
        """Each slot's namespace and daemons, and the relay to the controller (emulation.slots)."""
        quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
        controller = self.share.controller if self.share else (LOOPBACK, self.controller.port)
        for k in range(self.partition.count):
            if self.share and k not in self.share.slots:
                self.slots.append(None)
                continue
            directory = slots.make_directory()
            self.record.add(directories=[directory])
            holder = slots.SlotHolder(f"slot{k}", record=self.record)
            slot = slots.Slot(k, holder, directory)
            self.slots.append(slot)
            inside = self.partition.switches(k)[0]      # spawn() runs a process where a switch's ports are
            slot.start(lambda args, env, inside=inside: self.spawn(args, switch=inside, env=env, **quiet))
            self.spawn(slot.relay(*controller), **quiet)
            self.slot_vswitchds.append(slot.vswitchd.pid)
            for name in self.partition.switches(k):
                self.ofctl_targets[name] = slot.mgmt(name)

    def _cut_links(self):
        """A VXLAN device for each end of every cut link, known to its switch as the port it replaces."""
        cut = [c for c in self.partition.cut_links() if any(self.slots[k] for k in c.slots)]
        slots.join(self.slots, [c for c in cut if all(self.slots[k] for k in c.slots)], self.mtu)
        slots.join_machines(self.slots, [c for c in cut if not all(self.slots[k] for k in c.slots)], self.mtu,
                            self.share and self.share.underlay)
        for c in cut:
            for node, port in c.link.ends():
                if self.here(node):
                    Intf(interface(node, port), node=self.net.get(node), port=port)

    def _netns_of_switch(self, switch):
        """A pid in the namespace of switch's ports (None: the root namespace)."""
        return self.slots[self.partition.slot_of[switch]].pid if self.slots else None

    def port_netns(self, ifname):
        """A pid in the namespace of a switch port's interface, or None (the root namespace)."""
        return self._netns_of_switch(ifname.split("-eth")[0])

    def _switch_ports_by_namespace(self):
        """{pid or None: [(interface, link)]} of every switch port."""
        out = {}
        for link in self.topo.links:
            for node, port in link.ends():
                if node in self.topo.switches and self.here(node):
                    out.setdefault(self._netns_of_switch(node), []).append((interface(node, port), link))
        return out

    def _address_params(self, node, port, side):
        if node not in self.topo.hosts:
            return {}
        nic = self.topo.hosts[node].ports[port]
        if self.topo.shared_nic_address:      # addressed over netlink: see _configure_hosts
            return {f"addr{side}": nic.mac}
        return {f"addr{side}": nic.mac, f"params{side}": {"ip": f"{nic.ip}/24"}}

    def _configure_hosts(self):
        for h in [h for h in self.topo.hosts.values() if self.here(h.name)]:
            node = self.net.get(h.name)
            # TCP through the userspace datapath hangs with TX checksum offload on (Mininet #653);
            # segmentation offloads off too, so HTB shapes real frames. A collective reuses each
            # connection after a pause: without slow_start_after_idle=0 every HD step restarts from
            # the initial window (measured: 1 MiB HDRM at 0.68-0.78 of the link rate, 0.84-0.93 without).
            # tcp_tw_reuse: a hash draw gives a collective run again on the same fabric the same
            # 5-tuples, whose last connections may still be in TIME_WAIT
            sysctls = ["net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1",
                       "net.ipv4.tcp_slow_start_after_idle=0", "net.ipv4.tcp_tw_reuse=1",
                       f"net.ipv4.tcp_ecn={self._tcp_ecn}"]
            if self.topo.shared_nic_address:
                sysctls += self._bond_sysctls(h)
            node.cmd(f"sysctl -qw {' '.join(sysctls)}; " +
                     "; ".join(f"ethtool -K {nic.intf} tx off tso off gso off" for nic in h.ports))
            if self.cpu_placement == "pinned":
                self._steer_receive(node, [nic.intf for nic in h.ports])
            with shaping.netlink(node.pid) as ipr:
                for nic in h.ports:
                    if self.topo.shared_nic_address:   # a bonded NIC's address, on both ports; routes below
                        shaping.address(ipr, nic.intf, nic.ip, 32)
                    shaping.shape(ipr, nic.intf, self.topo.rate, self.topo.queue, self.mtu)
                    shaping.static_neighbours(ipr, nic.intf, self.topo.peers(nic))
                for prefix, ifnames, metric, table in self.routing.host_routes.get(h.name, []):
                    shaping.route(ipr, prefix, ifnames, h.ports[0].ip, metric, table)
                self._scaleup_links(node, ipr, h)
                for first, last, table in self.routing.host_rules.get(h.name, []):
                    shaping.source_port_rule(ipr, first, last, table)

    def _scaleup_links(self, node, ipr, host):
        """The host's links to the other accelerators of its server: its scale-up address on each,
        a route to each peer's through its link, shaped at the scale-up rate."""
        topo = self.topo
        peers = [b if a == host.name else a for a, b in topo.scaleup_pairs() if host.name in (a, b)]
        if not peers:
            return
        names = [f"{host.name}-{topo.scaleup_port(host.name, peer)}" for peer in peers]
        node.cmd("; ".join(f"ethtool -K {name} tx off tso off gso off" for name in names))
        for peer, name in zip(peers, names):
            shaping.set_up(ipr, name, True)
            shaping.address(ipr, name, topo.scaleup_ip(host.name), 32)
            shaping.shape(ipr, name, topo.rate * topo.scaleup_domain, topo.queue, self.mtu)
            shaping.route(ipr, f"{topo.scaleup_ip(peer)}/32", [name], topo.scaleup_ip(host.name))

    @staticmethod
    def _steer_receive(node, interfaces):
        out = node.cmd(cores.steer_command(interfaces, cores.host_mask()) + " && echo steered")
        if "steered" not in out:
            raise TestbedError(f"could not set Receive Packet Steering in {node.name} ({out.strip()[-200:]}): "
                               "run with --cpu-placement none")

    def describe_slots(self):
        return f", {self.partition.describe()} over VXLAN" if self.partition else ""

    def describe_placement(self):
        if self.cpu_placement != "pinned":
            return "CPU placement: the system's"
        others = ",".join(str(c) for c in cores.online() if c != cores.switch_core())
        return f"CPU placement pinned: ovs-vswitchd on cpu{cores.switch_core()}, hosts' receive on cpu{others}"

    @staticmethod
    def _bond_sysctls(host):
        """A bonded NIC without a bonding driver: the multipath route hashes layer 3+4 as a LACP
        bond does, with one seed on every host and in every run (else each namespace draws its
        own), so that the same 5-tuple leaves by the same port on two forms of a fabric; it skips
        a port whose link is down, and a reply may come in on either port (no reverse-path filter)."""
        return (["net.ipv4.fib_multipath_hash_policy=1", f"net.ipv4.fib_multipath_hash_seed={HOST_HASH_SEED}",
                 "net.ipv4.conf.all.ignore_routes_with_linkdown=1",
                 "net.ipv4.conf.all.rp_filter=0", "net.ipv4.conf.default.rp_filter=0"]
                + [f"net.ipv4.conf.{nic.intf}.rp_filter=0" for nic in host.ports])

    def _size_send_buffers(self):
        """Every switch queue full must fit in its ovs-vswitchd's send socket: see sendbuffer. The
        system's is put back by the run record; a slot's goes with its daemon."""
        if not self.slots:
            self._size_send_buffer(ovs.vswitchd_pid(), self.topo.switch_ports(), list(self.topo.hosts),
                                   self.record.raise_send_buffer)
            return
        ports = self._switch_ports_by_namespace()
        for slot in self.built_slots:
            self._size_send_buffer(slot.vswitchd.pid, ports.get(slot.pid, []), self.partition.hosts(slot.index),
                                   sendbuffer.raise_to)     # nothing to put back: the daemon ends with the run

    def _size_send_buffer(self, pid, ports, hosts, raise_buffer):
        need = sendbuffer.needed([link.queue for _, link in ports], self.mtu)
        if not raise_buffer(pid, need) and hosts:   # OVS opens it at its first send: make one
            h = self.topo.hosts[hosts[0]]
            peer = next(p for p in self.topo.nic_ports() if p.host != h.name and p.port == 0 and self.here(p.host))
            self.host(h.name).cmd(f"ping -c1 -W1 {peer.ip}")
            if not raise_buffer(pid, need):
                raise TestbedError("ovs-vswitchd has no packet socket after a ping through the fabric; "
                                   "is it running the userspace datapath?")

    def _shape_switch_ports(self):
        for pid, ports in self._switch_ports_by_namespace().items():
            with shaping.netlink(pid) as ipr:
                for intf, link in ports:
                    if pid is None:      # a slot's namespace has IPv6 off for every interface already
                        with open(f"/proc/sys/net/ipv6/conf/{intf}/disable_ipv6", "w") as f:
                            f.write("1")
                    shaping.shape(ipr, intf, link.rate, link.queue, self.mtu, self.topo.switch_delay(link),
                                  self.priority or (shaping.CONTROL if self.control_class else None),
                                  control=self.control_class)
        if self.ecn:
            self._mark_ports(self.ecn)

    def _mark_ports(self, k, drain=1.0):
        """The ECN marker at threshold k on every switch port (emulation.ecn), its virtual queues
        drained at `drain` times the link's rate as the port serves its classes, or none where k is
        None; the controller is told where to read the ports' marks and drops."""
        by_namespace = self._switch_ports_by_namespace()
        self._marking = (k, drain)
        for pid, ports in by_namespace.items():
            for intf, _ in ports:
                ecn_marking.detach(pid, intf)
                if k:
                    ecn_marking.attach(pid, intf, ecn_marking.build(str(self.run_dir / "ecn")))
        tables = self.marker_maps() if k else {}
        for ports in by_namespace.values():
            for intf, link in ports:
                if k:
                    ecn_marking.configure(tables.get(intf, {}).get("config"), self._marker_settings(link, link.rate))
        if self.controller:        # a machine's share of a fabric has none (and no --ecn)
            self.controller.watch_congestion({intf: (tables[intf]["ecn_counts"], pid) for pid, ports in
                                              by_namespace.items() for intf, _ in ports if intf in tables})

    def _marker_settings(self, link, rate_mbit):
        """A switch port's marker settings (emulation.ecn.config) with the link at rate_mbit."""
        k, drain = self._marking
        return ecn_marking.config(rate_mbit, k, ecn_marking.fifo_limit(link.queue, self.mtu),
                                  self.priority or (shaping.CONTROL if self.control_class else None),
                                  self.topo.switch_delay(link), self.control_class, drain)

    def set_ecn(self, k, drain=1.0):
        """From now on every switch port marks above k bytes (None: drop-tail only), and new TCP
        connections from the hosts ask for ECN where it marks; marks are counted afresh. drain:
        the marker's virtual queue drains at this fraction of the link's rate; below 1, HULL's
        phantom queue (NSDI 2012), which marks before the real queue builds."""
        if k:
            ecn_marking.check(k, min(link.queue for link in self.topo.links), self.mtu)
        if not 0.5 <= drain <= 1.0:
            raise TestbedError(f"a phantom queue drains at 0.5 to 1 times the link's rate (got {drain})")
        self._mark_ports(k, drain)
        self.ecn = k
        self._ask_for_ecn()

    @property
    def _tcp_ecn(self):
        """The hosts' net.ipv4.tcp_ecn: 1, ask for ECN, where ports mark or DCTCP may run (a socket
        that takes DCTCP after connecting, as iperf3's does, has asked already); 2, the default,
        ECN only when asked."""
        return 1 if self.ecn or self.dctcp else 2

    def _ask_for_ecn(self):
        for h in [h for h in self.topo.hosts if self.here(h)]:
            self.host(h).cmd(f"sysctl -qw net.ipv4.tcp_ecn={self._tcp_ecn}")

    def kernel_congestion_control(self, cc):
        """The name a socket asks for to get cc (None: None), DCTCP registered for this run the first
        time it is asked for."""
        if cc == dctcp.OFFERED and self.dctcp is None:
            dctcp.check(cc)
            self.dctcp = dctcp.register(dctcp.build(self.run_dir / "dctcp"))
            self.record.note_struct_ops(self.dctcp)
            if self.net:
                self._ask_for_ecn()
        return cc and dctcp.kernel_name(cc)

    def ecn_counts(self):
        """{switch port: {class: {"packets", "ect", "marked", "over"}}} since the fabric was built
        (emulation.ecn), {} without --ecn."""
        return self._each_marker(ecn_marking.counts, "ecn_counts")

    def ecn_sources(self):
        """{switch port: {IPv4 source: {"packets", "ect", "marked", "over"}}} since the fabric was
        built (emulation.ecn): whose packets each port marked; {} without --ecn."""
        return self._each_marker(ecn_marking.sources, "source_counts")

    def _each_marker(self, read, table):
        """{switch port: read(the id of its marker's map `table`)}, {} without --ecn."""
        if not self.ecn:
            return {}
        found = self.marker_maps()
        return {intf: read(found.get(intf, {}).get(table))
                for ports in self._switch_ports_by_namespace().values() for intf, _ in ports}

    def controller_congestion(self):
        """{"marks": {switch port: {class: packets marked}}, "drops": {switch port: {class: packets
        dropped}}}: what the controller last read at each port where it grew since the markers were
        attached, off its log (emulation.controller); empty without --ecn."""
        return controller_congestion(self.controller.log_path)

    def marker_maps(self):
        """{switch port: {map name: id}} of the markers on every switch port (emulation.ecn)."""
        return ecn_marking.maps({pid: [intf for intf, _ in ports]
                                 for pid, ports in self._switch_ports_by_namespace().items()})

    def _vital_parts(self):
        """The watchdog's checks: None while the part runs, else what died and what to do."""
        controller, vswitchd = self.controller.proc, ovs.vswitchd_pid()
        started = runrecord.start_time(vswitchd)

        def controller_alive():
            if controller.poll() is not None:
                return (f"the controller died during the run (exit code {controller.returncode}): "
                        f"see {self.controller.log_path}")

        def vswitchd_alive():
            if not runrecord.running(vswitchd, started):
                return ("ovs-vswitchd died during the run: start Open vSwitch again with 'sudo ./setup.sh', "
                        "then run again")

        def slots_alive():
            for slot in self.built_slots:
                if slot.vswitchd.poll() is not None:
                    return f"slot {slot.index}'s ovs-vswitchd died during the run: see {slot.dir}/vswitchd.log"
        return [controller_alive, vswitchd_alive] + ([slots_alive] if self.slots else [])

    def _teardown(self, error=None):
        """Remove everything this run made. Signals wait until it is done; one that came is raised
        then, unless the run is already ending with an exception."""
        try:
            with shielded() as caught:
                if self.watchdog is not None:   # first: the controller is about to go
                    self.watchdog.__exit__(None, None, None)
                self._remove()
        finally:
            self._signals.__exit__(None, None, None)
        if caught and error is None:
            raise interrupted(caught[0])

    def _remove(self):
        # Not net.stop(): it talks to each node's shell, and hangs on a half-built network.
        # terminate() only signals the shell and closes its ptys; the sweep removes the rest.
        # Whatever else runs in a host's namespace (a daemon started from --cli) is ours too.
        shells = [h.pid for h in self.net.hosts] if self.net else []
        for pid in in_namespaces(shells + [slot.holder.pid for slot in self.built_slots]):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        for node in ((self.net.hosts + self.net.switches) if self.net else []) + [s.holder for s in self.built_slots]:
            with contextlib.suppress(Exception):
                node.terminate()
        if self.controller is not None:
            self.controller.stop()
        if self.record is not None:
            self.record.sweep()
        runrecord.release_lock()

    # --- use --------------------------------------------------------------------------------
    def host(self, name):
        return self.net.get(name)

    def spawn(self, args, host=None, switch=None, **kwargs):
        """A process inside host's namespace, or where switch's ports are (its slot's namespace, or
        the root namespace), on the run record so that a crash cannot orphan it."""
        if switch and self.slots:
            proc = self.slots[self.partition.slot_of[switch]].holder.popen(args, **kwargs)
        else:
            proc = self.host(host).popen(args, **kwargs) if host else \
                subprocess.Popen(args, **{"start_new_session": True, **kwargs})   # as mnexec -d does in a host
        self.record.add(pids=[proc.pid])
        return proc

    def set_link(self, link, up):
        """Take a link down, as a pulled cable, or bring it back: its switch ends go administratively
        down, and a host at its other end sees its carrier go. (A host interface taken down itself
        would lose its neighbour entries, which the fabric cannot relearn: it carries no ARP.)
        Interfaces that are down are on the run record, which brings them up if the run dies."""
        for node, port in link.ends():
            if node in self.topo.switches and self.here(node):
                name, pid = interface(node, port), self._netns_of_switch(node)
                with shaping.netlink(pid) as ipr:
                    shaping.set_up(ipr, name, up)
                if pid is None:          # a slot's interfaces go with its namespace
                    self.record.link_state(name, up)

    def set_link_rate(self, link, rate_mbit):
        """Run a link at another rate, both ends (a link at a fraction of its speed), or back at
        link.rate. The interfaces go with the run, so nothing needs undoing after a crash."""
        for node, port in link.ends():
            if not self.here(node):
                continue
            pid = self._netns_of_switch(node) if node in self.topo.switches else self.host(node).pid
            with shaping.netlink(pid) as ipr:
                shaping.set_rate(ipr, interface(node, port), rate_mbit, self.mtu)
            if self.ecn and node in self.topo.switches:       # its marker drains at the new rate too
                ecn_marking.configure(ecn_marking.map_id(pid, interface(node, port), "config"),
                                      self._marker_settings(link, rate_mbit))

    def set_link_loss(self, link, fraction):
        """Both ends of a link drop `fraction` of their packets at random (0: none, as built): netem's
        loss where the kernel has it, else an nftables rule where a switch sends (``drops``)."""
        netem = shaping.netem_available()
        for node, port in link.ends():
            if not self.here(node):
                continue
            pid = self._netns_of_switch(node) if node in self.topo.switches else self.host(node).pid
            if netem:
                with shaping.netlink(pid) as ipr:
                    shaping.set_loss(ipr, interface(node, port), fraction, link.queue)
            elif node in self.topo.switches:
                if fraction and pid is None:
                    self.record.note_drops()
                drops.set_drop(pid, interface(node, port), fraction)
            elif fraction:
                raise TestbedError(f"loss on {node}'s link needs netem: without it only a switch's port drops")

    def drain(self, links):
        """Route around `links` (up or not) until drain() is called without them: the controller
        plans the fabric without them and changes only the rules that differ."""
        self.controller.drain([next(end for end in link.ends() if end[0] in self.topo.switches) for link in links])

    def set_switch(self, switch, up):
        """Take every link of a switch down, as a switch that fails, or bring them back."""
        for link in self.topo.links:
            if switch in (link.a, link.b):
                self.set_link(link, up)

    def forget_flows(self):
        """Empty the datapaths' flow caches, as a fresh fabric has them. Measured: with the 561
        flows of an alltoall's pairwise exchange still cached, the userspace datapath carried the
        next variant's link-disjoint rounds on the same fabric at 0.56-0.73 of the link in 6 of 9
        runs (0.97-0.98 alone); emptied, 0.97-0.98 in 6 of 6 (after 3 s idle, 4 of 5; after 12 s,
        5 of 5: about the datapath's 10 s idle timeout)."""
        if not self.slots:
            ovs.forget_datapath_flows()
        for slot in self.built_slots:
            ovs.forget_datapath_flows(slot.dir / "vswitchd.ctl")

    def switch_drops(self):
        """Packets dropped so far by the switches' egress queues, all ports together. Read shielded
        from the run's stop signals, which are raised once the socket is closed: one that landed
        while pyroute2 set up its event loop left a half-made loop whose destructor printed a
        traceback at exit."""
        drops = 0
        with shielded() as caught:
            for pid, ports in self._switch_ports_by_namespace().items():
                with shaping.netlink(pid) as ipr:
                    drops += sum(q["drops"] for q in shaping.queue_stats_all(ipr, [intf for intf, _ in ports]).values())
        if caught:
            raise interrupted(caught[0])
        return drops

    def underlay_errors(self):
        """{what: count} of what a split fabric's tunnels lost so far: the VXLAN devices' errors and
        drops, and UDP receive-buffer and checksum errors in the slots (all must stay 0)."""
        out = {"vxlan_errors": 0, "vxlan_dropped": 0, "udp_rcvbuf_errors": 0, "udp_in_errors": 0}
        cut = {c.link for c in self.partition.cut_links()} if self.partition else set()
        for pid, ports in self._switch_ports_by_namespace().items():
            with shaping.netlink(pid) as ipr:
                for name in [intf for intf, link in ports if link in cut]:
                    stats = shaping.counters(ipr, name)
                    out["vxlan_errors"] += stats["rx_errors"] + stats["tx_errors"]
                    out["vxlan_dropped"] += stats["rx_dropped"] + stats["tx_dropped"]
        for pid in [slot.pid for slot in self.built_slots] + ([os.getpid()] if self.share else []):
            udp = slots.udp_counters(pid)      # a tunnel to another machine has its socket here
            out["udp_rcvbuf_errors"] += udp.get("RcvbufErrors", 0)
            out["udp_in_errors"] += udp.get("InErrors", 0) + udp.get("InCsumErrors", 0)
        return out

    def cpu_monitor(self):
        """with emu.cpu_monitor() as cpu: <traffic>; cpu.result(): the verdict's CPU figures."""
        return CpuMonitor(self.datapath, self.slot_vswitchds)

    def counters(self, nic):
        """A NIC port's interface counters, read in its host."""
        with shaping.netlink(self.host(nic.host).pid) as ipr:
            return shaping.counters(ipr, nic.intf)

    def program(self, host, module, *args, name=None, inbox=None):
        """testbed.programs.<module> inside host (see emulation.processes)."""
        return Program(name or f"{module} on {host}", self.spawn(argv(module, *args), host, **POPEN), inbox)

