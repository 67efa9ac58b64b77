"""The fabric check: does the emulated network deliver what it was configured to? Every NIC port
answers ping, one TCP flow over the longest path gets the link rate, and parallel flows on paths
that share no link each get theirs; each measurement with its bottleneck verdict. A fabric split
into slots (emulation.slots) also gets a flow through each direction of every cut link, and the
round trip over a tunnelled path against one as long that stays in its slot."""
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


def path_rate(topo, route, load):
    """What a flow on `route` can carry: over every link of it, the link's own rate (a faster or
    slower uplink's, not the fabric's) shared by the flows `load` puts on it."""
    rate = {end: link.rate for link in topo.links for end in link.ends()}
    return min(rate[link] / load.get(link, 1) for link in route.directed_links())


def run_flows(emu, pairs, routes, duration=5, omit=1, streams=1, judged_on=None):
    """iperf3 flows between pairs (see probes.flows), each with the rate it should get: over its
    route, every link's rate divided by the flows sharing it, the slowest (path_rate); where
    routes is None (hashing picks the paths), the same over `judged_on`, the routes of equal cost
    it stands for, alone, or the link rate without them; and received over expected."""
    topo = emu.topo
    load = link_load(routes, [(s.ip, d.ip) for s, d in pairs]) if routes else {}
    flows, cpu = measure_flows(emu, pairs, duration, omit, streams)
    for flow in flows:
        route = routes[flow["src"], flow["dst"]] if routes else None
        stand_in = (judged_on or {}).get((flow["src"], flow["dst"]))
        expected = path_rate(topo, route, load) if route else path_rate(topo, stand_in, {}) if stand_in else topo.rate
        flow.update(switches=[topo.switches[s].label for s in route.switches] if route else [],
                    expected_mbit=round(expected, 3), ratio=round(flow["received_mbit"] / expected, 3))
    return flows, cpu


def check(emu, duration=3):
    """Reachability, one flow over the longest path, then parallel flows on spread-out paths, each
    judged against what its own path carries (its slowest link). Where hashing picks the paths
    (ecmp), the longest path is the deterministic routes' (its equal-cost paths have the same
    links' rates) and the parallel flows are neighbour_pairs, each expected to get the link rate."""
    topo, routes = emu.topo, emu.routing.routes
    answered, failures = reachability(emu)
    known = routes or deterministic_routes(topo)
    longest = longest_route(known)
    single, single_cpu = run_flows(emu, [(longest.src, longest.dst)], routes, duration, judged_on=known)
    pairs = neighbour_pairs(topo) if routes is None else None
    if not pairs:     # judged on known routes (ecmp with no neighbours: the deterministic ones)
        routes = routes or deterministic_routes(topo)
        pairs = spread_pairs(topo, routes)
    parallel, parallel_cpu = run_flows(emu, pairs, routes, duration)
    ratios = [f["ratio"] for f in parallel]
    slots = {"cut_links": check_cut_links(emu, emu.routing.routes, duration)} \
        if getattr(emu, "partition", None) and emu.routing.routes else {}
    return {**slots,
        "reachability": {"answered": answered, "pairs": answered + len(failures), "failures": failures},
        "single_flow": {**single[0], "min_ratio": SINGLE_FLOW_MIN, "cpu": single_cpu,
                        "pass": single[0]["ratio"] >= SINGLE_FLOW_MIN},
        "parallel_flows": {"flows": parallel, "min": min(ratios), "median": statistics.median(ratios),
                           "min_ratio": PARALLEL_MIN, "cpu": parallel_cpu, "pass": min(ratios) >= PARALLEL_MIN},
    }


def cut_link_rounds(routes, cut_links):
    """[[route, ...]]: routes that cross each direction of every cut link, in rounds in which no
    link carries two flows and no host sends or receives two."""
    wanted = {end for cut in cut_links for end in cut.link.ends()}     # a direction, by its sending end
    candidates = sorted(routes.values(), key=lambda r: (r.src.ip, r.dst.ip))
    rounds = []
    while wanted:
        used, hosts, chosen = set(), set(), []
        for route in candidates:
            links = set(route.directed_links())
            if links & wanted and not links & used and not {("s", route.src.host), ("d", route.dst.host)} & hosts:
                chosen.append(route)
                used |= links
                hosts |= {("s", route.src.host), ("d", route.dst.host)}
                wanted -= links
        if not chosen:
            break                      # a direction no route takes: nothing to measure there
        rounds.append(chosen)
    return rounds


