"""HPN 7.0, single plane against dual plane: the same traffic on the same HPN7 fabric, hashed by
ECMP at every stage, in both forms.

Single plane: every ToR links to every aggregation switch, so an aggregation switch has both ToRs of
a NIC as equal-cost next hops: a third hashing stage after the host's bond and the ToR's uplink
choice, which makes the same hash at successive switches pick correlated links (polarisation).
Dual plane: port p of every NIC is in plane p, which has aggregation switches of its own; once a
flow leaves its ToR its path is fixed. Each trial opens fresh connections (fresh source ports, a
fresh hash draw) and runs two workloads while every link is captured and the queues of the ToR
ports facing the NICs are sampled: a Ring allreduce whose neighbours are rail peers on the other
segment, and a cross-segment permutation (each host to its counterpart on the other segment); both
use several TCP connections per peer (as NCCL uses several channels), which the bonded NICs and the
switches hash. Measured: flows and bytes per directed link and max/mean per tier,
the split between each NIC's two downlinks, queue depth, busbw and goodput, #wrong, the verdict.
"""
import time
from dataclasses import dataclass

from scenarios.common import add_fabric_arguments, at_least, fabric
from testbed import routing
from testbed.collectives.coordinator import Coordinator, emulation_launcher
from testbed.collectives.data import ELEMENT_BYTES
from testbed.collectives.metrics import result_row
from testbed.collectives.placements import place
from testbed.collectives.sweep import check_sweep
from testbed.emulation.network import Emulation
from testbed.errors import TestbedError
from testbed.fidelity import fabric_check
from testbed.fidelity.verdict import CpuMonitor, describe_all, flag
from testbed.probes.flows import measure_flows
from testbed.probes.loads import Observation
from testbed.report import figures
from testbed.topology import HPN7, interface

NAME = "hpn7_planes"
HELP = "HPN7 single- against dual-plane under ECMP: load per link and tier, NIC downlink split, queues, busbw"
ALLREDUCE = "ring_cross_segment"
TIERS = ("host->tor", "tor->agg", "agg->tor", "tor->host")


def add_arguments(parser):
    add_fabric_arguments(parser, topology="hpn7:2,2,2,2")
    parser.add_argument("--hash", choices=routing.HASHES, default="same",
                        help="same: one hash function and basis at every switch, as real switches; "
                             "per-switch: a basis of each switch's own (default %(default)s)")
    parser.add_argument("--bytes", type=int, default=1 << 20, help="allreduce message size (default %(default)s)")
    parser.add_argument("--iters", type=int, default=3, help="allreduce iterations per trial (default %(default)s)")
    parser.add_argument("--streams", type=int, default=4,
                        help="TCP connections per pair in the cross-segment flows (default %(default)s)")
    parser.add_argument("--duration", type=int, default=5, help="seconds of cross-segment flows (default %(default)s)")
    parser.add_argument("--trials", type=int, default=2, help="trials with fresh connections (default %(default)s)")


@dataclass
class Plan:
    forms: list          # [HPN7 with planes=1, the same with planes=2]
    mtu: int
    hash: str
    size: int
    iters: int
    streams: int
    duration: int
    trials: int
    source: str = ""     # where the fabric came from, if a SimAI file

    @property
    def fabrics(self):
        return self.forms


def prepare(args):
    base = fabric(args)
    if not isinstance(base, HPN7) or base.segments < 2:
        raise TestbedError(f"{NAME} needs an HPN7 fabric of 2 or more segments (got {base.name}): "
                           "use e.g. --topology hpn7:2,2,2,2")
    forms = [HPN7(base.segments, base.servers, base.rails, base.aggs, planes=p, uplink_ratio=base.uplink_ratio,
                  rate=base.rate, queue=base.queue, delay=base.delay) for p in (1, 2)]
    place(ALLREDUCE, forms[0])
    ranks = len(place(ALLREDUCE, forms[0])[1])
    at_least(args.bytes, ELEMENT_BYTES * ranks, "--bytes", f" ({ELEMENT_BYTES} per rank)")
    trials, iters = at_least(args.trials, 1, "--trials"), at_least(args.iters, 1, "--iters")
    check_sweep([args.bytes], ranks, 2 * trials, base.bytes_per_s, 1, iters)
    if not 1 <= args.streams <= 64:
        raise TestbedError(f"--streams must be between 1 and 64 (got {args.streams})")
    if not 1 <= args.duration <= 600:
        raise TestbedError(f"--duration must be between 1 and 600 s (got {args.duration})")
    source = base.describe().split(", from ", 1)[1] if getattr(base, "simai", None) else ""
    return Plan(forms, args.mtu, args.hash, args.bytes, iters, args.streams, args.duration, trials,
                f"fabric from {source}" if source else "")


