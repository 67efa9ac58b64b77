"""Bad input is refused before anything is built, in one line naming the fix."""
import subprocess
import sys

import pytest

from testbed.emulation import preflight
from testbed.emulation.programs import PROJECT
from testbed.errors import TestbedError
from testbed.fidelity import capacity
from testbed.topology import BiGraph


def test_rate_beyond_emulator_capacity_is_refused_with_fix():
    with pytest.raises(TestbedError, match=r"use --rate .* or less or --mtu 9000"):
        capacity.check_rate(BiGraph(2, 8, rate=50), mtu=1500)
    capacity.check_rate(BiGraph(2, 8, rate=5), mtu=1500)
    capacity.check_rate(BiGraph(2, 8, rate=10), mtu=9000)
    capacity.check_rate(BiGraph(2, 8, rate=1000), mtu=1500, datapath="kernel")


def test_mtu_range():
    with pytest.raises(TestbedError, match="--mtu"):
        capacity.check_mtu(100)
    capacity.check_mtu(1500)


def test_not_root_is_refused(monkeypatch):
    monkeypatch.setattr(preflight.os, "geteuid", lambda: 1000)
    with pytest.raises(TestbedError, match="needs root: run it with sudo"):
        preflight.require_root()


def test_messages_are_one_line():
    for call in (lambda: BiGraph(2, 7), lambda: capacity.check_rate(BiGraph(4, 8, rate=30), 1500)):
        with pytest.raises(TestbedError) as err:
            call()
        assert "\n" not in str(err.value)


@pytest.mark.parametrize("args,message", [
    (["--eager-limit", "-1"], "--eager-limit must be at least 0 bytes"),
    (["--min-bytes", "8", "--max-bytes", "2"], "sizes need 4 <= --min-bytes"),
])
def test_bad_sweep_is_refused_before_building(args, message):
    run = subprocess.run([sys.executable, "run_scenario.py", *args], cwd=PROJECT,
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 2
    assert run.stderr.startswith("error: " + message) and run.stderr.count("\n") == 1, run.stderr
