"""nccl-tests' statistics, the alpha-beta fit, the model a result is judged against, and the
training metrics: plain arithmetic, no root."""
import pytest

from testbed.collectives.connections import rank_connections
from testbed.collectives.metrics import hockney, real_size, result_row
from testbed.collectives.placements import on_shared_nics, place
from testbed.collectives.training import compute_seconds, linear_ratio
from testbed.emulation.capacity import largest_faithful_ranks
from testbed.fidelity import predict
from testbed.fidelity.verdict import describe_all, flag, judge
from testbed.routing import plan
from testbed.routing.hashing import Draw, Placer
from testbed.runs.sweep import modelled
from testbed.topology import BiGraph, LeafSpine


def test_a_row_reports_the_mean_median_and_p99_and_flags_busbw_above_the_link():
    row = result_row("ring", 1 << 20, [1.0, 1.0, 4.0], 0, 16, 10)
    assert row["time_us"] == 2e6 and row["median_us"] == 1e6 and row["iterations"] == 3
    assert not row["above_link"]
    fast = result_row("ring", 1 << 20, [0.1], 0, 16, 10)        # 1 MiB in 0.1 s is 157 Mbit/s of busbw
    assert fast["above_link"] and fast["busbw_over_link"] > 1


def test_a_dual_port_nic_may_carry_up_to_two_links():
    """HPN7's bonded NIC: busbw between one and two links is possible, beyond two it is not."""
    two_links = result_row("ring", 1 << 20, [1.5], 0, 16, 10, ports=2)      # 10.5 Mbit/s of busbw: 1.05 links
    assert two_links["busbw_over_link"] > 1 and not two_links["above_link"]
    assert two_links["busbw_over_nic"] == pytest.approx(two_links["busbw_over_link"] / 2, abs=0.001)
    assert result_row("ring", 1 << 20, [0.5], 0, 16, 10, ports=2)["above_link"]     # 3.1 links


def test_hockney_recovers_alpha_and_beta():
    ranks, steps, alpha, beta = 16, 8, 300e-6, 800e-9
    rows = [{"size": n, "time_us": (steps * alpha + 2 * n * (ranks - 1) / ranks * beta) * 1e6}
            for n in (1024, 4096, 65536, 1 << 20)]
    fit = hockney(rows, ranks, steps)
    assert fit["alpha_us"] == pytest.approx(300, rel=0.01)
    assert fit["beta_ns_per_byte"] == pytest.approx(800, rel=0.01)
    # 100 Gbit/s has beta 0.08 ns/B: 10,000 times less; its 5 us per step, 60 times less than 300 us
    assert real_size(1024, fit) == pytest.approx(1024 * 1e4 / 60, rel=0.02)


def model(variant, topo, count, routing_mode="deterministic", latency_s=500e-6):
    schedule, hosts = place(variant, topo)
    conns = rank_connections(schedule, hosts, [7000] * len(hosts), 1)
    every = [c for peers in conns.values() for cs in peers.values() for c in cs]
    paths = predict.route_paths(topo, plan(topo, routing_mode), every)
    return predict.collective_time(topo, schedule, conns, count, paths, 9000, latency_s)


def test_the_model_is_latency_for_small_messages_and_the_link_for_large():
    topo = BiGraph(2, 8)
    small, latency_bound = model("hdrm", topo, 256)
    assert latency_bound and small == pytest.approx(8 * 500e-6)
    large, latency_bound = model("hdrm", topo, 1 << 18)
    # the bandwidth term, with TCP/IP and Ethernet headers on every 9000-byte frame
    assert not latency_bound and large == pytest.approx(2 * (1 << 20) * 15 / 16 / 1.25e6 * 9014 / 8948, rel=0.001)
    assert model("hd", topo, 1 << 18)[0] > 1.8 * large      # plain HD shares links: the model knows
    # under ECMP the routes are the hash's: only the NICs' links are known, so no sharing is modelled
    assert model("hd", topo, 1 << 18, "ecmp")[0] == pytest.approx(large, rel=0.001)


