"""Looking at the machine: what of the testbed is on it."""
import os
import subprocess
from pathlib import Path

from testbed import runstate


def leftovers():
    """What of the testbed's is still on the machine: records, tagged bridges, interfaces, pids."""
    found = [str(p) for p in runstate.STATE_DIR.glob("*.json")] if runstate.STATE_DIR.exists() else []
    found += list(runstate.tagged_bridges())
    found += [n for n in os.listdir("/sys/class/net") if n.startswith("tb") and n[2:3].isdigit()]
    return found


def alive(pids):
    return [pid for pid, started in pids if runstate.running(pid, started)]


def add_stray_bridge(name, run_id="0-0"):
    subprocess.run(["ovs-vsctl", "add-br", name, "--", "set", "bridge", name, "datapath_type=netdev",
                    f"external_ids:{runstate.TAG}={run_id}"], check=True)
    assert Path(f"/sys/class/net/{name}").exists() or name in runstate.tagged_bridges()
