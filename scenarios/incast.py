"""Incast: k senders push a message to one receiver at once (parameter-server style), for each k.

The queue builds at the last hop, the switch port facing the receiver. It is measured two ways
at once: the port's FIFO (backlog and drops, polled over netlink every 2 ms) and scapy probes,
small timestamped UDP packets sent every few ms from a host on the receiver's switch through the
same port, whose one-way delay above the smallest is their time in the queue (delay x rate =
backlog). Per fan-in: queue depth, drops, completion time p50/p99, and how well the two agree.
"""
from dataclasses import dataclass

from scenarios.common import add_fabric_arguments, at_least, counts, fabric
from testbed.api import TestbedError
from testbed.experiments import describe_all, figures, flag, roles
from testbed.experiments.claims import Claim
from testbed.experiments.code_half import EMULATION

NAME = "incast"
HELP = "k-to-1 transfers for each fan-in k: last-hop queue depth (qdisc and scapy probes), drops, completion times"
CLAIMS = (Claim("the last-hop queue grows with the fan-in", "fan-in 15 over 2 max queue", at_least=1.5),
          Claim("at fan-in 15 the last hop's FIFO overflows", "fan-in 15 drops", at_least=1),
          Claim("the probes' delays and the FIFO's backlog agree within a frame", "probe-qdisc median |diff| (frames), "
                "largest", at_most=1.0))
SMOKE = ("--fanin", "2,15", "--rounds", "1")
# the code that measures, judges and scores this scenario's runs: the code half of its records
CODE = (*EMULATION, "testbed/probes/incast.py", "testbed/probes/queues.py", "testbed/runs/fanins.py",
        "testbed/programs/incast_endpoint.py", "testbed/programs/queue_probe.py")


def add_arguments(parser):
    add_fabric_arguments(parser, topology="leafspine:4,4,5")
    parser.add_argument("--fanin", default="2,4,8,15", help="comma-separated sender counts (default %(default)s)")
    parser.add_argument("--bytes", type=int, default=256 * 1024, help="bytes per sender (default %(default)s)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds per fan-in (default %(default)s)")
    parser.add_argument("--probe-interval", type=float, default=0.005,
                        help="seconds between probe packets (default %(default)s)")


@dataclass
class Plan:
    topo: object
    mtu: int
    fanins: list
    size: int
    rounds: int
    interval: float

    @property
    def fabrics(self):
        return [self.topo]


HEADER = ("# fan-in  rounds  max queue(pkts)  max backlog(B)  drops  p50 done(ms)  p99 done(ms)  "
          "ideal(ms)  probe-qdisc median |diff| (frames)  emulator")
MAX_ROUND_S = 600
PROBE_INTERVAL_S = (0.001, 1.0)


def prepare(args):
    topo = fabric(args)
    fanins = counts(args.fanin, "--fanin")
    roles(topo, fanins)
    size = at_least(args.bytes, 1, "--bytes")
    longest = max(fanins) * size / topo.bytes_per_s      # the last hop carries every sender's bytes
    if longest > MAX_ROUND_S:
        raise TestbedError(f"fan-in {max(fanins)} x {size} bytes takes at least {longest:.0f} s at {topo.rate:g} "
                           f"Mbit/s: use --bytes {int(MAX_ROUND_S * topo.bytes_per_s / max(fanins))} or less")
    low, high = PROBE_INTERVAL_S
    if not low <= args.probe_interval <= high:
        raise TestbedError(f"--probe-interval must be between {low} and {high} s (got {args.probe_interval})")
    return Plan(topo, args.mtu, fanins, size, at_least(args.rounds, 1, "--rounds"), args.probe_interval)


def line(row):
    return (f"  {row['fanin']:6d}  {row['rounds']:6d}  {row['max_queue_packets']:15d}  {row['max_backlog_bytes']:14d}  "
            f"{row['drops']:5d}  {row['p50_done_ms']:12.1f}  {row['p99_done_ms']:12.1f}  {row['ideal_ms']:9.1f}  "
            f"{row['probe_qdisc_median_diff_frames']!s:>34}  {flag(row)}")


def run(plan, experiment):
    topo = plan.topo
    experiment.about.update(topology=topo.name, rate_mbit=topo.rate, queue=topo.queue, mtu=plan.mtu)
    receiver, prober, _ = roles(topo, plan.fanins)

    def keep(row, series):
        experiment.row(row, line(row), csv="incast.csv")
        experiment.results.append("incast_timeseries.csv", *series)

    with experiment.emulate(topo, mtu=plan.mtu) as emu:
        experiment.header(f"# receiver {receiver.name}, probes from {prober.name}, {plan.size} B per sender, "
                          f"queue limit {topo.queue} packets of up to {plan.mtu + 14} B", HEADER)
        rows, series = emu.incast(plan.fanins, plan.size, rounds=plan.rounds, interval=plan.interval, on_fanin=keep)
        experiment.about["datapath"] = emu.datapath
    small, large = rows[0], rows[-1]
    experiment.headline.update({f"fan-in {r['fanin']} max queue (packets)": r["max_queue_packets"] for r in rows})
    experiment.headline.update({f"fan-in {r['fanin']} drops": r["drops"] for r in rows})
    experiment.headline[f"fan-in {large['fanin']} over {small['fanin']} max queue"] = \
        round(large["max_queue_packets"] / max(small["max_queue_packets"], 1), 2)
    experiment.headline["probe-qdisc median |diff| (frames), largest"] = max(
        (r["probe_qdisc_median_diff_frames"] for r in rows if r["probe_qdisc_median_diff_frames"] is not None),
        default=None)
    experiment.say(describe_all(rows, lambda r: f"fan-in {r['fanin']}"))
    experiment.figure("queue.png", figures.queue_over_time, series, limit=topo.queue, fabric=topo.name)
