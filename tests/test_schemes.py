"""The load-balancing schemes as options of other scenarios (--streams, --routing, --uplink-ratio):
each is checked before anything is built and changes what the plan builds. No root."""
import pytest

import run_scenario
from scenarios import SCENARIOS
from testbed.topology import HPN7, LeafSpine


def plan(*argv):
    args = run_scenario.parser().parse_args(list(argv))
    return SCENARIOS[args.scenario].prepare(args)


def offered(name):
    """The scheme options a scenario's --help lists."""
    parser = run_scenario.parser()
    sub = next(a for a in parser._actions if a.dest == "scenario").choices[name]
    return {o for a in sub._actions for o in a.option_strings} & {"--streams", "--routing", "--uplink-ratio"}


def test_the_scenarios_ecmp_routes_offer_the_schemes_that_mean_something_there():
    every = {"--streams", "--routing", "--uplink-ratio"}
    assert offered("hpn7_planes") == offered("hpn7_rails") == every
    assert offered("ecmp_collisions") == offered("training_scaling") == {"--routing", "--uplink-ratio"}
    assert offered("dual_tor_failover") == {"--streams"}
    assert offered("multi_job") == {"--streams", "--uplink-ratio"}        # its --schemes compares routings
    assert offered("bigraph_allreduce") == offered("collectives") == set()     # deterministic by design


@pytest.mark.parametrize("name", ["hpn7_planes", "hpn7_rails"])
def test_the_plane_comparisons_run_both_forms_under_the_routing_and_uplinks_asked_for(name):
    default = plan(name)
    assert default.routing == "ecmp" and [f.aggs for f in default.forms] == [2, 2]
    got = plan(name, "--routing", "planned", "--uplink-ratio", "2", "--streams", "2")
    assert got.routing == "planned" and got.streams == 2
    for before, after in zip(default.forms, got.forms):
        assert after.aggs == before.aggs // 2 and after.uplink_ratio == 2 * before.uplink_ratio
        assert after.uplink_capacity == pytest.approx(before.uplink_capacity)
        assert after.planes == before.planes


def test_ecmp_collisions_changes_the_clos_only():
    got = plan("ecmp_collisions", "--routing", "pinned", "--uplink-ratio", "2")
    clos, bigraph = got.cases
    assert (clos.label, clos.routing, clos.topo.spines, clos.topo.uplink_ratio) == ("clos-pinned-hd", "pinned", 2, 2)
    assert bigraph.routing == "deterministic"


def test_training_scaling_changes_the_systems_ecmp_routes_only():
    got = plan("training_scaling", "--ranks", "8,16", "--systems", "bigraph-hdrm,clos-ecmp-hd",
               "--routing", "pinned", "--uplink-ratio", "2")
    modes = {(system, n): (type(topo), mode) for system, n, topo, mode, *_ in got.points}
    assert modes["bigraph-hdrm", 8][1] == "deterministic"
    assert modes["clos-ecmp-hd", 16] == (LeafSpine, "pinned")
    clos = next(topo for system, n, topo, *_ in got.points if system == "clos-ecmp-hd")
    assert clos.spines == 2 and clos.uplink_ratio == 2 and "pinned" in got.schemes


def test_the_dual_plane_fabric_keeps_its_planes_and_tors_with_faster_uplinks():
    dual = plan("hpn7_planes", "--uplink-ratio", "2").forms[1]
    assert isinstance(dual, HPN7) and (dual.planes, dual.tors) == (2, 2)


def test_multi_job_gives_every_job_the_streams_on_the_faster_uplinks():
    got = plan("multi_job", "--streams", "2", "--uplink-ratio", "2")
    assert [job.streams for job in got.jobs] == [2, 2] and got.topo.aggs == 1 and got.topo.uplink_ratio == 2
