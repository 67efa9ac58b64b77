"""HPN 7.0's rails: a same-rail allreduce inside one segment against the same number of ranks
spread over two segments, and Multi-AllReduce, every rail running its own allreduce at once, on
the single-plane and the dual-plane form of one HPN7 fabric under ECMP.

Inside a segment every hop of a rail's allreduce is one ToR: the aggregation tier and its hashing
never see it (HPN puts 96% of jobs in one segment for that). Spread over two segments, every hop
crosses the aggregation tier. Multi-AllReduce is what a training job's rails do at once after a
step (the HPN paper's largest gain for dual plane, up to +158%): R collectives share the
aggregation tier, whose hashing decides how evenly.

Trial t draws fresh 5-tuples (``routing.hashing.Draw`` from seed + t) and runs every case on both
forms with them, the forms in alternating order, each on a freshly built fabric; the gain of dual
plane per case is a paired ratio with its 95% interval (``report.paired``). The forms are wired like
with like (``topology.hpn7.plane_forms``).
"""
import time
from contextlib import ExitStack
from dataclasses import dataclass

from scenarios.common import add_fabric_arguments, add_plane_arguments, at_least, fabric
from testbed import routing
from testbed.collectives.connections import rank_connections, source_ports
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
from testbed.report.paired import Comparison, trial_order
from testbed.routing.hashing import Draw
from testbed.topology import HPN7
from testbed.topology.hpn7 import plane_forms

NAME = "hpn7_rails"
HELP = "HPN7: segment-local against cross-segment allreduce, and Multi-AllReduce (every rail at once), both planes"


CASES = ("segment-local", "cross-segment", "multi-allreduce")
FORMS = ("single plane", "dual plane")
LISTEN_PORT = 7000          # emulation_launcher's: one rank per host


def add_arguments(parser):
    add_fabric_arguments(parser, topology="hpn7:2,4,2,2")
    add_plane_arguments(parser)
    parser.add_argument("--bytes", type=int, default=1 << 20, help="allreduce message size (default %(default)s)")
    parser.add_argument("--iters", type=int, default=3, help="timed iterations per case (default %(default)s)")
    parser.add_argument("--streams", type=int, default=4, help="TCP connections per peer (default %(default)s)")
    parser.add_argument("--trials", type=int, default=12,
                        help="paired trials, each on a fresh hash draw (default %(default)s: about 8 minutes)")
    parser.add_argument("--seed", type=int, default=None, help="the first trial's draw (default: a new one)")


@dataclass
class Plan:
    forms: list
    mtu: int
    hash: str
    bond: str
    size: int
    iters: int
    streams: int
    trials: int
    seed: int

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
    forms = plane_forms(base, args.uplink_capacity)
    largest = max(len(hosts) for group in cases(forms[0]).values() for hosts in group)
    at_least(args.bytes, ELEMENT_BYTES * largest, "--bytes", f" ({ELEMENT_BYTES} per rank)")
    iters = at_least(args.iters, 1, "--iters")
    trials = at_least(args.trials, 2, "--trials", " (an interval needs two)")
    check_sweep([args.bytes], len(base.hosts), 6 * trials, base.bytes_per_s, 1, iters)
    if not 1 <= args.streams <= 16:
        raise TestbedError(f"--streams must be between 1 and 16 (got {args.streams})")
    seed = args.seed if args.seed is not None else int(time.time() * 1000) % 1_000_000
    return Plan(forms, args.mtu, args.hash, args.bond, args.bytes, iters, args.streams, trials, seed)


def run_case(emu, case, groups, plan, draw):
    """The case's collectives, started together each iteration, on the draw's connections: one row
    per collective."""
    count, topo = plan.size // ELEMENT_BYTES, emu.topo
    with ExitStack() as stack:
        coordinators = []
        for k, hosts in enumerate(groups):
            conns = rank_connections(Ring(), hosts, [LISTEN_PORT] * len(hosts), plan.streams, draw)
            coordinators.append(stack.enter_context(Coordinator(
                Ring.name, *emulation_launcher(emu, hosts, LISTEN_PORT), pacing=topo.bytes_per_s,
                streams=plan.streams, label=f"{case} {k}", source_ports=source_ports(conns))))
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
    return (f"  trial {row['trial']} {FORMS[row['planes'] - 1]:12s} {row['case']:16s} #{row['collective']}  "
            f"{row['ranks']:2d} ranks  time {row['time_us'] / 1e3:8.1f} ms  busbw/NIC {row['busbw_over_nic']:.2f}  "
            f"#wrong {row['wrong']}  {flag(row)}")


