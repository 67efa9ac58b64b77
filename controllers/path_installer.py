"""Proactive path installer: an os-ken (Ryu) app that puts the testbed's routing plan into each switch
and routes around links that fail.

The plan is a JSON file (``testbed.routing``): ``rules`` are ``{dpid: [[src ip, dst ip, [out ports]]]}``
(src ip null: any source), ``seeds`` the hash basis of each switch's select groups. One out port is
an output action; several are a select group whose bucket Open vSwitch picks by its dp_hash method
(a symmetric hash of the 5-tuple) with that basis: the same basis everywhere is the same hash
function at every stage, as in real switches; one basis per switch decorrelates them. The basis
travels in the selection-method property of OpenFlow 1.5 group mods (an Open vSwitch extension),
which is why the app speaks 1.5. When a switch connects, every group and rule for it is installed
at once, then a table-miss rule that drops. ARP never reaches the switches: the testbed gives every
host static neighbour entries.

When a switch reports a port down (link down, port down or deleted), the app plans the routes again
without that link (``testbed.routing.plan`` on the fabric from ``--topology``) and installs only
what changed: on HPN7 a ToR that loses a NIC stops sending to it and every other switch converges on
the NIC's other ToR, as the /32 withdrawal of HPN's ToRs does in BGP. A port that comes back up is
planned back in. Each reaction is logged with the wall time the port status arrived and how long the
new rules took to compute and send.

Under ``planned`` routing without flows given, the app learns the long flows itself, as C4P does:
it reads every switch's per-pair rule counters every LEARN_POLL_S seconds, takes the host pairs
that sent at LONG_FLOW_SHARE of the link rate or more on average over the last LEARN_READINGS
readings as long flows, busiest first, and places them on paths apart (``routing.plan``'s planned
mode) whenever new ones appear; a flow once placed keeps its place. (A collective's pairs send in
bursts, a step at a time: over a window of a few iterations, the pairs that carry its large steps
stand out.)

An operator (or a fault detector) can drain links: the app watches the ``--drain`` file, a JSON
list of links as [switch, port, node, port], and routes around the links it names, up or not,
until they leave the list, as C4P moves flows off a link it finds slow.

With ECN marking at the switch ports, congestion is signalled where OpenFlow's statistics cannot
see it: the marks are counted by eBPF programs on the ports, the drops by the ports' FIFOs (qdiscs
that Open vSwitch did not make, so it reports no queue for them). The app reads both itself, every
CONGESTION_POLL_S seconds, at the ports the ``--congestion`` file names ({port: [its marker's count
map id, the pid of its network namespace or null]}, read again whenever it changes): the marks with
the bpf(2) system call (``testbed.probes.markers``), the drops from one netlink dump of the qdiscs
per namespace; and logs each port whose marks or drops grew, with its count per class.
"""
import json
import struct
import time
from pathlib import Path

from os_ken import cfg
from os_ken.base import app_manager
from os_ken.controller import ofp_event
from os_ken.controller.handler import CONFIG_DISPATCHER, MAIN_DISPATCHER, set_ev_cls
from os_ken.lib import hub
from os_ken.ofproto import ether, ofproto_v1_5

from testbed import routing
from testbed.emulation.shaping import fifo_stats_at, index_of, open_netlink
from testbed.probes.markers import Counters
from testbed.topology import from_spec, interface

cfg.CONF.register_cli_opts([
    cfg.StrOpt("routing", help="the routing plan (JSON) with rules per datapath id"),
    cfg.StrOpt("topology", help="the fabric (JSON, as the testbed writes it), to route around failures"),
    cfg.StrOpt("drain", help="a JSON file of links to route around (read again whenever it changes)"),
    cfg.StrOpt("congestion", help="a JSON file of the switch ports whose ECN marks and drops to read (read again "
                                  "whenever it changes)"),
])
DRAIN_POLL_S, CONGESTION_POLL_S = 0.2, 1.0
LEARN_POLL_S, LEARN_READINGS, LONG_FLOW_SHARE = 0.5, 4, 0.1

ROUTE_PRIORITY = 100
NTR_VENDOR_ID, NTRT_SELECTION_METHOD = 0x0000154D, 1   # Open vSwitch's group selection-method property
OVS_HASH_ALG_SYM_L4 = 1                                 # the hash OVS's default select groups use


