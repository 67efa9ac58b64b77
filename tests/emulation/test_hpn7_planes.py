"""Single- against dual-plane HPN7 under ECMP with the same hash at every switch, in the
configuration hpn7_planes runs (HPN's uplink capacity, round-robin bond, 4 connections per peer),
measured on every link, through the public API (testbed.emulate): the aggregation tier polarises
in single plane as the hashing model says it does for the draw, and not in dual plane."""
import random

import pytest

import testbed
from scenarios.hpn7_at_scale import with_idle_downlinks
from testbed import routing
from testbed.collectives.cross_segment import CrossSegmentJob
from testbed.fidelity import predict
from testbed.probes.loads import tier_loads
from testbed.routing.hashing import Draw, Placer

# the slow set (./setup.sh test -m slow): a polarising hash draw against the model, 30 s
pytestmark = pytest.mark.slow

STREAMS, MTU = 4, 9000


def predicted_agg(form, seed):
    """The model's agg->tor max/mean bytes for the scenario's flows on draw `seed`."""
    placer = Placer(form, routing.plan(form, "ecmp", "same"), "round-robin")
    groups, _ = CrossSegmentJob(form, range(form.servers), STREAMS).flows(Draw(seed, "round-robin"))
    flows = predict.flows(form, groups, {c: placer.path(c) for g in groups for c in g}, MTU)
    return tier_loads(form, with_idle_downlinks(form, flows["loads"], groups))["agg->tor"]["max_over_mean"]


def a_polarising_draw(forms, start):
    """The first draw from `start` on that the model says polarises single plane 1.5x or more over
    dual plane: chosen on the model, before anything is measured (199 of draws 0-199 qualify)."""
    for seed in range(start, start + 100):
        single, dual = (predicted_agg(f, seed) for f in forms)
        if single >= 1.5 * dual:
            return seed, single, dual
    raise AssertionError(f"no polarising draw in 100 from {start}: the model changed")


def test_single_plane_polarises_the_aggregation_tier_as_the_model_predicts(tmp_path):
    forms = testbed.plane_forms(testbed.fabric("hpn7:2,2,2,2"))      # hpn7_planes' default fabric
    start = random.randrange(1_000_000)
    seed, *model = a_polarising_draw(forms, start)
    measured = []
    for form in forms:
        with testbed.emulate(form, "ecmp", hash="same", folder=tmp_path / f"planes{form.planes}") as emu:
            flows = emu.flows(form.cross_segment_pairs(), seconds=3, streams=STREAMS,
                              draw=Draw(seed, "round-robin"))
        assert 0.9 <= flows.capture_over_port_counters <= 1.01, flows
        measured.append(flows.tiers["agg->tor"])
    said = f"draw {seed} (searched from {start}): agg->tor max/mean measured {measured}, model {model}"
    # The mechanism, in the tier where it acts: single plane's aggregation switches send a NIC's
    # traffic down one of its two ToRs. Measured bytes follow the model's rates to within TCP's
    # uneven sharing, which only adds to a tier's max/mean: measured over modelled was 1.08-1.33
    # on 12 random draws in a row (both forms, 2026-11-28) and 1.44 once in CI (draw 654559).
    assert measured[0] > 1.3 * measured[1], said
    for got, expected in zip(measured, model):
        assert 0.9 <= got / expected <= 1.6, said
