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


@pytest.fixture(autouse=True)
def no_threads(monkeypatch):
    """The app's own loops (drain file, counters) are driven by hand here."""
    monkeypatch.setattr("controllers.path_installer.hub.spawn", lambda *a, **k: None)


def start(tmp_path, topo, mode):
    (tmp_path / "routing.json").write_text(json.dumps(routing.plan(topo, mode).to_dict()))
    (tmp_path / "topology.json").write_text(json.dumps(topo.to_dict()))
    cfg.CONF.set_override("routing", str(tmp_path / "routing.json"))
    cfg.CONF.set_override("topology", str(tmp_path / "topology.json"))
    try:
        app = PathInstaller()
    finally:
        cfg.CONF.clear_override("routing")
        cfg.CONF.clear_override("topology")
    datapaths = {s.name: FakeDatapath(s.dpid) for s in topo.switches.values()}
    for datapath in datapaths.values():
        app.switch_features_handler(SimpleNamespace(msg=SimpleNamespace(datapath=datapath)))
    return app, datapaths


def test_a_drained_link_is_routed_around_until_it_is_put_back(tmp_path):
    from testbed.topology import LeafSpine
    topo = LeafSpine(2, 2, 1)                   # h0 on leaf0 (tb1), h1 on leaf1 (tb2); spines tb3, tb4
    app, datapaths = start(tmp_path, topo, "ecmp")
    h1 = topo.hosts["h1"].ports[0].ip
    assert len(datapaths["tb1"].outputs(h1)) == 2
    up = datapaths["tb1"].outputs(h1)[0]
    app.drain([["tb1", up]])
    assert datapaths["tb1"].outputs(h1) == [p for p in (2, 3) if p != up]
    app.drain([])
    assert len(datapaths["tb1"].outputs(h1)) == 2


def test_the_long_flows_are_learned_from_the_counters_and_placed_apart(tmp_path):
    from testbed.topology import LeafSpine
    topo = LeafSpine(2, 2, 2)                   # h0 h1 on leaf0, h2 h3 on leaf1: two flows across
    app, datapaths = start(tmp_path, topo, "planned")
    assert app.learning
    ip = {h: topo.hosts[h].ports[0].ip for h in topo.hosts}
    src_rules = lambda: {(m.match.get("ipv4_src"), m.match.get("ipv4_dst")): m.instructions[0].actions[0].port
                         for m in datapaths["tb1"].sent if isinstance(m, parser.OFPFlowMod) and m.instructions
                         and m.match.get("ipv4_src") in (ip["h0"], ip["h1"])}
    rate = topo.bytes_per_s                     # the long flows at the link rate, in bursts
    for k in range(1, 5):
        assert app.flows == []                  # fewer readings than the window: nothing learned yet
        burst = rate * (k // 2)                 # no bytes in every other reading
        app.learn({(ip["h0"], ip["h2"]): burst, (ip["h1"], ip["h3"]): burst, (ip["h0"], ip["h1"]): 10 * k}, 1.0)
    assert sorted(app.flows) == [["h0", "h2"], ["h1", "h3"]]
    ports = src_rules()
    assert ports[ip["h0"], ip["h2"]] != ports[ip["h1"], ip["h3"]]   # the two long flows on different spines


def test_a_link_is_down_while_either_of_its_switch_ends_reports_down(tmp_path):
    from testbed.topology import LeafSpine
    topo = LeafSpine(2, 2, 1)
    app, datapaths = start(tmp_path, topo, "ecmp")
    link = topo.link_at("tb1", 2)                       # leaf0 - spine0
    (a, ap), (b, bp) = link.ends()
    for end, port, down, expect in ((a, ap, True, True), (b, bp, True, True), (a, ap, False, True),
                                    (b, bp, False, False)):
        app.port_status_handler(port_status(datapaths[end], port, down=down))
        assert (link in app.down) == expect


def test_the_ports_whose_marks_or_drops_grew_are_logged_and_read_back_off_the_log(tmp_path):
    from testbed.emulation.controller import congestion
    from testbed.topology import LeafSpine
    app, _ = start(tmp_path, LeafSpine(2, 2, 1), "ecmp")
    lines = ["congestion read on 4 ports"]
    app.logger = SimpleNamespace(info=lambda fmt, *args: lines.append(fmt % args))
    at = lambda rest, high, dropped: {"marks": {"tb1-eth2": {"rest": rest, "high": high}, "tb3-eth1": {"rest": 0}},
                                      "drops": {"tb1-eth2": {"rest": dropped}}}
    before = app.log_congestion(at(5, 0, 0), {})
    before = app.log_congestion(at(5, 0, 0), before)        # nothing grew: nothing logged
    app.log_congestion(at(9, 1, 2), before)
    assert len(lines) == 4 and lines[1].startswith("marks at ") and lines[1].endswith(": tb1:2 rest 5")
    assert lines[2].endswith(": tb1:2 rest 9, tb1:2 high 1") and lines[3].startswith("drops at ")
    log = tmp_path / "controller.log"
    log.write_text("\n".join(lines) + "\n")
    assert congestion(log) == {"marks": {"tb1-eth2": {"rest": 9, "high": 1}}, "drops": {"tb1-eth2": {"rest": 2}}}
    log.write_text("\n".join(lines + ["congestion read on 4 ports"]) + "\n")   # markers attached afresh
    assert congestion(log) == {"marks": {}, "drops": {}}
    assert congestion(tmp_path / "none.log") == {"marks": {}, "drops": {}}
