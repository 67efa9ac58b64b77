"""What this machine's emulator carries faithfully, and the checks that refuse a fabric beyond it
before anything is built.

The figures are measured per machine (``run_scenario.py --calibrate``, ``fidelity.calibrate``): the
most offered load Open vSwitch carried faithfully on the datapath the machine runs (userspace where
the kernel loads no modules, the kernel's openvswitch module elsewhere), per MTU and CPU placement,
stored in one file with the machine and datapath it was measured on. A calibration made on another
kernel, Open vSwitch, number of cores or datapath is stale: it is not used, and the conservative
figures below apply, which every refusal says. The rate check, ``largest_faithful_ranks`` and the verdicts read them.
"""
import json
import math
import os
import platform
import time
from pathlib import Path

from testbed.emulation import cores, ovs, sendbuffer
from testbed.errors import TestbedError
from testbed.topology.base import EMULATED_HOSTS

DEFAULT_PATH = "/var/lib/ai-testbed/calibration.json"
# Faithful: the flows together got this much of what they offered, and the slowest this much of its
# rate, both over what TCP can get from a link at that MTU (goodput_ceiling).
FAITHFUL_TOTAL, FAITHFUL_SLOWEST = 0.97, 0.9


def path():
    """Where this machine's calibration lives (AI_TESTBED_CALIBRATION moves it, e.g. for tests)."""
    return Path(os.environ.get("AI_TESTBED_CALIBRATION", DEFAULT_PATH))


def machine():
    """What a calibration holds for: a different kernel, OVS or core count forwards differently."""
    return {"kernel": platform.release(), "ovs": ovs.version(), "cores": len(os.sched_getaffinity(0))}


def running_datapath():
    """The datapath runs take here: 'kernel' where the kernel has (or can load) openvswitch."""
    return "kernel" if ovs.kernel_datapath_available() else "user"


def goodput_ceiling(mtu):
    """TCP's payload over what a shaped link counts per frame: the frame with its Ethernet header,
    less IP and TCP headers with timestamps (0.956 at MTU 1500, 0.993 at 9000)."""
    return (mtu - 52) / (mtu + 14)


def faithful(row):
    ceiling = goodput_ceiling(row["mtu"])
    return (row["achieved_over_offered"] >= FAITHFUL_TOTAL * ceiling
            and row["min_flow_ratio"] >= FAITHFUL_SLOWEST * ceiling)


def store(results, rows, datapath=None):
    """results: {(mtu, placement): faithful offered Mbit/s}; rows: every measurement behind them;
    datapath: the one measured (default: the running one). Merged into this machine's stored
    calibration: a figure measured again replaces the old one."""
    found, _ = load()
    figures = dict(found.figures) if found else {}
    figures.update(results)
    date = time.strftime("%Y-%m-%d %H:%M:%S")
    data = {"date": found.data["date"] if found else date, "updated": date, "machine": machine(),
            "criterion": {"achieved_over_offered": FAITHFUL_TOTAL, "min_flow_ratio": FAITHFUL_SLOWEST,
                          "of": "TCP's goodput ceiling at the MTU"},
            "datapath": datapath or running_datapath(),
            "faithful_mbit": [{"mtu": mtu, "placement": where, "offered_mbit": mbit}
                              for (mtu, where), mbit in sorted(figures.items())],
            "rows": (found.data.get("rows", []) if found else []) + rows}
    target = path()
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1))
    tmp.replace(target)
    return target


class Calibration:
    def __init__(self, data):
        self.data = data
        self.date = data["date"][:10]
        self.figures = {(f["mtu"], f["placement"]): f["offered_mbit"] for f in data["faithful_mbit"]}

    def faithful_mbit(self, mtu, placement):
        """The faithful offered load at the largest calibrated MTU not above mtu, or None."""
        below = [m for m, where in self.figures if where == placement and m <= mtu]
        return self.figures[max(below), placement] if below else None

    def best_placement(self, mtu=9000):
        """The placement that carried more at mtu ('none' on a tie: it changes nothing)."""
        pinned, none = self.faithful_mbit(mtu, "pinned"), self.faithful_mbit(mtu, "none")
        return "pinned" if pinned is not None and (none is None or pinned > none) else "none"


_cache = {}


def load():
    """(Calibration or None, why none): None when missing, unreadable or made on another machine."""
    target = path()
    try:
        stamp = target.stat().st_mtime_ns
    except OSError:
        return None, "this machine is not calibrated (run_scenario.py --calibrate measures it)"
    if _cache.get("key") != (target, stamp):
        try:
            data = json.loads(target.read_text())
            found = Calibration(data)
            now = dict(machine(), datapath=running_datapath())
            was = dict(data["machine"], datapath=data.get("datapath", "user"))
            changed = [f"{k} {was.get(k)} -> {now[k]}" for k in now if was.get(k) != now[k]]
            result = ((None, f"the calibration of {found.date} is stale ({', '.join(changed)}): "
                       "run_scenario.py --calibrate again") if changed else (found, ""))
        except (OSError, ValueError, KeyError, TypeError) as e:
            result = None, f"the calibration in {target} is unreadable ({e}): run_scenario.py --calibrate again"
        _cache.update(key=(target, stamp), result=result)
    return _cache["result"]


