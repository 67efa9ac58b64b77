"""Which host runs which rank: a list of host names, index = rank.

A variant of a collective is a schedule plus a placement: for allreduce, Ring in rank order or
alternating layers, Halving-Doubling in rank order (plain HD) or with EFLOPS' rank mapping (HDRM);
the other collectives' variants are in ``COLLECTIVE_VARIANTS``.
"""
import random
from itertools import zip_longest

from testbed.collectives.matchings import perfect_rounds
from testbed.collectives.schedules import (
    BinomialTreeBroadcast,
    BySize,
    HalvingDoubling,
    PairwiseAlltoall,
    PipelinedRingBroadcast,
    RecursiveDoubling,
    RecursiveDoublingAllreduce,
    RecursiveHalving,
    Ring,
    RingAllgather,
    RingReduceScatter,
    RoundsAlltoall,
    SendRecv,
    XorAlltoall,
    rounds,
)
from testbed.errors import TestbedError
from testbed.routing import deterministic_routes
from testbed.topology import HPN7, BiGraph


def rank_ips(topo, hosts):
    """The address each rank uses: its host's first NIC port."""
    return [topo.hosts[h].ports[0].ip for h in hosts]


def rank_order(topo):
    return [h.name for h in sorted(topo.hosts.values(), key=lambda h: h.index)]


def _bigraph(topo, what):
    if not isinstance(topo, BiGraph):
        raise TestbedError(f"{what} is defined on BiGraph only (got {topo.name}): use --topology bigraph:m,n")
    return topo


def alternating_layers(topo):
    """The papers' Ring baseline on BiGraph: consecutive ranks alternate Upper and Lower. Rank 2i sits
    on Upper switch i mod K and rank 2i+1 on Lower switch (i mod K + i div K) mod K, both on port
    i div K: with m <= n/2 no two ring hops share a directed link."""
    topo = _bigraph(topo, "the alternating-layer ring")
    k, hosts = topo.half, []
    for i in range(topo.m * k):
        x, j = i % k, i // k
        hosts += [topo.host_at(x, j).name, topo.host_at(k + (x + j) % k, j).name]
    return hosts


def server_grouped(topo):
    """A ring that visits BiGraph's servers (switches) alternating layers, U0, L0, U1, L1 ..., and
    each server's endpoints one after another: it leaves a server once, so a server's NIC (or
    NICs) carries one flow per step, and consecutive servers are one hop apart."""
    topo = _bigraph(topo, "the server-grouped ring")
    order = [x for i in range(topo.half) for x in (i, topo.half + i)]
    return [topo.host_at(x, j).name for x in order for j in range(topo.m)]


def hdrm(topo):
    """EFLOPS' rank mapping. With K = n/2 and rank r = j*n + x (0 <= x < n, 0 <= j < m), i = x >> 1:
    popcount(r) even -> Upper switch (i + j) mod K, port j; odd -> Lower switch K + i, port j."""
    topo = _bigraph(topo, "HDRM")
    if topo.m > topo.c * topo.half:
        raise TestbedError(f"HDRM needs m <= c*n/2 (got m={topo.m}, c={topo.c}, n={topo.n}): "
                           f"use at most {topo.c * topo.half} endpoints per switch, or more switches or links")
    HalvingDoubling().check(topo.m * topo.n)
    k, hosts = topo.half, []
    for r in range(topo.m * topo.n):
        j, x = divmod(r, topo.n)
        i = x >> 1
        switch = (i + j) % k if bin(r).count("1") % 2 == 0 else k + i
        hosts.append(topo.host_at(switch, j).name)
    return hosts


def rail_ring(topo, rail, segments, servers):
    """HPN7: the hosts of one rail on the given servers of the given segments, in a ring that visits
    the segments in turn server by server: (s0, 0), (s1, 0), (s0, 1), (s1, 1) ... for segments
    (0, 1); one segment's hosts are one ToR apart."""
    if not isinstance(topo, HPN7) or max(segments) >= topo.segments or max(servers) >= topo.servers \
            or rail >= topo.rails:
        raise TestbedError(f"{topo.name} has no rail {rail} on servers {list(servers)} of segments {list(segments)}")
    return [topo.host_at(s, h, rail).name for h in servers for s in segments]


