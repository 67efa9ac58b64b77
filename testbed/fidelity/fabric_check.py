"""The fabric check: does the emulated network deliver what it was configured to? Every NIC port
answers ping, one TCP flow over the longest path gets the link rate, and parallel flows on paths
that share no link each get theirs; each measurement with its bottleneck verdict."""
import statistics

from testbed.emulation import ovs
from testbed.fidelity.verdict import describe
from testbed.probes.flows import measure_flows
from testbed.routing import deterministic_routes, link_load

SINGLE_FLOW_MIN, PARALLEL_MIN = 0.9, 0.85


def reachability(emu):
    """Ping from every host to every address it can reach (every other host's NIC ports on its
    subnets; a bonded NIC's one address): (answered, failures)."""
    topo, ok, failures = emu.topo, 0, []
    for host in topo.hosts.values():
        targets = list(dict.fromkeys(ip for nic in host.ports for ip, _ in topo.peers(nic)))
        out = emu.host(host.name).cmd(
            f"for ip in {' '.join(targets)}; do ping -c1 -W1 -q $ip >/dev/null 2>&1 "
            "&& echo ok $ip || echo fail $ip; done")
        for word, ip in (line.split() for line in out.splitlines() if line.startswith(("ok ", "fail "))):
            if word == "ok":
                ok += 1
            else:
                failures.append(f"{host.name}->{ip}")
    return ok, failures


def longest_route(routes):
    return max(routes.values(), key=lambda r: (len(r.hops), r.src.ip, r.dst.ip))


def spread_pairs(topo, routes):
    """A permutation (host i -> host i+k on NIC port 0) whose flows share as few links as possible,
    and among those the one with the longest paths."""
    nics = [h.ports[0] for h in topo.hosts.values()]
    best = None
    for k in range(1, len(nics)):
        pairs = [(nics[i], nics[(i + k) % len(nics)]) for i in range(len(nics))]
        load = max(link_load(routes, [(s.ip, d.ip) for s, d in pairs]).values())
        hops = sum(len(routes[s.ip, d.ip].hops) for s, d in pairs)
        if best is None or (load, -hops) < best[0]:
            best = ((load, -hops), pairs)
    return best[1]


def neighbour_pairs(topo):
    """Where hashing picks the paths: a permutation among hosts cabled to the same switches (host i
    -> the next one of its group), whose flows cross one switch and so share no link whatever the
    hash chooses."""
    groups = {}
    for host in topo.hosts.values():
        key = frozenset(topo.attachment(nic)[0] for nic in host.ports)
        groups.setdefault(key, []).append(host)
    return [(group[i].ports[0], group[(i + 1) % len(group)].ports[0])
            for group in groups.values() if len(group) > 1 for i in range(len(group))]


def run_flows(emu, pairs, routes, duration=5, omit=1, streams=1):
    """iperf3 flows between pairs (see probes.flows), each with the rate it should get: the link
    rate divided by the most flows sharing a link on its route (the link rate where routes is None),
    and received over expected."""
    topo = emu.topo
    load = link_load(routes, [(s.ip, d.ip) for s, d in pairs]) if routes else {}
    flows, cpu = measure_flows(emu, pairs, duration, omit, streams)
    for flow in flows:
        route = routes[flow["src"], flow["dst"]] if routes else None
        expected = topo.rate / max(load[link] for link in route.directed_links()) if route else topo.rate
        flow.update(switches=[topo.switches[s].label for s in route.switches] if route else [],
                    expected_mbit=round(expected, 3), ratio=round(flow["received_mbit"] / expected, 3))
    return flows, cpu


def check(emu, duration=3):
    """Reachability, one flow over the longest path, then parallel flows on spread-out paths. Where
    hashing picks the paths (ecmp), the longest path is the deterministic routes' and the parallel
    flows are neighbour_pairs, each expected to get the link rate."""
    topo, routes = emu.topo, emu.routing.routes
    answered, failures = reachability(emu)
    longest = longest_route(routes or deterministic_routes(topo))
    single, single_cpu = run_flows(emu, [(longest.src, longest.dst)], routes, duration)
    pairs = neighbour_pairs(topo) if routes is None else None
    if not pairs:     # judged on known routes (ecmp with no neighbours: the deterministic ones)
        routes = routes or deterministic_routes(topo)
        pairs = spread_pairs(topo, routes)
    parallel, parallel_cpu = run_flows(emu, pairs, routes, duration)
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


def report(summary, emu):
    """The check as lines a person reads."""
    reach, single, par = summary["reachability"], summary["single_flow"], summary["parallel_flows"]
    verdict = {True: "PASS", False: "FAIL"}
    return [
        f"fabric check: {emu.topo.describe()}, MTU {emu.mtu}, OVS {ovs.datapath_name(emu.datapath)}",
        f"  reachability      {reach['answered']}/{reach['pairs']} NIC-port pairs answer ping  "
        f"{verdict[not reach['failures']]}",
        f"  longest path      {single['src']} -> {single['dst']} via {' '.join(single['switches']) or 'hashed links'}: "
        f"{single['received_mbit']:.2f} Mbit/s = {single['ratio']:.2f} of {single['expected_mbit']:g} "
        f"(need >= {SINGLE_FLOW_MIN})  {verdict[single['pass']]}",
        f"                    {describe(single['cpu'])}",
        f"  {len(par['flows'])} parallel flows  min {par['min']:.2f}, median {par['median']:.2f} of "
        f"expected (need >= {PARALLEL_MIN})  {verdict[par['pass']]}",
        f"                    {describe(par['cpu'])}",
    ]
