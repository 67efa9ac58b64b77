"""What the emulator carries faithfully, and the checks that refuse a fabric beyond it before
anything is built."""
import math

from testbed.emulation import placement as placements
from testbed.emulation import sendbuffer
from testbed.errors import TestbedError
from testbed.fidelity import calibration
from testbed.topology.model import EMULATED_HOSTS

# Where this machine is not calibrated (fidelity.calibration): offered load (every NIC port sending at
# its link rate) that one userspace ovs-vswitchd on 2 cores, every link end shaped, delivered at 0.9 or
# better over 2-3 switch hops in the first measurements (bench/forwarding_capacity.py, BiGraph(2,8),
# 16 flows). MTU 9000: 0.98-0.99 at 80-320, 0.83-0.92 at 640 Mbit/s offered. MTU 1500: 0.91-0.93 at
# 40-80 (TCP's goodput ceiling there is 0.96), 0.65-0.74 at 160. Conservative: calibrations since
# found 960 faithful at MTU 9000 on such a machine. The kernel datapath is not limited this way.
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


def cpu_placement(datapath, mode=None, mtu=9000):
    """The CPU placement a run on `datapath` at `mtu` uses (see emulation.placement): mode, else the
    one the run requested; auto follows this machine's calibration at that MTU."""
    if datapath == "kernel":
        return "none"
    found, _ = calibration.load()
    return placements.resolve(mode or placements.requested, found and found.best_placement(mtu))


def capacity(mtu, datapath="user", placement=None):
    """Total offered Mbit/s carried faithfully (this machine's calibration, else the conservative
    figure), or None where no limit was measured. placement None: the one a run would use."""
    if datapath == "kernel":
        return None
    placement = placement or cpu_placement(datapath, mtu=mtu)
    found, _ = calibration.load()
    measured = found and found.faithful_mbit(mtu, placement)
    return measured if measured is not None else USERSPACE_CAPACITY_MBIT[9000 if mtu >= 9000 else 1500]


def source(mtu, datapath="user", placement=None):
    """Where capacity()'s figure comes from, in words."""
    if datapath == "kernel":
        return "kernel datapath: no limit measured"
    placement = placement or cpu_placement(datapath, mtu=mtu)
    found, why = calibration.load()
    if found and found.faithful_mbit(mtu, placement) is not None:
        return f"calibrated on {found.date}, CPU placement {placement}"
    return f"conservative figure: {why or f'no calibration for MTU {mtu}, placement {placement}'}"


def largest_faithful_ranks(rate, mtu, datapath="user", placement=None):
    """The most ranks (a power of two, one NIC each) whose traffic this machine forwards faithfully
    at `rate` Mbit/s per NIC."""
    limit = capacity(mtu, datapath, placement)
    if limit is None:      # no limit measured for this datapath
        return 1 << 8
    most = int(limit // rate)
    return 1 << (most.bit_length() - 1) if most >= 2 else 0


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
    if cap is not None and load > cap:
        hint = " or --mtu 9000" if mtu < 9000 else ""
        raise TestbedError(
            f"{ports} NIC ports at {topo.rate:g} Mbit/s offer {load:g} Mbit/s, more than one userspace "
            f"ovs-vswitchd forwards faithfully at MTU {mtu} (about {cap:g} Mbit/s; "
            f"{source(mtu, datapath, placement)}): use --rate {cap / ports:.3g} or less{hint}")
