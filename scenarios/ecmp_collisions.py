"""ECMP collisions: HD on a leaf-spine Clos with hashed ECMP against HDRM on BiGraph with
deterministic routes, at equal link rate and rank count.

Each trial opens fresh connections (so fresh source ports, so a fresh ECMP hash draw), runs the
allreduce at one message size while the collision probe captures every switch-to-switch link,
and reports per step the links that two or more flows shared, the busbw, and for deterministic
routes what the routing predicted. The summary gives the busbw lost to collisions.
"""
import shutil
import time

from scenarios.options import add_fabric_arguments
from testbed import collisions, plots
from testbed.allreduce import Coordinator, emulation_launcher, summarize
from testbed.cpu import CpuMonitor
from testbed.emulation import Emulation
from testbed.errors import TestbedError
from testbed.placements import place
from testbed.results import write_csv, write_json
from testbed.routing import rules_for
from testbed.topologies import from_spec

NAME = "ecmp_collisions"
HELP = "HD on a Clos with ECMP against HDRM on BiGraph with deterministic routes: collisions per step, busbw"


def add_arguments(parser):
    add_fabric_arguments(parser, topology="bigraph:2,8")
    parser.add_argument("--clos", default="leafspine:4,4,4",
                        help="the ECMP Clos, same host count as --topology (default %(default)s)")
    parser.add_argument("--bytes", type=int, default=1 << 20, help="message size (default %(default)s)")
    parser.add_argument("--trials", type=int, default=3, help="trials with fresh source ports (default %(default)s)")
    parser.add_argument("--iters", type=int, default=2, help="timed iterations per trial (default %(default)s)")


def cases(args):
    """[(label, topology, routing mode, allreduce variant)], refused clearly before anything is built."""
    bigraph = from_spec(args.topology, rate=args.rate, queue=args.queue)
    clos = from_spec(args.clos, rate=args.rate, queue=args.queue)
    if len(clos.hosts) != len(bigraph.hosts):
        raise TestbedError(f"--clos has {len(clos.hosts)} hosts and --topology {len(bigraph.hosts)}: "
                           "give both the same host count")
    if args.trials < 1 or args.iters < 1 or args.bytes < 4 * len(bigraph.hosts):
        raise TestbedError("need --trials >= 1, --iters >= 1 and --bytes >= 4 per rank")
    if shutil.which("tcpdump") is None:
        raise TestbedError("the collision probe needs tcpdump: run 'sudo ./setup.sh' to install it")
    out = [("clos-ecmp-hd", clos, "ecmp", "hd"), ("bigraph-deterministic-hdrm", bigraph, "deterministic", "hdrm")]
    for _, topo, _, variant in out:
        place(variant, topo)
    return out


def run_case(label, topo, mode, variant, args, out, progress=print):
    """Rows, one per trial, each with its busbw, per-step probe results and the CPU verdict."""
    rules, routes = rules_for(topo, mode)
    schedule, hosts = place(variant, topo)
    count, rows = args.bytes // 4, []
    flows = collisions.step_flows(schedule, hosts, topo, count)
    fabric = {link for _, link in collisions.fabric_links(topo)}
    predicted = None if routes is None else sum(   # steps with 2+ flows on a switch-to-switch link
        1 for load in collisions.predicted_loads(schedule, hosts, topo, routes)
        if max((n for link, n in load.items() if link in fabric), default=0) >= 2)
    (out / label).mkdir(parents=True, exist_ok=True)
    with Emulation(topo, routes, out / label, mtu=args.mtu, rules=rules, log=progress) as emu:
        for trial in range(args.trials):
            addresses, launch = emulation_launcher(emu, hosts)
            with Coordinator(schedule.name, addresses, launch, pacing=topo.rate * 1e6 / 8) as coordinator:
                coordinator.iterate(count, 0, timeout=120)          # warmup: connections and windows
                with CpuMonitor() as cpu, collisions.LinkCapture(emu, out / label / f"trial{trial}") as cap:
                    results = [coordinator.iterate(count, i + 1, timeout=120) for i in range(args.iters)]
            links = collisions.per_step(collisions.flows_by_link(cap.packets), flows)
            per_step = collisions.summarize(links, len(flows))
            captured = sum(size for pkts in cap.packets.values() for _, _, size, _ in pkts)
            counted = sum(cap.counter_bytes.values())
            row = summarize(variant, args.bytes, [r["time"] for r in results], sum(r["wrong"] for r in results),
                            len(hosts), topo.rate)
            row.update(case=label, topology=topo.name, routing=mode, trial=trial,
                       collided_steps=sum(1 for s in per_step if s["collided_links"]), steps=len(per_step),
                       max_flows_per_link=max(s["max_flows_per_link"] for s in per_step),
                       predicted_collided_steps=predicted,
                       capture_over_port_counters=round(captured / counted, 3) if counted else None,
                       capture_kernel_drops=cap.kernel_drops, per_step=per_step, per_link=links)
            row.update(cpu.result())
            rows.append(row)
            progress(table_line(row))
    return rows