def barrier_model(topo, schedule, conns, count, paths):
    return predict.collective_time(topo, schedule, conns, count, paths, 9000, timing="rounds")[0]


@pytest.mark.parametrize("seed", range(6))
def test_the_model_follows_the_ranks_past_a_collision_as_they_run(seed):
    """Pairwise alltoall under ECMP: a rank whose transfer met no collision goes on to its next step
    while a collided one still moves, so the schedule played in time is never slower than one that
    waits for every rank at every round, and is faster where a round collided; without collisions
    (HDRM on BiGraph) the two agree."""
    topo = LeafSpine(4, 4, 4)
    schedule, hosts = place("pairwise", topo, "alltoall")
    conns = rank_connections(schedule, hosts, [7000] * len(hosts), 1, Draw(seed))
    placer = Placer(topo, plan(topo, "ecmp"), "hash")
    paths = {c: placer.path(c) for peers in conns.values() for cs in peers.values() for c in cs}
    timed, _ = predict.collective_time(topo, schedule, conns, 1 << 16, paths, 9000)
    barrier = barrier_model(topo, schedule, conns, 1 << 16, paths)
    assert timed < 0.95 * barrier
    eflops = BiGraph(2, 8)
    schedule, hosts = place("hdrm", eflops)
    conns = rank_connections(schedule, hosts, [7000] * len(hosts), 1)
    every = [c for peers in conns.values() for cs in peers.values() for c in cs]
    paths = predict.route_paths(eflops, plan(eflops), every)
    timed, _ = predict.collective_time(eflops, schedule, conns, 1 << 16, paths, 9000)
    assert timed == pytest.approx(barrier_model(eflops, schedule, conns, 1 << 16, paths), rel=1e-6)


def test_a_step_waits_for_its_floor_and_its_partner():
    """Latency floors add up along a rank's steps, and a rank whose partner is late waits for it."""
    topo = BiGraph(2, 8)
    schedule, hosts = place("hdrm", topo)
    conns = rank_connections(schedule, hosts, [7000] * len(hosts), 1)
    every = [c for peers in conns.values() for cs in peers.values() for c in cs]
    paths = predict.route_paths(topo, plan(topo), every)
    seconds, floors = predict.as_ranks_run(topo, schedule, conns, 16, paths, 9000, latency_s=1e-3)
    assert floors == pytest.approx(8e-3) and seconds == pytest.approx(8e-3, rel=1e-6)


