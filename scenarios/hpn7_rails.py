"""HPN 7.0's rails: a same-rail allreduce inside one segment against the same number of ranks
spread over two segments, and Multi-AllReduce, every rail running its own allreduce at once, on
the single-plane and the dual-plane form of one HPN7 fabric under ECMP.

Inside a segment every hop of a rail's allreduce is one ToR: the aggregation tier and its hashing
never see it (HPN puts 96% of jobs in one segment for that). Spread over two segments, every hop
crosses the aggregation tier. Multi-AllReduce is what a training job's rails do at once after a
step (the HPN paper's largest gain for dual plane, up to +158%): R collectives share the
aggregation tier, whose hashing decides how evenly.
"""
from contextlib import ExitStack
from dataclasses import dataclass

from scenarios.common import add_fabric_arguments, at_least, fabric
from testbed import routing
from testbed.collectives.coordinator import Coordinator, emulation_launcher
from testbed.collectives.data import ELEMENT_BYTES
from testbed.collectives.metrics import result_row
from testbed.collectives.placements import rail_ring
from testbed.collectives.schedules import Ring
from testbed.collectives.sweep import check_sweep
from testbed.emulation.network import Emulation
from testbed.errors import TestbedError
from testbed.fidelity import fabric_check
from testbed.fidelity.verdict import CpuMonitor, describe_all, flag
from testbed.report import figures
from testbed.topology import HPN7

NAME = "hpn7_rails"
HELP = "HPN7: segment-local against cross-segment allreduce, and Multi-AllReduce (every rail at once), both planes"


def add_arguments(parser):
    add_fabric_arguments(parser, topology="hpn7:2,4,2,2")
    parser.add_argument("--hash", choices=routing.HASHES, default="same", help="see hpn7_planes (default %(default)s)")
    parser.add_argument("--bytes", type=int, default=1 << 20, help="allreduce message size (default %(default)s)")
    parser.add_argument("--iters", type=int, default=3, help="timed iterations per case (default %(default)s)")
    parser.add_argument("--streams", type=int, default=4, help="TCP connections per peer (default %(default)s)")


@dataclass
class Plan:
    forms: list
    mtu: int
    hash: str
    size: int
    iters: int
    streams: int

    @property
    def fabrics(self):
        return self.forms


