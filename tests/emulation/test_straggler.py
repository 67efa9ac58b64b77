"""fault_localisation --straggler on real packets: a rank held back from the job's start, said on
every row, spared by the rank faults drawn beside it, and its cgroup gone with the run. A module of
its own: the scenario runs as its own process, which refuses to start while another module's
emulation is up."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from testbed.emulation import faults
from tests.emulation.machine import leftovers

# the slow set (./setup.sh test -m slow): a straggler held from the start, 45 s
pytestmark = pytest.mark.slow


def test_a_straggler_from_the_start_is_held_back_spared_and_removed(tmp_path):
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "run_scenario.py", "fault_localisation", "--topology", "leafspine:2,2,2",
                           "--trials", "2", "--fault-free", "1", "--kinds", "slow-rank", "--straggler", "0.5",
                           "--designs", "none", "--before", "2", "--fault-for", "3", "--seed", "7",
                           "--results", str(tmp_path)], cwd=root, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    rows = json.loads((tmp_path / "fault_localisation.json").read_text())["rows"]
    (straggler,) = {r["straggler"] for r in rows}
    assert straggler.endswith("at 0.5 of its CPU") and "a straggler: rank" in done.stdout
    rank = straggler.split()[1]
    assert all(r["where"] != rank for r in rows if r["injected"] == "slow-rank")
    assert "with a straggler slow from the job's start (no fault):" in done.stdout
    assert leftovers() == []
    assert not (faults.CGROUP_CPU / faults.CGROUP_PARENT).exists() or \
        not list((faults.CGROUP_CPU / faults.CGROUP_PARENT).iterdir())