def test_auto_chooses_recursive_doubling_for_small_messages_and_hd_for_large():
    """On BiGraph(2,8) with EFLOPS' mapping: at 1 KiB a step is all latency and recursive doubling
    takes half HD's steps; at 1 MiB it moves the whole vector every step and HD wins."""
    topo = BiGraph(2, 8)
    schedule, hosts = place("auto", topo)
    assert list(schedule.choices) == ["rdrm", "hdrm"]
    conns = rank_connections(list(schedule.choices.values()), hosts, [7000] * len(hosts), 1)
    every = [c for peers in conns.values() for cs in peers.values() for c in cs]
    paths = predict.route_paths(topo, plan(topo), every)
    chosen = {}
    for size in (1024, 1 << 20):
        models = modelled(topo, schedule.choices, conns, paths, size // 4, 9000, 450)
        chosen[size] = min(models, key=lambda n: models[n][0])
    assert chosen == {1024: "rdrm", 1 << 20: "hdrm"}
    assert models["rdrm"][0] > 1.8 * models["hdrm"][0]
    schedule, _ = place("auto", LeafSpine(3, 2, 4))              # 12 ranks: the Ring alone
    assert list(schedule.choices) == ["ring"]


def test_ranks_that_share_a_host_cost_the_model_nothing_between_them():
    eflops, shared = BiGraph(4, 8), BiGraph(1, 8)
    schedule, hosts = place("hd", eflops)
    hosts = on_shared_nics(eflops, shared, hosts)          # the 4 accelerators of a server on its one NIC
    conns = rank_connections(schedule, hosts, [7000 + r for r in range(len(hosts))], 1)
    every = [c for peers in conns.values() for cs in peers.values() for c in cs]
    paths = predict.route_paths(shared, plan(shared), every)
    assert all(paths[c] == [] for c in every if c.src == c.dst) and any(c.src == c.dst for c in every)
    seconds, _ = predict.collective_time(shared, schedule, conns, 1 << 18, paths, 9000)
    assert seconds > 0


@pytest.mark.parametrize("ratio,latency_bound,bound", [(1.4, True, False), (1.6, True, True),
                                                        (1.1, False, False), (1.2, False, True)])
def test_a_result_far_from_the_model_is_the_emulators(ratio, latency_bound, bound):
    cpu = {"emulator_bottleneck": False, "ovs_vswitchd_cores": 0.5, "machine_busy": 0.5}
    assert judge({"time_us": ratio * 1000}, cpu, (1e-3, latency_bound))["emulator_bottleneck"] == bound


@pytest.mark.parametrize("drops,saturated,congestion", [(0, False, False), (5, False, True), (5, True, False)])
def test_a_slow_row_with_switch_drops_and_a_free_cpu_is_congestion(drops, saturated, congestion):
    cpu = {"emulator_bottleneck": saturated, "ovs_vswitchd_cores": 0.5, "machine_busy": 0.5}
    verdict = judge({"time_us": 1200}, cpu, (1e-3, False), drops)
    assert verdict["congestion"] == congestion and verdict["emulator_bottleneck"] == (not congestion)
    assert flag(verdict) == ("LOSS" if congestion else "BOTTLENECK")
    assert not judge({"time_us": 1050}, cpu, (1e-3, False), drops)["congestion"]   # within the slack


@pytest.mark.parametrize("ratio,busiest,latency_bound,strained", [
    (1.08, 1.0, False, True),       # 0.93 of the model on a saturated core: HDRM's 0.90 of the link
    (1.08, 0.8, False, False),      # the same shortfall with a core to spare: link-bound, ok
    (1.03, 1.0, False, False),      # within 0.95 of the model: ok whatever the core
    (1.3, 1.0, True, False),        # latency-bound rows have their own slack
    (1.2, 1.0, False, False)])      # past the slack: the emulator's, not strained
def test_a_row_a_little_short_of_its_model_on_a_saturated_core_is_strained(ratio, busiest, latency_bound, strained):
    cpu = {"emulator_bottleneck": False, "ovs_vswitchd_cores": 1.0, "machine_busy": 0.6, "busiest_core": busiest}
    verdict = judge({"time_us": ratio * 1000}, cpu, (1e-3, latency_bound))
    assert verdict["strained"] == strained
    assert flag(verdict) == ("STRAINED" if strained else "BOTTLENECK" if ratio >= 1.2 and not latency_bound else "ok")
    said = describe_all([dict(verdict, algorithm="hdrm")], lambda r: r["algorithm"])
    assert ("perhaps the emulator's, in hdrm" in said) == strained


def test_training_metrics():
    # 256 KiB at 10 Mbit/s over 4 ranks: 0.31 s ideal; a share of 0.3 leaves 0.73 s of computation
    assert compute_seconds(256 << 10, 4, 1.25e6, 0.3) == pytest.approx(0.3146 * 0.7 / 0.3, rel=0.01)
    assert linear_ratio(180, 8, 100, 4) == pytest.approx(0.9)
    assert largest_faithful_ranks(10, 9000) == 32 and largest_faithful_ranks(4, 9000) == 64


def test_a_shared_nic_server_runs_the_ranks_of_its_four_accelerators():
    eflops, shared = BiGraph(4, 8), BiGraph(1, 8)
    _, hosts = place("hdrm", eflops)
    mapped = on_shared_nics(eflops, shared, hosts)
    assert sorted(mapped.count(h) for h in set(mapped)) == [4] * 8
    assert all(shared.hosts[s].server == eflops.hosts[e].server for s, e in zip(mapped, hosts))
