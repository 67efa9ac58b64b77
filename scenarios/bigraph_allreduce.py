"""BiGraph allreduce: Ring (rank order, alternating layers), HD and HDRM over a message-size sweep.

Each variant runs real TCP allreduce between the emulated hosts, one worker process per rank; every
result is compared with numpy's sum (#wrong). The summary names the winner at the smallest and at
the largest size, the ratios between algorithms, and whether the emulator was the bottleneck.
"""
import time

from scenarios import fabric_check
from scenarios.options import add_fabric_arguments
from testbed import cpu as cpu_report
from testbed import plots
from testbed.allreduce import Coordinator, emulation_launcher, summarize, table_header, table_row
from testbed.cpu import CpuMonitor
from testbed.emulation import Emulation
from testbed.errors import TestbedError
from testbed.placements import VARIANTS, place
from testbed.results import write_csv, write_json
from testbed.routing import deterministic_routes
from testbed.topologies import from_spec
from testbed.worker import EAGER_LIMIT

NAME = "bigraph_allreduce"
HELP = "Ring (two orders), HD and HDRM allreduce on BiGraph over a message-size sweep (nccl-tests style)"


def add_arguments(parser):
    add_fabric_arguments(parser, topology="bigraph:2,8")
    parser.add_argument("--algorithms", default=",".join(VARIANTS),
                        help="comma-separated, from " + ", ".join(VARIANTS) + " (default: all)")
    parser.add_argument("--min-bytes", type=int, default=1024, help="smallest message (default %(default)s)")
    parser.add_argument("--max-bytes", type=int, default=1 << 20, help="largest message (default %(default)s)")
    parser.add_argument("--factor", type=int, default=4, help="size multiplier per step (default %(default)s)")
    parser.add_argument("--warmup", type=int, default=1, help="untimed iterations per size (default %(default)s)")
    parser.add_argument("--iters", type=int, default=5,
                        help="timed iterations per size, at least (small sizes get more; default %(default)s)")
    parser.add_argument("--eager-limit", type=int, default=EAGER_LIMIT,
                        help="larger messages wait for the receiver's clear-to-send; a huge value sends "
                             "every message at once (default %(default)s)")


def sizes(min_bytes, max_bytes, factor):
    if min_bytes < 4 or max_bytes < min_bytes or factor < 2:
        raise TestbedError("sizes need 4 <= --min-bytes <= --max-bytes and --factor >= 2")
    out, size = [], min_bytes
    while size <= max_bytes:
        out.append(size - size % 4)
        size *= factor
    return out


def plan(topo, algorithms):
    """{variant: (schedule, hosts)}, refusing what cannot run, before anything is built."""
    return {name: place(name, topo) for name in algorithms}


def iterations_for(size, iters, link_bytes, budget=1.0, cap=50):
    """At least `iters`; small messages get more (up to `cap`, about `budget` s each), since their
    times are ms of scheduling noise on 2 cores and a median of few is unsteady."""
    expected = 2 * size / link_bytes + 0.02
    return max(iters, min(cap, int(budget / expected)))


def measure(emu, plans, size_list, warmup, iters, progress=print, eager_limit=None):
    """Rows of nccl-tests-style results, one per (variant, size), each with its CPU verdict."""
    rows, total, done = [], len(plans) * len(size_list), 0
    link_bytes = emu.topo.rate * 1e6 / 8
    progress(table_header() + "  emulator")
    for name, (schedule, hosts) in plans.items():
        addresses, launch = emulation_launcher(emu, hosts)
        with Coordinator(schedule.name, addresses, launch, pacing=link_bytes,
                         eager_limit=eager_limit) as coordinator:
            for size in size_list:
                done += 1
                timeout = 60 + 40 * size / link_bytes
                with CpuMonitor() as cpu:
                    times, wrong = coordinator.run(size // 4, iterations_for(size, iters, link_bytes),
                                                   warmup, timeout=timeout)
                row = summarize(name, size, times, wrong, len(hosts), emu.topo.rate)
                row.update(cpu.result())
                rows.append(row)
                flag = "BOTTLENECK" if row["emulator_bottleneck"] else "ok"
                progress(f"{table_row(row)}  {flag:10s} [{done}/{total}]")
    return rows