def allreduce_trial(emu, plan, folder, queue_ports):
    schedule, hosts = place(ALLREDUCE, emu.topo)
    addresses, launch = emulation_launcher(emu, hosts)
    count = plan.size // ELEMENT_BYTES
    with Coordinator(schedule.name, addresses, launch, pacing=emu.topo.bytes_per_s, streams=plan.streams,
                     label=ALLREDUCE) as ranks:
        ranks.iterate(count, 0, timeout=120)                 # warmup: connections and windows
        with Observation(emu, folder, queue_ports) as seen, CpuMonitor() as cpu:
            results = [ranks.iterate(count, i + 1, timeout=120) for i in range(plan.iters)]
    row = result_row(ALLREDUCE, plan.size, [r["time"] for r in results], sum(r["wrong"] for r in results),
                     len(hosts), emu.topo.rate, ports=emu.topo.tors)        # a bonded NIC: a port per ToR
    return row, seen, cpu.result()


def flows_trial(emu, plan, folder, queue_ports):
    seen = Observation(emu, folder, queue_ports)
    flows, cpu = measure_flows(emu, emu.topo.cross_segment_pairs(), plan.duration, streams=plan.streams,
                               during=[seen])
    failed = [f"{f['src']}->{f['dst']}: {f['error']}" for f in flows if f["error"]]
    if failed:
        raise TestbedError(f"cross-segment flows failed: {'; '.join(failed)}")
    capacity = 2 * emu.topo.rate                             # a bonded NIC: two ports
    goodput = [f["received_mbit"] / capacity for f in flows]
    row = {"algorithm": f"flows x{plan.streams}", "goodput_over_nic": round(sum(goodput) / len(goodput), 3),
           "min_goodput_over_nic": round(min(goodput), 3), "wrong": 0}
    return row, seen, cpu


def trial_row(topo, workload, trial, row, seen, cpu):
    row = dict(row, planes=topo.planes, workload=workload, trial=trial, tiers=seen.tiers,
               nic_split=seen.split, queues=seen.queues, capture_over_port_counters=seen.capture_over_counters)
    row["mean_queue_bytes"] = round(sum(q["mean_backlog"] for q in seen.queues.values()) / len(seen.queues))
    row["max_queue_bytes"] = max(q["max_backlog"] for q in seen.queues.values())
    row.update(cpu)
    return row


def line(row):
    tiers = "  ".join(f"{t} {row['tiers'][t]['max_over_mean']}" for t in TIERS if t in row["tiers"])
    result = (f"busbw/NIC {row['busbw_over_nic']:.2f} #wrong {row['wrong']}" if "busbw_over_nic" in row
              else f"goodput/NIC {row['goodput_over_nic']:.2f} (min {row['min_goodput_over_nic']:.2f})")
    return (f"  planes={row['planes']} {row['workload']:9s} trial {row['trial']}  {result}  max/mean bytes: {tiers}  "
            f"queue mean {row['mean_queue_bytes'] / 1e3:.1f} KB max {row['max_queue_bytes'] / 1e3:.1f} KB  {flag(row)}")


def run_form(topo, plan, results, keep):
    folder = results / f"planes{topo.planes}"
    queue_ports = [interface(*topo.attachment(nic)) for nic in topo.nic_ports()]   # ToR ports facing NICs
    with Emulation(topo, routing.plan(topo, "ecmp", plan.hash), folder, mtu=plan.mtu) as emu:
        check = fabric_check.check(emu)
        print("\n".join(fabric_check.report(check, emu)))
        for trial in range(plan.trials):
            for workload, run_trial in (("allreduce", allreduce_trial), ("flows", flows_trial)):
                row, seen, cpu = run_trial(emu, plan, folder / f"{workload}{trial}", queue_ports)
                row = trial_row(topo, workload, trial, row, seen, cpu)
                keep(row, seen)
                print(line(row))
    return check


def mean(rows, key):
    values = [r[key] for r in rows if r.get(key) is not None]
    return sum(values) / len(values) if values else None


def compare_forms(rows):
    """Per workload: each form's mean result, per tier max/mean and idle links, queues, NIC split."""
    out = {}
    for workload in ("allreduce", "flows"):
        per = {}
        for planes in (1, 2):
            mine = [r for r in rows if r["workload"] == workload and r["planes"] == planes]
            if not mine:
                continue
            tiers = {t: {"max_over_mean": round(mean([r["tiers"][t] for r in mine], "max_over_mean"), 2),
                         "idle_links": round(mean([r["tiers"][t] for r in mine], "idle_links"), 1),
                         "links": mine[0]["tiers"][t]["links"]} for t in TIERS if t in mine[0]["tiers"]}
            splits = [s["busier_share"] for r in mine for s in r["nic_split"].values()]
            per[planes] = {"result": round(mean(mine, "busbw_over_nic" if workload == "allreduce"
                                                else "goodput_over_nic"), 3),
                           "tiers": tiers, "mean_queue_bytes": round(mean(mine, "mean_queue_bytes")),
                           "max_queue_bytes": max(r["max_queue_bytes"] for r in mine),
                           "nic_busier_share": round(sum(splits) / len(splits), 3) if splits else None}
        out[workload] = per
    out["wrong"] = sum(r["wrong"] for r in rows)
    out["emulator"] = describe_all(rows, lambda r: f"planes={r['planes']} {r['workload']}#{r['trial']}")
    return out


