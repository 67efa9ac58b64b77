"""Fabric check: build a fabric, show every host reaches every other and TCP gets the link rate."""
import statistics

from scenarios.options import add_fabric_arguments
from testbed import cpu as cpu_report
from testbed.emulation import Emulation
from testbed.fidelity import longest_route, reachability, run_flows, spread_pairs
from testbed.results import write_json
from testbed.routing import deterministic_routes
from testbed.topologies import from_spec

NAME = "fabric_check"
HELP = "build a fabric, ping all pairs, measure one long TCP flow and parallel flows against the link rate"
SINGLE_FLOW_MIN, PARALLEL_MIN = 0.9, 0.85


def add_arguments(parser):
    add_fabric_arguments(parser, topology="bigraph:2,8")
    parser.add_argument("--duration", type=int, default=5, help="seconds per iperf3 test (default %(default)s)")


def check(emu, duration):
    """Reachability, one flow over the longest path, then parallel flows on spread-out paths."""
    topo, routes = emu.topo, emu.routes
    answered, failures = reachability(emu)
    longest = longest_route(routes)
    single, single_cpu = run_flows(emu, [(longest.src, longest.dst)], duration)
    parallel, parallel_cpu = run_flows(emu, spread_pairs(topo, routes), duration)
    ratios = [f["ratio"] for f in parallel]
    return {
        "reachability": {"answered": answered, "pairs": answered + len(failures), "failures": failures},
        "single_flow": {**single[0], "min_ratio": SINGLE_FLOW_MIN, "cpu": single_cpu,
                        "pass": single[0]["ratio"] >= SINGLE_FLOW_MIN},
        "parallel_flows": {"flows": parallel, "min": min(ratios), "median": statistics.median(ratios),
                           "min_ratio": PARALLEL_MIN, "cpu": parallel_cpu, "pass": min(ratios) >= PARALLEL_MIN},
    }


def passed(summary):
    return bool(not summary["reachability"]["failures"] and summary["single_flow"]["pass"]
                and summary["parallel_flows"]["pass"])


def print_summary(summary, topo, emu):
    reach, single, par = summary["reachability"], summary["single_flow"], summary["parallel_flows"]
    verdict = {True: "PASS", False: "FAIL"}
    print(f"\nfabric check: {topo.describe()}, MTU {emu.mtu}, OVS {emu.datapath}space datapath")
    print(f"  reachability      {reach['answered']}/{reach['pairs']} NIC-port pairs answer ping  "
          f"{verdict[not reach['failures']]}")
    print(f"  longest path      {single['src']} -> {single['dst']} via {' '.join(single['switches'])}: "
          f"{single['received_mbit']:.2f} Mbit/s = {single['ratio']:.2f} of {single['expected_mbit']:g} "
          f"(need >= {SINGLE_FLOW_MIN})  {verdict[single['pass']]}")
    print(f"                    {cpu_report.describe(single['cpu'])}")
    print(f"  {len(par['flows'])} parallel flows  min {par['min']:.2f}, median {par['median']:.2f} of "
          f"expected (need >= {PARALLEL_MIN})  {verdict[par['pass']]}")
    print(f"                    {cpu_report.describe(par['cpu'])}")


def run(args, out):
    topo = from_spec(args.topology, rate=args.rate, queue=args.queue)
    routes = deterministic_routes(topo)
    with Emulation(topo, routes, out, mtu=args.mtu) as emu:
        summary = check(emu, args.duration)
        print_summary(summary, topo, emu)
    summary = {"scenario": NAME, "topology": topo.name, "rate_mbit": topo.rate, "mtu": args.mtu,
               "datapath": emu.datapath, **summary}
    print(f"results: {write_json(out / 'summary.json', summary)}")
    return 0 if passed(summary) else 1