class PathInstaller(app_manager.OSKenApp):
    OFP_VERSIONS = [ofproto_v1_5.OFP_VERSION]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        with open(cfg.CONF.routing) as f:
            plan = json.load(f)
        self.mode, self.hash, self.flows = plan["mode"], plan.get("hash", "same"), plan.get("flows", [])
        self.rules = self.by_match(plan["rules"])
        self.seeds = {int(dpid): seed for dpid, seed in plan.get("seeds", {}).items()}
        self.topo, self.down, self.drained, self.ports_down = None, set(), set(), set()
        if cfg.CONF.topology:
            with open(cfg.CONF.topology) as f:
                fabric = json.load(f)
            self.topo = from_spec(fabric["spec"], rate=fabric["rate_mbit"], queue=fabric["queue_packets"])
            self.names = {s.dpid: s.name for s in self.topo.switches.values()}
            self.port_of = {interface(node, port): (node, port) for link in self.topo.links
                            for node, port in link.ends() if node in self.topo.switches}
        self.datapaths, self.groups = {}, {}       # dpid -> datapath; dpid -> {out ports: group id}
        self.learning = self.mode == "planned" and not self.flows and self.topo is not None
        self.bytes, self.rates, self.counted = {}, [], {}   # learning: pair -> bytes; the last readings
        if self.learning:
            self.host_of = {nic.ip: nic.host for nic in self.topo.nic_ports()}
            hub.spawn(self.learn_long_flows)
        if cfg.CONF.drain and self.topo is not None:
            self._drain_file, self._drain_seen = Path(cfg.CONF.drain), ""
            hub.spawn(self.watch_drain)
        if cfg.CONF.congestion and self.topo is not None:
            hub.spawn(self.watch_congestion, Path(cfg.CONF.congestion))

    @staticmethod
    def by_match(rules):
        """{dpid: {(src, dst): [out ports]}}"""
        return {int(dpid): {(src, dst): ports for src, dst, ports in entries} for dpid, entries in rules.items()}

    @set_ev_cls(ofp_event.EventOFPSwitchFeatures, CONFIG_DISPATCHER)
    def switch_features_handler(self, ev):
        datapath = ev.msg.datapath
        self.datapaths[datapath.id] = datapath
        self.groups[datapath.id] = {}
        rules = self.rules.get(datapath.id, {})
        for (src, dst), out_ports in rules.items():
            self.install(datapath, src, dst, out_ports)
        self.add_flow(datapath, 0, datapath.ofproto_parser.OFPMatch(), [])
        self.logger.info("dpid %d: %d route rules, %d select groups installed", datapath.id, len(rules),
                         len(self.groups[datapath.id]))

    @set_ev_cls(ofp_event.EventOFPPortStatus, MAIN_DISPATCHER)
    def port_status_handler(self, ev):
        msg, started, received = ev.msg, time.monotonic(), time.time()
        ofproto, desc = msg.datapath.ofproto, msg.desc
        if self.topo is None or desc.port_no > ofproto.OFPP_MAX:
            return
        switch = self.names[msg.datapath.id]
        link = self.topo.link_at(switch, desc.port_no)
        port_down = (msg.reason == ofproto.OFPPR_DELETE or desc.config & ofproto.OFPPC_PORT_DOWN
                     or desc.state & ofproto.OFPPS_LINK_DOWN)
        (self.ports_down.add if port_down else self.ports_down.discard)((switch, desc.port_no))
        # a link is down while either of its switch ends is: the two ends' reports may come in
        # either order, and one end's report of a change may come after the other's of the next
        down = link is not None and any(end in self.ports_down for end in link.ends())
        if link is None or down == (link in self.down):
            return
        (self.down.add if down else self.down.discard)(link)
        changed = self.replan()
        self.logger.info("port %s:%d %s at %.3f: %d links down; %d rules changed on %d switches in %.1f ms",
                         switch, desc.port_no, "down" if down else "up", received, len(self.down),
                         sum(changed.values()), len(changed), 1000 * (time.monotonic() - started))

    def watch_drain(self):
        while True:
            hub.sleep(DRAIN_POLL_S)
            try:
                text = self._drain_file.read_text()
            except OSError:
                continue
            if text != self._drain_seen:
                self._drain_seen = text
                self.drain(json.loads(text or "[]"))

    def drain(self, ends):
        """Route around the links at `ends` ([[switch, port], ...]) and no others."""
        started = time.monotonic()
        links = {self.topo.link_at(switch, port) for switch, port, *_ in ends}
        self.drained = {link for link in links if link is not None}
        changed = self.replan()
        self.logger.info("drain: %d links drained; %d rules changed on %d switches in %.1f ms", len(self.drained),
                         sum(changed.values()), len(changed), 1000 * (time.monotonic() - started))

    def watch_congestion(self, path):
        seen, ports, before = "", Ports({}), {}
        while True:
            hub.sleep(CONGESTION_POLL_S)
            try:
                text = path.read_text()
            except OSError:
                text = seen
            if text != seen:
                ports.close()
                seen, before = text, {}
                try:
                    ports = Ports({port: at for port, at in json.loads(text or "{}").items() if port in self.port_of})
                except (OSError, LookupError) as e:   # the ports went before the file naming them was replaced
                    self.logger.warning("congestion: %s", e)
                    ports = Ports({})
                self.logger.info("congestion read on %d ports", len(ports.where))
            before = self.log_congestion(ports.read(), before)

    def log_congestion(self, reading, before):
        """Logs the ports whose marks or drops grew since `before` ({signal: {port: {class: count}}}),
        with their counts per class; returns `reading`."""
        for signal, counts in reading.items():
            was = before.get(signal, {})
            grew = [f"{':'.join(map(str, self.port_of[port]))} {cls} {count}"
                    for port, classes in sorted(counts.items())
                    for cls, count in classes.items() if count > was.get(port, {}).get(cls, 0)]
            if grew:
                self.logger.info("%s at %.3f: %s", signal, time.time(), ", ".join(grew))
        return reading

    def learn_long_flows(self):
        while True:
            hub.sleep(LEARN_POLL_S)
            reading, self.counted = self.counted, {}
            for datapath in list(self.datapaths.values()):
                datapath.send_msg(datapath.ofproto_parser.OFPFlowDescStatsRequest(datapath))
            self.learn(reading, LEARN_POLL_S)

    def learn(self, reading, seconds):
        """One reading of the per-pair byte counts, `seconds` after the last: the pairs that sent at
        LONG_FLOW_SHARE of the link rate or more on average over the last LEARN_READINGS readings
        are the long flows, busiest first; new ones are placed after those placed before
        (``routing.plan``, planned mode)."""
        sent = {}
        for pair, count in reading.items():
            before = self.bytes.get(pair, 0)
            sent[pair] = count - before if count >= before else count     # a reinstalled rule restarts
            self.bytes[pair] = count
        self.rates = (self.rates + [(sent, seconds)])[-LEARN_READINGS:]
        if len(self.rates) < LEARN_READINGS:
            return
        span = sum(s for _, s in self.rates)
        pairs = {p for r, _ in self.rates for p in r}
        rates = {pair: sum(r.get(pair, 0) for r, _ in self.rates) / span for pair in pairs}
        floor = LONG_FLOW_SHARE * self.topo.bytes_per_s
        long = [pair for pair, rate in sorted(rates.items(), key=lambda item: (-item[1], item[0])) if rate >= floor]
        known = [[self.host_of[src], self.host_of[dst]] for src, dst in long
                 if src in self.host_of and dst in self.host_of]
        new = [flow for flow in known if flow not in self.flows]
        if new:      # a flow once placed keeps its place: paths that move with every reading disturb more than they win
            started, self.flows = time.monotonic(), self.flows + new
            flows = self.flows
            changed = self.replan()
            self.logger.info("learned %d long flows (%s); %d rules changed on %d switches in %.1f ms", len(flows),
                             " ".join(f"{a}>{b}" for a, b in flows[:8]), sum(changed.values()), len(changed),
                             1000 * (time.monotonic() - started))

    @set_ev_cls(ofp_event.EventOFPFlowDescStatsReply, MAIN_DISPATCHER)
    def flow_stats_reply_handler(self, ev):
        """A switch's per-pair byte counts; a pair's largest over the switches is its bytes."""
        if not self.learning:
            return
        for stat in ev.msg.body:
            src, dst = stat.match.get("ipv4_src"), stat.match.get("ipv4_dst")
            if stat.priority == ROUTE_PRIORITY and src and dst:
                self.counted[src, dst] = max(self.counted.get((src, dst), 0), stat.stats["byte_count"])

    def replan(self):
        """Plan the routes without the links that are down and install what differs; returns
        {dpid: rules changed}."""
        plan = routing.plan(self.topo.without(self.down | self.drained), self.mode, self.hash, self.flows)
        wanted, changed = self.by_match(plan.to_dict()["rules"]), {}
        for dpid, datapath in self.datapaths.items():
            old, new = self.rules.get(dpid, {}), wanted.get(dpid, {})
            for match in old.keys() - new.keys():
                self.remove(datapath, *match)
            for match, out_ports in new.items():
                if old.get(match) != out_ports:
                    self.install(datapath, *match, out_ports)
            count = len(old.keys() - new.keys()) + sum(old.get(m) != p for m, p in new.items())
            if count:
                changed[dpid] = count
        self.rules = wanted
        return changed

    def match(self, parser, src, dst):
        fields = {"eth_type": ether.ETH_TYPE_IP, "ipv4_dst": dst}
        if src is not None:
            fields["ipv4_src"] = src
        return parser.OFPMatch(**fields)

    def install(self, datapath, src, dst, out_ports):
        """The rule for (src, dst): an output, or a select group over out_ports (made once per set)."""
        parser = datapath.ofproto_parser
        if len(out_ports) == 1:
            actions = [parser.OFPActionOutput(out_ports[0])]
        else:
            groups = self.groups[datapath.id]
            key = tuple(out_ports)
            if key not in groups:
                groups[key] = len(groups) + 1
                self.add_select_group(datapath, groups[key], out_ports)
            actions = [parser.OFPActionGroup(groups[key])]
        self.add_flow(datapath, ROUTE_PRIORITY, self.match(parser, src, dst), actions)

    def remove(self, datapath, src, dst):
        ofproto, parser = datapath.ofproto, datapath.ofproto_parser
        datapath.send_msg(parser.OFPFlowMod(datapath=datapath, command=ofproto.OFPFC_DELETE_STRICT,
                                            priority=ROUTE_PRIORITY, match=self.match(parser, src, dst),
                                            out_port=ofproto.OFPP_ANY, out_group=ofproto.OFPG_ANY))

    def add_flow(self, datapath, priority, match, actions):
        ofproto, parser = datapath.ofproto, datapath.ofproto_parser
        inst = [parser.OFPInstructionActions(ofproto.OFPIT_APPLY_ACTIONS, actions)] if actions else []
        datapath.send_msg(parser.OFPFlowMod(datapath=datapath, priority=priority,
                                            match=match, instructions=inst))

    def add_select_group(self, datapath, group_id, out_ports):
        ofproto, parser = datapath.ofproto, datapath.ofproto_parser
        weight = parser.OFPGroupBucketPropWeight(type_=ofproto.OFPGBPT_WEIGHT, weight=1)
        buckets = [parser.OFPBucket(bucket_id=i, actions=[parser.OFPActionOutput(port)], properties=[weight])
                   for i, port in enumerate(out_ports)]
        datapath.send_msg(parser.OFPGroupMod(datapath, ofproto.OFPGC_ADD, ofproto.OFPGT_SELECT, group_id,
                                             buckets=buckets, properties=[self.selection_method(datapath)]))

    def selection_method(self, datapath):
        """dp_hash with this switch's basis: method name (16 bytes, NUL-padded) and a 64-bit
        parameter whose high half is the hash algorithm and low half the basis, after 4 bytes of
        padding, as 32-bit words."""
        param = (OVS_HASH_ALG_SYM_L4 << 32) | self.seeds.get(datapath.id, 0)
        words = [0, *struct.unpack("!4I", b"dp_hash".ljust(16, b"\0")), param >> 32, param & 0xFFFFFFFF]
        return datapath.ofproto_parser.OFPGroupPropExperimenter(
            type_=datapath.ofproto.OFPGPT_EXPERIMENTER, experimenter=NTR_VENDOR_ID,
            exp_type=NTRT_SELECTION_METHOD, data=words)


