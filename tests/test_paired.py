"""Paired comparisons: intervals, gains and the lines that report them, on numbers whose answers
are known. No root."""
import math

import pytest

from testbed.experiments.trials import model_lines
from testbed.report.paired import Comparison, gains, interval, percent, trial_order


def test_the_interval_is_students_t_around_the_mean():
    e = interval([1.0, 2.0, 3.0])           # sd 1, t(0.975, 2) = 4.3027
    assert (e.mean, e.n) == (2.0, 3)
    assert e.lo == pytest.approx(2 - 4.302653 / math.sqrt(3)) and e.hi == pytest.approx(2 + 4.302653 / math.sqrt(3))
    assert not e.excludes(0.0) and e.excludes(5.0)
    alike = interval([4.0, 4.0, 4.0])        # no spread seen: no interval, and no difference shown
    assert math.isnan(alike.lo) and not alike.excludes(0.0)
    one = interval([0.5])
    assert one.mean == 0.5 and math.isnan(one.lo) and one.to_dict()["lo"] is None
    assert interval([None, float("nan")]).n == 0


def test_an_interval_stays_inside_what_the_figure_can_be_and_trials_alike_show_nothing():
    """The defects: congestion printed a queue of 211.83 [-466.89, 890.55] KB, a gain of -22% [-273%,
    +229%], and 270.42 [270.42, 270.42] KB for three trials whose frame-quantised medians read alike."""
    queues = Comparison("queue (KB)", ("DCTCP", "HULL"), [(270.42, 527.3), (270.42, 54.1), (270.42, 54.1)])
    assert queues.b.lo >= 54.1 and queues.gain.lo >= -1.0           # the bootstrap's, inside the trials'
    assert "DCTCP 270.42 (all 3 alike)" in queues.line()
    steady = Comparison("x", ("a", "b"), [(1.0, 1.1), (1.0, 1.1), (1.0, 1.1)])
    assert "all alike: no interval, no difference shown" in steady.line() and not steady.gain.excludes(0.0)
    unbounded = Comparison("y", ("a", "b"), [(1.0, 3.0), (2.0, 1.0), (1.0, 1.5)], by="difference")
    assert unbounded.gain.lo < -1.0                                  # a difference may be any number: Student's t


def test_gains_are_per_pair_ratios_and_skip_what_was_not_measured():
    assert gains([(1.0, 2.0), (2.0, 3.0), (0.0, 1.0), (None, 1.0)]) == [1.0, 0.5]


def test_a_comparison_reports_both_forms_and_the_gain_with_its_interval():
    cmp = Comparison("goodput/NIC", ("single plane", "dual plane"), [(0.40, 0.80), (0.50, 0.75), (0.45, 0.81)])
    gain = cmp.gain
    assert gain.mean == pytest.approx((1.0 + 0.5 + 0.8) / 3) and gain.excludes(0.0)
    line = cmp.line()
    assert line.startswith("goodput/NIC: single plane 0.45 [")
    assert "dual plane +77% [" in line and "(3 paired trials; the 95% interval excludes zero)" in line
    noisy = Comparison("x", ("a", "b"), [(1.0, 1.2), (1.0, 0.7), (1.0, 1.1)])
    assert "includes zero: no difference shown" in noisy.line()
    assert noisy.to_dict()["gain_excludes_zero"] is False
    assert percent(interval([0.1])) == "+10%"


def test_a_zero_baseline_is_never_dropped_silently():
    """The defect: hpn7_planes printed a queue gain "+28667% (3 paired trials)" out of 8, because
    every trial whose single-plane queue was 0 fell out of the ratio."""
    pairs = [(0.0, 300.0), (0.0, 10.0), (200.0, 0.0), (100.0, 50.0)]
    ratio = Comparison("queue", ("single", "dual"), pairs)
    assert ratio.gain.n == 2 and [t for t, _ in ratio.left_out] == [0, 1]
    assert "2 of 4 paired trials (2 left out: trial 0: single was 0, a ratio's baseline" in ratio.line()
    difference = Comparison("queue", ("single", "dual"), pairs, digits=0, by="difference")
    assert difference.gain.n == 4 and difference.left_out == []
    assert difference.gain.mean == pytest.approx((300 + 10 - 200 - 50) / 4)
    assert "dual +15 [" in difference.line() and "(difference) (4 paired trials;" in difference.line()
    row = difference.row(("single", "dual"))
    assert row["trials"] == row["paired"] == 4 and row["by"] == "difference" and row["left_out"] == ""
    assert ratio.to_dict()["left_out"][0] == {"trial": 0, "why": "single was 0, a ratio's baseline"}
    with pytest.raises(ValueError):
        Comparison("x", ("a", "b"), pairs, by="quotient")


def test_trials_alternate_which_form_runs_first():
    assert [trial_order("ab", t) for t in range(3)] == [["a", "b"], ["b", "a"], ["a", "b"]]