def table_line(row):
    predicted = "-" if row["predicted_collided_steps"] is None else row["predicted_collided_steps"]
    return (f"  {row['case']:28s} trial {row['trial']}  busbw/link {row['busbw_over_link']:.2f}  "
            f"collided steps {row['collided_steps']:2d}/{row['steps']} (predicted {predicted})  "
            f"max flows/link {row['max_flows_per_link']}  capture/ports {row['capture_over_port_counters']}  "
            f"#wrong {row['wrong']}  {'BOTTLENECK' if row['emulator_bottleneck'] else 'ok'}")


def compare(rows):
    by_case = {}
    for r in rows:
        by_case.setdefault(r["case"], []).append(r)
    mean = lambda rs, k: sum(r[k] for r in rs) / len(rs)
    out = {case: {"busbw_over_link": round(mean(rs, "busbw_over_link"), 3),
                  "collided_steps": [r["collided_steps"] for r in rs],
                  "steps_per_trial": rs[0]["steps"]} for case, rs in by_case.items()}
    clos, bigraph = out["clos-ecmp-hd"], out["bigraph-deterministic-hdrm"]
    out["busbw_lost_to_collisions"] = round(1 - clos["busbw_over_link"] / bigraph["busbw_over_link"], 3)
    out["wrong"] = sum(r["wrong"] for r in rows)
    out["emulator_bottleneck_trials"] = [f"{r['case']}#{r['trial']}" for r in rows if r["emulator_bottleneck"]]
    return out


def run(args, out):
    plan = cases(args)
    started = time.monotonic()
    print(f"# {NAME}: {args.bytes} B allreduce, {args.trials} trials x {args.iters} iterations, "
          f"links {args.rate:g} Mbit/s, MTU {args.mtu}")
    rows = []
    for label, topo, mode, variant in plan:
        print(f"\n## {label}: {topo.describe()}, routing {mode}, {variant}")
        rows += run_case(label, topo, mode, variant, args, out)
    cmp = compare(rows)
    print(f"\nsummary: busbw/link {cmp['clos-ecmp-hd']['busbw_over_link']:.2f} (Clos, ECMP, HD) against "
          f"{cmp['bigraph-deterministic-hdrm']['busbw_over_link']:.2f} (BiGraph, deterministic, HDRM): "
          f"{100 * cmp['busbw_lost_to_collisions']:.0f}% of the busbw lost")
    print(f"  collided steps per trial: Clos {cmp['clos-ecmp-hd']['collided_steps']}, "
          f"BiGraph {cmp['bigraph-deterministic-hdrm']['collided_steps']} "
          f"(of {cmp['clos-ecmp-hd']['steps_per_trial']})")
    print(f"  #wrong over every iteration: {cmp['wrong']}")
    if cmp["emulator_bottleneck_trials"]:
        print(f"  emulator WAS the bottleneck (CPU) in {', '.join(cmp['emulator_bottleneck_trials'])}")
    else:
        print("  emulator was not the bottleneck (CPU) in any trial")
    links = [dict(link, case=r["case"], trial=r["trial"]) for r in rows for link in r["per_link"]]
    write_csv(out / "ecmp_trials.csv", [{k: v for k, v in r.items() if k not in ("per_step", "per_link")}
                                        for r in rows])
    write_csv(out / "ecmp_links.csv", links)
    write_json(out / "ecmp_collisions.json", {"scenario": NAME, "rows": rows, "summary": cmp,
                                              "seconds": round(time.monotonic() - started, 1)})
    first = [r for r in rows if r["trial"] == 0]
    plots.flows_heatmap([(f"{r['case']} (trial 0)", r["per_link"], len(r["per_step"])) for r in first],
                        out / "flows_per_link.png")
    print(f"results: {out / 'ecmp_trials.csv'} {out / 'ecmp_links.csv'} {out / 'ecmp_collisions.json'} "
          f"{out / 'flows_per_link.png'}")
    return 0 if cmp["wrong"] == 0 else 1
