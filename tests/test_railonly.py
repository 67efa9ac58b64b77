"""The rail-only fabric family without root: its wiring, and routes that meet the network only on the
destination's rail, crossing the scale-up bridge for any other (deterministic and ECMP alike)."""
import pytest

from testbed import routing
from testbed.errors import TestbedError
from testbed.topology import from_spec
from testbed.topology.railonly import RailOnly


def labels(topo, route):
    return [topo.label(h.switch) for h in route.hops]


def test_a_rail_switch_per_rail_a_bridge_per_server_and_no_spine():
    topo = from_spec("railonly:4,2,8", rate=10)
    assert isinstance(topo, RailOnly) and topo.spec == "railonly:4,2,8"
    roles = sorted(s.role for s in topo.switches.values())
    assert roles == ["rail"] * 2 + ["scaleup"] * 4
    assert len(topo.hosts) == 8 and all(len(h.ports) == 1 for h in topo.hosts.values())
    rates = sorted({link.rate for link in topo.links})
    assert rates == [10, 80]                         # NICs, and scale-up links 8 times faster
    assert all(link.rate == 10 for link in topo.fabric_links())
    with pytest.raises(TestbedError, match="between 1 and 64"):
        RailOnly(2, 2, scaleup=0)


def test_a_message_to_another_rail_crosses_the_scaleup_bridge_then_the_destinations_rail():
    topo = RailOnly(3, 4)
    plan = routing.plan(topo, "deterministic")
    for a in topo.hosts.values():
        for b in topo.hosts.values():
            if a is b:
                continue
            hops = labels(topo, plan.routes[a.ports[0].ip, b.ports[0].ip])
            if a.server == b.server:
                assert hops == [f"su{a.server}"]
            else:
                assert hops == [f"su{a.server}", f"rail{b.rail}", f"su{b.server}"]


def test_ecmp_has_no_choice_to_make_on_a_rail_only_fabric():
    topo = RailOnly(2, 4)
    rules = routing.plan(topo, "ecmp").rules
    assert all(len(ports) == 1 for entries in rules.values() for _, _, ports in entries)


def test_a_fabric_file_with_scaleup_bridges_and_rail_switches_routes_the_same_way(tmp_path):
    built = RailOnly(2, 2)
    spec = {"switches": [{"label": s.label, "role": s.role, "plane": s.plane} for s in built.switches.values()],
            "hosts": [{"name": h.name, "server": h.server, "rail": h.rail} for h in built.hosts.values()],
            "links": [{"a": built.label(link.a) if link.a in built.switches else link.a,
                       "b": built.label(link.b) if link.b in built.switches else link.b, "rate": link.rate}
                      for link in built.links]}
    path = tmp_path / "railonly.json"
    path.write_text(__import__("json").dumps(spec))
    topo = from_spec(str(path))
    ours, theirs = routing.plan(built, "deterministic").routes, routing.plan(topo, "deterministic").routes
    assert {k: labels(built, r) for k, r in ours.items()} == {k: labels(topo, r) for k, r in theirs.items()}
