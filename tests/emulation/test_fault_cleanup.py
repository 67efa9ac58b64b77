"""Every injection is undone when a fault_localisation run is ended with Ctrl-C in the middle of
its faults: the stopped rank continued (and ended), the slowed rank's cgroup removed, nothing of the
run left on the machine."""
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from testbed.emulation import faults, runrecord
from tests.emulation.machine import leftovers

# the slow set (./setup.sh test -m slow): Ctrl-C during faults, 30 s
pytestmark = pytest.mark.slow

PROJECT = Path(__file__).resolve().parents[2]


def test_ctrl_c_during_faults_resumes_ranks_and_removes_cgroups(tmp_path):
    proc = subprocess.Popen([sys.executable, "run_scenario.py", "fault_localisation", "--topology", "leafspine:2,2,2",
                             "--inject", "slow-rank:1:0.005", "--inject", "hang-rank:2", "--designs", "none",
                             "--hang-for", "4", "--results", str(tmp_path)],
                            cwd=PROJECT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    seen, deadline = "", time.monotonic() + 120
    while "trial  0" not in seen and time.monotonic() < deadline:   # the slowed rank's trial is over
        line = proc.stdout.readline()
        if not line:
            break
        seen += line
    time.sleep(4.5)                                                 # inside the hung rank's trial
    records = [runrecord.RunRecord.load(path) for path in runrecord.STATE_DIR.glob("*.json")]
    ours = [pid for record in records for pid, _ in record.data["processes"]]
    stopped = [Path(f"/proc/{pid}") for pid in ours if _stopped(Path(f"/proc/{pid}"))]
    proc.send_signal(signal.SIGINT)
    out = seen + proc.communicate(timeout=90)[0]
    assert proc.returncode == 130, out
    assert leftovers() == [], out
    assert not (faults.CGROUP_CPU / faults.CGROUP_PARENT).exists() or \
        not list((faults.CGROUP_CPU / faults.CGROUP_PARENT).iterdir())
    assert stopped, out                                             # a rank of the run was stopped when it was ended
    assert not any(_stopped(p) for p in stopped)


def _stopped(proc_dir):
    try:
        return (proc_dir / "stat").read_text().rsplit(")", 1)[1].split()[0] == "T"
    except OSError:
        return False
