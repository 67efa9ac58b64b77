"""EFLOPS' servers and scaling on real packets: servers whose 4 accelerators share one NIC give each
accelerator less bus bandwidth than a NIC per accelerator, and the linear-scaling ratio of training
iterations comes from their measured times."""
import pytest

import testbed
from testbed import routing
from testbed.collectives.placements import on_shared_nics, place
from testbed.collectives.training import compute_seconds, linear_ratio, train
from testbed.emulation.network import Emulation
from testbed.topology import BiGraph

SIZE = 256 << 10


def busbw(topo, hosts, schedule, folder):
    with testbed.emulate(topo, folder=folder) as emu:
        (row,) = emu.sweep(["hdrm"], [SIZE], warmup=1, iters=2, model=False, placed={"hdrm": (schedule, hosts)})
    assert row.wrong == 0
    return row.row


def test_a_shared_nic_gives_each_accelerator_less_bus_bandwidth(tmp_path):
    eflops, shared = BiGraph(4, 8), BiGraph(1, 8)          # 8 servers of 4 accelerators
    schedule, hosts = place("hdrm", eflops)
    own = busbw(eflops, hosts, schedule, tmp_path / "eflops")
    one = busbw(shared, on_shared_nics(eflops, shared, hosts), schedule, tmp_path / "shared")
    # HDRM's steps send every accelerator's data to another server at once: through its own NIC, or
    # all 4 of a server's through one
    assert own["busbw_MBps"] >= 1.3 * one["busbw_MBps"], (own, one)


def test_the_linear_ratio_comes_from_measured_iteration_times(tmp_path):
    results = {}
    compute = compute_seconds(64 << 10, 2, 1.25e6, 0.3)
    for ranks, topo in ((2, BiGraph(1, 2)), (8, BiGraph(1, 8))):
        schedule, hosts = place("hdrm", topo)
        with Emulation(topo, routing.plan(topo), tmp_path / str(ranks), log=lambda m: None) as emu:
            results[ranks] = train(emu, schedule, hosts, 64 << 10, compute, iterations=3, batch=32, label="hdrm")
        assert results[ranks]["wrong"] == 0
    ratio = linear_ratio(results[8]["samples_per_s"], 8, results[2]["samples_per_s"], 2)
    assert ratio == pytest.approx(results[2]["iteration_s"] / results[8]["iteration_s"], rel=0.01)
    assert 0.5 < ratio <= 1.05, results          # HDRM on BiGraph: near linear (the modelled computation dominates)
