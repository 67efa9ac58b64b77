"""ECN marking's options and its program, without root: the threshold is checked against the FIFO,
a machine without the toolchain is told what to install, and the program compiles for a port."""
import shutil

import pytest

from testbed.emulation import ecn
from testbed.emulation.settings import RunSettings
from testbed.errors import TestbedError
from testbed.experiments.fingerprint import of_run


def test_a_threshold_must_be_positive_and_below_the_fifos_limit():
    for bad in (0, -3, 2.5, True):
        with pytest.raises(TestbedError, match="--ecn must be a positive number of bytes"):
            ecn.check(bad, 100, 9000)
    with pytest.raises(TestbedError, match=r"at or above the FIFO's limit \(10 packets of 9014 B = 90140 B\)"):
        ecn.check(90140, 10, 9000)
    with pytest.raises(TestbedError, match="--ecn must be a positive"):
        RunSettings(ecn=-1)
    with pytest.raises(TestbedError, match=r"--ecn 3000 is below one frame \(9014 B at MTU 9000\).*9014 or more"):
        ecn.check(3000, 100, 9000)
    ecn.check(3000, 100, 1500) if ecn.missing() is None else None          # a frame is 1514 B there


def test_a_machine_without_the_toolchain_is_told_what_to_install(monkeypatch):
    monkeypatch.setattr(ecn.shutil, "which", lambda tool: None if tool == "clang" else "/usr/bin/" + tool)
    with pytest.raises(TestbedError, match=r"--ecn needs clang \(Debian's clang\).*setup\.sh") as e:
        ecn.check(30000, 100, 9000)
    assert "\n" not in str(e.value)


def test_marking_is_part_of_what_a_run_does_and_its_absence_changes_no_kept_run():
    import run_scenario
    from scenarios import SCENARIOS
    parse = run_scenario.parser().parse_args
    plain, marked = parse(["incast"]), parse(["incast", "--ecn", "30000"])
    assert of_run(SCENARIOS["incast"], plain) != of_run(SCENARIOS["incast"], marked)
    assert "ecn" not in str(of_run(SCENARIOS["incast"], plain))


@pytest.mark.skipif(ecn.missing() is not None, reason="needs clang and libbpf-dev (setup.sh installs them)")
def test_the_marker_compiles_once_and_its_test_build_apart(tmp_path):
    one = ecn.build(str(tmp_path))
    assert one.exists() and one.read_bytes()[:4] == b"\x7fELF"
    assert ecn.build(str(tmp_path)) == one
    assert ecn.build(str(tmp_path), test_clock=True) != one
    shutil.rmtree(tmp_path)
