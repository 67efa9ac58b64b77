"""Where the userspace datapath's work runs on the machine's cores.

ovs-vswitchd hands a packet to a host's veth with sendmmsg(), and the kernel then runs that host's
whole receive path (IP, TCP, the ACK it sends back through the host's HTB) in softirq on the core
that called it. So the core ovs-vswitchd runs on saturates first, with ovs-vswitchd's own thread
far from full. The pinned placement keeps ovs-vswitchd (every thread) on the last core and steers
every host NIC's receive processing to the other cores with Receive Packet Steering. Measured on 2
cores, BiGraph(2,8), 16 flows at MTU 9000: faithful up to 1.5x the offered load of the default
placement; ``--calibrate`` measures both on each machine, and ``auto`` takes the one that carried more.

rps_cpus lives in sysfs, and a Mininet host shares the root namespace's /sys (which shows the root
namespace's interfaces): it is written through a sysfs mounted in a mount namespace of its own, made
for that one command, so nothing is mounted anywhere else (as `ip netns exec` does: the /sys it
inherits is detached first, else the kernel refuses the new one as already mounted). The settings
go with the host's interfaces at the end of the run; ovs-vswitchd's affinity is put back by the
run record.
"""
import os

from testbed.errors import TestbedError

MODES = ("auto", "pinned", "none")
# The start of a command that sees the host's own interfaces in /sys (close the quote after it).
PRIVATE_SYSFS = "unshare --mount --propagation private sh -c 'umount -l /sys && mount -t sysfs testbed-sysfs /sys &&"
def online():
    return sorted(os.sched_getaffinity(0))


def possible():
    """Whether this machine has cores to split (at least 2 this process may use)."""
    return len(online()) >= 2


def resolve(mode, calibrated):
    """'pinned' or 'none' for a requested mode: auto follows the calibration (calibrated: 'pinned',
    'none' or None when unmeasured, which keeps the operating system's placement)."""
    if mode not in MODES:
        raise TestbedError(f"--cpu-placement must be one of {', '.join(MODES)} (got {mode!r})")
    if mode == "pinned" and not possible():
        raise TestbedError("--cpu-placement pinned needs at least 2 cores: use --cpu-placement none")
    if mode == "auto":
        return "pinned" if calibrated == "pinned" and possible() else "none"
    return mode


def switch_core():
    """The core ovs-vswitchd is pinned to: the last one."""
    return online()[-1]


def host_mask():
    """rps_cpus for the hosts' NICs: every core but ovs-vswitchd's, as sysfs reads it (hex)."""
    return format(sum(1 << c for c in online() if c != switch_core()), "x")


def threads(pid):
    return [int(t) for t in os.listdir(f"/proc/{pid}/task")]


def pin(pid, cpus):
    """Every thread of pid onto cpus; {thread id: the cpus it had}."""
    before = {}
    for tid in threads(pid):
        try:
            before[tid] = sorted(os.sched_getaffinity(tid))
            os.sched_setaffinity(tid, cpus)
        except ProcessLookupError:     # a thread that ended meanwhile
            continue
    return before


def unpin(pid, before):
    """Put back the affinities pin() found; a thread started since gets its process's."""
    default = before.get(str(pid), before.get(pid)) or online()
    for tid in threads(pid):
        try:
            os.sched_setaffinity(tid, before.get(str(tid), before.get(tid, default)))
        except (ProcessLookupError, OSError):
            continue


def steer_command(interfaces, mask):
    """The shell command that, run inside a host, steers its NICs' receive processing to mask."""
    queues = " ".join(f"/sys/class/net/{i}/queues/rx-*/rps_cpus" for i in interfaces)
    return f"{PRIVATE_SYSFS} for q in {queues}; do echo {mask} > $q || exit 1; done'"


def read_command(interface):
    """The shell command that prints a host NIC's first rps_cpus (for tests and checks)."""
    return f"{PRIVATE_SYSFS} cat /sys/class/net/{interface}/queues/rx-0/rps_cpus'"
