"""Checks that run before anything is built; each failure is one line that names the fix."""
import os
import subprocess
from pathlib import Path

from testbed import runstate
from testbed.errors import TestbedError

# Offered load (every NIC port sending at its link rate) that one userspace ovs-vswitchd on 2 cores,
# every link end shaped, still delivers at 0.9 or better over 2-3 switch hops
# (bench/forwarding_capacity.py, BiGraph(2,8), 16 flows).
# MTU 9000: 0.98-0.99 at 80-320, 0.83-0.92 at 640 Mbit/s offered.
# MTU 1500: 0.91-0.93 at 40-80 (TCP's goodput ceiling there is 0.96), 0.65-0.74 at 160.
# The kernel datapath is not limited this way.
USERSPACE_CAPACITY_MBIT = {1500: 80, 9000: 320}
MTU_RANGE = (1280, 9000)


def ovs_datapath():
    """'kernel' where the openvswitch module is in the running kernel, else 'user'."""
    if not Path("/sys/module/openvswitch").exists():
        subprocess.run(["modprobe", "-q", "openvswitch"], capture_output=True)
    return "kernel" if Path("/sys/module/openvswitch").exists() else "user"


def check_mtu(mtu):
    if not MTU_RANGE[0] <= mtu <= MTU_RANGE[1]:
        raise TestbedError(f"--mtu must be between {MTU_RANGE[0]} and {MTU_RANGE[1]} (got {mtu})")


def capacity(mtu, datapath="user"):
    if datapath == "kernel":
        return None
    return USERSPACE_CAPACITY_MBIT[9000 if mtu >= 9000 else 1500]


def check_rate(topo, mtu, datapath="user"):
    """Refuse a load the emulator cannot carry faithfully."""
    cap = capacity(mtu, datapath)
    ports = len(topo.nic_ports())
    load = ports * topo.rate
    if cap is not None and load > cap:
        hint = " or --mtu 9000" if mtu < 9000 else ""
        raise TestbedError(
            f"{ports} NIC ports at {topo.rate:g} Mbit/s offer {load:g} Mbit/s, more than one userspace "
            f"ovs-vswitchd forwards faithfully at MTU {mtu} (about {cap} Mbit/s): "
            f"use --rate {cap / ports:.3g} or less{hint}")


def require_root():
    if os.geteuid() != 0:
        raise TestbedError("emulation needs root: run it with sudo (e.g. sudo .venv/bin/python run_scenario.py)")


def require_ovs():
    try:
        ok = runstate.vsctl("show", timeout=3).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        ok = False
    if not ok:
        raise TestbedError("Open vSwitch is not reachable: run 'sudo ./setup.sh' "
                           "(or /usr/share/openvswitch/scripts/ovs-ctl start)")


def require_clean(topo):
    live = runstate.live_runs()
    if live:
        pids = " ".join(str(r.data["owner"][0]) for r in live)
        raise TestbedError(f"another testbed run is active (pid {pids}): wait for it or stop it")
    left = runstate.leftovers()
    if left:
        raise TestbedError(f"a previous run left {'; '.join(left)}: {runstate.CLEANUP_HINT}")
    taken = [s.name for s in topo.switches.values() if Path(f"/sys/class/net/{s.name}").exists()]
    if taken:
        raise TestbedError(f"interfaces {' '.join(taken[:5])} already exist (not made by this testbed): "
                           "remove them or free those names")


def require_emulation(topo, mtu, refuse_overload=True):
    """Everything an emulation run needs, checked in the order a user would fix it."""
    check_mtu(mtu)
    datapath = ovs_datapath()
    if refuse_overload:
        check_rate(topo, mtu, datapath)
    require_root()
    require_ovs()
    require_clean(topo)
    return datapath
