"""The fault benchmark's data and logic, without root: a trace written and read back gives the
detector the windows it was written from; a trace of another version or with a changed table is
refused in one line; detectors cannot reach labels; the baselines find what they are built to find
on a made-up job; the scorer judges alarms one by one with known answers."""
import json
import random
import subprocess
import sys

import pyarrow.parquet as pq
import pytest

from testbed.errors import TestbedError
from testbed.faultbench import labels, score, trace
from testbed.faultbench.detectors import DETECTORS, Alarm
from testbed.faultbench.detectors.drift import Drift
from testbed.faultbench.detectors.greyhound import Greyhound
from testbed.faultbench.detectors.minder import Minder
from testbed.fidelity.windows import window_of
from testbed.topology import LeafSpine

RANKS, STEPS, DURATION = 4, 6, 40.0


def made_up_job(slow_rank=None, slow_from=20.0, slow_to=28.0, extra=0.05, seed=1):
    """A ring of 4 ranks on LeafSpine(2,2,2), each step 30-34 ms, a rank's step ending once both
    its own send and its sender's have gone; between slow_from and slow_to, slow_rank computes
    `extra` s before each send (the others wait for it, as a ring does)."""
    rng, t, iterations = random.Random(seed), 0.0, []
    while t < DURATION:
        start = t
        compute = [extra if r == slow_rank and slow_from <= t < slow_to else 0.0 for r in range(RANKS)]
        ready, steps = [start] * RANKS, [[] for _ in range(RANKS)]
        for _ in range(STEPS):
            d = 0.03 + rng.uniform(0, 0.004)
            sent = [ready[r] + compute[r] for r in range(RANKS)]
            ready = [max(sent[r], sent[(r - 1) % RANKS]) + d for r in range(RANKS)]
            for r in range(RANKS):
                steps[r].append([sent[r], ready[r], (r - 1) % RANKS, (r + 1) % RANKS, False])
        iterations.append({"start": start, "end": max(ready),
                           "timing": [{"start": start, "steps": steps[r], "retrans": []} for r in range(RANKS)]})
        t = max(ready) + 0.001
    ports = ["tb1-eth1", "tb2-eth3"]
    queues = {port: [(k * 0.02, 0, 0, 0, k * 1500) for k in range(int(DURATION / 0.02))] for port in ports}
    edges = {f"h{r}-eth0": [(k * 0.25, 0, 0, 0, 0) for k in range(int(DURATION / 0.25))] for r in range(RANKS)}
    return iterations, queues, edges


@pytest.fixture
def written(tmp_path):
    topo = LeafSpine(2, 2, 2)
    iterations, queues, edges = made_up_job(slow_rank=2)
    events = [(12.5, "tb3", 1, False), (13.0, "tb3", 1, True)]
    paths = {(0, 1): frozenset(topo.links[:2]), (1, 2): frozenset(topo.links[2:5])}
    folder = trace.write(tmp_path / "trace0", topo=topo, cadence=1.0, baseline=4, duration=DURATION,
                         job={"algorithm": "ring", "collective": "allreduce", "hosts": ["h0", "h1", "h2", "h3"],
                              "bytes": 1 << 18, "routing": "ecmp"},
                         iterations=iterations, queues=queues, edges=edges, marks={}, events=events, paths=paths)
    return folder, (iterations, queues, edges, events, paths, topo)


def test_a_trace_read_back_gives_the_windows_it_was_written_from(written):
    folder, (iterations, queues, edges, events, paths, topo) = written
    read = trace.read(folder)
    for span in [(0.0, 1.0), (12.0, 13.0), (20.5, 21.5), (39.0, 40.0)]:
        assert read.window(*span) == window_of(iterations, queues, edges, {}, events, *span)
    assert read.paths == paths and [link.ends() for link in read.topo.links] == [link.ends() for link in topo.links]
    # what pandas, polars or DuckDB read: one table per signal
    steps = pq.read_table(folder / "steps.parquet")
    assert steps.num_rows == len(iterations) * RANKS * STEPS and "rendezvous" in steps.schema.names