def cases(topo):
    """{case: [host list per collective]}: rail 0 inside segment 0, the same count of rail-0 ranks
    over two segments, and every rail over two segments at once."""
    half = range(topo.servers // 2)
    return {"segment-local": [rail_ring(topo, 0, (0,), range(topo.servers))],
            "cross-segment": [rail_ring(topo, 0, (0, 1), half)],
            "multi-allreduce": [rail_ring(topo, r, (0, 1), range(topo.servers)) for r in range(topo.rails)]}


def prepare(args):
    base = fabric(args)
    if not isinstance(base, HPN7) or base.segments < 2 or base.servers < 2 or base.servers % 2 or base.tors != 2:
        raise TestbedError(f"{NAME} needs a dual-ToR HPN7 fabric of 2 or more segments and an even number (2 or "
                           f"more) of servers per segment (got {base.name}): use e.g. --topology hpn7:2,4,2,2")
    forms = [HPN7(base.segments, base.servers, base.rails, base.aggs, planes=p, uplink_ratio=base.uplink_ratio,
                  rate=base.rate, queue=base.queue, delay=base.delay) for p in (1, 2)]
    largest = max(len(hosts) for group in cases(forms[0]).values() for hosts in group)
    at_least(args.bytes, ELEMENT_BYTES * largest, "--bytes", f" ({ELEMENT_BYTES} per rank)")
    iters = at_least(args.iters, 1, "--iters")
    check_sweep([args.bytes], len(base.hosts), 6, base.bytes_per_s, 1, iters)
    if not 1 <= args.streams <= 16:
        raise TestbedError(f"--streams must be between 1 and 16 (got {args.streams})")
    return Plan(forms, args.mtu, args.hash, args.bytes, iters, args.streams)


def run_case(emu, case, groups, plan):
    """The case's collectives, started together each iteration: one row per collective."""
    count, topo = plan.size // ELEMENT_BYTES, emu.topo
    with ExitStack() as stack:
        coordinators = [stack.enter_context(Coordinator(Ring.name, *emulation_launcher(emu, hosts),
                                                        pacing=topo.bytes_per_s, streams=plan.streams,
                                                        label=f"{case} {k}")) for k, hosts in enumerate(groups)]
        Coordinator.iterate_together(coordinators, count, 0, timeout=120)          # warmup
        with CpuMonitor() as cpu:
            results = [Coordinator.iterate_together(coordinators, count, i + 1, timeout=120)
                       for i in range(plan.iters)]
    rows = []
    for k, hosts in enumerate(groups):
        mine = [iteration[k] for iteration in results]
        row = result_row("ring", plan.size, [r["time"] for r in mine], sum(r["wrong"] for r in mine), len(hosts),
                         topo.rate, ports=topo.tors)
        row.update(planes=topo.planes, case=case, collective=k, ranks=len(hosts), **cpu.result())
        rows.append(row)
    return rows


def line(row):
    return (f"  planes={row['planes']} {row['case']:16s} #{row['collective']}  {row['ranks']:2d} ranks  "
            f"time {row['time_us'] / 1e3:8.1f} ms  busbw/NIC {row['busbw_over_nic']:.2f}  #wrong {row['wrong']}  "
            f"{flag(row)}")


def compare(rows):
    mean = lambda planes, case: round(sum(r["busbw_over_nic"] for r in rows if r["planes"] == planes
                                          and r["case"] == case) /
                                      max(1, sum(1 for r in rows if r["planes"] == planes and r["case"] == case)), 3)
    out = {case: {planes: mean(planes, case) for planes in (1, 2)} for case in ("segment-local", "cross-segment",
                                                                                  "multi-allreduce")}
    out["wrong"] = sum(r["wrong"] for r in rows)
    out["emulator"] = describe_all(rows, lambda r: f"planes={r['planes']} {r['case']}")
    return out


def summary_lines(cmp):
    gain = lambda case: 100 * (cmp[case][2] / cmp[case][1] - 1) if cmp[case][1] else float("nan")
    lines = [f"  {case:16s} busbw/NIC single plane {cmp[case][1]:.2f}, dual plane {cmp[case][2]:.2f} "
             f"({gain(case):+.0f}%)" for case in ("segment-local", "cross-segment", "multi-allreduce")]
    for planes in (1, 2):
        local, cross = cmp["segment-local"][planes], cmp["cross-segment"][planes]
        lines.append(f"  planes={planes}: cross-segment busbw is {cross / local:.2f} of segment-local's"
                     if local else f"  planes={planes}: no segment-local result")
    lines += [f"  #wrong over every iteration: {cmp['wrong']}", f"  {cmp['emulator']}"]
    return lines


def run(plan, results):
    topo = plan.forms[0]
    print(f"# {NAME}: ring allreduce of {plan.size} B, {plan.streams} connections per peer, ECMP hash {plan.hash}, "
          f"links {topo.rate:g} Mbit/s, {plan.iters} iterations per case")
    about = {"scenario": NAME, "hash": plan.hash, "size": plan.size, "rows": [], "fabric_check": {}}
    with results.outcome("hpn7_rails.json", about):
        for form in plan.forms:
            print(f"\n## {form.describe()}")
            with Emulation(form, routing.plan(form, "ecmp", plan.hash), results / f"planes{form.planes}",
                           mtu=plan.mtu) as emu:
                check = fabric_check.check(emu)
                print("\n".join(fabric_check.report(check, emu)))
                about["fabric_check"][form.planes] = fabric_check.passed(check)
                for case, groups in cases(form).items():
                    for row in run_case(emu, case, groups, plan):
                        about["rows"].append(row)
                        results.append("hpn7_rails.csv", row)
                        print(line(row))
        cmp = about["summary"] = compare(about["rows"])
    print("\nsummary:")
    print("\n".join(summary_lines(cmp)))
    checks = ", ".join(f"planes={p} {'PASS' if ok else 'FAIL'}" for p, ok in about["fabric_check"].items())
    print(f"  fabric check: {checks}")
    results.figure("busbw_by_case.png", figures.busbw_by_case, about["rows"])
    print(results.listing())
    return 0 if cmp["wrong"] == 0 else 1
