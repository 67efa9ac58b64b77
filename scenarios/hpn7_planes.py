"""HPN 7.0, single plane against dual plane: the same traffic on the same ToRs and uplinks, wired
as one plane or two, hashed by ECMP at every stage; paired trials, intervals, and a flow model
checked against every trial.

Single plane: both ToRs of a NIC link to the same aggregation switches, so an aggregation switch
has both as equal-cost next hops towards the NIC: a hashing stage after the NIC's choice of port
and the ToR's choice of uplink, and the same hash at successive switches picks correlated links
(polarisation). Dual plane: port p of every NIC is in plane p, whose aggregation switches reach
only plane p's ToRs; once a connection leaves its NIC its path down is fixed. Both forms have the
same ToRs, A uplinks per ToR at the same rate (``--uplink-capacity``: HPN's ratio of ToR uplink
to downlink capacity by default) and A aggregation switches' worth of ports; only the wiring
differs (``topology.hpn7.plane_forms``).

Trial t draws fresh 5-tuples (``routing.hashing.Draw`` from seed + t) and runs both forms on them,
in alternating order, each on a freshly built fabric: a Ring allreduce over every host whose
neighbours sit on different segments, and a cross-segment permutation of long-lived flows, both
with ``--streams`` connections per peer, spread over the NIC's ports by ``--bond``; with
``--workloads ...,alltoall`` also the pairwise alltoall over the same hosts (a mixture-of-experts'
expert-parallel exchange: a fresh set of 5-tuples in every step). Every link is
captured; from the paths the connections took, the flow model (``fidelity.predict``) gives what
the trial should have achieved; measured over model says whether the throughput follows from the
placement. The gains of dual plane are paired ratios with 95% intervals (``report.paired``).
"""
import statistics
import time
from dataclasses import dataclass

from scenarios.common import add_fabric_arguments, add_plane_arguments, at_least, fabric, names
from testbed import routing
from testbed.collectives.connections import rank_connections, source_ports
from testbed.collectives.coordinator import Coordinator, emulation_launcher
from testbed.collectives.data import ELEMENT_BYTES
from testbed.collectives.jobs import LISTEN_PORT, CrossSegmentJob, data_connections
from testbed.collectives.metrics import result_row
from testbed.collectives.schedules import PairwiseAlltoall, Ring
from testbed.collectives.sweep import check_sweep
from testbed.emulation.network import Emulation
from testbed.errors import TestbedError
from testbed.fidelity import fabric_check, predict
from testbed.fidelity.verdict import CpuMonitor, describe_all, flag
from testbed.probes.flows import measure_flows
from testbed.probes.loads import Observation
from testbed.report import figures
from testbed.report.paired import Comparison, trial_order
from testbed.routing.hashing import Draw, Placer
from testbed.topology import HPN7, interface
from testbed.topology.hpn7 import plane_forms

NAME = "hpn7_planes"
HELP = "HPN7 single- against dual-plane under ECMP: paired trials with intervals, loads per tier, NIC split, " \
       "queues, measured against the flow model"
FORMS = ("single plane", "dual plane")
WORKLOADS = ("allreduce", "flows", "alltoall")
TIERS = ("host->tor", "tor->agg", "agg->tor", "tor->host")
DEFAULT_TRIALS = 8


def add_arguments(parser):
    add_fabric_arguments(parser, topology="hpn7:2,2,2,2")
    add_plane_arguments(parser)
    parser.add_argument("--bytes", type=int, default=1 << 20, help="allreduce message size (default %(default)s)")
    parser.add_argument("--iters", type=int, default=3, help="allreduce iterations per trial (default %(default)s)")
    parser.add_argument("--streams", type=int, default=4,
                        help="TCP connections per peer, in both workloads (default %(default)s)")
    parser.add_argument("--duration", type=int, default=5, help="seconds of cross-segment flows (default %(default)s)")
    parser.add_argument("--trials", type=int, default=DEFAULT_TRIALS,
                        help="paired trials, each on a fresh hash draw (default %(default)s: about 13 minutes)")
    parser.add_argument("--seed", type=int, default=None, help="the first trial's draw (default: a new one)")
    parser.add_argument("--workloads", default="allreduce,flows",
                        help="comma-separated, from " + ", ".join(WORKLOADS) + " (default %(default)s; "
                             "alltoall: the pairwise alltoall of --bytes over the same hosts)")