def test_a_trace_of_another_version_or_with_a_changed_table_is_refused_in_one_line(written):
    folder, _ = written
    manifest = json.loads((folder / trace.MANIFEST).read_text())
    (folder / trace.MANIFEST).write_text(json.dumps(dict(manifest, version=trace.VERSION + 1)))
    with pytest.raises(TestbedError, match="version") as e:
        trace.read(folder)
    assert "\n" not in str(e.value)
    (folder / trace.MANIFEST).write_text(json.dumps(manifest))
    data = (folder / "steps.parquet").read_bytes()
    (folder / "steps.parquet").write_bytes(data[: len(data) // 2])        # truncated
    with pytest.raises(TestbedError, match="truncated") as e:
        trace.read(folder)
    assert "\n" not in str(e.value)
    with pytest.raises(TestbedError, match="not a trace"):
        trace.read(folder.parent)


def test_detectors_cannot_reach_labels(written, tmp_path):
    """The detectors' package imports no labels, and deleting a trace's labels changes no alarm."""
    imported = subprocess.run([sys.executable, "-c", "import sys, testbed.faultbench.detectors; "
                               "print('testbed.faultbench.labels' in sys.modules)"], capture_output=True, text=True)
    assert imported.stdout.strip() == "False", imported.stderr
    folder, _ = written
    beside = labels.write(folder.parent / "trace0-labels.parquet", [])
    before = {name: detector().detect(trace.read(folder)) for name, detector in DETECTORS.items()}
    beside.unlink()
    assert {name: detector().detect(trace.read(folder)) for name, detector in DETECTORS.items()} == before


def test_greyhound_alarms_on_a_slowdown_names_its_rank_and_is_silent_on_a_steady_job(written, tmp_path):
    folder, _ = written
    alarms = Greyhound().detect(trace.read(folder))
    assert len(alarms) == 1 and 20.0 <= alarms[0].time <= 22.0, alarms
    assert (alarms[0].kind, alarms[0].place) == ("rank-slow", "rank 2")      # localised: its own delay grew most
    iterations, queues, edges = made_up_job()
    steady = trace.write(tmp_path / "steady", topo=LeafSpine(2, 2, 2), cadence=1.0, baseline=4, duration=DURATION,
                         job={"hosts": ["h0", "h1", "h2", "h3"]}, iterations=iterations, queues=queues, edges=edges,
                         marks={}, events=[], paths=None)
    assert Greyhound().detect(trace.read(steady)) == []


def test_river_s_drift_test_alarms_once_on_a_slowdown_names_its_rank_and_is_silent_on_a_steady_job(written,
                                                                                                       tmp_path):
    folder, _ = written
    alarms = Drift().detect(trace.read(folder))
    assert [(a.kind, a.place) for a in alarms] == [("rank-slow", "rank 2")], alarms
    assert 20.0 <= alarms[0].time <= 22.0
    iterations, queues, edges = made_up_job()
    steady = trace.write(tmp_path / "steady", topo=LeafSpine(2, 2, 2), cadence=1.0, baseline=4, duration=DURATION,
                         job={"hosts": ["h0", "h1", "h2", "h3"]}, iterations=iterations, queues=queues, edges=edges,
                         marks={}, events=[], paths=None)
    assert Drift().detect(trace.read(steady)) == []


def test_minder_names_the_rank_that_departs_from_its_peers(written):
    folder, _ = written
    alarms = Minder().detect(trace.read(folder))
    assert [(a.kind, a.place) for a in alarms] == [("rank-slow", "rank 2")], alarms
    assert 20.0 < alarms[0].time <= 24.0


LABELS = [  # two trials: a slowed link from 10 to 15, then none
    {"trial": 0, "trial_start": 5.0, "trial_end": 20.0, "kind": "slow-link", "place": "leaf0-spine1",
     "magnitude": 0.4, "start": 10.0, "end": 15.0, "expected_kind": "link-slow", "expected_place": "leaf0-spine1",
     "busbw_before": 1.0, "busbw_during": 0.5, "second_job_s": None, "straggler": None},
    {"trial": 1, "trial_start": 20.0, "trial_end": 56.0, "kind": "none", "place": "", "magnitude": None,
     "start": None, "end": None, "expected_kind": "none", "expected_place": "", "busbw_before": 1.0,
     "busbw_during": 1.0, "second_job_s": None, "straggler": None},
]


def test_the_scorer_judges_each_alarm_and_counts_false_ones_over_fault_free_time(tmp_path):
    written = labels.read(labels.write(tmp_path / "l.parquet", LABELS))
    alarms = [Alarm(3.0, "rank-slow", "rank 1", "before the first trial: left out"),
              Alarm(11.0, "rank-slow", "rank 1", "during the fault, naming another place: false"),
              Alarm(12.0, "link-slow", "spine1-leaf0", "right, the link's ends in the other order"),
              Alarm(16.5, "link-slow", "leaf0-spine1", "right again, within the grace"),
              Alarm(30.0, "link-down", "leaf1-spine0", "fault-free: false")]
    verdicts = [v for _, v, _ in score.judge(alarms, written)]
    assert verdicts == ["outside", "false", "right", "right", "false"]
    s = score.score(alarms, written, iteration_ends=[10.5, 11.5, 12.5])
    figures = score.figures(s)["overall"]
    assert figures["precision"][0] == pytest.approx(2 / 4) and figures["recall"][0] == 1.0
    assert s["faults"][0]["detect_s"] == pytest.approx(2.0) and s["faults"][0]["detect_iterations"] == 2
    # fault-free: 5 s before the fault and 3 s after its grace, and the 36 s trial: one false alarm in it
    assert s["fault_free_s"] == pytest.approx(44.0)
    assert figures["false alarms per hour"] == pytest.approx(3600 / 44.0)


def test_labels_of_another_form_are_refused_in_one_line(tmp_path):
    bad = tmp_path / "bad.parquet"
    bad.write_text("not parquet")
    with pytest.raises(TestbedError, match="not a labels file") as e:
        labels.read(bad)
    assert "\n" not in str(e.value)


def test_fitting_chooses_the_grid_point_that_scores_best_on_train(written, tmp_path):
    """A detector's parameters are chosen on the train split alone, by its alarm-level F1 there."""
    from testbed.faultbench.detectors import Rules
    from testbed.faultbench.fit import fit
    folder, _ = written
    slowed = dict(LABELS[0], trial=0, trial_start=5.0, trial_end=DURATION, kind="slow-rank", place="2",
                  magnitude=0.5, start=20.0, end=28.0, expected_kind="rank-slow", expected_place="rank 2")
    train = [(trace.read(folder), [slowed])]
    params, f1 = fit(Minder, train)
    assert set(params) == set(Minder.GRID) and f1 == 1.0
    assert Minder(**params).detect(train[0][0])[0].place == "rank 2"
    assert fit(Rules, train) == ({}, None) and fit(Minder, []) == ({}, None)


def test_the_default_benchmark_holds_every_kind_a_straggler_two_at_once_and_a_quarter_hour_fault_free():
    import run_scenario
    from scenarios import faultbench
    plan = faultbench.prepare(run_scenario.parser().parse_args(["faultbench", "--seed", "5"]))
    assert set(plan.splits) == {"train", "test"} and len(plan.splits["test"].runs) == 3
    for name, split in plan.splits.items():
        trials = [t for run in split.runs for t in run.trials]
        assert all(run.straggler for run in split.runs)
        assert sum(t.also is not None for t in trials) == 2 * len(split.runs)
        assert sum(t.drift for t in trials) == len(split.runs) * (270 if name == "test" else 60)
    kinds = {f.kind for run in plan.splits["test"].runs for t in run.trials for f in (t.fault, t.also) if f}
    assert "loss" in kinds and {"slow-rank", "hang-rank", "slow-link"} <= kinds
    assert sum(t.drift for run in plan.splits["test"].runs for t in run.trials) >= 13 * 60   # and the trials' own