def test_hpn7_planes_pairs_each_trials_forms_and_reads_the_model_by_its_median():
    from scenarios import hpn7_planes
    rows = []
    for trial, (single, dual) in enumerate([(0.40, 0.80), (0.50, 0.75), (0.45, 0.81)]):
        for planes, result, model in ((1, single, 0.80), (2, dual, 0.95 + 0.01 * trial)):
            rows.append({"workload": "flows", "trial": trial, "planes": planes, "result": result,
                         "form": hpn7_planes.FORMS[planes - 1],
                         "measured_over_model": model, "agg->tor_max_over_mean": 3.0 / planes,
                         "nic_busier_share": 0.5 + 0.1 / planes, "mean_queue_bytes": 1000 * planes,
                         "as_placed": 16, "connections": 16})
    rows.append(dict(rows[0], trial=3))                       # a trial with one form only: kept, said
    compared = {(w, k): c for w, k, c in hpn7_planes.comparisons(rows)}
    flows = compared["flows", "result"]
    assert flows.pairs == [(0.40, 0.80), (0.50, 0.75), (0.45, 0.81), (0.40, None)] and flows.gain.excludes(0.0)
    assert "3 of 4 paired trials (1 left out: trial 3: no dual plane value)" in flows.line()
    queue = compared["flows", "mean_queue_bytes"]
    assert queue.by == "difference" and queue.gain.mean == pytest.approx(1000)
    assert ("allreduce", "result") not in compared              # a workload not run is not compared
    lines = model_lines(rows, hpn7_planes.FORMS, name=lambda r: r["workload"])
    assert "flows single plane: measured/model median 0.80" in lines[0] and "below the model" in lines[0]
    assert "flows dual plane: measured/model median 0.96" in lines[1] and "within 10%" in lines[1]
    assert lines[-1] == "  paths as the model hashes them: 112 of 112 connections over every trial"


def test_hpn7_rails_compares_each_case_by_the_mean_of_its_collectives():
    from scenarios import hpn7_rails
    rows = [{"trial": t, "planes": p, "case": case, "busbw_over_nic": value * p * (1 + k), "collective": k}
            for t in range(3) for p in (1, 2) for case, value in (("segment-local", 0.4), ("cross-segment", 0.2),
                                                                  ("multi-allreduce", 0.1 + 0.01 * t))
            for k in range(2 if case == "multi-allreduce" else 1)]
    compared = hpn7_rails.comparisons(rows)
    multi = compared["multi-allreduce"]
    assert multi.pairs[1] == (pytest.approx(0.165), pytest.approx(0.33)) and multi.gain.mean == pytest.approx(1.0)
    assert compared["cross/local 1"].gain.mean == pytest.approx(-0.5)


def test_two_runs_pair_row_by_row_on_their_key(tmp_path):
    """bench.paired_runs: rows that agree on the key pair up, per group; a row of one run only is
    left out."""
    from bench.paired_runs import main, paired
    head = "case,trial,busbw_over_link\n"
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "t.csv").write_text(head + "clos,0,0.5\nclos,1,0.6\nclos,2,0.4\nbig,0,0.98\nbig,1,0.97\n")
    (tmp_path / "b" / "t.csv").write_text(head + "clos,0,0.4\nclos,1,0.5\nclos,2,0.3\nbig,0,0.98\nbig,9,0.1\n")
    import csv
    rows = [list(csv.DictReader((tmp_path / side / "t.csv").read_text().splitlines())) for side in "ab"]
    found = paired(*rows, ["case", "trial"], "busbw_over_link")
    pairs, e = found["clos"]
    assert len(pairs) == 3 and e.mean == pytest.approx(0.1) and e.hi - e.lo == pytest.approx(0, abs=1e-9)
    assert [len(found["big"][0])] == [1]
    assert main([str(tmp_path / "a"), str(tmp_path / "b"), "--file", "t.csv", "--key", "case,trial",
                 "--figure", "busbw_over_link"]) == 0
    with pytest.raises(SystemExit, match="no column 'nope'"):
        main([str(tmp_path / "a"), str(tmp_path / "b"), "--file", "t.csv", "--key", "case,nope", "--figure", "x"])


def test_a_gain_alike_in_every_draw_is_placed_against_the_papers_range_by_its_value():
    """The defect: hpn7_at_scale printed "the model's gain +100% is its interval meets the paper's
    range" where every draw gave +100% (no interval: its ends are nan)."""
    from scenarios.hpn7_at_scale import agreement
    alike = Comparison("allreduce", ("single plane", "dual plane"), [(0.5, 1.0)] * 4)
    assert math.isnan(alike.gain.lo) or alike.gain.lo == alike.gain.hi
    assert "+100% is above the paper's range" in agreement("allreduce", alike)
    inside = Comparison("allreduce", ("single plane", "dual plane"), [(1.0, 1.55), (1.0, 1.6), (1.0, 1.58)])
    assert "is within the paper's range" in agreement("allreduce", inside)
