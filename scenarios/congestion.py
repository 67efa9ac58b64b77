"""Congestion signalled as AI fabrics signal it: N long TCP flows into one switch port, the port's
FIFO drop-tail against ECN marking at each threshold K, paired trial by trial on one fabric.

DCTCP (SIGCOMM 2010) marks at a shallow K and holds the queue near it at full throughput, with about
90% less buffer than drop-tail; this kernel has no DCTCP, so the senders are CUBIC, which halves
(by 0.7) its window on a mark as on a loss (RFC 3168). Each trial measures drop-tail and every K in
turn (in alternating order, so that drift falls on all) on the same fabric and senders: the
bottleneck port's queue (its FIFO's backlog, sampled every 2 ms, the first second of each flow left
out), the flows' goodput over the port's rate, the FIFO's drops and the marks it set.
"""
import statistics
from dataclasses import dataclass

from scenarios.common import add_fabric_arguments, at_least, counts, fabric
from testbed.api import TestbedError, check_ecn, interface, trial_order
from testbed.experiments import Comparison, figures, flag
from testbed.experiments.claims import Claim

NAME = "congestion"
HELP = "N long flows into one port: its queue, goodput, drops and marks, drop-tail against ECN marking at each K"
CLAIMS = (Claim("ECN marking at the smallest K holds the port's queue far below drop-tail's (DCTCP: ~90% less)",
                "queue with ECN at the smallest K over drop-tail", at_most=0.5),
          Claim("at the cost of little goodput", "goodput with ECN at the smallest K over drop-tail", at_least=0.9))
SMOKE = ("--thresholds", "30000", "--trials", "2", "--seconds", "3")
DROP_TAIL = "drop-tail"
WARM_S = 1.0                 # each flow's first second (slow start) is left out of the queue figures
CONGESTION_CONTROL = "cubic"


def add_arguments(parser):
    add_fabric_arguments(parser, topology="leafspine:2,2,8", scaleup=None)
    parser.add_argument("--senders", type=int, default=4,
                        help="long flows into the receiver, from hosts on its switch (default %(default)s)")
    parser.add_argument("--thresholds", default="15000,30000,90000",
                        help="ECN marking thresholds K to compare with drop-tail, bytes, comma-separated "
                             "(default %(default)s)")
    parser.add_argument("--seconds", type=int, default=5, help="each measurement's length (default %(default)s)")
    parser.add_argument("--trials", type=int, default=3, help="paired trials (default %(default)s)")


@dataclass
class Plan:
    topo: object
    mtu: int
    receiver: str
    senders: list
    thresholds: list
    seconds: int
    trials: int

    @property
    def fabrics(self):
        return [self.topo]

    @property
    def settings(self):
        return [None, *self.thresholds]


def prepare(args):
    if getattr(args, "ecn", None):
        raise TestbedError("congestion compares drop-tail with each K itself: give --thresholds, not --ecn")
    topo = fabric(args)
    thresholds = sorted(set(counts(args.thresholds, "--thresholds")))
    for k in thresholds:
        check_ecn(k, topo.queue, args.mtu, "--thresholds")
    receiver = topo.nic_ports()[0]
    local = [p.host for p in topo.nic_ports() if p.host != receiver.host and p.port == 0
             and topo.attachment(p)[0] == topo.attachment(receiver)[0]]
    senders = at_least(args.senders, 1, "--senders")
    if senders > len(local):
        raise TestbedError(f"--senders {senders}: {topo.name} has {len(local)} other hosts on the receiver's "
                           f"switch: give --senders {len(local)} or less")
    if not 1 <= args.seconds <= 60:
        raise TestbedError(f"--seconds must be between 1 and 60 (got {args.seconds})")
    return Plan(topo, args.mtu, receiver.host, local[:senders], thresholds, args.seconds,
                at_least(args.trials, 2, "--trials"))


def label(k):
    return DROP_TAIL if k is None else f"ECN K={k}"


def measure(emu, plan, k, trial, port):
    """One measurement at threshold k (None: drop-tail): the row of its figures."""
    emu.emulation.set_ecn(k)
    flows = emu.flows([(s, plan.receiver) for s in plan.senders], seconds=plan.seconds, name=f"trial{trial}-{k}",
                      congestion_control=CONGESTION_CONTROL)
    samples = flows.queue_samples[port]
    steady = [s for s in samples if s[0] >= samples[0][0] + WARM_S] or samples
    backlog = sorted(s[2] for s in steady)
    marks = (emu.emulation.ecn_counts().get(port) or {}).get("rest", {})
    received = sum(f["received_mbit"] for f in flows.flows)
    return {"trial": trial, "setting": label(k), "k_bytes": k, "queue_median_bytes": statistics.median(backlog),
            "queue_p95_bytes": backlog[int(0.95 * (len(backlog) - 1))], "goodput_over_link": received / plan.topo.rate,
            "drops": samples[-1][3] - samples[0][3], "retransmits": sum(f["retransmits"] or 0 for f in flows.flows),
            "marked": marks.get("marked", 0), "ect": marks.get("ect", 0), "packets": marks.get("packets", 0),
            **flows.row}


