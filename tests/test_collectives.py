"""Schedules and placements as data: exact sums, step counts, link load per step. No root."""
import numpy as np
import pytest

from testbed.collectives.data import expected_sum, rank_input
from testbed.collectives.placements import place
from testbed.collectives.schedules import HalvingDoubling, Ring, simulate
from testbed.errors import TestbedError
from testbed.probes.collisions import predicted_loads
from testbed.routing import deterministic_routes
from testbed.topology import BiGraph, LeafSpine


def check_sum(schedule, ranks, count):
    inputs = [rank_input(r, count) for r in range(ranks)]
    out = simulate(schedule, inputs)
    want = np.sum(np.stack(inputs), axis=0)
    assert all(np.array_equal(buf, want) for buf in out)
    assert np.array_equal(expected_sum(ranks, count), want)


@pytest.mark.parametrize("ranks", list(range(2, 17)) + [31, 64])
def test_ring_reproduces_numpy_sum(ranks):
    check_sum(Ring(), ranks, ranks * 3 + 1)
    assert len(Ring().steps(0, ranks, 100)) == 2 * (ranks - 1)


@pytest.mark.parametrize("ranks", [2, 4, 8, 16, 32, 64])
def test_hd_reproduces_numpy_sum(ranks):
    check_sum(HalvingDoubling(), ranks, ranks * 3 + 1)
    assert len(HalvingDoubling().steps(0, ranks, 100)) == 2 * ranks.bit_length() - 2


def test_counts_smaller_than_ranks():
    check_sum(Ring(), 8, 3)
    check_sum(HalvingDoubling(), 8, 3)


@pytest.mark.parametrize("ranks", [3, 6, 12])
def test_hd_refuses_non_power_of_two(ranks):
    with pytest.raises(TestbedError, match="power-of-two rank count"):
        HalvingDoubling().check(ranks)


def max_load_per_step(variant, topo):
    schedule, hosts = place(variant, topo)
    return [max(load.values()) for load in predicted_loads(schedule, hosts, topo, deterministic_routes(topo))]


@pytest.mark.parametrize("m,n,c", [(1, 8, 1), (2, 8, 1), (4, 8, 1), (4, 16, 1), (8, 8, 2), (2, 4, 1)])
def test_hdrm_one_flow_per_directed_link_every_step(m, n, c):
    topo = BiGraph(m, n, c)
    assert max_load_per_step("hdrm", topo) == [1] * (2 * (m * n).bit_length() - 2)
    routes = deterministic_routes(topo)
    _, hosts = place("hdrm", topo)
    for a in range(m * n):          # every HD pair spans both layers: the unique 2-switch path
        for s in range((m * n).bit_length() - 1):
            ra, rb = topo.hosts[hosts[a]], topo.hosts[hosts[a ^ (1 << s)]]
            assert len(routes[ra.ports[0].ip, rb.ports[0].ip].hops) == 2


@pytest.mark.parametrize("m,n", [(2, 8), (4, 8), (4, 16)])
def test_plain_hd_in_rank_order_collides(m, n):
    assert max(max_load_per_step("hd", BiGraph(m, n))) >= 2


@pytest.mark.parametrize("m,n", [(1, 8), (2, 8), (4, 8)])
def test_topology_aware_ring_alternates_layers_without_sharing(m, n):
    topo = BiGraph(m, n)
    _, hosts = place("ring_topo", topo)
    layers = [topo.is_upper(topo.hosts[h]) for h in hosts]
    assert all(layers[i] != layers[(i + 1) % len(hosts)] for i in range(len(hosts)))
    assert max(max_load_per_step("ring_topo", topo)) == 1
    assert sorted(hosts) == sorted(topo.hosts)


def test_placement_refusals():
    with pytest.raises(TestbedError, match=r"HDRM needs m <= c\*n/2"):
        place("hdrm", BiGraph(5, 8))
    with pytest.raises(TestbedError, match="BiGraph only"):
        place("hdrm", LeafSpine(2, 2, 4))
    with pytest.raises(TestbedError, match="power-of-two"):
        place("hd", BiGraph(3, 4))
    with pytest.raises(TestbedError, match="unknown allreduce"):
        place("tree", BiGraph(2, 8))


@pytest.mark.parametrize("m,n", [(1, 8), (2, 8), (4, 8)])
def test_server_grouped_ring_leaves_each_server_once_without_sharing(m, n):
    topo = BiGraph(m, n)
    _, hosts = place("ring_grouped", topo)
    servers = [topo.hosts[h].server for h in hosts]
    assert sum(1 for a, b in zip(servers, servers[1:] + servers[:1]) if a != b) == n
    assert sorted(hosts) == sorted(topo.hosts)
    assert max(max_load_per_step("ring_grouped", topo)) == 1
