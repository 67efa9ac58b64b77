"""Congestion signalled as AI fabrics signal it: N long TCP flows into one switch port, the port's
FIFO drop-tail against ECN marking at each threshold K, with CUBIC senders and with DCTCP senders,
paired trial by trial on one fabric.

DCTCP (SIGCOMM 2010) marks at a shallow K and holds the queue near it at full throughput, with about
90% less buffer than drop-tail: a sender cuts its window by alpha/2, alpha the fraction of its bytes
marked, where CUBIC cuts it by 0.3 on any mark (RFC 3168). This kernel has no DCTCP; the senders
run the project's own (emulation.dctcp). Each trial measures drop-tail (CUBIC) and every (K,
senders) in turn (in alternating order, so that drift falls on all) on the same fabric and senders:
the bottleneck port's queue (its FIFO's backlog, sampled every 2 ms, the first second of each flow
left out), the flows' goodput over the port's rate, the FIFO's drops, the marks it set and DCTCP's
alpha per sender. HULL (NSDI 2012) is DCTCP at the largest K whose marker's queue is a phantom
one, drained at --phantom of the rate: it marks before the real queue builds. The largest K is the
rule, fixed before any run: HULL can only show where DCTCP's own queue sits above TCP's least
windows (each sender's two segments), and it is judged only where DCTCP's queue at that K was at
least twice that floor (else the run says so, and the claim is not measured).
Then incast, as a parameter server or a gather meets it: k senders (from the other switches) send a
message each to one receiver at once, for each fan-in k, under drop-tail, ECN at the smallest K with
CUBIC senders, and DCTCP at that K, paired by trial: the last hop's deepest queue, its drops, the
senders' retransmission timeouts and the completion time against k messages at the link's rate,
from the port's FIFO alone (no probe packets: at these rates several would queue per data frame in
the FIFO they measure, in its packet limit).
"""
import contextlib
import statistics
from dataclasses import dataclass

from scenarios.common import add_fabric_arguments, at_least, counts, fabric, names
from testbed.api import TestbedError, check_congestion_control, check_ecn, interface, trial_order
from testbed.experiments import Comparison, figures, flag
from testbed.experiments.claims import Claim
from testbed.experiments.code_half import EMULATION

NAME = "congestion"
HELP = ("N long flows into one port: its queue, goodput, drops and marks, drop-tail against ECN marking at each "
        "K, CUBIC and DCTCP senders")
CLAIMS = (Claim("ECN marking (RFC 3168, CUBIC senders) at the smallest K holds the port's queue far below drop-tail's",
                "queue with ECN at the smallest K over drop-tail", at_most=0.5),
          Claim("at the cost of little goodput", "goodput with ECN at the smallest K over drop-tail", at_least=0.9),
          Claim("DCTCP's marking at the smallest K holds it far below drop-tail's too (the paper: ~90% less buffer)",
                "queue with DCTCP at the smallest K over drop-tail", at_most=0.5),
          Claim("DCTCP holds the queue near K (within 2x) at the largest K", "DCTCP queue over K at the largest K",
                at_least=0.5, at_most=2.0),
          Claim("at full goodput (>= 0.9 of drop-tail's)", "DCTCP goodput at the largest K over drop-tail",
                at_least=0.9),
          Claim("HULL's phantom queue holds the real queue at most half DCTCP's at the same K",
                "HULL queue over DCTCP's at the largest K", at_most=0.5),
          Claim("for a few percent of the rate (HULL: goodput >= 0.9 of drop-tail's)", "HULL goodput over drop-tail",
                at_least=0.9))
# MTU 9000 so that a machine whose calibration refuses MTU 1500 runs it; one K, 200 KB, for every claim:
# at 45 KB HULL's queue equals DCTCP's (a few jumbo frames are TCP's least windows), at 300 KB it read
# 0.46-0.47 of DCTCP's, at 200 KB 0.35 (chosen on those three runs here, 2026-11-29)
SMOKE = ("--topology", "leafspine:2,2,5", "--rate", "10", "--thresholds", "200000", "--trials", "2", "--seconds", "3",
         "--fanin", "4")
