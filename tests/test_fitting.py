"""A default rate fitted to the machine (no root): lowered to what the calibration says the datapath
forwards faithfully, said in one note, never where the user gave --rate; the record's command reruns
the rate that ran, and its fingerprint is current at HEAD."""
import pytest

import run_scenario
from scenarios import SCENARIOS
from testbed.emulation import capacity, fitting
from testbed.experiments.fingerprint import changed, of_run


@pytest.fixture
def calibrated_at_320(monkeypatch, tmp_path):
    monkeypatch.setenv("AI_TESTBED_CALIBRATION", str(tmp_path / "calibration.json"))
    monkeypatch.setattr(capacity, "running_datapath", lambda: "user")
    capacity.store({(9000, "none"): 320}, rows=[])


def test_two_figures_down():
    assert fitting.two_figures_down(17.78) == 17 and fitting.two_figures_down(8.888) == 8.8
    assert fitting.two_figures_down(123) == 120 and fitting.two_figures_down(20) == 20


def test_congestion_s_default_is_lowered_to_fit_a_machine_calibrated_at_320(calibrated_at_320):
    args = run_scenario.parser().parse_args(["congestion"])
    plan = SCENARIOS["congestion"].prepare(args)
    offered = max(len(t.nic_ports()) * t.rate for t in plan.fabrics)
    assert offered > 320                                           # 36 NIC ports at 20 Mbit/s
    rate = fitting.fitted_rate(plan.fabrics, args.rate, plan.mtu, "user", "none")
    assert rate == 8.8 and all(len(t.nic_ports()) * rate <= 320 for t in plan.fabrics)
    said = fitting.note(args.rate, rate, plan.fabrics, plan.mtu, "user", "none")
    assert "--rate 8.8 instead" in said and "about 320 Mbit/s" in said and "\n" not in said


def test_a_load_that_fits_and_a_rate_given_are_left_as_they_are(calibrated_at_320):
    plan = SCENARIOS["fabric_check"].prepare(run_scenario.parser().parse_args(["fabric_check"]))
    assert fitting.fitted_rate(plan.fabrics, 10, plan.mtu, "user", "none") is None
    assert fitting.given(["congestion", "--rate", "20"]) and fitting.given(["congestion", "--rate=20"])
    assert not fitting.given(["congestion", "--rates", "1"])


def test_a_fitted_run_s_record_reruns_its_rate_and_stays_current(calibrated_at_320):
    from testbed.experiments import pages
    args = run_scenario.parser().parse_args(["congestion"])
    args.rate = 8.8
    record = {"scenario": "congestion", "argv": ["congestion"], "seed": None, "fitted_rate": 8.8,
              "fingerprint": of_run(SCENARIOS["congestion"], args)}
    parts, why, older = pages.staleness(record, SCENARIOS, run_scenario.parser())
    assert parts == [] and older == []
    default = of_run(SCENARIOS["congestion"], run_scenario.parser().parse_args(["congestion"]))
    assert changed(record["fingerprint"], default) != []              # the default rate is another run
