"""Measure this machine's forwarding capacity (``run_scenario.py --calibrate``, and once by setup.sh).

BiGraph(2,8)'s 16 contention-free iperf3 flows over 2-3 switches, every link end shaped, at offered
loads from a ladder, for an MTU and a CPU placement: the faithful load is the highest rung whose flows
together got FAITHFUL_TOTAL of what they offered and whose slowest flow got FAITHFUL_SLOWEST of its
rate (both of TCP's goodput ceiling at the MTU) in two of at most three tries (a third only when
the first two disagree: one slow flow in one try is noise on 2 cores, measured: a rung passed twice
and failed once at 0.87 on the same machine); 0 when the lowest rung fails. The rungs are searched
by bisection, from the rung of the conservative figure, not climbed: 3-4 rungs instead of up to 10
(a climb took 5 minutes on a fresh machine, the search about a minute), on the same criterion and
the same assumption that a load above a failing one fails too.

setup.sh measures only what a first run needs (``FIRST``: the default MTU, CPU placement none);
``ensure`` measures another MTU or placement the first time a run needs it; ``--calibrate``
measures them all again. Stored by ``emulation.capacity``, each figure with the rows behind it.
"""
import tempfile
import time

from testbed import routing
from testbed.emulation import capacity, cores
from testbed.emulation.network import Emulation
from testbed.errors import TestbedError
from testbed.fidelity.fabric_check import run_flows, spread_pairs
from testbed.topology import BiGraph

FLOWS = 16
# Offered Mbit/s, all flows together: from below the conservative figures up past what 2 cores carry.
# The lowest MTU 9000 rungs are for the slowest machines: a Debian 12 VM under qemu's TCG failed 160
# in two of three tries (0.87, 0.96, 0.91 delivered).
LADDERS = {9000: [80, 120, 160, 320, 640, 960, 1280, 1440, 1600, 1920, 2240, 2560],
           1500: [80, 120, 160, 240, 320, 480]}
# Seconds per measurement. At MTU 1500 and a few Mbit/s per flow 4 s is too short for TCP to settle:
# 16 x 5 Mbit/s got 0.92 with the slowest flow at 0.84 over 4 s, 0.93 and 0.92 over 12 s. (Below
# 5 Mbit/s per flow TCP at MTU 1500 falls short of the criterion whatever the load: 16 x 2.5 got
# 0.91-0.92, slowest 0.85-0.86; a limit of the link rate, not of forwarding, so the ladder starts above.)
DURATIONS = {9000: 4, 1500: 10}
# The same holds for jumbo frames at the slowest rungs: in a Debian 12 VM under qemu's TCG, 16 x 5
# Mbit/s over 4 s delivered 0.97 with the slowest flow at 0.84 and 0.88 and the busiest core at 67-74%
# (TCP's unfairness over a short run, not forwarding): at SETTLE_MBIT a flow or less, the longer run.
SETTLE_MBIT, SETTLE_S = 10, 10


def duration(mtu, offered):
    """Seconds a measurement of `offered` Mbit/s at `mtu` runs."""
    return max(DURATIONS[mtu], SETTLE_S if offered / FLOWS <= SETTLE_MBIT else 0)
# The first rung the search tries: where calibrations of machines of this kind found the faithful load
# (960 at MTU 9000 on three machines; 80, 0 and 0 at MTU 1500).
START_MBIT = {9000: 960, 1500: 80}


def measure(topo, mtu, cpu, duration=4):
    """One row: topo's spread permutation of flows (fabric_check.spread_pairs), each at its link
    rate, with CPU placement cpu."""
    plan = routing.plan(topo)
    with tempfile.TemporaryDirectory() as tmp, Emulation(topo, plan, tmp, mtu=mtu, log=lambda m: None,
                                                         refuse_overload=False, cpu_placement=cpu) as emu:
        flows, cpu_seen = run_flows(emu, spread_pairs(topo, plan.routes), plan.routes, duration)
        where = emu.cpu_placement
    achieved = sum(f["received_mbit"] for f in flows)
    offered = topo.rate * len(flows)
    return {"topology": topo.name, "mtu": mtu, "placement": where, "rate_per_flow_mbit": topo.rate,
            "flows": len(flows), "offered_mbit": offered, "achieved_mbit": round(achieved, 1),
            "achieved_over_offered": round(achieved / offered, 3),
            "min_flow_ratio": min(f["ratio"] for f in flows), **cpu_seen}


