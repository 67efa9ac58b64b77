"""Emulation tests build real networks: root, Open vSwitch and Mininet are needed."""
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.emulation.machine import leftovers

PROJECT = Path(__file__).resolve().parents[2]


def pytest_collection_modifyitems(items):
    for item in items:
        if "tests/emulation" in str(item.fspath):
            item.add_marker(pytest.mark.emulation)
            if os.geteuid() != 0:
                item.add_marker(pytest.mark.skip(reason="emulation tests need root (sudo ./setup.sh test)"))


@pytest.fixture
def clean_machine():
    """Fails a test that starts on, or leaves, a machine with testbed objects on it."""
    assert leftovers() == []
    yield
    assert leftovers() == []


@pytest.fixture
def run_dir(tmp_path):
    return tmp_path


def pytest_terminal_summary(terminalreporter):
    """What this machine could not check: the claims whose smoke load its calibration refused."""
    from tests.emulation.test_claims import COULD_NOT_CHECK
    if COULD_NOT_CHECK:
        terminalreporter.section("what this machine could not check")
        for name, why in COULD_NOT_CHECK:
            terminalreporter.write_line(f"{name}'s claims: {why}")


@pytest.fixture
def start_scenario(run_dir):
    """start_scenario(*options): fabric_check running in a process of its own; one the test leaves
    running (it failed before it stopped it) is interrupted at the end, so that its fabric and its
    run lock do not fail every test after it."""
    started = []

    def start(*options):
        started.append(subprocess.Popen([sys.executable, "run_scenario.py", "fabric_check", "--topology",
                                         "bigraph:1,4", "--duration", "30", "--results", str(run_dir), *options],
                                        cwd=PROJECT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
        return started[-1]
    yield start
    for proc in started:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            proc.communicate(timeout=120)