# the code that measures, judges and scores this scenario's runs: the code half of its records
CODE = (*EMULATION, "testbed/programs/ecn_marker.bpf.c", "testbed/programs/dctcp.bpf.c",
        "testbed/emulation/ecn.py", "testbed/emulation/dctcp.py", "testbed/probes/queues.py",
        "testbed/probes/markers.py", "testbed/probes/incast.py", "testbed/programs/incast_endpoint.py",
        "testbed/programs/iperf_endpoint.py", "testbed/programs/queue_probe.py", "testbed/report/paired.py")
DROP_TAIL = "drop-tail"
WARM_S = 1.0                 # each flow's first second (slow start) is left out of the queue figures
BASE = "cubic"               # drop-tail's senders, and the ranks' congestion control
HULL = "hull"                # a setting's senders: DCTCP's, the marker's queue a phantom one


def add_arguments(parser):
    add_fabric_arguments(parser, topology="leafspine:4,4,9", scaleup=None, rate=20)
    parser.add_argument("--senders", type=int, default=4,
                        help="long flows into the receiver, from hosts on its switch (default %(default)s)")
    parser.add_argument("--thresholds", default="30000,90000,300000",
                        help="ECN marking thresholds K to compare with drop-tail, bytes, comma-separated "
                             "(default %(default)s)")
    parser.add_argument("--senders-cc", default="cubic,dctcp",
                        help="the senders' congestion controls under ECN marking, comma-separated: cubic, bbr, reno, "
                             "dctcp (default %(default)s)")
    parser.add_argument("--seconds", type=int, default=5, help="each measurement's length (default %(default)s)")
    parser.add_argument("--trials", type=int, default=3, help="paired trials (default %(default)s)")
    parser.add_argument("--fanin", default="2,4,8,16,32",
                        help="incast's sender counts, comma-separated; 0: no incast part (default %(default)s)")
    parser.add_argument("--bytes", type=int, default=256 * 1024,
                        help="incast's message per sender, bytes (default %(default)s)")
    parser.add_argument("--phantom", type=float, default=0.95,
                        help="HULL: a phantom queue drained at this fraction of the link's rate marks at the largest "
                             "K, DCTCP senders; 0: no HULL setting (default %(default)s)")


@dataclass
class Plan:
    topo: object
    mtu: int
    receiver: str
    senders: list
    thresholds: list
    controls: list
    seconds: int
    trials: int
    fanins: list
    size: int
    phantom: float
    hull: int | None         # the K HULL's phantom queue marks at: the largest

    @property
    def fabrics(self):
        return [self.topo]

    @property
    def settings(self):
        """(K, the senders' congestion control), drop-tail's K None."""
        hull = [(self.hull, HULL)] if self.hull else []
        return [(None, BASE)] + [(k, cc) for k in self.thresholds for cc in self.controls] + hull

    @property
    def incast_settings(self):
        return [(None, BASE)] + [(self.thresholds[0], cc) for cc in self.controls]


def prepare(args):
    if getattr(args, "ecn", None) or getattr(args, "cc", None):
        raise TestbedError("congestion compares drop-tail with each K and congestion control itself: give "
                           "--thresholds and --senders-cc, not --ecn or --cc")
    topo = fabric(args)
    thresholds = sorted(set(counts(args.thresholds, "--thresholds")))
    for k in thresholds:
        check_ecn(k, topo.queue, args.mtu, "--thresholds")
    controls = list(dict.fromkeys(names(args.senders_cc, "--senders-cc", ("cubic", "bbr", "reno", "dctcp"))))
    for cc in controls:
        check_congestion_control(cc, "--senders-cc")
    receiver = topo.nic_ports()[0]
    local = [p.host for p in topo.nic_ports() if p.host != receiver.host and p.port == 0
             and topo.attachment(p)[0] == topo.attachment(receiver)[0]]
    senders = at_least(args.senders, 1, "--senders")
    if senders > len(local):
        raise TestbedError(f"--senders {senders}: {topo.name} has {len(local)} other hosts on the receiver's "
                           f"switch: give --senders {len(local)} or less")
    if not 1 <= args.seconds <= 60:
        raise TestbedError(f"--seconds must be between 1 and 60 (got {args.seconds})")
    fanins = [] if args.fanin.strip() == "0" else sorted(set(counts(args.fanin, "--fanin")))
    if fanins and max(fanins) > len(topo.hosts) - 2:      # the receiver and the probes' host are not senders
        raise TestbedError(f"--fanin {max(fanins)}: {topo.name} has {len(topo.hosts) - 2} possible senders: give "
                           f"less, or a topology with more hosts")
    if args.phantom and not 0.5 <= args.phantom < 1:
        raise TestbedError(f"--phantom must be 0 (no HULL) or between 0.5 and 1 (got {args.phantom:g}): e.g. 0.95")
    if args.phantom:
        check_congestion_control("dctcp", "--phantom (HULL's senders)")
    return Plan(topo, args.mtu, receiver.host, local[:senders], thresholds, controls, args.seconds,
                at_least(args.trials, 2, "--trials"), fanins, at_least(args.bytes, 1, "--bytes"), args.phantom,
                thresholds[-1] if args.phantom else None)