def cross_segment(topo, servers=None):
    """HPN7: the hosts of segments 0 and 1 (on the given servers of each, default all), in a ring
    whose neighbours are on different segments, rail by rail: (s0, server 0, rail r), (s1, 0, r),
    (s0, 1, r), (s1, 1, r) ... so every hop crosses the aggregation tier, and all but the hops
    between rails join rail peers."""
    if not isinstance(topo, HPN7) or topo.segments < 2:
        raise TestbedError(f"the cross-segment ring needs an HPN7 fabric of 2 or more segments (got {topo.name})")
    servers = range(topo.servers) if servers is None else servers
    return [topo.host_at(s, h, r).name for r in range(topo.rails) for h in servers for s in (0, 1)]


def on_shared_nics(eflops, shared, hosts):
    """A placement on BiGraph servers with a NIC per accelerator (one server per switch) moved to
    the same servers with one NIC for all: each rank to the one host of its accelerator's server."""
    return [shared.host_at(eflops.hosts[h].server, 0).name for h in hosts]


PERFECT = {}        # {(fabric spec, hosts): perfect rounds or None}


def alltoall_rounds(topo, hosts, routes, tries=40, seed=0):
    """Rounds for ``RoundsAlltoall`` whose flows share no directed link where the fabric allows:
    ranks - 1 perfect rounds where the solver finds them (``matchings.perfect_rounds``); else
    partial rounds, built greedily: every (sender, receiver) pair of ranks goes into the first round
    where its sender sends nothing yet, its receiver receives nothing yet and its route (deterministic ``routes``)
    crosses no link that round already uses; pairs come in the pairwise exchange's order (receiver
    i+k before i+k+1), shuffled within it by `tries` seeds. A rank idle in a round goes on to its
    next, so the ranks play the rounds as they meet (``schedules.rounds``), not as built: of the
    tries, the one whose rounds as played put fewest flows on a shared link wins, then the one of
    fewest rounds. Ranks on one host reach each other inside it, on no link."""
    ranks, ips = len(hosts), rank_ips(topo, hosts)
    links = {(a, b): set() if ips[a] == ips[b] else set(routes[ips[a], ips[b]].directed_links())
             for a in range(ranks) for b in range(ranks) if a != b}
    key = (topo.spec, tuple(hosts))
    if key not in PERFECT:                      # prepare and run both place; the solver answers once
        PERFECT[key] = perfect_rounds(links, ranks)
    if PERFECT[key] is not None:
        return PERFECT[key]
    best = None
    for t in range(tries):
        shuffle = random.Random(seed + t)
        order = [(i, (i + k) % ranks) for k in range(1, ranks) for i in shuffle.sample(range(ranks), ranks)]
        built = []          # [(sends {rank: to}, receivers, used links)]
        for a, b in order:
            for sends, receivers, used in built:
                if a not in sends and b not in receivers and not links[a, b] & used:
                    break
            else:
                sends, receivers, used = {}, set(), set()
                built.append((sends, receivers, used))
            sends[a] = b
            receivers.add(b)
            used |= links[a, b]
        candidate = [[sends.get(i) for i in range(ranks)] for sends, _, _ in built]
        played = rounds(RoundsAlltoall(candidate), ranks, ranks)
        shared = sum(n - 1 for moved in played
                     for n in link_load_of([links[a, b] for a, b, _, _ in moved]).values() if n > 1)
        score = (shared, len(played))
        if best is None or score < best[0]:
            best = score, candidate
    return best[1]


def link_load_of(link_sets):
    load = {}
    for links in link_sets:
        for link in links:
            load[link] = load.get(link, 0) + 1
    return load


def rounds_alltoall(topo):
    """Alltoall in rank order, in rounds that keep each round's flows on distinct links
    (``alltoall_rounds`` over the fabric's deterministic routes)."""
    hosts = rank_order(topo)
    return RoundsAlltoall(alltoall_rounds(topo, hosts, deterministic_routes(topo))), hosts


