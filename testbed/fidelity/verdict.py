"""Was the emulator the bottleneck? CPU used by ovs-vswitchd and by the whole machine over a span,
and the one way every result says so.

One userspace ovs-vswitchd forwards all veth ports in one thread: near a full core it is the limit,
not the emulated links. A busy machine starves the emulated hosts as well.
"""
import os
from pathlib import Path

from testbed.emulation import ovs

OVS_SATURATED = 0.80     # cores; bench/forwarding_capacity.py saw delivery fall from here on
MACHINE_SATURATED = 0.90  # fraction of all cores


def _machine_ticks():
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]
    return sum(fields) - idle, sum(fields)


def _process_ticks(pid):
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])
    except (OSError, IndexError, TypeError):
        return 0


class CpuMonitor:
    """with CpuMonitor() as cpu: <traffic>; then cpu.result() -> dict with the verdict."""

    def __enter__(self):
        self.ovs_pid = ovs.vswitchd_pid()
        self.ticks_per_s = os.sysconf("SC_CLK_TCK")
        self._machine = _machine_ticks()
        self._ovs = _process_ticks(self.ovs_pid)
        self._wall = os.times().elapsed
        return self

    def __exit__(self, *exc):
        busy, total = _machine_ticks()
        self.machine_busy = (busy - self._machine[0]) / max(1, total - self._machine[1])
        wall = max(1e-6, os.times().elapsed - self._wall)
        self.ovs_cores = (_process_ticks(self.ovs_pid) - self._ovs) / self.ticks_per_s / wall

    def result(self):
        bound = self.ovs_cores >= OVS_SATURATED or self.machine_busy >= MACHINE_SATURATED
        return {"ovs_vswitchd_cores": round(self.ovs_cores, 2), "machine_busy": round(self.machine_busy, 2),
                "emulator_bottleneck": bound}


def flag(result):
    """The verdict as a table column: ABOVE-LINK for a result faster than the link allows (an idle
    shaped link lets a burst through at once), BOTTLENECK when the emulator's CPU was saturated."""
    if result.get("above_link"):
        return "ABOVE-LINK"
    return "BOTTLENECK" if result["emulator_bottleneck"] else "ok"


def describe(result):
    """The verdict of one measurement, in words."""
    verdict = "WAS the bottleneck" if result["emulator_bottleneck"] else "was not the bottleneck"
    return (f"emulator {verdict} (ovs-vswitchd {result['ovs_vswitchd_cores']:.2f} cores, "
            f"machine {result['machine_busy']:.0%} busy)")


def describe_all(results, label):
    """The verdict over many measurements; label(result) names one in the list of bound ones."""
    bound = [label(r) for r in results if r["emulator_bottleneck"]]
    above = [label(r) for r in results if r.get("above_link")]
    if bound:
        why = "slower than the model allows" if any("time_over_model" in r for r in results) else "CPU saturated"
        said = (f"emulator WAS the bottleneck ({why}) in {', '.join(bound)}: those figures include "
                "the emulator's own delay")
    else:
        peak = max((r["ovs_vswitchd_cores"] for r in results), default=0.0)
        said = f"emulator was not the bottleneck (ovs-vswitchd at most {peak:.2f} cores)"
    if above:
        said += (f"; busbw above the link rate, which no faithful link allows, in {', '.join(above)}: an idle "
                 "shaped link passed a burst at once")
    return said