def label(k, cc=BASE):
    return (DROP_TAIL if k is None else f"DCTCP K={k}" if cc == "dctcp" else f"HULL K={k}" if cc == HULL
            else f"ECN K={k} {cc}")


def measure(emu, plan, k, cc, trial, port):
    """One measurement at threshold k (None: drop-tail) with senders cc: the row of its figures."""
    emu.emulation.set_ecn(k, plan.phantom if cc == HULL else 1.0)
    with emu.virtual_queue(port) if k and cc != HULL else contextlib.nullcontext() as marker:
        flows = emu.flows([(s, plan.receiver) for s in plan.senders], seconds=plan.seconds,
                          name=f"trial{trial}-{k}-{cc}", congestion_control="dctcp" if cc == HULL else cc)
    samples = flows.queue_samples[port]
    steady = [s for s in samples if s[0] >= samples[0][0] + WARM_S] or samples
    tracking = marker.against(steady, plan.mtu + 14) if marker else {}
    backlog = sorted(s[2] for s in steady)
    marks = (emu.emulation.ecn_counts().get(port) or {}).get("rest", {})
    received = sum(f["received_mbit"] for f in flows.flows)
    alphas = list(flows.alphas.values())
    return {"trial": trial, "setting": label(k, cc), "k_bytes": k, "senders_cc": cc,
            "queue_median_bytes": statistics.median(backlog),
            "queue_p95_bytes": backlog[int(0.95 * (len(backlog) - 1))], "goodput_over_link": received / plan.topo.rate,
            "drops": samples[-1][3] - samples[0][3], "retransmits": sum(f["retransmits"] or 0 for f in flows.flows),
            "marked": marks.get("marked", 0), "ect": marks.get("ect", 0), "packets": marks.get("packets", 0),
            "alpha_mean": round(statistics.mean(alphas), 3) if alphas else None, **tracking, **flows.row}


def line(row):
    alpha = f"  alpha {row['alpha_mean']:.2f}" if row["alpha_mean"] is not None else ""
    return (f"  trial {row['trial']}  {row['setting']:18s} queue median {row['queue_median_bytes'] / 1e3:7.1f} KB  "
            f"p95 {row['queue_p95_bytes'] / 1e3:7.1f} KB  goodput {row['goodput_over_link']:.3f} of the link  "
            f"drops {row['drops']:4d}  marked {row['marked']:5d} of {row['ect']:5d} ECN-capable{alpha}  {flag(row)}")


def run(plan, experiment):
    topo = plan.topo
    port = interface(*topo.attachment(topo.hosts[plan.receiver].ports[0]))
    experiment.about.update(topology=topo.name, rate_mbit=topo.rate, queue=topo.queue, mtu=plan.mtu,
                            receiver=plan.receiver, senders=plan.senders, thresholds=plan.thresholds,
                            senders_cc=plan.controls)
    with experiment.emulate(topo, mtu=plan.mtu) as emu:
        experiment.header(f"# {len(plan.senders)} long TCP flows ({', '.join(plan.senders)}; {BASE} under drop-tail, "
                          f"{', '.join(plan.controls)} under ECN marking, ECN negotiated) into {plan.receiver} through "
                          f"{port}, {topo.rate:g} Mbit/s, FIFO {topo.queue} packets; {plan.trials} paired trials of "
                          f"{plan.seconds} s per setting, the first {WARM_S:g} s of each left out")
        rows = {}
        for trial in range(plan.trials):
            for k, cc in trial_order(plan.settings, trial):
                row = measure(emu, plan, k, cc, trial, port)
                rows[trial, k, cc] = experiment.row(row, line(row), csv="congestion.csv")
        bursts = incast(emu, plan, experiment)
        emu.emulation.set_ecn(None)
    summary(plan, experiment, rows)
    incast_summary(plan, experiment, bursts)


