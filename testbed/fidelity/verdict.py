"""Was the emulator the bottleneck? CPU used where the forwarding happens and by the whole machine over
a span, and the one way every result says so.

The kernel datapath forwards in softirq on whichever core a packet arrived on: there the busiest
core decides (a machine average hides one saturated core). On the userspace datapath no CPU counter
tells a faithful run from an overloaded one (``run_scenario.py --calibrate``, 16 flows on 2 cores):
ovs-vswitchd's main thread polls every port at each wake-up, 0.94-0.96 cores from 640 Mbit/s
offered on whether the flows got 0.99 or 0.86 of their rate, and the busiest core, where its
sendmmsg() runs the hosts' receive path in softirq (see emulation.placement), was 100% busy in
runs that delivered 0.99 and 76-85% in runs that failed. There the verdict's other halves decide:
the offered load is refused above this machine's calibration (fidelity.capacity) and a
collective's time is judged against its model (fidelity.model); the counters are reported, the
busiest core by name, and a machine busy on every core (hosts starved) is still the bottleneck.

A fabric split into slots (emulation.slots) is judged per slot too: each slot's ovs-vswitchd, the
core it ran on last and that core's load and softirq, so a row names the slot whose daemon sat on
the busiest core. Slots on one machine share its cores, so the machine's rule is every slot's rule.
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


def _process_core(pid):
    """The core a process last ran on, as /proc/stat names it (cpu0...), or None."""
    fields = _process_fields(pid)
    return f"cpu{fields[36]}" if fields else None


class CpuMonitor:
    """with CpuMonitor() as cpu: <traffic>; then cpu.result() -> dict with the verdict. The datapath is
    the one in use ('kernel' when the openvswitch module is loaded) unless given."""

    def __init__(self, datapath=None):
        self.datapath = datapath or ("kernel" if ovs.kernel_datapath_loaded() else "user")

    def __enter__(self):
        self.ovs_pids = ovs.vswitchd_pids()
        self.slot_pids = list(ovs.slot_vswitchds)
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


def flag(result):
    """The verdict as a table column: ABOVE-LINK for a result faster than the link allows (an idle
    shaped link lets a burst through at once), LOSS for one slower than the model where the switch
    queues dropped packets (fidelity.model.judge), BOTTLENECK when the emulator was the limit."""
    if result.get("above_link"):
        return "ABOVE-LINK"
    if result.get("congestion"):
        return "LOSS"
    return "BOTTLENECK" if result["emulator_bottleneck"] else "ok"


def describe(result):
    """The verdict of one measurement, in words."""
    verdict = "WAS the bottleneck" if result["emulator_bottleneck"] else "was not the bottleneck"
    where = (f"busiest core {result.get('busiest_core_name', '')} {result['busiest_core']:.0%} busy, "
             f"{result['busiest_core_softirq']:.0%} in softirq").replace("core  ", "core ")
    if result.get("datapath") == "kernel":
        where = f"kernel datapath: {where}"
    else:
        where += f"; ovs-vswitchd {result['ovs_vswitchd_cores']:.2f} cores"
    return f"emulator {verdict} ({where}, machine {result['machine_busy']:.0%} busy{_slots(result)})"


def _slots(result):
    """Each slot's daemon: its cores, and the core it ran on with that core's load."""
    def name(s):
        return f"slot {s['slot']}" + (f" ({s['machine']})" if "machine" in s else "")
    return "".join(f"; {name(s)}: ovs-vswitchd {s['ovs_vswitchd_cores']:.2f} cores on {s['core']} "
                   f"({s['core_busy']:.0%} busy, {s['core_softirq']:.0%} softirq)" for s in result.get("slots", []))


def _peak(results):
    busiest = max(results, key=lambda r: r.get("busiest_core", 0.0), default={})
    said = (f"busiest core at most {busiest.get('busiest_core', 0.0):.0%} busy"
            + (f" ({busiest['busiest_core_name']})" if busiest.get("busiest_core_name") else ""))
    if any(r.get("datapath") == "kernel" for r in results):
        return f"kernel datapath, {said}"
    said += f", ovs-vswitchd at most {max((r['ovs_vswitchd_cores'] for r in results), default=0.0):.2f} cores"
    slots = max((len(r.get("slots", [])) for r in results), default=0)
    if slots:
        said += " (per slot at most " + "/".join(
            f"{max(r['slots'][k]['ovs_vswitchd_cores'] for r in results if len(r.get('slots', [])) > k):.2f}"
            for k in range(slots)) + ")"
    return said


def describe_all(results, label):
    """The verdict over many measurements; label(result) names one in the list of bound ones."""
    bound = [label(r) for r in results if r["emulator_bottleneck"]]
    above = [label(r) for r in results if r.get("above_link")]
    if bound:
        why = "slower than the model allows" if any("time_over_model" in r for r in results) else "CPU saturated"
        said = (f"emulator WAS the bottleneck ({why}) in {', '.join(bound)}: those figures include "
                "the emulator's own delay")
    else:
        said = f"emulator was not the bottleneck ({_peak(results)})"
    if above:
        said += (f"; busbw above the link rate, which no faithful link allows, in {', '.join(above)}: an idle "
                 "shaped link passed a burst at once")
    return said
