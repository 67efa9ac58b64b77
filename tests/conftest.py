"""Tests without root see no machine calibration: their rate checks use the conservative figures,
whatever this machine measured (emulation tests use the machine's own)."""
import pytest


@pytest.fixture(autouse=True)
def uncalibrated(request, monkeypatch, tmp_path_factory):
    if "tests/emulation" not in str(request.node.fspath):
        monkeypatch.setenv("AI_TESTBED_CALIBRATION", str(tmp_path_factory.getbasetemp() / "no-calibration.json"))
