"""Emulation tests build real networks: root, Open vSwitch and Mininet are needed."""
import os

import pytest

from tests.emulation.machine import leftovers


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
