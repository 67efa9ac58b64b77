"""How busy the CPU was while traffic ran: per core (busy and softirq), the whole machine, Open vSwitch's
daemons (the one ovs-vswitchd, or each slot's), over a span. ``fidelity.verdict`` turns it into the
verdict every result carries (was the emulator the bottleneck?).

The kernel datapath forwards in softirq on whichever core a packet arrived on: there the busiest
core decides (a machine average hides one saturated core). On the userspace datapath no CPU counter
tells a faithful run from an overloaded one (see fidelity.verdict): the counters are reported, and a
machine busy on every core (hosts starved) is still the bottleneck.
"""
import os
from pathlib import Path

from testbed.emulation import ovs

MACHINE_SATURATED = 0.90  # fraction of all cores
CORE_SATURATED = 0.95     # fraction of one core (kernel datapath)


def _read_stat():
    return Path("/proc/stat").read_text()


def cpu_ticks(stat):
    """{cpu: (busy, softirq, total)} ticks from /proc/stat's text; 'cpu' is the machine."""
    ticks = {}
    for line in stat.splitlines():
        if not line.startswith("cpu"):
            continue
        name, *values = line.split()
        fields = [int(v) for v in values[:8]]     # user nice system idle iowait irq softirq steal
        ticks[name] = (sum(fields) - fields[3] - fields[4], fields[6], sum(fields))
    return ticks


def _process_fields(pid):
    """/proc/<pid>/stat's fields after the command name (state first), or None when it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None


def _process_ticks(pid):
    fields = _process_fields(pid)
    return int(fields[11]) + int(fields[12]) if fields else 0


def process_seconds(pid):
    """CPU time a process used so far, user and system (0 when it is gone)."""
    return _process_ticks(pid) / os.sysconf("SC_CLK_TCK")


def _process_core(pid):
    """The core a process last ran on, as /proc/stat names it (cpu0...), or None."""
    fields = _process_fields(pid)
    return f"cpu{fields[36]}" if fields else None


class CpuMonitor:
    """with CpuMonitor() as cpu: <traffic>; then cpu.result() -> dict with the verdict. The datapath is
    the one in use ('kernel' when the openvswitch module is loaded) unless given; slot_pids are the
    ovs-vswitchd of a run split into slots (an emulation's ``cpu_monitor()`` gives its own)."""

    def __init__(self, datapath=None, slot_pids=()):
        self.datapath = datapath or ("kernel" if ovs.kernel_datapath_loaded() else "user")
        self.slot_pids = list(slot_pids)

    def __enter__(self):
        self.ovs_pids = [pid for pid in [ovs.vswitchd_pid(), *self.slot_pids] if pid]
        self._slots = [_process_ticks(pid) for pid in self.slot_pids]
        self.ticks_per_s = os.sysconf("SC_CLK_TCK")
        self._cpus = cpu_ticks(_read_stat())
        self._ovs = sum(_process_ticks(pid) for pid in self.ovs_pids)
        self._wall = os.times().elapsed
        return self

    def __exit__(self, *exc):
        now = cpu_ticks(_read_stat())
        share = {name: tuple((now[name][i] - self._cpus[name][i]) / max(1, now[name][2] - self._cpus[name][2])
                             for i in (0, 1))
                 for name in now if name in self._cpus}
        self.machine_busy = share["cpu"][0]
        cores = {name: s for name, s in share.items() if name != "cpu"} or {"cpu": share["cpu"]}
        self.busiest_name = max(cores, key=lambda name: cores[name])
        self.busiest_core, self.softirq = cores[self.busiest_name]
        wall = max(1e-6, os.times().elapsed - self._wall)
        self.ovs_cores = (sum(_process_ticks(pid) for pid in self.ovs_pids) - self._ovs) / self.ticks_per_s / wall
        self.slots = []
        for index, (pid, before) in enumerate(zip(self.slot_pids, self._slots)):
            core = _process_core(pid)
            busy, softirq = cores.get(core, (0.0, 0.0))
            used = (_process_ticks(pid) - before) / self.ticks_per_s / wall
            self.slots.append({"slot": index, "ovs_vswitchd_cores": round(used, 2), "core": core,
                               "core_busy": round(busy, 2), "core_softirq": round(softirq, 2)})

    def result(self):
        return {"datapath": self.datapath, "ovs_vswitchd_cores": round(self.ovs_cores, 2),
                "busiest_core": round(self.busiest_core, 2), "busiest_core_name": self.busiest_name,
                "busiest_core_softirq": round(self.softirq, 2), "machine_busy": round(self.machine_busy, 2),
                "emulator_bottleneck": ((self.datapath == "kernel" and self.busiest_core >= CORE_SATURATED)
                                        or self.machine_busy >= MACHINE_SATURATED),
                **({"slots": self.slots} if self.slots else {})}
