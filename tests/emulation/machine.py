"""Looking at the machine: what of the testbed is on it."""
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from testbed.emulation import dctcp, drops, ecn, ovs, runrecord


def leftovers():
    """What of the testbed's is still on the machine: records, tagged bridges, interfaces, pids."""
    found = [str(p) for p in runrecord.STATE_DIR.glob("*.json")] if runrecord.STATE_DIR.exists() else []
    found += list(runrecord.tagged_bridges())
    found += [n for n in os.listdir("/sys/class/net") if n.startswith("tb") and n[2:3].isdigit()]
    found += [str(p) for p in Path(tempfile.gettempdir()).glob("tbslot*")]     # slots' sockets (emulation.slots)
    found += [str(p) for p in Path(tempfile.gettempdir()).glob("tbpart*")]     # a machine's share (machines.part)
    if shutil.which("nft"):                                                    # loss rules (emulation.drops)
        tables = subprocess.run(["nft", "list", "tables"], capture_output=True, text=True).stdout.split()
        found += [t for t in tables if t == drops.TABLE]
    found += [f"ECN marker (bpf program {p})" for p in ecn.loaded()]            # emulation.ecn
    # emulation.dctcp: one unregistered but held by sockets still closing (dctcp.held) goes by itself
    found += [f"{dctcp.NAME} (struct_ops {i})" for i in dctcp.registered() if dctcp.available()]
    return found


def alive(pids):
    return [pid for pid, started in pids if runrecord.running(pid, started)]


def add_stray_bridge(name, run_id="0-0"):
    assert ovs.vsctl("add-br", name, "--", "set", "bridge", name, "datapath_type=netdev",
                     f"external_ids:{runrecord.TAG}={run_id}").returncode == 0
    assert Path(f"/sys/class/net/{name}").exists() or name in runrecord.tagged_bridges()


CALIBRATING_S = 600     # a run's first at a CPU placement measures the machine's capacity there first


def wait_for(proc, text, timeout=90):
    """The process's output up to the line holding `text`; fails the test after `timeout` s
    without it (a run's first calibration at a placement first extends the wait)."""
    deadline, seen = time.monotonic() + timeout, ""
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        seen += line
        if "measuring it once" in line:       # the calibration (calibrate.ensure) comes first, once
            deadline = time.monotonic() + CALIBRATING_S
        if text in line:
            return seen
        if not line and proc.poll() is not None:
            break
    pytest.fail(f"never saw {text!r}:\n{seen}")