def round_trip_ms(emu, route, count=20):
    out = emu.host(route.src.host).cmd(f"ping -q -c {count} -i 0.05 -W1 {route.dst.ip}")
    found = [line for line in out.splitlines() if "min/avg/max" in line]
    return float(found[0].split("=")[1].split("/")[1]) if found else None


def check_cut_links(emu, routes, duration):
    """Every cut link at its rate, and a tunnelled path's round trip against an untunnelled one of
    as many switches (None where the fabric has none)."""
    cut = emu.partition.cut_links()
    ends = {end for c in cut for end in c.link.ends()}
    flows, cpu = [], None
    for chosen in cut_link_rounds(routes, cut):
        measured, seen = run_flows(emu, [(r.src, r.dst) for r in chosen], routes, duration)
        cpu = cpu or seen          # the first round's, the largest
        flows += measured
    crossing = [r for r in routes.values() if set(r.directed_links()) & ends]
    latency = None
    for tunnelled in sorted(crossing, key=lambda r: (len(r.hops), r.src.ip, r.dst.ip)):
        local = next((r for r in sorted(routes.values(), key=lambda r: (r.src.ip, r.dst.ip))
                      if len(r.hops) == len(tunnelled.hops) and not set(r.directed_links()) & ends), None)
        if local:
            latency = {"switches": len(local.hops), "tunnelled_ms": round_trip_ms(emu, tunnelled),
                       "local_ms": round_trip_ms(emu, local)}
            break
    covered = {end for f in flows for end in routes[f["src"], f["dst"]].directed_links()} & ends
    ratios = [f["ratio"] for f in flows]
    underlay = emu.underlay_errors()
    return {"cut_links": len(cut), "directions": len(ends), "covered": len(covered), "flows": flows,
            "min": min(ratios, default=None), "cpu": cpu, "latency": latency, "underlay_errors": underlay,
            "pass": (bool(flows) and len(covered) == len(ends) and min(ratios) >= PARALLEL_MIN
                     and not any(underlay.values()))}


def passed(summary):
    return bool(not summary["reachability"]["failures"] and summary["single_flow"]["pass"]
                and summary["parallel_flows"]["pass"] and summary.get("cut_links", {"pass": True})["pass"])


def report(summary, emu):
    """The check as lines a person reads."""
    reach, single, par = summary["reachability"], summary["single_flow"], summary["parallel_flows"]
    verdict = {True: "PASS", False: "FAIL"}
    return [
        f"fabric check: {emu.topo.describe()}, MTU {emu.mtu}, OVS {ovs.datapath_name(emu.datapath)}",
        f"  reachability      {reach['answered']}/{reach['pairs']} NIC-port pairs answer ping  "
        f"{verdict[not reach['failures']]}",
        f"  longest path      {single['src']} -> {single['dst']} via {' '.join(single['switches']) or 'hashed links'}: "
        f"{single['received_mbit']:.2f} Mbit/s = {single['ratio']:.2f} of its path's {single['expected_mbit']:g} "
        f"(need >= {SINGLE_FLOW_MIN})  {verdict[single['pass']]}",
        f"                    {describe(single['cpu'])}",
        f"  {len(par['flows'])} parallel flows  min {par['min']:.2f}, median {par['median']:.2f} of "
        f"expected (need >= {PARALLEL_MIN})  {verdict[par['pass']]}",
        f"                    {describe(par['cpu'])}",
    ] + cut_link_lines(summary.get("cut_links"), verdict)


def cut_link_lines(cut, verdict):
    if cut is None:
        return []
    lines = [f"  cut links         {cut['covered']}/{cut['directions']} directions of {cut['cut_links']} VXLAN links "
             f"crossed by {len(cut['flows'])} flows, min {cut['min'] if cut['min'] is not None else 0:.2f} of expected "
             f"(need >= {PARALLEL_MIN})  {verdict[cut['pass']]}"]
    if cut["cpu"]:
        lines.append(f"                    {describe(cut['cpu'])}")
    lost = {k: v for k, v in cut["underlay_errors"].items() if v}
    lines.append("                    underlay: " + (", ".join(f"{k} {v}" for k, v in lost.items()) if lost
                                                      else "no VXLAN or UDP errors or drops"))
    if cut["latency"] and None not in (cut["latency"]["tunnelled_ms"], cut["latency"]["local_ms"]):
        lat = cut["latency"]
        lines.append(f"                    round trip over {lat['switches']} switches: {lat['tunnelled_ms']:.3f} ms "
                     f"through a tunnel, {lat['local_ms']:.3f} ms within a slot "
                     f"({lat['tunnelled_ms'] - lat['local_ms']:+.3f} ms)")
    return lines
