"""Every collective's schedules as data, no root: each reproduces numpy for 2 to 64 ranks (and
counts that do not split evenly where the algorithm allows), refuses what it cannot run in one
line, and puts as many flows on a link per round as its placement promises on BiGraph."""
import numpy as np
import pytest

from testbed.collectives.data import COLLECTIVES, UNSET, rank_input
from testbed.collectives.matchings import perfect_rounds
from testbed.collectives.metrics import bandwidths
from testbed.collectives.placements import COLLECTIVE_VARIANTS, place, rank_ips
from testbed.collectives.schedules import (
    ALGORITHMS,
    BinomialTreeBroadcast,
    Deadlock,
    PipelinedRingBroadcast,
    Schedule,
    Step,
    example,
    recv_only,
    rounds,
    send_only,
    simulate,
)
from testbed.errors import TestbedError
from testbed.routing import deterministic_routes, link_load
from testbed.topology import BiGraph, LeafSpine

RANKS = list(range(2, 18)) + [24, 31, 32, 64]


def runs(name, ranks):
    try:
        example(name, ranks).check(ranks)
        return True
    except TestbedError:
        return False


def check_against_numpy(schedule, ranks, count):
    collective = COLLECTIVES[schedule.collective]
    out = simulate(schedule, [collective.buffer(r, ranks, count) for r in range(ranks)])
    for r in range(ranks):
        (lo, hi), want = collective.expected(r, ranks, count)
        assert np.array_equal(out[r][lo:hi], want), (schedule.name, ranks, count, r)
        assert not np.any(want == UNSET)


@pytest.mark.parametrize("name", sorted(ALGORITHMS))
def test_every_schedule_reproduces_numpy(name):
    ran = 0
    for ranks in RANKS:
        if not runs(name, ranks):
            continue
        schedule = example(name, ranks)
        for count in (ranks, 3 * ranks, 5 * ranks + 3, 2):
            try:
                schedule.check_count(ranks, count)
            except TestbedError:
                assert schedule.exact_blocks and count % ranks
                continue
            check_against_numpy(schedule, ranks, count)
            ran += 1
    assert ran >= 10


def test_what_each_collective_means():
    """Worked by hand on 4 ranks of 8 elements, against numpy's own operations."""
    p, n = 4, 8
    inputs = np.stack([rank_input(r, n) for r in range(p)])
    (lo, hi), want = COLLECTIVES["reducescatter"].expected(2, p, n)
    assert (lo, hi) == (4, 6) and np.array_equal(want, inputs.sum(axis=0)[4:6])
    _, gathered = COLLECTIVES["allgather"].expected(0, p, n)
    assert np.array_equal(gathered, np.concatenate([inputs[q, 2 * q:2 * q + 2] for q in range(p)]))
    (lo, hi), got = COLLECTIVES["alltoall"].expected(1, p, n)
    assert (lo, hi) == (8, 16) and np.array_equal(got, inputs[:, 2:4].reshape(-1))
    assert np.array_equal(COLLECTIVES["broadcast"].expected(3, p, n)[1], inputs[0])
    assert np.array_equal(COLLECTIVES["sendrecv"].expected(0, p, n)[1], inputs[3])


@pytest.mark.parametrize("name,ranks,steps", [
    ("ring", 8, 14), ("hd", 8, 6), ("rd", 16, 4), ("ring_reducescatter", 8, 7), ("rh_reducescatter", 16, 4),
    ("ring_allgather", 12, 11), ("rd_allgather", 32, 5), ("pairwise_alltoall", 12, 11), ("xor_alltoall", 8, 7),
    ("tree_broadcast", 12, 4), ("tree_broadcast", 16, 4), ("sendrecv", 6, 1)])
def test_rounds_as_the_ranks_meet(name, ranks, steps):
    assert len(rounds(example(name, ranks), ranks, ranks * 4)) == steps


def test_pipelined_broadcast_takes_pieces_plus_hops():
    """(pieces + p - 2) rounds: the ranks run a round apart per hop, a wavefront down the chain."""
    for ranks, pieces in ((2, 4), (5, 5), (8, 3)):
        played = rounds(PipelinedRingBroadcast(pieces), ranks, 60)
        assert len(played) == pieces + ranks - 2
        assert max(len(m) for m in played) == min(pieces, ranks - 1)


def test_a_schedule_whose_ranks_wait_on_each_other_is_caught():
    class Crossed(Schedule):
        name, collective = "crossed", "broadcast"

        def steps(self, rank, ranks, count):    # both receive first: each waits for the other
            other = 1 - rank
            return [recv_only(other, (0, count)), send_only(other, (0, count))]
    with pytest.raises(Deadlock):
        rounds(Crossed(), 2, 4)


@pytest.mark.parametrize("name,ranks", [("hd", 12), ("rd", 24), ("rd_allgather", 6), ("rh_reducescatter", 24),
                                        ("xor_alltoall", 10)])
def test_power_of_two_algorithms_refuse_other_rank_counts(name, ranks):
    with pytest.raises(TestbedError, match=r"power-of-two rank count \(got \d+\): use \d+ or \d+ ranks"):
        ALGORITHMS[name]().check(ranks)


def test_sizes_that_do_not_split_into_blocks_are_refused_with_the_nearest_that_do():
    with pytest.raises(TestbedError, match=r"needs a size of a whole number of 12-element blocks \(got 1000 B\): "
                                           r"use 960 or 1008 B"):
        ALGORITHMS["pairwise_alltoall"]().check_count(12, 250)
    ALGORITHMS["ring_allgather"]().check_count(12, 250)      # a Ring takes uneven chunks


