"""Tests without root (outside tests/emulation, not marked emulation) see no machine calibration:
their rate checks use the conservative figures, whatever this machine measured (emulation tests use
the machine's own); and every test starts with the signal dispositions the one before it started
with."""
import signal

import pytest


@pytest.fixture(autouse=True)
def uncalibrated(request, monkeypatch, tmp_path_factory):
    if "tests/emulation" not in str(request.node.fspath) and not request.node.get_closest_marker("emulation"):
        monkeypatch.setenv("AI_TESTBED_CALIBRATION", str(tmp_path_factory.getbasetemp() / "no-calibration.json"))


@pytest.fixture(autouse=True)
def signals_as_they_were():
    """run_scenario.main() called in-process leaves SIGINT, SIGTERM and SIGHUP ignored, as a process
    about to exit should (testbed.interrupts): give the next test the dispositions it started with."""
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    yield
    for s, handler in before.items():
        signal.signal(s, handler)
