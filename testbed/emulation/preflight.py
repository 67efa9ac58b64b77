"""What an emulation run needs from the machine, checked before anything is built; each failure
is one line that names the fix."""
import os
from pathlib import Path

from testbed.emulation import ovs, runrecord
from testbed.emulation.capacity import check_hosts, check_mtu, check_rate, cpu_placement
from testbed.errors import TestbedError
from testbed.topology.partition import partition


def require_root():
    if os.geteuid() != 0:
        raise TestbedError("emulation needs root: run it with sudo (e.g. sudo .venv/bin/python run_scenario.py)")


def datapath():
    """'kernel' where the running kernel has (or can load) the openvswitch module, else 'user'.
    Nothing is loaded here: a run that is refused changes nothing."""
    return "kernel" if ovs.kernel_datapath_available() else "user"


def require_ovs():
    if not ovs.reachable():
        raise TestbedError("Open vSwitch is not reachable: run 'sudo ./setup.sh' "
                           "(or /usr/share/openvswitch/scripts/ovs-ctl start)")


def require_clean(topo):
    """No other run active (this run takes the machine's run lock), nothing left by a dead one."""
    live = [r for r in runrecord.live_runs() if r.data["owner"][0] != os.getpid()]
    if live:
        pids = " ".join(str(r.data["owner"][0]) for r in live)
        raise TestbedError(f"another testbed run is active (pid {pids}): wait for it or stop it")
    runrecord.acquire_lock()
    left = runrecord.leftovers()
    if left:
        raise TestbedError(f"a previous run left {'; '.join(left)}: {runrecord.CLEANUP_HINT}")
    taken = [s.name for s in topo.switches.values() if Path(f"/sys/class/net/{s.name}").exists()]
    if taken:
        raise TestbedError(f"interfaces {' '.join(taken[:5])} already exist (not made by this testbed): "
                           "remove them or free those names")


def require_share(topo, mtu):
    """What a machine of a run across machines needs to build its slots: (datapath, placement). The
    run's lock and the rate are the head's (machines.checks): a machine serves that run."""
    check_mtu(mtu)
    check_hosts(topo)
    require_root()
    return "user", "none"


def require_machines(topo, mtu, ms):
    """What the head of a run across machines checks before its preflight of the machines
    (machines.checks): the fabric splits into the machines' slots; the datapath."""
    check_mtu(mtu)
    check_hosts(topo)
    if ms.slot_count < 2:
        raise TestbedError(f"{ms.source} gives {ms.slot_count} slot: give the machines two slots or more, "
                           "or run on one machine without --machines")
    partition(topo, ms.slot_count)
    require_root()
    return "user"


def require_emulation(topo, mtu, refuse_overload=True, cpu="auto", slot_count=1):
    """Everything an emulation run needs, checked in the order a user would fix it: (datapath,
    CPU placement). slot_count > 1: the fabric is split into that many slots (emulation.slots),
    each with a userspace ovs-vswitchd of its own and none pinned."""
    if slot_count > 1:
        partition(topo, slot_count)          # refuses a count the fabric does not split into
    else:
        slot_count = None
    check_mtu(mtu)
    check_hosts(topo)
    require_root()
    path = "user" if slot_count else datapath()
    if slot_count and cpu == "pinned":
        raise TestbedError("--cpu-placement pinned pins the one ovs-vswitchd of an unsplit fabric: "
                           "with --slots use --cpu-placement none")
    where = "none" if slot_count else cpu_placement(path, cpu, mtu)
    if refuse_overload:
        check_rate(topo, mtu, path, where)
    require_ovs()
    require_clean(topo)
    return path, where
