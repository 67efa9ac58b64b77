"""Proactive path installer: an os-ken (Ryu) app that puts the testbed's routes into each switch.

The rules come from the testbed's routing plan, a JSON file whose ``rules`` are
``{dpid: [[src ip, dst ip, [out ports]]]}`` (src ip null: any source). One out port is an output
action; several are a select group, whose bucket Open vSwitch picks by a hash of the 5-tuple
(ECMP). When a switch connects, every group and rule for it is installed at once, then a
table-miss rule that drops.
ARP never reaches the switches: the testbed gives every host static neighbour entries.
"""
import json

from os_ken import cfg
from os_ken.base import app_manager
from os_ken.controller import ofp_event
from os_ken.controller.handler import CONFIG_DISPATCHER, set_ev_cls
from os_ken.ofproto import ether, ofproto_v1_3

cfg.CONF.register_cli_opts([cfg.StrOpt("routing", help="the routing plan (JSON) with rules per datapath id")])

ROUTE_PRIORITY = 100


class PathInstaller(app_manager.OSKenApp):
    OFP_VERSIONS = [ofproto_v1_3.OFP_VERSION]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        with open(cfg.CONF.routing) as f:
            self.rules = {int(dpid): rules for dpid, rules in json.load(f)["rules"].items()}

    @set_ev_cls(ofp_event.EventOFPSwitchFeatures, CONFIG_DISPATCHER)
    def switch_features_handler(self, ev):
        datapath = ev.msg.datapath
        parser = datapath.ofproto_parser
        rules, groups = self.rules.get(datapath.id, []), {}
        for src, dst, out_ports in rules:
            fields = {"eth_type": ether.ETH_TYPE_IP, "ipv4_dst": dst}
            if src is not None:
                fields["ipv4_src"] = src
            if len(out_ports) == 1:
                actions = [parser.OFPActionOutput(out_ports[0])]
            else:
                key = tuple(out_ports)
                if key not in groups:
                    groups[key] = len(groups) + 1
                    self.add_select_group(datapath, groups[key], out_ports)
                actions = [parser.OFPActionGroup(groups[key])]
            self.add_flow(datapath, ROUTE_PRIORITY, parser.OFPMatch(**fields), actions)
        self.add_flow(datapath, 0, parser.OFPMatch(), [])
        self.logger.info("dpid %d: %d route rules, %d select groups installed", datapath.id, len(rules), len(groups))

    def add_flow(self, datapath, priority, match, actions):
        ofproto, parser = datapath.ofproto, datapath.ofproto_parser
        inst = [parser.OFPInstructionActions(ofproto.OFPIT_APPLY_ACTIONS, actions)] if actions else []
        datapath.send_msg(parser.OFPFlowMod(datapath=datapath, priority=priority,
                                            match=match, instructions=inst))

    def add_select_group(self, datapath, group_id, out_ports):
        ofproto, parser = datapath.ofproto, datapath.ofproto_parser
        buckets = [parser.OFPBucket(weight=1, watch_port=ofproto.OFPP_ANY, watch_group=ofproto.OFPG_ANY,
                                    actions=[parser.OFPActionOutput(port)]) for port in out_ports]
        datapath.send_msg(parser.OFPGroupMod(datapath, ofproto.OFPGC_ADD, ofproto.OFPGT_SELECT,
                                             group_id, buckets))