def kilobytes(single, dual, key):
    return f"{single[key] / 1e3:.1f} vs {dual[key] / 1e3:.1f} KB"


def summary_lines(cmp):
    lines = []
    for workload, measure in (("allreduce", "busbw/NIC capacity"), ("flows", "goodput/NIC capacity")):
        single, dual = cmp[workload].get(1), cmp[workload].get(2)
        if not (single and dual):
            continue
        gain = 100 * (dual["result"] / single["result"] - 1) if single["result"] else float("nan")
        lines.append(f"  {workload}: {measure} single plane {single['result']:.2f}, dual plane {dual['result']:.2f} "
                     f"({gain:+.0f}%)")
        for tier in TIERS:
            if tier in single["tiers"] and tier in dual["tiers"]:
                s, d = single["tiers"][tier], dual["tiers"][tier]
                lines.append(f"    {tier:9s} max/mean bytes {s['max_over_mean']:.2f} vs {d['max_over_mean']:.2f}; "
                             f"idle links {s['idle_links']:g}/{s['links']} vs {d['idle_links']:g}/{d['links']}")
        change = (f" ({100 * (dual['mean_queue_bytes'] / single['mean_queue_bytes'] - 1):+.0f}%)"
                  if single["mean_queue_bytes"] >= 1000 else "")
        lines.append(f"    ToR ports facing NICs: mean queue {kilobytes(single, dual, 'mean_queue_bytes')}{change}, "
                     f"largest {kilobytes(single, dual, 'max_queue_bytes')}; busier downlink's "
                     "share of a NIC's bytes "
                     f"{single['nic_busier_share']} vs {dual['nic_busier_share']}")
    lines += [f"  #wrong over every iteration: {cmp['wrong']}", f"  {cmp['emulator']}"]
    return lines


def run(plan, results):
    started = time.monotonic()
    topo = plan.forms[0]
    if plan.source:
        print(f"# {plan.source}")
    print(f"# {NAME}: HPN7(S={topo.segments}, H={topo.servers}, R={topo.rails}, A={topo.aggs}), ECMP, hash "
          f"{plan.hash}, links {topo.rate:g} Mbit/s, {plan.trials} trials: allreduce {plan.size} B x {plan.iters}, "
          f"cross-segment flows {plan.streams} connections x {plan.duration} s")
    about = {"scenario": NAME, "hash": plan.hash, "rate_mbit": topo.rate, "mtu": plan.mtu, "rows": [], "links": [],
             "fidelity": {}}
    first_trial = {}          # (planes, workload): {port: queue samples}, for the figure

    def keep(row, seen):
        if row["trial"] == 0:
            first_trial[row["planes"], row["workload"]] = seen.sampler.samples
        about["rows"].append(row)
        results.append("hpn7_trials.csv", {k: v for k, v in row.items() if k not in ("tiers", "nic_split", "queues")})
        results.append("hpn7_links.csv", *[dict(link, planes=row["planes"], workload=row["workload"],
                                                trial=row["trial"]) for link in seen.links])
        results.append("hpn7_queues.csv", *[{"planes": row["planes"], "workload": row["workload"],
                                              "trial": row["trial"], "port": port, "time": t, "bytes": b}
                                             for port, series in seen.sampler.samples.items() for t, _, b, _ in series])
        about["links"] += [dict(link, planes=row["planes"], workload=row["workload"], trial=row["trial"])
                           for link in seen.links]

    with results.outcome("hpn7_planes.json", about):
        for form in plan.forms:
            print(f"\n## {form.name}")
            about["fidelity"][form.planes] = check = run_form(form, plan, results.path, keep)
            about.setdefault("fabric_check_pass", {})[form.planes] = fabric_check.passed(check)
        cmp = about["summary"] = compare_forms(about["rows"])
        about["seconds"] = round(time.monotonic() - started, 1)
    print("\nsummary (single plane vs dual plane):")
    print("\n".join(summary_lines(cmp)))
    checks = ", ".join(f"planes={p} {'PASS' if ok else 'FAIL'}" for p, ok in about["fabric_check_pass"].items())
    print(f"  fabric check: {checks}")
    results.figure("load_per_link.png", figures.load_per_link, about["links"], TIERS)
    results.figure("queues.png", figures.queues_by_form, first_trial)
    print(results.listing())
    return 0 if cmp["wrong"] == 0 else 1
