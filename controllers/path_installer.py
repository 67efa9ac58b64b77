"""Proactive path installer: an os-ken (Ryu) app that puts the testbed's routes into each switch.

The routes come from ``testbed.routing`` as a JSON file, ``{dpid: [[src ip, dst ip, out port]]}``.
When a switch connects, every rule for it is installed at once, then a table-miss rule that drops.
ARP never reaches the switches: the testbed gives every host static neighbour entries.
"""
import json

from os_ken import cfg
from os_ken.base import app_manager
from os_ken.controller import ofp_event
from os_ken.controller.handler import CONFIG_DISPATCHER, set_ev_cls
from os_ken.ofproto import ether, ofproto_v1_3

cfg.CONF.register_cli_opts([cfg.StrOpt("flows", help="JSON file of rules per datapath id")])

ROUTE_PRIORITY = 100


class PathInstaller(app_manager.OSKenApp):
    OFP_VERSIONS = [ofproto_v1_3.OFP_VERSION]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        with open(cfg.CONF.flows) as f:
            self.rules = {int(dpid): rules for dpid, rules in json.load(f).items()}

    @set_ev_cls(ofp_event.EventOFPSwitchFeatures, CONFIG_DISPATCHER)
    def switch_features_handler(self, ev):
        datapath = ev.msg.datapath
        parser = datapath.ofproto_parser
        rules = self.rules.get(datapath.id, [])
        for src, dst, out_port in rules:
            match = parser.OFPMatch(eth_type=ether.ETH_TYPE_IP, ipv4_src=src, ipv4_dst=dst)
            self.add_flow(datapath, ROUTE_PRIORITY, match, [parser.OFPActionOutput(out_port)])
        self.add_flow(datapath, 0, parser.OFPMatch(), [])
        self.logger.info("dpid %d: %d route rules installed", datapath.id, len(rules))

    def add_flow(self, datapath, priority, match, actions):
        ofproto, parser = datapath.ofproto, datapath.ofproto_parser
        inst = [parser.OFPInstructionActions(ofproto.OFPIT_APPLY_ACTIONS, actions)] if actions else []
        datapath.send_msg(parser.OFPFlowMod(datapath=datapath, priority=priority,
                                            match=match, instructions=inst))