def test_bus_bandwidth_factors_are_nccl_tests():
    factors = {c: bandwidths(1, 1, 8, c)[1] for c in COLLECTIVES}
    assert factors == {"allreduce": 1.75, "allgather": 0.875, "reducescatter": 0.875, "alltoall": 0.875,
                       "broadcast": 1.0, "sendrecv": 1.0, "pipeline_forward": 1.0, "pipeline_backward": 1.0}


def max_flows_per_round(schedule, hosts, topo):
    routes, ips = deterministic_routes(topo), rank_ips(topo, hosts)
    return [max(link_load(routes, [(ips[a], ips[b]) for a, b, _, _ in moved]).values())
            for moved in rounds(schedule, len(hosts), len(hosts) * 4)]


@pytest.mark.parametrize("m,n", [(1, 8), (2, 8), (2, 4), (4, 8)])
def test_rank_mapping_keeps_every_half_of_hd_on_distinct_links(m, n):
    """And recursive doubling's allreduce, whose steps are HD's pairs with whole vectors."""
    topo = BiGraph(m, n)
    for collective, variant, plain in (("allgather", "rdrm", "rd"), ("reducescatter", "rhrm", "rh"),
                                       ("allreduce", "rdrm", "rd")):
        assert set(max_flows_per_round(*place(variant, topo, collective), topo)) == {1}
        if m > 1:
            assert max(max_flows_per_round(*place(plain, topo, collective), topo)) >= 2


@pytest.mark.parametrize("m,n", [(1, 8), (2, 8), (2, 4)])
def test_topology_aware_alltoall_shares_no_link_where_pairwise_does(m, n):
    topo = BiGraph(m, n)
    schedule, hosts = place("topo", topo, "alltoall")
    assert set(max_flows_per_round(schedule, hosts, topo)) == {1}
    check_against_numpy(schedule, len(hosts), 4 * len(hosts))
    if m > 1:
        assert max(max_flows_per_round(*place("pairwise", topo, "alltoall"), topo)) >= 2


def test_on_bigraph_2_8_the_alltoall_runs_in_15_perfect_rounds_that_share_no_link():
    topo = BiGraph(2, 8)
    schedule, hosts = place("topo", topo, "alltoall")
    assert len(schedule.rounds) == 15
    # every rank sends to one and receives from one in every round
    assert all(sorted(to) == list(range(16)) and all(to[i] != i for i in range(16)) for to in schedule.rounds)
    assert {(a, r[a]) for r in schedule.rounds for a in range(16)} == {(a, b) for a in range(16) for b in range(16)
                                                                      if a != b}
    assert set(max_flows_per_round(schedule, hosts, topo)) == {1}


def test_perfect_rounds_are_none_where_none_exist():
    one_link = {(a, b): {"the link"} for a in range(3) for b in range(3) if a != b}
    assert perfect_rounds(one_link, 3) is None               # a round of 3 flows needs 3 links
    free = {(a, b): set() for a in range(4) for b in range(4) if a != b}
    found = perfect_rounds(free, 4)
    assert len(found) == 3 and {(a, r[a]) for r in found for a in range(4)} == set(free)
    # BiGraph(2, 4): the solver proves that no 7 perfect link-disjoint rounds exist; partial ones are used
    assert len(place("topo", BiGraph(2, 4), "alltoall")[0].rounds) > 7


def test_topology_aware_alltoall_where_no_order_avoids_sharing_still_shares_less():
    topo = BiGraph(4, 8)
    topo_loads = max_flows_per_round(*place("topo", topo, "alltoall"), topo)
    pairwise = max_flows_per_round(*place("pairwise", topo, "alltoall"), topo)
    assert max(topo_loads) < max(pairwise)


@pytest.mark.parametrize("collective", ["allgather", "broadcast", "sendrecv"])
def test_ring_topo_variants_share_no_link(collective):
    topo = BiGraph(2, 8)
    assert set(max_flows_per_round(*place("ring_topo", topo, collective), topo)) == {1}


def test_variant_refusals_name_the_fix():
    with pytest.raises(TestbedError, match="unknown collective 'gather': use one of allreduce, allgather"):
        place("ring", BiGraph(2, 8), "gather")
    with pytest.raises(TestbedError, match="unknown alltoall algorithm 'ring': use one of pairwise, xor"):
        place("ring", BiGraph(2, 8), "alltoall")
    with pytest.raises(TestbedError, match="BiGraph only"):
        place("rdrm", LeafSpine(4, 4, 4), "allgather")
    with pytest.raises(TestbedError, match="power-of-two"):
        place("xor", BiGraph(3, 4), "alltoall")


def test_every_variant_places_every_host_once_on_the_default_bigraph():
    topo = BiGraph(2, 8)
    for collective, variants in COLLECTIVE_VARIANTS.items():
        for variant in variants:
            if variant in ("ring_cross_segment",):
                continue
            schedule, hosts = place(variant, topo, collective)
            assert sorted(hosts) == sorted(topo.hosts) and schedule.collective == collective


def test_steps_that_only_send_or_only_receive():
    assert BinomialTreeBroadcast().steps(0, 5, 10) == [send_only(1, (0, 10)), send_only(2, (0, 10)),
                                                       send_only(4, (0, 10))]
    assert BinomialTreeBroadcast().steps(3, 5, 10) == [recv_only(1, (0, 10))]
    assert isinstance(send_only(1, (0, 1)), Step)
