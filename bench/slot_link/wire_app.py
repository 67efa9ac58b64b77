"""The controller of bench/slot_link/run.sh: wires port 1 to port 2 on every switch that connects."""
import logging
import sys

from os_ken import cfg
from os_ken import log as oslog
from os_ken.base import app_manager
from os_ken.base.app_manager import AppManager
from os_ken.controller import ofp_event
from os_ken.controller.handler import CONFIG_DISPATCHER, set_ev_cls
from os_ken.lib import hub
from os_ken.ofproto import ofproto_v1_3


class Wire(app_manager.OSKenApp):
    OFP_VERSIONS = [ofproto_v1_3.OFP_VERSION]

    @set_ev_cls(ofp_event.EventOFPSwitchFeatures, CONFIG_DISPATCHER)
    def features(self, ev):
        dp = ev.msg.datapath
        p = dp.ofproto_parser
        for a, b in ((1, 2), (2, 1)):
            dp.send_msg(p.OFPFlowMod(datapath=dp, priority=1, match=p.OFPMatch(in_port=a),
                                     instructions=[p.OFPInstructionActions(dp.ofproto.OFPIT_APPLY_ACTIONS,
                                                                           [p.OFPActionOutput(b)])]))
        print(f"switch {dp.id:x} wired", flush=True)


if __name__ == "__main__":
    hub.patch(thread=False)
    oslog.early_init_log(logging.INFO)
    cfg.CONF(args=sys.argv[1:], project="os_ken")
    oslog.init_log()
    AppManager.run_apps([__name__])
