"""This machine's measured capacity: stored with the machine it holds for, used by the rate check,
and ignored (with the conservative figure, said so) when missing or made elsewhere."""
import json

import pytest

from testbed.emulation import capacity, cores
from testbed.emulation.settings import RunSettings
from testbed.errors import TestbedError
from testbed.topology import BiGraph

MACHINE = {"kernel": "6.1.0-test", "ovs": "3.1.0", "cores": 2}


@pytest.fixture
def calibrated(monkeypatch, tmp_path):
    """A calibration of this (pretended) machine: MTU 9000 1440 pinned / 960 none, MTU 1500 240 / 160."""
    monkeypatch.setenv("AI_TESTBED_CALIBRATION", str(tmp_path / "calibration.json"))
    monkeypatch.setattr(capacity, "machine", lambda: dict(MACHINE))
    monkeypatch.setattr(capacity, "running_datapath", lambda: "user")
    capacity.store({(9000, "pinned"): 1440, (9000, "none"): 960, (1500, "pinned"): 240, (1500, "none"): 160},
                      rows=[])
    return tmp_path / "calibration.json"


def test_stored_figures_are_read_back_per_mtu_and_placement(calibrated):
    found, why = capacity.load()
    assert why == "" and found.faithful_mbit(9000, "pinned") == 1440 and found.faithful_mbit(9000, "none") == 960
    # an MTU between the calibrated ones gets the smaller one's figure; below all, none
    assert found.faithful_mbit(4000, "none") == 160 and found.faithful_mbit(1280, "none") is None
    assert found.best_placement() == "pinned"
    data = json.loads(calibrated.read_text())
    assert data["machine"] == MACHINE
    assert data["criterion"]["achieved_over_offered"] == 0.97 and data["criterion"]["min_flow_ratio"] == 0.9


def test_the_rate_check_uses_the_calibration_refusing_above_and_accepting_below(calibrated):
    capacity.check_rate(BiGraph(2, 8, rate=90), 9000, placement="pinned")         # 1440 offered
    with pytest.raises(TestbedError, match=r"about 1440 Mbit/s; calibrated on .*: use --rate 90 or less"):
        capacity.check_rate(BiGraph(2, 8, rate=91), 9000, placement="pinned")
    with pytest.raises(TestbedError, match=r"about 960 Mbit/s; calibrated .* placement none\): use --rate 60 or less"):
        capacity.check_rate(BiGraph(2, 8, rate=61), 9000, placement="none")
    assert capacity.largest_faithful_ranks(40, 9000, placement="pinned") == 32
    assert capacity.largest_faithful_ranks(40, 9000, placement="none") == 16


def test_a_calibration_of_another_machine_is_stale_and_the_conservative_figure_says_so(calibrated, monkeypatch):
    monkeypatch.setattr(capacity, "machine", lambda: dict(MACHINE, kernel="6.18.0-other"))
    calibrated.touch()     # the cache follows the file
    found, why = capacity.load()
    assert found is None and "stale (kernel 6.1.0-test -> 6.18.0-other)" in why and "--calibrate" in why
    assert capacity.capacity(9000, placement="pinned") == capacity.USERSPACE_CAPACITY_MBIT[9000]
    with pytest.raises(TestbedError, match=r"about 320 Mbit/s; conservative figure: the calibration of .* is stale"):
        capacity.check_rate(BiGraph(2, 8, rate=30), 9000, placement="pinned")


def test_a_calibration_of_the_other_datapath_is_not_used_and_says_how_to_recalibrate(calibrated, monkeypatch):
    assert json.loads(calibrated.read_text())["datapath"] == "user"
    monkeypatch.setattr(capacity, "running_datapath", lambda: "kernel")       # the module loaded since
    calibrated.touch()
    found, why = capacity.load()
    assert found is None and "stale (datapath user -> kernel)" in why and "--calibrate" in why and "\n" not in why
    with pytest.raises(TestbedError, match=r"more than Open vSwitch's kernel datapath here .* conservative figure"):
        capacity.check_rate(BiGraph(2, 8, rate=30), 9000, "kernel")


def test_the_kernel_datapath_s_calibration_is_read_as_the_userspace_one_is(calibrated, monkeypatch):
    monkeypatch.setattr(capacity, "running_datapath", lambda: "kernel")
    capacity.store({(9000, "none"): 1920}, rows=[])
    assert json.loads(calibrated.read_text())["datapath"] == "kernel"
    found, why = capacity.load()
    assert why == "" and capacity.capacity(9000, "kernel") == 1920
    with pytest.raises(TestbedError, match=r"about 1920 Mbit/s; calibrated on"):
        capacity.check_rate(BiGraph(2, 8, rate=121), 9000, "kernel")