class Ports:
    """The switch ports whose congestion the app reads: {port: [its marker's count map id, the pid
    of its namespace or None]}; read(): {"marks": {port: {class: packets marked}}, "drops": {port:
    {class: packets dropped}}} since the marker was attached and the FIFO made."""

    def __init__(self, where):
        self.where, self.netlink = where, {}
        self.counters = Counters({port: table for port, (table, _) in where.items()})
        self.counters.__enter__()
        self.indices = {}       # {pid: {ifindex: port}}, looked up once
        try:
            for pid in {pid for _, pid in where.values()}:
                ipr = self.netlink[pid] = open_netlink(pid)
                self.indices[pid] = {index_of(ipr, port): port for port, (_, at) in where.items() if at == pid}
        except (OSError, LookupError):
            self.close()
            raise

    def read(self):
        marks = {port: {cls: counts["marked"] for cls, counts in classes.items()}
                 for port, classes in self.counters.read().items()}
        drops = {}
        for pid, ipr in self.netlink.items():
            try:
                fifos = fifo_stats_at(ipr, self.indices[pid])
            except (OSError, LookupError):      # the ports went with the fabric
                continue
            drops.update({port: {cls: stats["drops"] for cls, stats in classes.items()}
                          for port, classes in fifos.items()})
        return {"marks": marks, "drops": drops}

    def close(self):
        self.counters.__exit__()
        for ipr in self.netlink.values():
            ipr.close()
        self.netlink = {}
