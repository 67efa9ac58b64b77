"""Was the emulator the bottleneck? CPU used where the forwarding happens and by the whole machine over
a span, and the one way every result says so.

The kernel datapath forwards in softirq on whichever core a packet arrived on: there the busiest
core decides (a machine average hides one saturated core). On the userspace datapath no CPU counter
tells a faithful run from an overloaded one (``run_scenario.py --calibrate``, 16 flows on 2 cores):
ovs-vswitchd's main thread polls every port at each wake-up, 0.94-0.96 cores from 640 Mbit/s
offered on whether the flows got 0.99 or 0.86 of their rate, and the busiest core, where its
sendmmsg() runs the hosts' receive path in softirq (see emulation.cores), was 100% busy in
runs that delivered 0.99 and 76-85% in runs that failed. There the verdict's other halves decide:
the offered load is refused above this machine's calibration (emulation.capacity) and a
collective's time is judged against its model (``judge``, the model of fidelity.predict); the counters are reported, the
busiest core by name, and a machine busy on every core (hosts starved) is still the bottleneck.

A fabric split into slots (emulation.slots) is judged per slot too: each slot's ovs-vswitchd, the
core it ran on last and that core's load and softirq, so a row names the slot whose daemon sat on
the busiest core. Slots on one machine share its cores, so the machine's rule is every slot's rule.
The counters are ``emulation.cpu``'s.

Between the two, a bandwidth-bound row a little short of its model (under 0.95 of its rate, within
the slack) while the busiest core was saturated is STRAINED: the emulator may have cost it (HDRM
at 1 MiB read 0.90 of the link in such a row where other runs read 0.98), so it is not called ok,
but a full core alone does not make it the emulator's (faithful runs saturate one too), and a
claim read from it is still judged.
"""
from testbed.emulation.cpu import CORE_SATURATED

LATENCY_SLACK = 1.5       # a latency-bound result up to this many times the model is latency, measured
BANDWIDTH_SLACK = 1 / 0.9  # a bandwidth-bound one within 0.9 of the model's rate is link-bound
STRAINED_SLACK = 1 / 0.95  # past this, with the busiest core saturated, it is STRAINED


def flag(result):
    """The verdict as a table column: ABOVE-LINK for a result faster than the link allows (an idle
    shaped link lets a burst through at once), LOSS for one slower than the model where the switch
    queues dropped packets (judge), BOTTLENECK when the emulator was the limit, STRAINED when it
    may have been (a little short of the model on a saturated core)."""
    if result.get("above_link"):
        return "ABOVE-LINK"
    if result.get("congestion"):
        return "LOSS"
    if result["emulator_bottleneck"]:
        return "BOTTLENECK"
    return "STRAINED" if result.get("strained") else "ok"


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
    strained = [label(r) for r in results if r.get("strained")]
    if strained:
        said += (f"; short of the model by 5-10% while the busiest core was saturated, so perhaps the emulator's, "
                 f"in {', '.join(strained)}")
    if above:
        said += (f"; busbw above the link rate, which no faithful link allows, in {', '.join(above)}: an idle "
                 "shaped link passed a burst at once")
    return said


def judge(row, cpu, model, drops=0):
    """The row's verdict: the emulator was the bottleneck when the result strayed from the model by
    more than its slack (model: (seconds, latency-bound?) from predict.collective_time), or without
    a model when the CPU was saturated. The model shares links as a lossless fabric would; a row past its slack while
    the switch queues dropped packets (`drops`, during the row) and the CPU was not saturated was
    slowed by TCP recovering from that loss (plain HD's flows that share a link at 1 MiB on 64
    ranks: 1772 of 94000 segments resent, 15 retransmission timeouts of 200 ms or more in 3
    allreduces): the emulated fabric's congestion, measured, not the emulator's."""
    saturated = cpu["emulator_bottleneck"]
    if model is None:
        return dict(cpu, cpu_saturated=saturated)
    expected, latency_bound = model
    expected *= 1e6
    ratio = row["time_us"] / expected
    slack = LATENCY_SLACK if latency_bound else BANDWIDTH_SLACK
    congestion = ratio > slack and drops > 0 and not saturated
    bottleneck = ratio > slack and not congestion
    strained = (not latency_bound and STRAINED_SLACK < ratio <= slack
                and cpu.get("busiest_core", 0.0) >= CORE_SATURATED)
    return dict(cpu, cpu_saturated=saturated, model_us=round(expected, 1), time_over_model=round(ratio, 2),
                latency_bound=latency_bound, queue_drops=drops, congestion=congestion, strained=strained,
                emulator_bottleneck=bottleneck)