def incast(emu, plan, experiment):
    """{(trial, k, cc, fan-in): row} of the incast part."""
    if plan.fanins:
        experiment.say(f"# incast: k senders x {plan.size} B into one host at once, per fan-in k; "
                       f"{plan.trials} paired trials, a round each")
    rows = {}
    for trial in range(plan.trials if plan.fanins else 0):
        for k, cc in trial_order(plan.incast_settings, trial):
            emu.emulation.set_ecn(k)
            for row in emu.incast(plan.fanins, plan.size, rounds=1, interval=None, congestion_control=cc)[0]:
                row = {"trial": trial, "setting": label(k, cc), "k_bytes": k, "senders_cc": cc, **row}
                rows[trial, k, cc, row["fanin"]] = experiment.row(row, (
                    f"  trial {trial}  {row['setting']:18s} fan-in {row['fanin']:3d}  max queue "
                    f"{row['max_backlog_bytes'] / 1e3:6.1f} KB  drops {row['drops']:4d}  timeouts "
                    f"{row['timeouts']}  retransmits {row['retransmits']:4d}  done p99 {row['p99_done_ms']:8.1f} ms "
                    f"(ideal {row['ideal_ms']:.1f})  {flag(row)}"), csv="incast.csv")
    return rows


def incast_summary(plan, experiment, rows):
    if not rows:
        return
    trials = range(plan.trials)
    experiment.say("incast summary (per fan-in, against drop-tail, paired by trial, mean [95% interval]):")
    for fanin in plan.fanins:
        for k, cc in plan.incast_settings[1:]:
            c = Comparison(f"fan-in {fanin} slowest sender's completion (ms)", (DROP_TAIL, label(k, cc)),
                           [(rows[t, None, BASE, fanin]["p99_done_ms"], rows[t, k, cc, fanin]["p99_done_ms"])
                            for t in trials], by="ratio")
            experiment.say(f"  {c.line()}")
        for setting in plan.incast_settings:
            mine = [rows[(t, *setting, fanin)] for t in trials]
            figure = f"incast {label(*setting)} fan-in {fanin}"
            experiment.headline[f"{figure} timeouts"] = sum(r["timeouts"] or 0 for r in mine)
            experiment.headline[f"{figure} drops"] = sum(r["drops"] for r in mine)
            experiment.headline[f"{figure} max queue (KB)"] = round(max(r["max_backlog_bytes"] for r in mine) / 1e3, 1)
    bottleneck = any(r.get("emulator_bottleneck") for r in rows.values())
    experiment.say(f"  emulator: {'WAS' if bottleneck else 'was not'} the bottleneck",
                   "  published (theirs, not rerun here): DCTCP (SIGCOMM 2010): a 10X increase in foreground (query) "
                   "traffic beside long flows caused no timeouts, on shared-buffer switches")