def by_size(topo):
    """`auto`'s choices on one placement: on a BiGraph that takes EFLOPS' mapping, recursive
    doubling and HD with it (rdrm, hdrm: each step collision-free, so neither needs the Ring); else in
    rank order recursive doubling, HD and the Ring where the rank count is a power of two, the Ring
    alone where it is not."""
    try:
        hosts = hdrm(topo)
        return BySize({"rdrm": RecursiveDoublingAllreduce(), "hdrm": HalvingDoubling()}), hosts
    except TestbedError:
        hosts = rank_order(topo)
    ranks = len(hosts)
    power_of_two = ranks >= 2 and not ranks & (ranks - 1)
    return BySize({"rd": RecursiveDoublingAllreduce(), "hd": HalvingDoubling(), "ring": Ring()} if power_of_two
                  else {"ring": Ring()}), hosts


ALLREDUCE = {
    "ring": (Ring(), rank_order),
    "ring_topo": (Ring(), alternating_layers),
    "ring_grouped": (Ring(), server_grouped),
    "hd": (HalvingDoubling(), rank_order),
    "hdrm": (HalvingDoubling(), hdrm),
    "rd": (RecursiveDoublingAllreduce(), rank_order),
    "rdrm": (RecursiveDoublingAllreduce(), hdrm),
    "auto": (None, by_size),
    "ring_cross_segment": (Ring(), cross_segment),
}
# Each collective's variants, a schedule and a placement each (a placement may choose the schedule
# too: (schedule, hosts)). EFLOPS' rank mapping serves the halves of HD and recursive doubling
# (HD's pairs, whole vectors) as it serves HD, and the xor alltoall's steps of one bit.
COLLECTIVE_VARIANTS = {
    "allreduce": ALLREDUCE,
    "allgather": {"ring": (RingAllgather(), rank_order), "ring_topo": (RingAllgather(), alternating_layers),
                  "rd": (RecursiveDoubling(), rank_order), "rdrm": (RecursiveDoubling(), hdrm)},
    "reducescatter": {"ring": (RingReduceScatter(), rank_order),
                      "ring_topo": (RingReduceScatter(), alternating_layers),
                      "rh": (RecursiveHalving(), rank_order), "rhrm": (RecursiveHalving(), hdrm)},
    "alltoall": {"pairwise": (PairwiseAlltoall(), rank_order), "xor": (XorAlltoall(), rank_order),
                 "xor_rm": (XorAlltoall(), hdrm), "topo": (None, rounds_alltoall)},
    "broadcast": {"ring": (PipelinedRingBroadcast(), rank_order),
                  "ring_topo": (PipelinedRingBroadcast(), alternating_layers),
                  "tree": (BinomialTreeBroadcast(), rank_order)},
    "sendrecv": {"ring": (SendRecv(), rank_order), "ring_topo": (SendRecv(), alternating_layers)},
}
VARIANTS = ALLREDUCE


def place(variant, topo, collective="allreduce"):
    """(schedule, host per rank) for a variant of a collective, refused clearly when it cannot run here."""
    if collective not in COLLECTIVE_VARIANTS:
        raise TestbedError(f"unknown collective {collective!r}: use one of {', '.join(COLLECTIVE_VARIANTS)}")
    variants = COLLECTIVE_VARIANTS[collective]
    if variant not in variants:
        what = "allreduce" if collective == "allreduce" else f"{collective} algorithm"
        raise TestbedError(f"unknown {what} {variant!r}: use one of {', '.join(variants)}")
    schedule, placement = variants[variant]
    if schedule is None:
        schedule, hosts = placement(topo)
    else:
        hosts = placement(topo)
    schedule.check(len(hosts))
    return schedule, hosts


PLACEMENTS = ("packed", "spread", "fragmented", "random")