def case_busbw(rows, trial, planes, case):
    """A case's busbw/NIC in one trial on one form: the mean over its collectives."""
    values = [r["busbw_over_nic"] for r in rows if (r["trial"], r["planes"], r["case"]) == (trial, planes, case)]
    return sum(values) / len(values) if values else None


def comparisons(rows):
    trials = sorted({r["trial"] for r in rows})
    out = {case: Comparison(f"{case} busbw/NIC", FORMS, [(case_busbw(rows, t, 1, case), case_busbw(rows, t, 2, case))
                                                          for t in trials], 3) for case in CASES}
    for planes, form in ((1, FORMS[0]), (2, FORMS[1])):
        out[f"cross/local {planes}"] = Comparison(
            f"{form}: cross-segment against segment-local busbw", ("segment-local", "cross-segment"),
            [(case_busbw(rows, t, planes, "segment-local"), case_busbw(rows, t, planes, "cross-segment"))
             for t in trials], 3)
    return out


def run(plan, results):
    started = time.monotonic()
    topo = plan.forms[0]
    print(f"# {NAME}: ring allreduce of {plan.size} B, {plan.streams} connections per peer, ECMP hash {plan.hash}, "
          f"bond {plan.bond}, links {topo.rate:g} Mbit/s, ToR uplinks {topo.uplink_capacity:.4g} of NIC-facing "
          f"capacity, {plan.iters} iterations per case; {plan.trials} paired trials from seed {plan.seed}")
    about = {"scenario": NAME, "hash": plan.hash, "bond": plan.bond, "seed": plan.seed, "size": plan.size,
             "rows": [], "fabric_check": {}}
    with results.outcome("hpn7_rails.json", about):
        for trial in range(plan.trials):
            for form in trial_order(plan.forms, trial):
                draw = Draw(plan.seed + trial, plan.bond)
                folder = results / f"trial{trial}" / f"planes{form.planes}"
                with Emulation(form, routing.plan(form, "ecmp", plan.hash), folder, mtu=plan.mtu) as emu:
                    if form.planes not in about["fabric_check"]:
                        check = fabric_check.check(emu)
                        print("\n".join(fabric_check.report(check, emu)))
                        about["fabric_check"][form.planes] = fabric_check.passed(check)
                    for case, groups in cases(form).items():
                        for row in run_case(emu, case, groups, plan, draw):
                            row = dict(row, trial=trial, seed=plan.seed + trial)
                            about["rows"].append(row)
                            results.append("hpn7_rails.csv", row)
                            print(line(row), flush=True)
            print(f"  ... {trial + 1} of {plan.trials} trials in {time.monotonic() - started:.0f} s", flush=True)
        compared = comparisons(about["rows"])
        about["summary"] = {key: c.to_dict() for key, c in compared.items()}
        about["wrong"] = sum(r["wrong"] for r in about["rows"])
        about["emulator"] = describe_all(about["rows"], lambda r: f"trial {r['trial']} planes={r['planes']} "
                                                                  f"{r['case']}")
        about["seconds"] = round(time.monotonic() - started, 1)
    print("\nsummary (paired over trials; mean [95% interval]):")
    for c in compared.values():
        print(f"  {c.line()}")
    checks = ", ".join(f"planes={p} {'PASS' if ok else 'FAIL'}" for p, ok in about["fabric_check"].items())
    print(f"  #wrong over every iteration: {about['wrong']}\n  {about['emulator']}\n  fabric check: {checks}")
    results.figure("busbw_by_case.png", figures.busbw_by_case, about["rows"])
    print(results.listing())
    return 0 if about["wrong"] == 0 else 1