def summary(plan, experiment, rows):
    trials = range(plan.trials)

    def mean(setting, key):
        return statistics.mean(rows[(t, *setting)][key] for t in trials)

    def compare(shown, a, b, key, scale):
        return Comparison(shown, (label(*a), label(*b)),
                          [(rows[(t, *a)][key] / scale, rows[(t, *b)][key] / scale) for t in trials], by="ratio")

    drop_tail, tracked = (None, BASE), []
    experiment.say("summary (each setting against drop-tail, paired by trial, mean [95% interval]):")
    for k, cc in plan.settings[1:]:
        for name, shown, key, scale in (("queue", "queue (KB)", "queue_median_bytes", 1e3),
                                        ("goodput", "goodput", "goodput_over_link", 1)):
            c = compare(f"{shown}, {label(k, cc)}", drop_tail, (k, cc), key, scale)
            experiment.say(f"  {c.line()}")
            ratio = round(c.b.mean / c.a.mean, 3) if c.a.mean else None
            if k == plan.thresholds[0] and cc == next((c for c in plan.controls if c != "dctcp"), None):
                experiment.headline[f"{name} with ECN at the smallest K over drop-tail"] = ratio
            if k == plan.thresholds[0] and cc == "dctcp":
                experiment.headline[f"{name} with DCTCP at the smallest K over drop-tail"] = ratio
            if (k, cc) == (plan.thresholds[-1], "dctcp") and name == "goodput":
                experiment.headline["DCTCP goodput at the largest K over drop-tail"] = ratio
        gaps = [rows[(t, k, cc)].get("marker_vs_fifo_median_frames") for t in trials]
        if None not in gaps:
            experiment.say(f"  {label(k, cc)}: the marker's virtual queue against the FIFO: median |difference| "
                           f"{statistics.mean(gaps):.2f} frames (p95 "
                           f"{max(rows[(t, k, cc)]['marker_vs_fifo_p95_frames'] for t in trials):.2f}), virtual over "
                           f"FIFO {statistics.mean(rows[(t, k, cc)]['marker_over_fifo'] for t in trials):.2f}")
            tracked.append(statistics.mean(gaps))
        held = mean((k, cc), "queue_median_bytes")
        experiment.say(f"  {label(k, cc)}: the queue's median {held / k:.2f} times K "
                       f"({held / (plan.mtu + 14):.1f} frames of {plan.mtu + 14} B)")
        if (k, cc) == (plan.thresholds[-1], "dctcp"):
            experiment.headline["DCTCP queue over K at the largest K"] = round(held / k, 3)
    if tracked:
        experiment.headline["marker vs FIFO median |difference| (frames), largest"] = round(max(tracked), 2)
    if plan.hull and "dctcp" in plan.controls:
        hull, dctcp = (plan.hull, HULL), (plan.hull, "dctcp")
        experiment.say(f"HULL (a phantom queue at {plan.phantom:g} of the rate) against DCTCP at K={hull[0]}:")
        for shown, key, scale in (("queue (KB)", "queue_median_bytes", 1e3), ("goodput", "goodput_over_link", 1)):
            experiment.say(f"  {compare(shown, dctcp, hull, key, scale).line()}")
        floor = len(plan.senders) * 2 * (plan.mtu + 14)        # each sender's least window: two segments
        if mean(dctcp, "queue_median_bytes") >= 2 * floor:
            experiment.headline["HULL queue over DCTCP's at the largest K"] = round(
                mean(hull, "queue_median_bytes") / mean(dctcp, "queue_median_bytes"), 3)
        else:
            experiment.say(f"  HULL not judged: DCTCP's queue at K={hull[0]} "
                           f"({mean(dctcp, 'queue_median_bytes') / 1e3:.1f} KB) is within twice TCP's least windows "
                           f"({len(plan.senders)} senders x 2 segments = {floor / 1e3:.1f} KB): no room for a phantom "
                           "queue to show")
        experiment.headline["HULL goodput over drop-tail"] = round(
            mean(hull, "goodput_over_link") / mean(drop_tail, "goodput_over_link"), 3)
    if "dctcp" in plan.controls and len(plan.controls) > 1:
        experiment.say("DCTCP against the other senders at each K:")
        for k in plan.thresholds:
            for cc in plan.controls:
                if cc != "dctcp":
                    c = compare(f"queue (KB) at K={k}", (k, cc), (k, "dctcp"), "queue_median_bytes", 1e3)
                    experiment.say(f"  {c.line()}")
    for setting in plan.settings:
        figure = label(*setting)
        experiment.headline[f"{figure} queue median (KB)"] = round(mean(setting, "queue_median_bytes") / 1e3, 1)
        experiment.headline[f"{label(*setting)} goodput/link"] = round(mean(setting, "goodput_over_link"), 3)
        if setting[1] in ("dctcp", HULL):
            experiment.headline[f"{label(*setting)} alpha"] = round(mean(setting, "alpha_mean"), 3)
    bottleneck = any(r.get("emulator_bottleneck") for r in rows.values())
    experiment.say(f"  emulator: {'WAS' if bottleneck else 'was not'} the bottleneck",
                   "  published (theirs, not rerun here): DCTCP (SIGCOMM 2010): queue held near K at full "
                   "throughput, ~90% less buffer than drop-tail; HULL (NSDI 2012): a phantom queue at 0.95 of the "
                   "rate keeps the real one near zero for a few percent of the rate")
    items = [(label(*setting), mean(setting, "queue_median_bytes") / 1e3,
              min(rows[(t, *setting)]["queue_median_bytes"] for t in trials) / 1e3,
              max(rows[(t, *setting)]["queue_median_bytes"] for t in trials) / 1e3) for setting in plan.settings]
    experiment.figure("queue.png", figures.intervals, items, xlabel="bottleneck queue, median KB (range over trials)",
                      fabric=plan.topo.name)
