"""Incast: k senders push a message to one receiver at once (parameter-server style), for each k.

The queue builds at the last hop, the switch port facing the receiver. It is measured two ways
at once: the port's FIFO (backlog and drops, polled over netlink every 2 ms) and scapy probes,
small timestamped UDP packets sent every few ms from a host on the receiver's switch through the
same port, whose one-way delay above the smallest is their time in the queue (delay x rate =
backlog). Per fan-in: queue depth, drops, completion time p50/p99, and how well the two agree.
"""
import time
from dataclasses import dataclass

from scenarios.common import add_fabric_arguments, at_least, counts, fabric
from testbed import routing
from testbed.emulation.network import Emulation
from testbed.errors import TestbedError
from testbed.fidelity.verdict import describe_all
from testbed.probes.incast import roles, run_fanins
from testbed.report import figures

NAME = "incast"
HELP = "k-to-1 transfers for each fan-in k: last-hop queue depth (qdisc and scapy probes), drops, completion times"


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


def prepare(args):
    topo = fabric(args)
    fanins = counts(args.fanin, "--fanin")
    roles(topo, fanins)
    if not args.probe_interval > 0:
        raise TestbedError(f"--probe-interval must be more than 0 s (got {args.probe_interval})")
    return Plan(topo, args.mtu, fanins, at_least(args.bytes, 1, "--bytes"), at_least(args.rounds, 1, "--rounds"),
                args.probe_interval)


def run(plan, results):
    topo, started = plan.topo, time.monotonic()
    with Emulation(topo, routing.plan(topo), results.path, mtu=plan.mtu) as emu:
        rows, series = run_fanins(emu, plan.fanins, plan.size, plan.rounds, plan.interval)
    print(describe_all(rows, lambda r: f"fan-in {r['fanin']}"))
    results.csv("incast.csv", rows)
    results.csv("incast_timeseries.csv", series)
    results.json("incast.json", {"scenario": NAME, "topology": topo.name, "rate_mbit": topo.rate,
                                 "queue": topo.queue, "mtu": plan.mtu, "rows": rows,
                                 "seconds": round(time.monotonic() - started, 1)})
    results.figure("queue.png", figures.queue_over_time, series, limit=topo.queue)
    print(results.listing())
    return 0
