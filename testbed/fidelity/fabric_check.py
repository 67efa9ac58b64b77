"""The fabric check: does the emulated network deliver what it was configured to? Every NIC port
answers ping, one TCP flow over the longest path gets the link rate, and parallel flows on paths
that share no link each get theirs; each measurement with its bottleneck verdict."""
import statistics

from testbed.emulation.programs import ProgramError, stop_all
from testbed.fidelity.verdict import CpuMonitor, describe
from testbed.routing import deterministic_routes, link_load

IPERF_BASE_PORT = 5201
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


def run_flows(emu, pairs, routes, duration=5, omit=1, streams=1):
    """Run one iperf3 test (of `streams` TCP connections) per (src NicPort, dst NicPort), all at
    once.

    Returns the flows, each with its received rate, the rate it should get (link rate divided by
    the most flows sharing a link on its route; the link rate where routes is None) and their ratio,
    and the CPU verdict."""
    topo = emu.topo
    load = link_load(routes, [(s.ip, d.ip) for s, d in pairs]) if routes else {}
    servers, clients = [], []
    try:
        for i, (_, dst) in enumerate(pairs):
            servers.append(emu.program(dst.host, "iperf_endpoint", "server", dst.ip, IPERF_BASE_PORT + i,
                                       name=f"iperf3 server {dst.ip}:{IPERF_BASE_PORT + i}"))
        for server in servers:
            server.expect("ready", 15)
        with CpuMonitor() as cpu:
            for i, (src, dst) in enumerate(pairs):
                clients.append(emu.program(src.host, "iperf_endpoint", "client", dst.ip, IPERF_BASE_PORT + i,
                                           duration, omit, streams, name=f"iperf3 {src.ip} -> {dst.ip}"))
            results = []
            for client in clients:
                try:
                    results.append(client.expect("result", duration + omit + 30)["result"])
                except ProgramError as e:
                    results.append({"error": str(e)})
    finally:
        stop_all(servers + clients, grace=2)
    flows = []
    for (src, dst), result in zip(pairs, results):
        route = routes[src.ip, dst.ip] if routes else None
        expected = topo.rate / max(load[link] for link in route.directed_links()) if route else topo.rate
        got = result.get("received_mbit") or 0.0
        switches = [topo.switches[s].label for s in route.switches] if route else []
        flows.append({"src": src.ip, "dst": dst.ip, "switches": switches,
                      "expected_mbit": round(expected, 3), "received_mbit": round(got, 3),
                      "ratio": round(got / expected, 3), "retransmits": result.get("retransmits"),
                      "error": result.get("error")})
    return flows, cpu.result()


def check(emu, duration=3):
    """Reachability, one flow over the longest path, then parallel flows on spread-out paths. Where
    hashing picks the paths (ecmp), the flows are chosen and judged on the deterministic routes."""
    topo = emu.topo
    routes = emu.routing.routes or deterministic_routes(topo)
    answered, failures = reachability(emu)
    longest = longest_route(routes)
    single, single_cpu = run_flows(emu, [(longest.src, longest.dst)], routes, duration)
    parallel, parallel_cpu = run_flows(emu, spread_pairs(topo, routes), routes, duration)
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
        f"fabric check: {emu.topo.describe()}, MTU {emu.mtu}, OVS {emu.datapath}space datapath",
        f"  reachability      {reach['answered']}/{reach['pairs']} NIC-port pairs answer ping  "
        f"{verdict[not reach['failures']]}",
        f"  longest path      {single['src']} -> {single['dst']} via {' '.join(single['switches'])}: "
        f"{single['received_mbit']:.2f} Mbit/s = {single['ratio']:.2f} of {single['expected_mbit']:g} "
        f"(need >= {SINGLE_FLOW_MIN})  {verdict[single['pass']]}",
        f"                    {describe(single['cpu'])}",
        f"  {len(par['flows'])} parallel flows  min {par['min']:.2f}, median {par['median']:.2f} of "
        f"expected (need >= {PARALLEL_MIN})  {verdict[par['pass']]}",
        f"                    {describe(par['cpu'])}",
    ]
