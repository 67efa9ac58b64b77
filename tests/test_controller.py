"""The controller app's handlers, driven with fake datapaths (no root, no switch): what it installs
when a switch connects, and what it changes when a switch reports a port down and up again."""
import json
from types import SimpleNamespace

import pytest
from os_ken import cfg
from os_ken.ofproto import ofproto_v1_5 as ofp
from os_ken.ofproto import ofproto_v1_5_parser as parser

from controllers.path_installer import PathInstaller
from testbed import routing
from testbed.topology import HPN7


class FakeDatapath:
    ofproto, ofproto_parser = ofp, parser

    def __init__(self, dpid):
        self.id, self.sent = dpid, []

    def send_msg(self, msg):
        self.sent.append(msg)

    def outputs(self, dst):
        """The out ports of the last rule sent for destination dst (a group's buckets), or None if
        it was deleted."""
        groups = {m.group_id: [b.actions[0].port for b in m.buckets]
                  for m in self.sent if isinstance(m, parser.OFPGroupMod)}
        for msg in reversed(self.sent):
            if isinstance(msg, parser.OFPFlowMod) and msg.match.get("ipv4_dst") == dst:
                if msg.command == ofp.OFPFC_DELETE_STRICT:
                    return None
                action = msg.instructions[0].actions[0]
                return groups[action.group_id] if isinstance(action, parser.OFPActionGroup) else [action.port]
        return None


@pytest.fixture
def app(tmp_path):
    topo = HPN7(segments=1, servers=2, rails=1, aggs=1, planes=1)
    (tmp_path / "routing.json").write_text(json.dumps(routing.plan(topo, "ecmp").to_dict()))
    (tmp_path / "topology.json").write_text(json.dumps(topo.to_dict()))
    cfg.CONF.set_override("routing", str(tmp_path / "routing.json"))
    cfg.CONF.set_override("topology", str(tmp_path / "topology.json"))
    app = PathInstaller()
    datapaths = {s.name: FakeDatapath(s.dpid) for s in topo.switches.values()}
    for datapath in datapaths.values():
        app.switch_features_handler(SimpleNamespace(msg=SimpleNamespace(datapath=datapath)))
    yield app, topo, datapaths
    cfg.CONF.clear_override("routing")
    cfg.CONF.clear_override("topology")


def port_status(datapath, port, down):
    desc = SimpleNamespace(port_no=port, config=ofp.OFPPC_PORT_DOWN if down else 0,
                           state=ofp.OFPPS_LINK_DOWN if down else ofp.OFPPS_LIVE)
    return SimpleNamespace(msg=SimpleNamespace(datapath=datapath, reason=ofp.OFPPR_MODIFY, desc=desc))


def test_a_nic_link_down_moves_its_traffic_to_the_other_tor_and_back(app):
    app, topo, datapaths = app
    h0 = topo.hosts["h0"].ports[0]
    tor0, port0 = topo.attachment(topo.hosts["h0"].ports[0])
    tor1, _ = topo.attachment(topo.hosts["h0"].ports[1])
    aggs = [s.name for s in topo.switches.values() if s.role == "agg"]
    assert datapaths[tor0].outputs(h0.ip) == [port0]
    assert all(len(datapaths[a].outputs(h0.ip)) == 2 for a in aggs)       # both ToRs of the NIC

    app.port_status_handler(port_status(datapaths[tor0], port0, down=True))
    assert port0 not in datapaths[tor0].outputs(h0.ip)                     # the ToR sends it up instead
    for agg in aggs:                                                       # and every Agg to the other ToR
        (only,) = datapaths[agg].outputs(h0.ip)
        assert tor1 in (node for node, _ in topo.link_at(agg, only).ends())

    app.port_status_handler(port_status(datapaths[tor0], port0, down=False))
    assert datapaths[tor0].outputs(h0.ip) == [port0]
    assert all(len(datapaths[a].outputs(h0.ip)) == 2 for a in aggs)


def test_a_repeated_port_status_changes_nothing(app):
    app, topo, datapaths = app
    tor0, port0 = topo.attachment(topo.hosts["h0"].ports[0])
    app.port_status_handler(port_status(datapaths[tor0], port0, down=True))
    sent = sum(len(d.sent) for d in datapaths.values())
    app.port_status_handler(port_status(datapaths[tor0], port0, down=True))
    assert sum(len(d.sent) for d in datapaths.values()) == sent
