"""The machines file of a run across machines (--machines): read and checked without root, each
mistake refused in one line that names the fix; the cut links' load between machines."""
import pytest

from testbed.errors import TestbedError
from testbed.machines import inventory
from testbed.machines.checks import cut_link_load
from testbed.topology import BiGraph

GOOD = """
head = "10.0.0.254"
[[machine]]
name = "a"
ssh = "root@10.0.0.1"
underlay = "10.0.0.1"
slots = 2
[[machine]]
name = "b"
ssh = "vm2"
underlay = "10.0.0.2"
"""


def test_a_good_file_gives_each_machine_its_slots_in_order(tmp_path):
    path = tmp_path / "m.toml"
    path.write_text(GOOD)
    ms = inventory.load(path)
    assert ms.head == "10.0.0.254" and ms.scheduler is None and ms.slot_count == 3
    assert [m.name for m in ms.machine_of_slot()] == ["a", "a", "b"]
    assert ms.get("a").ssh_user_host == ("root", "10.0.0.1") and ms.get("b").ssh_user_host == (None, "vm2")


@pytest.mark.parametrize("text, said", [
    ("", "no head"),
    ('head = "x"', "head 'x' is not an IPv4 address"),
    ('head = "10.0.0.1"', "no machines"),
    ('head = "10.0.0.1"\nmachine = []', "no machines"),
    ('head = "10.0.0.1"\nworkers = 2', "unknown key 'workers'"),
    ('head = "10.0.0.1"\nscheduler = "10.0.0.1:8786"\n[[machine]]\nname="a"\nunderlay="10.0.0.2"',
     "write it as tcp://HOST:PORT"),
    ('head = "10.0.0.1"\n[[machine]]\nname="a"\nunderlay="10.0.0.2"', "no ssh target"),
    ('head = "10.0.0.1"\n[[machine]]\nname="a b"\nssh="h"\nunderlay="10.0.0.2"', "must be a word"),
    ('head = "10.0.0.1"\n[[machine]]\nname="a"\nssh="h"\nunderlay="10.0.0.2"\nslots=0', "whole number from 1"),
    ('head = "10.0.0.1"\n[[machine]]\nname="a"\nssh="h"\nunderlay="10.0.0.2"\ncores=4', "unknown field 'cores'"),
    ('head = "10.0.0.1"\n[[machine]]\nname="a"\nssh="h"\nunderlay="10.0.0.2"\n'
     '[[machine]]\nname="a"\nssh="h"\nunderlay="10.0.0.3"', "taken by another machine"),
    ('head = "10.0.0.1"\n[[machine]]\nname="a"\nssh="h"\nunderlay="10.0.0.2"\n'
     '[[machine]]\nname="b"\nssh="h"\nunderlay="10.0.0.2"', "is another machine's"),
    ('head = "10.0.0.1"\n[[machine]]\nname="a"\nssh="h"\nunderlay="vm1"', "underlay 'vm1' is not an IPv4"),
    ("head = ", "is not TOML"),
])
def test_each_mistake_is_refused_in_one_line(tmp_path, text, said):
    path = tmp_path / "m.toml"
    path.write_text(text)
    with pytest.raises(TestbedError) as e:
        inventory.load(path)
    assert said in str(e.value) and "\n" not in str(e.value)


def test_a_missing_file_is_refused(tmp_path):
    with pytest.raises(TestbedError, match="cannot read it"):
        inventory.load(tmp_path / "none.toml")


def test_a_scheduler_of_the_users_needs_no_ssh_targets():
    ms = inventory.parse({"head": "10.0.0.1", "scheduler": "tcp://10.0.0.1:8786",
                         "machine": [{"name": "a", "underlay": "10.0.0.2"}]})
    assert ms.scheduler == "tcp://10.0.0.1:8786" and ms.get("a").ssh is None


def test_the_cut_links_between_two_machines_carry_one_link_rate_each_way_per_link():
    # BiGraph(2,8) in two slots: one Upper and one Lower switch each; 8 links cross (topology.partition)
    topo = BiGraph(2, 8, rate=10)
    two = inventory.parse({"head": "10.0.0.9", "machine": [
        {"name": "a", "ssh": "a", "underlay": "10.0.0.1"}, {"name": "b", "ssh": "b", "underlay": "10.0.0.2"}]})
    part, load = cut_link_load(topo, two)
    assert len(part.cut_links()) == 8 and load == {("a", "b"): 80.0}
    one = inventory.parse({"head": "10.0.0.9",
                          "machine": [{"name": "a", "ssh": "a", "underlay": "10.0.0.1", "slots": 2}]})
    assert cut_link_load(topo, one)[1] == {}      # both slots on one machine: nothing crosses the underlay


def test_the_report_names_the_machines_the_partition_and_the_underlay():
    from testbed.report.markdown import split
    two = inventory.parse({"head": "10.0.0.9", "machine": [
        {"name": "a", "ssh": "a", "underlay": "10.0.0.1"}, {"name": "b", "ssh": "b", "underlay": "10.0.0.2"}]})
    said = split(BiGraph(2, 8, rate=10), 1, 9000, two)
    assert "across machines a (10.0.0.1, 1 slot), b (10.0.0.2, 1 slot), the head at 10.0.0.9" in said
    assert "8 link(s) cut" in said and "frames of 9050 bytes" in said