@dataclass
class Plan:
    forms: list          # [single plane, dual plane]
    mtu: int
    hash: str
    bond: str
    size: int
    iters: int
    streams: int
    duration: int
    trials: int
    seed: int
    source: str = ""     # where the fabric came from, if a SimAI file
    workloads: tuple = WORKLOADS[:2]

    @property
    def fabrics(self):
        return self.forms


def prepare(args):
    base = fabric(args)
    if not isinstance(base, HPN7) or base.segments < 2 or base.tors != 2:
        raise TestbedError(f"{NAME} needs a dual-ToR HPN7 fabric of 2 or more segments (got {base.name}): "
                           "use e.g. --topology hpn7:2,2,2,2")
    forms = plane_forms(base, args.uplink_capacity)
    ranks = len(CrossSegmentJob(forms[0], range(base.servers), 1).ring_hosts)
    at_least(args.bytes, ELEMENT_BYTES * ranks, "--bytes", f" ({ELEMENT_BYTES} per rank)")
    trials, iters = at_least(args.trials, 2, "--trials", " (an interval needs two)"), at_least(args.iters, 1, "--iters")
    check_sweep([args.bytes], ranks, 2 * trials, base.bytes_per_s, 1, iters)
    workloads = tuple(w for w in WORKLOADS if w in names(args.workloads, "--workloads", WORKLOADS))
    if "alltoall" in workloads:
        PairwiseAlltoall().check_count(ranks, args.bytes // ELEMENT_BYTES)
    if not 1 <= args.streams <= 16:
        raise TestbedError(f"--streams must be between 1 and 16 (got {args.streams})")
    if not 1 <= args.duration <= 600:
        raise TestbedError(f"--duration must be between 1 and 600 s (got {args.duration})")
    source = base.describe().split(", from ", 1)[1] if getattr(base, "simai", None) else ""
    seed = args.seed if args.seed is not None else int(time.time() * 1000) % 1_000_000
    return Plan(forms, args.mtu, args.hash, args.bond, args.bytes, iters, args.streams, args.duration, trials,
                seed, f"fabric from {source}" if source else "", workloads)


class Form:
    """One form of the fabric in one trial: its emulation, its job and the draw's connections."""

    def __init__(self, emu, plan, draw, placer, folder):
        self.emu, self.plan, self.topo, self.placer, self.folder = emu, plan, emu.topo, placer, folder
        self.job = CrossSegmentJob(self.topo, range(self.topo.servers), plan.streams)
        self.ranks = self.job.allreduce(draw)          # asked for first, then the flows: both forms alike
        self.groups, self.pairs = self.job.flows(draw)
        if "alltoall" in plan.workloads:              # drawn last: the other workloads' 5-tuples stay as they were
            hosts = self.job.ring_hosts
            self.exchange = rank_connections(PairwiseAlltoall(), hosts, [LISTEN_PORT] * len(hosts), plan.streams,
                                             draw)
        self.queue_ports = [interface(*self.topo.attachment(nic)) for nic in self.topo.nic_ports()]

    def allreduce(self):
        hosts = self.job.ring_hosts
        addresses, launch = emulation_launcher(self.emu, hosts)
        count = self.plan.size // ELEMENT_BYTES
        with Coordinator(Ring().name, addresses, launch, pacing=self.topo.bytes_per_s, streams=self.plan.streams,
                         label="ring_cross_segment", source_ports=source_ports(self.ranks)) as ranks:
            ranks.iterate(count, 0, timeout=120)             # warmup: connections and windows
            with Observation(self.emu, self.folder / "allreduce", self.queue_ports) as seen, CpuMonitor() as cpu:
                results = [ranks.iterate(count, i + 1, timeout=120) for i in range(self.plan.iters)]
        seconds = [r["time"] for r in results]
        row = result_row("ring_cross_segment", self.plan.size, seconds, sum(r["wrong"] for r in results),
                         len(hosts), self.topo.rate, ports=self.topo.tors)   # a bonded NIC: a port per ToR
        conns = data_connections(self.ranks)
        paths = predict.captured_paths(self.topo, conns, seen.paths)
        row["measured_over_model"] = None         # a connection the capture missed: no model
        if len(paths) == len(conns):
            (model,) = predict.collective_times(self.topo, [(Ring(), self.ranks, count)], paths, self.plan.mtu)
            row["measured_over_model"] = round(model / (sum(seconds) / len(seconds)), 3)
        return self._row("allreduce", dict(row, result=row["busbw_over_nic"]), seen, cpu.result(), conns, paths)

    def alltoall(self):
        hosts, schedule = self.job.ring_hosts, PairwiseAlltoall()
        addresses, launch = emulation_launcher(self.emu, hosts)
        count = self.plan.size // ELEMENT_BYTES
        with Coordinator(schedule, addresses, launch, pacing=self.topo.bytes_per_s, streams=self.plan.streams,
                         label="pairwise_alltoall", source_ports=source_ports(self.exchange)) as ranks:
            ranks.iterate(count, 0, timeout=120)
            with Observation(self.emu, self.folder / "alltoall", self.queue_ports) as seen, CpuMonitor() as cpu:
                results = [ranks.iterate(count, i + 1, timeout=120) for i in range(self.plan.iters)]
        seconds = [r["time"] for r in results]
        row = result_row("pairwise_alltoall", self.plan.size, seconds, sum(r["wrong"] for r in results),
                         len(hosts), self.topo.rate, ports=self.topo.tors, collective="alltoall")
        conns = [c for peers in self.exchange.values() for group in peers.values() for c in group]
        paths = predict.captured_paths(self.topo, conns, seen.paths)
        row["measured_over_model"] = None
        if len(paths) == len(conns):
            (model,) = predict.collective_times(self.topo, [(schedule, self.exchange, count)], paths, self.plan.mtu)
            row["measured_over_model"] = round(model / (sum(seconds) / len(seconds)), 3)
        return self._row("alltoall", dict(row, result=row["busbw_over_nic"]), seen, cpu.result(), conns, paths)

    def flows(self):
        seen = Observation(self.emu, self.folder / "flows", self.queue_ports)
        flows, cpu = measure_flows(self.emu, self.pairs, self.plan.duration, connections=self.groups, during=[seen])
        failed = [f"{f['src']}->{f['dst']}: {f['error']}" for f in flows if f["error"]]
        if failed:
            raise TestbedError(f"cross-segment flows failed: {'; '.join(failed)}")
        capacity = self.topo.tors * self.topo.rate               # a bonded NIC: a port per ToR
        goodput = [f["received_mbit"] / capacity for f in flows]
        row = {"algorithm": f"flows x{self.plan.streams}", "result": round(sum(goodput) / len(goodput), 3),
               "min_goodput_over_nic": round(min(goodput), 3), "wrong": 0}
        conns = [c for group in self.groups for c in group]
        paths = predict.captured_paths(self.topo, conns, seen.paths)
        row["measured_over_model"] = None
        if len(paths) == len(conns):
            model = predict.flows(self.topo, self.groups, paths, self.plan.mtu)["goodput_over_nic"]
            row["measured_over_model"] = round(row["result"] / (sum(model) / len(model)), 3)
        return self._row("flows", row, seen, cpu, conns, paths)

    def _row(self, workload, row, seen, cpu, conns, paths):
        row = dict(row, planes=self.topo.planes, workload=workload, connections=len(conns),
                   captured=len(paths), as_placed=predict.paths_as_placed(self.placer, paths),
                   capture_over_port_counters=seen.capture_over_counters)
        for tier in TIERS:                 # every row the same columns: the CSV's header is the first's
            row[f"{tier}_max_over_mean"] = seen.tiers.get(tier, {}).get("max_over_mean")
            row[f"{tier}_idle_links"] = seen.tiers.get(tier, {}).get("idle_links")
        shares = [s["busier_share"] for s in seen.split.values()]
        row["nic_busier_share"] = round(sum(shares) / len(shares), 3) if shares else None
        row["mean_queue_bytes"] = round(sum(q["mean_backlog"] for q in seen.queues.values()) / len(seen.queues))
        row["max_queue_bytes"] = max(q["max_backlog"] for q in seen.queues.values())
        row.update(cpu)
        return row, seen


def line(row):
    result = (f"busbw/NIC {row['result']:.2f} #wrong {row['wrong']}" if row["workload"] != "flows"
              else f"goodput/NIC {row['result']:.2f} (min {row['min_goodput_over_nic']:.2f})")
    model = f"{row['measured_over_model']:.2f}" if row.get("measured_over_model") is not None else "-"
    return (f"  trial {row['trial']} {FORMS[row['planes'] - 1]:12s} {row['workload']:9s} {result}  "
            f"measured/model {model}  paths as hashed {row['as_placed']}/{row['connections']}  "
            f"agg->tor max/mean {row.get('agg->tor_max_over_mean')}  NIC busier share {row['nic_busier_share']}  "
            f"queue mean {row['mean_queue_bytes'] / 1e3:.1f} KB  {flag(row)}")


COMPARED = [("result", {"allreduce": "busbw/NIC", "flows": "goodput/NIC", "alltoall": "busbw/NIC"}, 3),
            ("measured_over_model", "measured/model", 2),
            ("agg->tor_max_over_mean", "agg->tor max/mean bytes", 2),
            ("nic_busier_share", "busier downlink's share of a NIC's bytes", 3),
            ("mean_queue_bytes", "mean queue at ToR ports facing NICs (bytes)", 0)]


def comparisons(rows):
    """Per workload and figure: the paired comparison of single and dual plane over trials."""
    out = []
    for workload in [w for w in WORKLOADS if any(r["workload"] == w for r in rows)]:
        by_trial = {}
        for r in rows:
            if r["workload"] == workload:
                by_trial.setdefault(r["trial"], {})[r["planes"]] = r
        paired = [(t[1], t[2]) for _, t in sorted(by_trial.items()) if 1 in t and 2 in t]
        for key, name, digits in COMPARED:
            name = name[workload] if isinstance(name, dict) else name
            pairs = [(a.get(key), b.get(key)) for a, b in paired]
            out.append((workload, key, Comparison(f"{workload} {name}", FORMS, pairs, digits)))
    return out


def model_lines(rows):
    """Measured over model per form: the median and range over trials, and what it says."""
    lines = []
    for workload in WORKLOADS:
        for planes, form in ((1, FORMS[0]), (2, FORMS[1])):
            ratios = sorted(r["measured_over_model"] for r in rows if r["workload"] == workload
                            and r["planes"] == planes and r.get("measured_over_model") is not None)
            if not ratios:
                continue
            median = statistics.median(ratios)
            verdict = ("follows from the placement (within 10%)" if abs(median - 1) <= 0.10 else
                       "below the model: TCP shares a bottleneck less fairly than max-min, or the emulator "
                       "was short (see the verdict)" if median < 1 else "above the model: check the capture")
            lines.append(f"  {workload} {form}: measured/model median {median:.2f} "
                         f"(range {ratios[0]:.2f}-{ratios[-1]:.2f}, {len(ratios)} trials): {verdict}")
    placed = sum(r["as_placed"] for r in rows)
    total = sum(r["connections"] for r in rows)
    lines.append(f"  paths as the model hashes them: {placed} of {total} connections over every trial")
    return lines


def run(plan, results):
    started = time.monotonic()
    single = plan.forms[0]
    if plan.source:
        print(f"# {plan.source}")
    print(f"# {NAME}: HPN7(S={single.segments}, H={single.servers}, R={single.rails}, A={single.aggs}), ECMP, hash "
          f"{plan.hash}, bond {plan.bond}, links {single.rate:g} Mbit/s, ToR uplinks {single.uplink_capacity:.4g} of "
          f"NIC-facing capacity; {plan.trials} paired trials from seed {plan.seed}: allreduce {plan.size} B x "
          f"{plan.iters} and cross-segment flows for {plan.duration} s, {plan.streams} connections per peer; "
          f"workloads {', '.join(plan.workloads)}")
    about = {"scenario": NAME, "hash": plan.hash, "bond": plan.bond, "seed": plan.seed, "rate_mbit": single.rate,
             "uplink_capacity": single.uplink_capacity, "mtu": plan.mtu, "rows": [], "links": [], "fidelity": {}}
    placers = {f.planes: Placer(f, routing.plan(f, "ecmp", plan.hash), plan.bond) for f in plan.forms}
    first_trial = {}          # (planes, workload): {port: queue samples}, for the figure

    def keep(row, seen):
        if row["trial"] == 0:
            first_trial[row["planes"], row["workload"]] = seen.sampler.samples
            results.append("hpn7_queues.csv", *[{"planes": row["planes"], "workload": row["workload"], "port": port,
                                                  "time": t, "bytes": b}
                                                 for port, series in seen.sampler.samples.items()
                                                 for t, _, b, _ in series])
        about["rows"].append(row)
        results.append(f"hpn7_{row['workload']}.csv", row)
        links = [dict(link, planes=row["planes"], workload=row["workload"], trial=row["trial"]) for link in seen.links]
        results.append("hpn7_links.csv", *links)
        about["links"] += links

    with results.outcome("hpn7_planes.json", about):
        for trial in range(plan.trials):
            for form in trial_order(plan.forms, trial):
                draw = Draw(plan.seed + trial, plan.bond)
                folder = results.path / f"trial{trial}" / f"planes{form.planes}"
                with Emulation(form, routing.plan(form, "ecmp", plan.hash), folder, mtu=plan.mtu) as emu:
                    if form.planes not in about["fidelity"]:
                        check = about["fidelity"][form.planes] = fabric_check.check(emu)
                        print("\n".join(fabric_check.report(check, emu)))
                    run_form = Form(emu, plan, draw, placers[form.planes], folder)
                    for workload in plan.workloads:
                        row, seen = getattr(run_form, workload)()
                        row = dict(row, trial=trial, seed=plan.seed + trial)
                        keep(row, seen)
                        print(line(row), flush=True)
            print(f"  ... {trial + 1} of {plan.trials} trials in {time.monotonic() - started:.0f} s", flush=True)
        compared = comparisons(about["rows"])
        about["summary"] = [dict(c.to_dict(), workload=w, key=k) for w, k, c in compared]
        about["wrong"] = sum(r["wrong"] for r in about["rows"])
        about["emulator"] = describe_all(about["rows"], lambda r: f"trial {r['trial']} planes={r['planes']} "
                                                                  f"{r['workload']}")
        about["seconds"] = round(time.monotonic() - started, 1)
        for w, k, c in compared:
            results.append("hpn7_summary.csv", summary_row(w, k, c))
    print("\nsummary (single plane against dual plane, paired over trials; mean [95% interval]):")
    for _, _, c in compared:
        print(f"  {c.line()}")
    print("measured against the flow model (max-min fair rates over the captured paths):")
    print("\n".join(model_lines(about["rows"])))
    checks = ", ".join(f"planes={p} {'PASS' if fabric_check.passed(c) else 'FAIL'}"
                       for p, c in about["fidelity"].items())
    print(f"  #wrong over every iteration: {about['wrong']}\n  {about['emulator']}\n  fabric check: {checks}")
    results.figure("load_per_link.png", figures.load_per_link, about["links"], TIERS)
    results.figure("queues.png", figures.queues_by_form, first_trial)
    print(results.listing())
    return 0 if about["wrong"] == 0 else 1


def summary_row(workload, key, cmp):
    row = {"workload": workload, "figure": key}
    for label, e in (("single", cmp.a), ("dual", cmp.b), ("gain", cmp.gain)):
        row.update({label: e.to_dict()["mean"], f"{label}_lo": e.to_dict()["lo"], f"{label}_hi": e.to_dict()["hi"]})
    row.update({"excludes_zero": cmp.gain.excludes(0.0), "trials": cmp.gain.n})
    return row