def test_missing_or_unreadable_calibrations_fall_back(monkeypatch, tmp_path):
    monkeypatch.setenv("AI_TESTBED_CALIBRATION", str(tmp_path / "none.json"))
    assert capacity.load() == (None, "this machine is not calibrated (run_scenario.py --calibrate measures it)")
    assert capacity.capacity(9000) == 320 and capacity.capacity(1500) == 80
    assert capacity.capacity(9000, "kernel") == 320          # the kernel's, until it is calibrated
    (tmp_path / "none.json").write_text("{not json")
    assert "unreadable" in capacity.load()[1]


def test_faithful_needs_both_the_total_and_the_slowest_flow_of_tcps_ceiling():
    assert capacity.goodput_ceiling(1500) == pytest.approx(0.956, abs=1e-3)
    assert capacity.faithful({"mtu": 9000, "achieved_over_offered": 0.97, "min_flow_ratio": 0.9})
    assert not capacity.faithful({"mtu": 9000, "achieved_over_offered": 0.99, "min_flow_ratio": 0.88})
    assert not capacity.faithful({"mtu": 9000, "achieved_over_offered": 0.96, "min_flow_ratio": 0.95})
    # at MTU 1500 TCP gets at most 0.956 of a link: 0.93 of the offered load is 0.97 of that
    assert capacity.faithful({"mtu": 1500, "achieved_over_offered": 0.93, "min_flow_ratio": 0.87})


def test_a_calibration_that_found_nothing_faithful_at_an_mtu_refuses_it(calibrated):
    capacity.store({(9000, "none"): 1280, (1500, "none"): 0}, rows=[])
    with pytest.raises(TestbedError, match="no faithful load at MTU 1500 .*: use --mtu 9000"):
        capacity.check_rate(BiGraph(2, 8, rate=1), 1500, placement="none")


def test_a_figure_measured_again_replaces_the_old_one_and_the_others_stay(calibrated):
    capacity.store({(1500, "none"): 80}, rows=[{"mtu": 1500}])
    found, _ = capacity.load()
    assert found.figures == {(9000, "pinned"): 1440, (9000, "none"): 960, (1500, "pinned"): 240, (1500, "none"): 80}
    assert found.data["rows"] == [{"mtu": 1500}] and "updated" in found.data


def fake_machine(monkeypatch, faithful_up_to, flaky=()):
    """calibrate.measure replaced: loads up to `faithful_up_to` pass; a load in `flaky` fails its
    first try only. Returns the list of loads measured."""
    from testbed.fidelity import calibrate
    measured, failed_once = [], set()

    def measure(topo, mtu, cpu, duration):
        offered = round(topo.rate * calibrate.FLOWS)
        measured.append(offered)
        ok = offered <= faithful_up_to and not (offered in flaky and offered not in failed_once)
        if offered in flaky:
            failed_once.add(offered)
        return {"mtu": mtu, "achieved_over_offered": 0.99 if ok else 0.8, "min_flow_ratio": 0.95 if ok else 0.5,
                "busiest_core": 0.5, "busiest_core_softirq": 0.1}
    monkeypatch.setattr(calibrate, "measure", measure)
    return measured


def test_the_search_finds_the_climbs_answer_in_a_few_rungs(monkeypatch):
    from testbed.fidelity import calibrate
    ladder = calibrate.LADDERS[9000]
    for truth in [0] + ladder:
        measured = fake_machine(monkeypatch, truth)
        found, rows = calibrate.search(9000, "none", lambda line: None)
        assert found == truth and len(rows) == len(measured)
        assert len(set(measured)) <= 4 and len(measured) <= 8, (truth, measured)   # a climb: up to 10 rungs


def test_a_rung_that_fails_once_takes_a_third_try(monkeypatch):
    from testbed.fidelity import calibrate
    measured = fake_machine(monkeypatch, 1280, flaky={960})
    assert calibrate.search(9000, "none", lambda line: None)[0] == 1280
    assert measured.count(960) == 3


def test_a_fabric_that_fails_to_build_is_built_once_more_and_twice_is_an_error(monkeypatch):
    from testbed.fidelity import calibrate
    measured = fake_machine(monkeypatch, 1280)
    healthy, failures = calibrate.measure, []

    def failing_first(topo, mtu, cpu, duration):
        if len(failures) < 1:
            failures.append(topo.rate)
            raise TestbedError("switches tb1 did not get their flows within 60 s")
        return healthy(topo, mtu, cpu, duration)
    monkeypatch.setattr(calibrate, "measure", failing_first)
    said = []
    assert calibrate.search(9000, "none", said.append)[0] == 1280
    assert len(failures) == 1 and any("failed to build" in line for line in said) and measured

    def never(topo, mtu, cpu, duration):
        raise TestbedError("switches tb1 did not get their flows within 60 s")
    monkeypatch.setattr(calibrate, "measure", never)
    with pytest.raises(TestbedError, match="did not get their flows"):
        calibrate.search(9000, "none", lambda line: None)


