"""fault_localisation --react on real packets: a fabric link the job crosses, slowed, is named by
the monitor, drained by the controller, and the trial's row says when and what the job ran at
after it. A module of its own: the scenario runs as its own process, which refuses to start while
another module's emulation is up."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from testbed.experiments.fault_trials import job_fabric_links
from testbed.routing.hashing import Draw
from testbed.topology import LeafSpine

# the slow set (./setup.sh test -m slow): the controller reacting to a named slow link, 30 s
pytestmark = pytest.mark.slow

SIZE = 256 << 10


def test_react_routes_around_a_slowed_link_and_reports_what_it_regained(tmp_path):
    """fault_localisation --react: a fabric link the job crosses, slowed, is named slow, drained,
    and the trial's row says when and what the job ran at after it (a shadowed name once dropped
    every reaction from the rows: the runs reacted and reported nothing)."""
    seed, root = 4242, Path(__file__).resolve().parents[2]
    link = job_fabric_links(LeafSpine(4, 4, 4), "ecmp", "ring", SIZE // 4, Draw(seed, "hash"))[0]
    done = subprocess.run([sys.executable, "run_scenario.py", "fault_localisation", "--topology", "leafspine:4,4,4",
                           "--inject", f"slow-link:{link}:0.2", "--designs", "none", "--react", "--seed", str(seed),
                           "--results", str(tmp_path)], cwd=root, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    rows = json.loads((tmp_path / "fault_localisation.json").read_text())["rows"]
    (row,) = [r for r in rows if r["injected"] != "none"]
    assert row["correct"] and row["react_s"] is not None and row["react_s"] >= row["detect_s"], row
    assert row["busbw_after_react_MBps"] > row["busbw_until_react_MBps"], row      # routed around: faster
    assert "alarm to reroute median" in done.stdout and "1.58x" in done.stdout