def line(row):
    return (f"  trial {row['trial']}  {row['setting']:14s} queue median {row['queue_median_bytes'] / 1e3:7.1f} KB  "
            f"p95 {row['queue_p95_bytes'] / 1e3:7.1f} KB  goodput {row['goodput_over_link']:.3f} of the link  "
            f"drops {row['drops']:4d}  marked {row['marked']:5d} of {row['ect']:5d} ECN-capable  {flag(row)}")


def run(plan, experiment):
    topo = plan.topo
    port = interface(*topo.attachment(topo.hosts[plan.receiver].ports[0]))
    experiment.about.update(topology=topo.name, rate_mbit=topo.rate, queue=topo.queue, mtu=plan.mtu,
                            receiver=plan.receiver, senders=plan.senders, thresholds=plan.thresholds)
    with experiment.emulate(topo, mtu=plan.mtu) as emu:
        experiment.header(f"# {len(plan.senders)} long TCP flows ({', '.join(plan.senders)}, {CONGESTION_CONTROL}, "
                          f"ECN per RFC 3168 where the ports mark) into {plan.receiver} through {port}, "
                          f"{topo.rate:g} Mbit/s, FIFO {topo.queue} packets; {plan.trials} paired trials of "
                          f"{plan.seconds} s per setting, the first {WARM_S:g} s of each left out")
        rows = {}
        for trial in range(plan.trials):
            for k in trial_order(plan.settings, trial):
                row = measure(emu, plan, k, trial, port)
                rows[trial, k] = experiment.row(row, line(row), csv="congestion.csv")
        emu.emulation.set_ecn(None)
    summary(plan, experiment, rows)


def summary(plan, experiment, rows):
    def mean(k, key):
        return statistics.mean(rows[t, k][key] for t in range(plan.trials))

    experiment.say("summary (each K against drop-tail, paired by trial, mean [95% interval]):")
    for k in plan.thresholds:
        for name, shown, key, scale in (("queue", "queue (KB)", "queue_median_bytes", 1e3),
                                        ("goodput", "goodput", "goodput_over_link", 1)):
            c = Comparison(f"{shown} at K={k}", (DROP_TAIL, label(k)),
                           [(rows[t, None][key] / scale, rows[t, k][key] / scale) for t in range(plan.trials)],
                           by="ratio")
            experiment.say(f"  {c.line()}")
            if k == plan.thresholds[0]:
                experiment.headline[f"{name} with ECN at the smallest K over drop-tail"] = \
                    round(c.b.mean / c.a.mean, 3) if c.a.mean else None
        experiment.say(f"  ECN K={k}: the queue's median {mean(k, 'queue_median_bytes') / k:.1f} times K "
                       f"({mean(k, 'queue_median_bytes') / (plan.mtu + 14):.1f} frames of {plan.mtu + 14} B)")
    for k in plan.settings:
        experiment.headline[f"{label(k)} queue median (KB)"] = round(mean(k, "queue_median_bytes") / 1e3, 1)
        experiment.headline[f"{label(k)} goodput/link"] = round(mean(k, "goodput_over_link"), 3)
    bottleneck = any(r.get("emulator_bottleneck") for r in rows.values())
    experiment.say(f"  emulator: {'WAS' if bottleneck else 'was not'} the bottleneck",
                   "  published (theirs, not rerun here): DCTCP (SIGCOMM 2010): queue held near K at full "
                   "throughput, ~90% less buffer than drop-tail, with DCTCP senders; HULL (NSDI 2012): a phantom "
                   "queue at 0.95 of the rate keeps the real one near zero for a few percent of the rate")
    items = [(label(k), mean(k, "queue_median_bytes") / 1e3,
              min(rows[t, k]["queue_median_bytes"] for t in range(plan.trials)) / 1e3,
              max(rows[t, k]["queue_median_bytes"] for t in range(plan.trials)) / 1e3) for k in plan.settings]
    experiment.figure("queue.png", figures.intervals, items, xlabel="bottleneck queue, median KB (range over trials)",
                      fabric=plan.topo.name)