def compare(rows):
    """Winners and ratios at the smallest and the largest size."""
    by = {(r["algorithm"], r["size"]): r for r in rows}
    small, large = min(r["size"] for r in rows), max(r["size"] for r in rows)
    names = list(dict.fromkeys(r["algorithm"] for r in rows))
    out = {"smallest_size": small, "largest_size": large,
           "small_winner": min(names, key=lambda n: by[n, small]["time_us"]),
           "large_winner": max(names, key=lambda n: by[n, large]["busbw_MBps"]),
           "small_time_us": {n: by[n, small]["time_us"] for n in names},
           "large_busbw_over_link": {n: by[n, large]["busbw_over_link"] for n in names},
           "wrong": sum(r["wrong"] for r in rows),
           "emulator_bottleneck_rows": [f"{r['algorithm']}@{r['size']}" for r in rows if r["emulator_bottleneck"]],
           "max_ovs_vswitchd_cores": max(r["ovs_vswitchd_cores"] for r in rows)}
    ratios = {}
    for a, b in [("hdrm", "ring"), ("hdrm", "ring_topo"), ("hd", "ring"), ("hdrm", "hd")]:
        if a in names and b in names:
            ratios[f"{a}/{b} time at {small} B"] = round(by[a, small]["time_us"] / by[b, small]["time_us"], 2)
            ratios[f"{a}/{b} busbw at {large} B"] = round(by[a, large]["busbw_MBps"] / by[b, large]["busbw_MBps"], 2)
    out["ratios"] = ratios
    return out


def print_summary(cmp, topo):
    print(f"\nsummary ({topo.name}, {len(topo.hosts)} ranks, links {topo.rate:g} Mbit/s):")
    print(f"  smallest ({cmp['smallest_size']} B): fastest is {cmp['small_winner']}; times (us) "
          + ", ".join(f"{n} {t:.0f}" for n, t in cmp["small_time_us"].items()))
    print(f"  largest ({cmp['largest_size']} B): highest busbw is {cmp['large_winner']}; busbw/link "
          + ", ".join(f"{n} {v:.2f}" for n, v in cmp["large_busbw_over_link"].items()))
    for label, value in cmp["ratios"].items():
        print(f"  {label}: {value}")
    print(f"  #wrong over every iteration: {cmp['wrong']}")
    print(f"  fidelity check before the sweep: {'PASS' if cmp['fidelity_pass'] else 'FAIL'} "
          "(reachability, one long TCP flow >= 0.9 and parallel flows >= 0.85 of the link rate)")
    if cmp["emulator_bottleneck_rows"]:
        print(f"  emulator WAS the bottleneck (CPU saturated) in {', '.join(cmp['emulator_bottleneck_rows'])}: "
              "those times include the emulator's own scheduling delay")
    else:
        print(f"  emulator was not the bottleneck (ovs-vswitchd at most "
              f"{cmp['max_ovs_vswitchd_cores']:.2f} cores)")


def run(args, out):
    topo = from_spec(args.topology, rate=args.rate, queue=args.queue)
    plans = plan(topo, [a.strip() for a in args.algorithms.split(",") if a.strip()])
    size_list = sizes(args.min_bytes, args.max_bytes, args.factor)
    if args.eager_limit < 0:
        raise TestbedError(f"--eager-limit must be 0 or more bytes (got {args.eager_limit})")
    started = time.monotonic()
    with Emulation(topo, deterministic_routes(topo), out, mtu=args.mtu) as emu:
        fidelity = fabric_check.check(emu, duration=3)
        fabric_check.print_summary(fidelity, topo, emu)
        print(f"\n# {NAME}: {topo.name}, {len(topo.hosts)} ranks, links {topo.rate:g} Mbit/s "
              f"= {topo.rate / 8:g} MB/s, MTU {args.mtu}, OVS {emu.datapath}space, "
              f"warmup {args.warmup}, iters {args.iters}, eager limit {args.eager_limit} B")
        rows = measure(emu, plans, size_list, args.warmup, args.iters, eager_limit=args.eager_limit)
    cmp = compare(rows)
    cmp["fidelity_pass"] = fabric_check.passed(fidelity)
    print_summary(cmp, topo)
    write_csv(out / "allreduce.csv", rows)
    write_json(out / "allreduce.json", {"scenario": NAME, "topology": topo.name, "rate_mbit": topo.rate,
                                        "mtu": args.mtu, "datapath": emu.datapath,
                                        "eager_limit": args.eager_limit, "rows": rows, "summary": cmp,
                                        "fidelity": fidelity, "seconds": round(time.monotonic() - started, 1)})
    plots.busbw_by_size(rows, out / "busbw.png", topo.rate)
    print(f"results: {out / 'allreduce.csv'} {out / 'allreduce.json'} {out / 'busbw.png'}")
    return 0 if cmp["wrong"] == 0 else 1