def nccl_ring(topo, hosts):
    """A group's ring in the order NCCL builds it on a rail-optimised fabric: a server's ranks one
    after another (the hops between them on its scale-up domain, where it has one), and from one
    server to the next on one rail: server by server, each server's ranks by rail, ascending in
    the first server, descending in the second and so on, so the ring leaves a server on the rail
    it enters the next one by (NCCL's graph search keeps a ring's inter-node hops on one NIC's
    rail; PXN moves other rails' traffic through the scale-up domain first). Servers keep the
    order the group first names them in."""
    by = {}
    for host in hosts:
        by.setdefault(topo.hosts[host].server, []).append(host)
    out = []
    for k, mine in enumerate(by.values()):
        mine = sorted(mine, key=lambda h: (topo.hosts[h].rail or 0, topo.hosts[h].index))
        out += mine if k % 2 == 0 else mine[::-1]
    return out


def servers(topo):
    """[[host per accelerator] per server], servers in order and each server's hosts by rail (HPN
    7.0: a server's i-th accelerator on rail i) or index: the order a job's ranks fill them."""
    by = {}
    for host in sorted(topo.hosts.values(), key=lambda h: (h.server, h.rail if h.rail is not None else 0, h.index)):
        by.setdefault(host.server, []).append(host.name)
    return [by[s] for s in sorted(by)]


def place_jobs(topo, sizes, how="packed", seed=0):
    """[host per rank] for jobs of `sizes` ranks sharing a fabric, Megatron's rank order filling
    servers so that consecutive ranks (a tensor-parallel group) share one: packed (each job on the
    next free servers), spread (the jobs' servers interleaved: job k on servers k, k + jobs, ...),
    fragmented (each job on the next free servers of a list that takes them from every rack in
    turn: a job's consecutive servers sit in different segments or leaves, as a busy cluster's
    scheduler hands out whatever is free, so every hop of its ring crosses the tier above the
    racks), random (servers shuffled from `seed`). A job takes whole servers where its size is a
    multiple of theirs, else the accelerators in order."""
    boxes = servers(topo)
    width = len(boxes[0])
    if any(len(b) != width for b in boxes):
        raise TestbedError(f"{topo.name}'s servers differ in size: place jobs on a fabric of equal servers")
    if sum(sizes) > len(topo.hosts):
        raise TestbedError(f"the jobs need {sum(sizes)} accelerators, {topo.name} has {len(topo.hosts)}: "
                           "give a larger fabric or smaller jobs")
    if how not in PLACEMENTS:
        raise TestbedError(f"unknown placement {how!r}: use one of {', '.join(PLACEMENTS)}")
    order = list(range(len(boxes)))
    if how == "random":
        random.Random(seed).shuffle(order)
    if how == "fragmented":
        order = [s for turn in zip_longest(*rack_servers(topo, boxes)) for s in turn if s is not None]
    needed = [-(-size // width) for size in sizes]
    if how == "spread":
        turns, owner = [], {}
        for k in range(max(needed)):
            turns += [j for j in range(len(sizes)) if k < needed[j]]
        for server, job in zip(order, turns):
            owner.setdefault(job, []).append(server)
    else:
        owner, at = {}, 0
        for job, n in enumerate(needed):
            owner[job], at = order[at:at + n], at + n
    return [[h for s in owner[job] for h in boxes[s]][:size] for job, size in enumerate(sizes)]


def rack_servers(topo, boxes):
    """[[server index per server of the rack] per rack] of `servers(topo)`'s `boxes`, by ``racks``."""
    rack_of = {h: k for k, rack in enumerate(racks(topo)) for h in rack}
    by = {}
    for s, box in enumerate(boxes):
        by.setdefault(rack_of[box[0]], []).append(s)
    return [by[k] for k in sorted(by)]


def racks(topo):
    """[[host names] per rack]: a leaf's hosts, an HPN7 segment's servers' accelerators, or else a
    server's."""
    by = {}
    for host in topo.hosts.values():
        key = topo.segment_of(host) if isinstance(topo, HPN7) else host.server
        by.setdefault(key, []).append(host.name)
    return [sorted(hosts, key=lambda h: topo.hosts[h].index) for _, hosts in sorted(by.items())]


def part_of_racks(topo, share):
    """The first `share` of every rack's hosts, a power of two in all (HD's need), in index order."""
    chosen = [h for rack in racks(topo) for h in rack[:max(1, round(share * len(rack)))]]
    power = 1 << (len(chosen).bit_length() - 1)
    return sorted(chosen[:power], key=lambda h: topo.hosts[h].index)