def faithful_rung(offered, mtu, cpu, log, rows):
    """Whether `offered` Mbit/s is faithful in two of at most three tries."""
    tries = []
    while tries.count(True) < 2 and tries.count(False) < 2:
        row = built_and_measured(offered, mtu, cpu, log)
        rows.append(row)
        tries.append(capacity.faithful(row))
        log(f"  MTU {mtu:5d} placement {cpu:6s} {offered:5d} Mbit/s offered: "
            f"{row['achieved_over_offered']:.2f} delivered, slowest flow {row['min_flow_ratio']:.2f}, "
            f"busiest core {row['busiest_core']:.0%} ({row['busiest_core_softirq']:.0%} softirq) "
            f"{'faithful' if tries[-1] else 'NOT faithful'}")
    return tries.count(True) >= 2


def built_and_measured(offered, mtu, cpu, log):
    """One try's row. A fabric that fails to build (in a TCG guest, one switch of eight once went a
    minute without its flows after a saturated rung) is built once more: a build says nothing of
    what the datapath forwards."""
    topo = BiGraph(2, 8, rate=offered / FLOWS)
    try:
        return measure(topo, mtu, cpu, duration(mtu, offered))
    except TestbedError as e:
        log(f"  MTU {mtu:5d} placement {cpu:6s} {offered:5d} Mbit/s: the fabric failed to build ({e}); once more")
        return measure(topo, mtu, cpu, duration(mtu, offered))


def search(mtu, cpu, log):
    """(faithful offered Mbit/s, rows) for one MTU and placement: bisection over the ladder."""
    ladder, rows = LADDERS[mtu], []
    lo, hi = -1, len(ladder)            # ladder[lo] is faithful (-1: none known), ladder[hi] not
    probe = min(range(len(ladder)), key=lambda i: abs(ladder[i] - START_MBIT[mtu]))
    while hi - lo > 1:
        if faithful_rung(ladder[probe], mtu, cpu, log, rows):
            lo = probe
        else:
            hi = probe
        probe = (lo + hi) // 2
    return (ladder[lo] if lo >= 0 else 0), rows


FIRST = ((9000, "none"),)       # what setup.sh measures (--calibrate default): the default MTU and placement


def calibrate(log=print, wanted=None):
    """Measure and store (merged with what this machine's calibration already holds); (path,
    {(mtu, placement): faithful Mbit/s}). wanted: [(mtu, placement)]; default: every MTU of the
    ladders with every placement this machine offers."""
    if wanted is None:      # pinning is ovs-vswitchd's threads' (userspace); the kernel forwards in softirq
        user = capacity.running_datapath() == "user"
        placements = ["none", "pinned"] if cores.possible() and user else ["none"]
        wanted = [(mtu, cpu) for mtu in LADDERS for cpu in placements]
    results, rows, started = {}, [], time.monotonic()
    log(f"calibrating Open vSwitch's {capacity.running_datapath()} datapath: {FLOWS} flows over BiGraph(2,8) at "
        f"offered loads searched by bisection, for "
        f"{', '.join(f'MTU {m} placement {c}' for m, c in wanted)}; faithful: {capacity.FAITHFUL_TOTAL} "
        f"of the offered load delivered and the slowest flow at {capacity.FAITHFUL_SLOWEST} of its rate (of "
        "TCP's goodput ceiling at the MTU), in two of at most three tries")
    for mtu, cpu in wanted:
        results[mtu, cpu], measured = search(mtu, cpu, log)
        rows += measured
        log(f"MTU {mtu} placement {cpu}: faithful up to {results[mtu, cpu]} Mbit/s offered "
            f"[{time.monotonic() - started:.0f} s]")
    return capacity.store(results, rows), results


def ensure(mtu, cpu, log=print):
    """Measure the figure a run at `mtu` with placement `cpu` reads, if this machine's calibration
    lacks it (a calibrated machine only: an uncalibrated or stale one keeps the conservative figures
    until --calibrate). Nothing to do where a figure is stored or no ladder applies."""
    found, _ = capacity.load()
    rung = max((m for m in LADDERS if m <= mtu), default=None)
    if found is None or rung is None or found.figures.get((rung, cpu)) is not None:
        return
    log(f"this machine's calibration has no figure for MTU {rung} with CPU placement {cpu}: measuring it once")
    calibrate(log, [(rung, cpu)])
