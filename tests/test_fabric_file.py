"""Fabrics from a file (`--topology FILE.json|yaml`): a run's topology.json read back is the same
fabric, a hand-written one routes, and a bad one is refused in one line. No root."""
import json

import pytest

from testbed.routing import plan
from testbed.topology import HPN7, BiGraph, from_spec
from tests.test_options import refused


def ends(topo):
    label = lambda node: topo.switches[node].label if node in topo.switches else node
    return [(label(k.a), k.a_port, label(k.b), k.b_port, k.rate) for k in topo.links]


@pytest.mark.parametrize("made", [BiGraph(2, 8), HPN7(2, 2, 2, 2, uplink_ratio=0.9375)], ids=["bigraph", "hpn7"])
def test_a_runs_topology_json_read_back_is_the_same_fabric(made, tmp_path):
    file = tmp_path / "topology.json"
    file.write_text(json.dumps(made.to_dict()))
    read = from_spec(str(file))
    assert ends(read) == ends(made) and read.shared_nic_address == made.shared_nic_address
    assert [p.ip for p in read.nic_ports()] == [p.ip for p in made.nic_ports()]
    assert read.spec == str(file) and read.to_dict()["links"] == made.to_dict()["links"]
    routes = plan(read, "deterministic").routes
    assert len(routes) == len(plan(made, "deterministic").routes)


def test_a_hand_written_yaml_fabric_builds_and_routes_every_pair(tmp_path):
    file = tmp_path / "mine.yaml"
    file.write_text("rate_mbit: 20\nswitches:\n  - {label: leaf0, role: leaf}\n  - {label: leaf1, role: leaf}\n"
                    "  - {label: spine0, role: spine}\n  - {label: spine1, role: spine}\n"
                    "hosts: [{name: a}, {name: b}, {name: c}]\n"
                    "links:\n  - {a: a, b: leaf0}\n  - {a: b, b: leaf0}\n  - {a: c, b: leaf1, rate: 10}\n"
                    "  - {a: leaf0, b: spine0}\n  - {a: leaf0, b: spine1}\n  - {a: leaf1, b: spine0}\n"
                    "  - {a: leaf1, b: spine1}\n")
    topo = from_spec(str(file))
    assert (len(topo.hosts), len(topo.switches), len(topo.links), topo.rate) == (3, 4, 7, 20.0)
    assert topo.links[2].rate == 10.0
    assert len(plan(topo, "deterministic").routes) == 6
    assert len(plan(topo, "ecmp").rules[topo.switches["tb1"].dpid]) == 3


BAD = [
    ('{"switches": [{"label": "s"}], "hosts": [{"name": "h0"}], "links": [{"a": "h0", "b": "x"}]}',
     "a link names 'x', which is no host or switch"),
    ('{"switches": [{"label": "s"}], "hosts": [{"name": "s"}], "links": [{"a": "s", "b": "s"}]}',
     "the name 's' is used twice"),
    ('{"switches": [{"label": "s"}], "hosts": [{"name": "h0"}, {"name": "h1"}], "links": [{"a": "h0", "b": "s"}]}',
     "host h1 has no link"),
    ('{"switches": [{"label": "s"}], "hosts": [{"name": "h0"}], "links": [{"a": "h0", "b": "s", "rate": 0}]}',
     "has rate 0: use 1 to 10000 Mbit/s"),
    ('{"switches": [], "hosts": [], "links": []}', "'switches' should be a non-empty list"),
    ('{"switches": [', "not valid JSON"),
    # the cases a new user's files reached (before: a KeyError after 58 s of building, a traceback, or built)
    ('{"switches": [{"label": "s"}, {"label": "t"}], "hosts": [{"name": "a"}, {"name": "b"}], '
     '"links": [{"a": "a", "b": "s"}, {"a": "b", "b": "t"}]}', "hosts a and b cannot reach each other"),
    ('{"switches": [{"label": "s"}], "hosts": [{"name": "a"}, {"name": "b"}], '
     '"links": [{"a": "a", "b": "s"}, {"a": "a", "b": "b"}]}', "link a-b joins two hosts"),
    ('{"switches": [{"label": "s"}], "hosts": [{"name": "a"}, {"name": "b"}], '
     '"links": [{"a": "a", "b": "s"}, {"a": "b", "b": "s"}, {"a": "s", "b": "s"}]}', "link s-s joins a node to itself"),
    ('{"switches": [{"label": "s"}], "hosts": [{"name": "a", "ports": [{"ip": "999.1.1.1"}]}, {"name": "b"}], '
     '"links": [{"a": "a", "b": "s"}, {"a": "b", "b": "s"}]}', "has address '999.1.1.1', which is not IPv4"),
    ('{"switches": [{"label": "s"}], "hosts": [{"name": "a", "ports": [{"ip": "10.0.0.1"}]}, '
     '{"name": "b", "ports": [{"ip": "10.0.0.1"}]}], "links": [{"a": "a", "b": "s"}, {"a": "b", "b": "s"}]}',
     "address 10.0.0.1 is given to a and b"),
]


@pytest.mark.parametrize("text, message", BAD, ids=[m for _, m in BAD])
def test_a_bad_fabric_file_is_refused_in_one_line(text, message, tmp_path):
    file = tmp_path / "fabric.json"
    file.write_text(text)
    assert message in refused(["fabric_check", "--topology", str(file)], tmp_path)


def test_a_missing_fabric_file_is_refused(tmp_path):
    assert "no such file" in refused(["fabric_check", "--topology", str(tmp_path / "none.json")], tmp_path)


def test_a_fabric_file_that_is_not_text_is_refused(tmp_path):
    file = tmp_path / "fabric.json"
    file.write_bytes(bytes(range(256)) * 4)
    assert "not a text file" in refused(["fabric_check", "--topology", str(file)], tmp_path)


def test_addresses_of_the_file_that_the_testbed_renumbers_are_said_to_be(tmp_path):
    file = tmp_path / "fabric.json"
    topo = BiGraph(1, 2)
    data = json.loads(json.dumps(topo.to_dict()))
    data["hosts"][1]["ports"][0]["ip"] = "10.0.0.77"
    file.write_text(json.dumps(data))
    read = from_spec(str(file))
    assert [p.ip for p in read.nic_ports()] == [p.ip for p in topo.nic_ports()]
    assert len(read.notes) == 1 and "1 host address of the file reassigned" in read.notes[0]
    assert "h1 10.0.0.77 -> 10.0.0.2" in read.notes[0] and from_spec("bigraph:1,2").notes == ()