# Where this machine is not calibrated (above): offered load (every NIC port sending at
# its link rate) that one userspace ovs-vswitchd on 2 cores, every link end shaped, delivered at 0.9 or
# better over 2-3 switch hops in the first measurements (bench/forwarding_capacity.py, BiGraph(2,8),
# 16 flows). MTU 9000: 0.98-0.99 at 80-320, 0.83-0.92 at 640 Mbit/s offered. MTU 1500: 0.91-0.93 at
# 40-80 (TCP's goodput ceiling there is 0.96), 0.65-0.74 at 160. Conservative: calibrations since
# found 640-960 faithful at MTU 9000 on such a machine. They apply to the kernel datapath too until it
# is calibrated: its shaping and the hosts' stacks share the same cores.
USERSPACE_CAPACITY_MBIT = {1500: 80, 9000: 320}
MTU_RANGE = (1280, 9000)
# Below this a 9000-byte frame spends over 70 ms on every hop: TCP's timers, the ranks' 20 s
# inactivity limit and the probes' time scales stop fitting the emulated network.
MIN_RATE_MBIT = 1.0


def check_mtu(mtu):
    if not MTU_RANGE[0] <= mtu <= MTU_RANGE[1]:
        raise TestbedError(f"--mtu must be between {MTU_RANGE[0]} and {MTU_RANGE[1]} (got {mtu})")


def check_link_rate(rate):
    if not (math.isfinite(rate) and rate >= MIN_RATE_MBIT):
        raise TestbedError(f"--rate must be at least {MIN_RATE_MBIT:g} Mbit/s and finite (got {rate:g}): "
                           "slower links would take longer than the runs' timeouts allow")


def check_hosts(topo):
    """The emulation gives each NIC port index one /24: at most EMULATED_HOSTS hosts."""
    if len(topo.hosts) > EMULATED_HOSTS:
        raise TestbedError(f"{topo.name} has {len(topo.hosts)} hosts; an emulation addresses at most "
                           f"{EMULATED_HOSTS}: choose a smaller topology (hpn7_at_scale models larger ones)")


def check_queue(topo, mtu):
    """Every switch queue full must fit in the userspace datapath's send buffer (see sendbuffer),
    whose size the kernel caps."""
    ports = len(topo.switch_ports())
    most = (sendbuffer.MAX_BUFFER // sendbuffer.truesize(mtu) - sendbuffer.BATCH) // max(1, ports)
    if topo.queue > most:
        raise TestbedError(f"--queue {topo.queue}: {ports} switch ports with full queues of {mtu}-byte frames would "
                           f"need more than the 1 GiB send buffer ovs-vswitchd can be given: use --queue {most} "
                           "or less")


def cpu_placement(datapath, mode="auto", mtu=9000):
    """The CPU placement a run on `datapath` at `mtu` uses (see emulation.cores) for the mode it
    asked for: auto follows this machine's calibration at that MTU."""
    if datapath == "kernel":
        return "none"
    found, _ = load()
    return cores.resolve(mode, found and found.best_placement(mtu))


def capacity(mtu, datapath="user", placement=None):
    """Total offered Mbit/s carried faithfully on `datapath` (this machine's calibration, else the
    conservative figure). placement None: the one auto would choose."""
    placement = placement or cpu_placement(datapath, mtu=mtu)
    found, _ = load()
    measured = found and found.faithful_mbit(mtu, placement)
    return measured if measured is not None else USERSPACE_CAPACITY_MBIT[9000 if mtu >= 9000 else 1500]


def source(mtu, datapath="user", placement=None):
    """Where capacity()'s figure comes from, in words."""
    placement = placement or cpu_placement(datapath, mtu=mtu)
    found, why = load()
    if found and found.faithful_mbit(mtu, placement) is not None:
        return f"calibrated on {found.date}, CPU placement {placement}"
    return f"conservative figure: {why or f'no calibration for MTU {mtu}, placement {placement}'}"


def largest_faithful_ranks(rate, mtu, datapath="user", placement=None):
    """The most ranks (a power of two, one NIC each) whose traffic this machine forwards faithfully
    at `rate` Mbit/s per NIC."""
    limit = capacity(mtu, datapath, placement)
    most = int(limit // rate)
    return 1 << (most.bit_length() - 1) if most >= 2 else 0


def check_ranks(counts, rate, mtu, datapath="user"):
    """Refuse rank counts (one NIC each at `rate`) that are not powers of two of 2 or more, or that
    offer more than this machine forwards faithfully."""
    most = largest_faithful_ranks(rate, mtu, datapath)
    for n in counts:
        if n < 2 or n & (n - 1):
            raise TestbedError(f"--ranks: {n} is not a power of two of 2 or more (halving-doubling needs one)")
        if n > most:
            raise TestbedError(f"--ranks: {n} ranks at {rate:g} Mbit/s offer more than this machine forwards "
                               f"faithfully (about {capacity(mtu, datapath)} Mbit/s): use up to {most} ranks, or "
                               "a lower --rate")


def check_rate(topo, mtu, datapath="user", placement=None):
    """Refuse a load the emulator cannot carry faithfully."""
    placement = placement or cpu_placement(datapath, mtu=mtu)
    cap = capacity(mtu, datapath, placement)
    ports = len(topo.nic_ports())
    load = ports * topo.rate
    if cap == 0:
        other = " or --cpu-placement none" if placement == "pinned" else ""
        raise TestbedError(f"this machine's calibration found no faithful load at MTU {mtu} with CPU placement "
                           f"{placement} (the lowest it tried failed): use --mtu 9000{other}, or run_scenario.py "
                           "--calibrate again on a quieter machine")
    if load > cap:
        hint = " or --mtu 9000" if mtu < 9000 else ""
        said = "one userspace ovs-vswitchd" if datapath == "user" else "Open vSwitch's kernel datapath here"
        raise TestbedError(
            f"{ports} NIC ports at {topo.rate:g} Mbit/s offer {load:g} Mbit/s, more than {said} "
            f"forwards faithfully at MTU {mtu} (about {cap:g} Mbit/s; "
            f"{source(mtu, datapath, placement)}): use --rate {cap / ports:.3g} or less{hint}")