def test_a_run_measures_only_the_figure_it_lacks(calibrated, monkeypatch):
    from testbed.fidelity import calibrate
    capacity.store({(9000, "none"): 960}, rows=[])
    calibrated.write_text(calibrated.read_text().replace('"mtu": 1500', '"mtu": 1280'))   # no 1500 figures
    measured = fake_machine(monkeypatch, 120)
    calibrate.ensure(9000, "none", log=lambda line: None)
    assert measured == []                                                  # stored: nothing to do
    calibrate.ensure(4000, "none", log=lambda line: None)                  # reads the MTU 1500 figure
    assert set(measured) <= set(calibrate.LADDERS[1500]) and capacity.load()[0].figures[1500, "none"] == 120
    monkeypatch.setenv("AI_TESTBED_CALIBRATION", str(calibrated.parent / "missing.json"))
    calibrate.ensure(1500, "pinned", log=lambda line: None)                # uncalibrated: --calibrate's job
    assert not (calibrated.parent / "missing.json").exists()


def test_auto_placement_follows_the_calibration(calibrated, monkeypatch):
    monkeypatch.setattr(cores, "online", lambda: [0, 1])
    assert capacity.cpu_placement("user", "auto") == "pinned"
    assert capacity.cpu_placement("user", "none") == "none"
    assert capacity.cpu_placement("kernel", "pinned") == "none"
    assert capacity.cpu_placement("user", "auto", mtu=1500) == "pinned"     # each MTU its own better one
    capacity.store({(9000, "pinned"): 960, (9000, "none"): 960, (1500, "pinned"): 0, (1500, "none"): 80},
                      rows=[])
    assert capacity.cpu_placement("user", "auto") == "none"                # a tie changes nothing
    assert capacity.cpu_placement("user", "auto", mtu=1500) == "none"
    capacity.check_rate(BiGraph(2, 8, rate=5), 1500)                       # auto: none's 80 Mbit/s


def test_auto_placement_without_calibration_or_cores_leaves_the_system_alone(monkeypatch, calibrated):
    monkeypatch.setattr(cores, "online", lambda: [0])
    assert capacity.cpu_placement("user", "auto") == "none"
    with pytest.raises(TestbedError, match="needs at least 2 cores: use --cpu-placement none"):
        capacity.cpu_placement("user", "pinned")
    with pytest.raises(TestbedError, match="--cpu-placement must be one of auto, pinned, none"):
        RunSettings(cpu_placement="spread")


def test_hosts_receive_on_every_core_but_the_switchs(monkeypatch):
    monkeypatch.setattr(cores, "online", lambda: [0, 1, 2, 3])
    assert cores.switch_core() == 3 and cores.host_mask() == "7"
    command = cores.steer_command(["h0-eth0", "h0-eth1"], "7")
    # in a mount namespace of its own: the root namespace's /sys is never remounted
    assert command.startswith("unshare --mount --propagation private sh -c 'umount -l /sys && mount -t sysfs")
    assert "/sys/class/net/h0-eth1/queues/rx-*/rps_cpus" in command and "echo 7 >" in command


def test_unpin_puts_back_what_pin_found_even_through_json(monkeypatch):
    affinity = {10: {0, 1}, 11: {1}}
    monkeypatch.setattr(cores, "threads", lambda pid: list(affinity))
    monkeypatch.setattr(cores.os, "sched_getaffinity", lambda tid: set(affinity[tid]))
    monkeypatch.setattr(cores.os, "sched_setaffinity", lambda tid, cpus: affinity.__setitem__(tid, set(cpus)))
    before = cores.pin(10, {1})
    assert affinity == {10: {1}, 11: {1}}
    affinity[12] = {1}                       # a thread started while pinned
    cores.unpin(10, json.loads(json.dumps(before)))
    assert affinity == {10: {0, 1}, 11: {1}, 12: {0, 1}}


def test_a_kept_calibration_is_a_row_of_the_one_table_the_docs_show(calibrated, monkeypatch, tmp_path):
    from testbed.experiments import calibrations
    monkeypatch.setattr(calibrations, "KEPT", tmp_path / "kept")
    with pytest.raises(TestbedError, match="needs a label"):
        calibrations.keep("  ")
    path = calibrations.keep("machine A, 2 cores")
    assert json.loads(path.read_text())["datapath"] == "user"
    table = calibrations.table()
    assert "| machine A, 2 cores | 6.1.0-test | user | 2 | 3.1.0 | 960 | 1,440 | 160 | 240 |" in table
    page = "# Fidelity\n\n<!-- calibrations -->\nold\n<!-- /calibrations -->\n\nafter\n"
    assert calibrations.with_table(page) == f"# Fidelity\n\n{table}\n\nafter\n"
    (tmp_path / "kept" / "broken.json").write_text("{")
    with pytest.raises(TestbedError, match="does not parse"):
        calibrations.table()


def test_the_slowest_rungs_run_long_enough_for_tcp_to_settle():
    from testbed.fidelity import calibrate
    assert calibrate.duration(9000, 960) == 4 and calibrate.duration(9000, 320) == 4
    assert calibrate.duration(9000, 160) == 10 and calibrate.duration(9000, 80) == 10     # 10 and 5 Mbit/s a flow
    assert calibrate.duration(1500, 480) == 10
