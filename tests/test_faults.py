"""Faults as text, their places on a fabric and their undoing, without root; the scenario's draw
of places and its scoring."""
import random
import time

import pytest

from scenarios import fault_localisation as fl
from testbed.emulation import faults
from testbed.emulation.controller import port_events
from testbed.emulation.events import Event, Timeline
from testbed.errors import TestbedError
from testbed.experiments import fault_trials
from testbed.fidelity.diagnosis import KINDS as FOUND_KINDS
from testbed.fidelity.diagnosis import Finding
from testbed.report import fault_scores
from testbed.report.paired import wilson
from testbed.topology import HPN7, BiGraph, LeafSpine


def test_a_fault_reads_kind_place_how_and_when():
    f = faults.Fault.parse("slow-link:U0-L1:0.25@8", lasting=5)
    assert (f.kind, f.where, f.how, f.at, f.lasting, f.iteration) == ("slow-link", "U0-L1", 0.25, 8.0, 5, None)
    assert faults.Fault.parse("hang-rank:3@5it").iteration == 5
    assert faults.Fault.parse("flap:leaf0-spine1:0.5@2s").at == 2.0
    assert faults.Fault.parse("port-down:h3:1").where == "h3:1"
    assert "at 0.25 of its rate" in f.describe()
    for bad, message in (("melt:U0", "unknown fault"), ("slow-link:U0-L1", "write slow-link:A-B:FRACTION"),
                         ("slow-link:U0-L1:x", "should be a number"), ("flap:U0-L1:0", "period must be positive"),
                         ("hang-rank:1@0it", "1 or later")):
        with pytest.raises(TestbedError, match=message):
            faults.Fault.parse(bad)


def test_a_fault_is_checked_against_the_fabric_and_the_job():
    topo = LeafSpine(2, 2, 2)
    faults.Fault.parse("link-down:leaf0-spine1").check(topo, 4)
    faults.Fault.parse("switch-down:spine0").check(topo, 4)
    assert faults.find_link(topo, "h0-leaf0") is not None
    for text, message in (("link-down:leaf0-leaf1", "no link between leaf0 and leaf1"),
                          ("switch-down:h0", "h0 is no switch"), ("slow-rank:4:0.1", "ranks are 0 to 3"),
                          ("port-down:h0:1", "port-down takes HOST:PORT")):
        with pytest.raises(TestbedError, match=message):
            faults.Fault.parse(text).check(topo, 4)
    hpn = HPN7(2, 2, 2, 2)
    link = faults.port_link(hpn, "h0:1")
    assert "h0" in (link.a, link.b) and any(n in hpn.switches for n in (link.a, link.b))


def test_loss_without_netem_is_dropped_where_a_switch_sends_or_refused_in_one_line(monkeypatch):
    topo = LeafSpine(2, 2, 2)
    monkeypatch.setattr(faults, "netem_available", lambda: False)
    monkeypatch.setattr(faults.drops, "available", lambda: True)
    faults.Fault.parse("loss:leaf0-spine1:0.02").check(topo, 4)
    with pytest.raises(TestbedError, match="only a link between switches loses packets"):
        faults.Fault.parse("loss:h0-leaf0:0.02").check(topo, 4)
    links = [faults.find_link(topo, "h0-leaf0"), faults.find_link(topo, "leaf0-spine1")]
    for seed in range(5):
        fault = fault_trials.place_fault(faults.Fault("loss", "", 0.02, 0, 5), topo, links, random.Random(seed), 4)
        assert fault.where == "leaf0-spine1"
    monkeypatch.setattr(faults.drops, "available", lambda: False)
    with pytest.raises(TestbedError, match="neither: run ./setup.sh"):
        faults.Fault.parse("loss:leaf0-spine1:0.02")
    with pytest.raises(TestbedError, match="neither: run ./setup.sh"):
        fl.kinds_of("slow-link,loss")


def test_a_loss_rule_is_one_numgen_drop_on_the_port_s_egress(monkeypatch):
    scripts = []
    monkeypatch.setattr(faults.drops, "_nft", lambda pid, script, check=True: scripts.append((pid, script)))
    faults.drops.set_drop(None, "tb1-eth3", 0.025)
    faults.drops.set_drop(4242, "tb1-eth3", 0.0)
    (pid, add), (pid2, remove) = scripts
    assert pid is None and pid2 == 4242
    assert 'hook egress device "tb1-eth3"' in add and "numgen random mod 1000000 < 25000 counter drop" in add
    assert "delete chain netdev ai_testbed_loss tb1_eth3" in remove


def test_a_cpu_share_becomes_a_cfs_period_and_quota_the_kernel_takes():
    assert faults.CgroupLimit.bandwidth(0.25) == (100_000, 25_000)
    assert faults.CgroupLimit.bandwidth(0.004) == (250_000, 1000)       # a longer period, not a quota below 1 ms
    assert faults.CgroupLimit.bandwidth(faults.CgroupLimit.MIN_SHARE) == (1_000_000, 1000)


def test_events_still_to_come_that_undo_run_when_the_block_ends():
    done = []
    events = [Event(0.0, lambda: done.append("down"), "down", [], False),
              Event(30.0, lambda: done.append("up"), "up", [], True),
              Event(40.0, lambda: done.append("down again"), "down again", [], False)]
    with Timeline(events) as timeline:
        time.sleep(0.2)
    assert done == ["down", "up"] and [d.what for d in timeline.done] == ["down", "up"]


def test_the_controllers_port_events_are_read_from_its_log(tmp_path):
    log = tmp_path / "controller.log"
    log.write_text("dpid 1: 4 route rules, 0 select groups installed\n"
                   "port tb1:3 down at 1764110000.125: 1 links down; 4 rules changed on 2 switches in 1.5 ms\n"
                   "port tb1:3 up at 1764110002.500: 0 links down; 4 rules changed on 2 switches in 1.2 ms\n")
    assert port_events(log) == [(1764110000.125, "tb1", 3, False), (1764110002.5, "tb1", 3, True)]
    assert port_events(tmp_path / "none.log") == []


def test_random_faults_are_placed_where_the_job_is_and_scored_by_place():
    topo = BiGraph(2, 8)
    links = [topo.link_at("tb1", 1), topo.link_at("tb1", 3), topo.link_at("tb5", 1)]
    rng = random.Random(1)
    for kind in ("slow-link", "link-down", "flap", "switch-down", "slow-rank", "hang-rank"):
        fault = fault_trials.place_fault(faults.Fault(kind, "", 0.3, 0, 5), topo, links, rng, 16)
        fault.check(topo, 16)
        expected = fault_trials.expected_place(fault, topo)
        if kind in ("slow-link", "link-down", "flap"):
            ends = [{topo.label(n) if n in topo.switches else n for n in (link.a, link.b)} for link in links]
            assert expected in ends
        if kind == "switch-down":
            assert expected <= {topo.label(n) for link in links for n in (link.a, link.b) if n in topo.switches}
    found = Finding("link-slow", "L1-U0", 0.9, "")
    injected = faults.Fault.parse("slow-link:U0-L1:0.3")
    assert fault_trials.found_place(found) == fault_trials.expected_place(injected, topo)
    hpn = HPN7(2, 2, 2, 2)
    host_links = [link for link in hpn.links if "h0" in (link.a, link.b)]
    fault = fault_trials.place_fault(faults.Fault("port-down", "", 0, 0, 5), hpn, host_links, rng, 8)
    assert fault.where in ("h0:0", "h0:1") and len(fault_trials.expected_place(fault, hpn)) == 2


def test_a_fault_placed_where_the_job_never_goes_is_run_and_said_to_be_off_its_paths():
    topo = BiGraph(2, 8)
    links = [topo.link_at("tb1", 1), topo.link_at("tb1", 3), topo.link_at("tb5", 1)]
    on, off = faults.Fault.parse("slow-link:U0-L0:0.3"), faults.Fault.parse("slow-link:U3-L3:0.3")
    assert topo.label("tb1") == "U0" and fault_trials.on_paths(on, topo, links)
    assert not fault_trials.on_paths(off, topo, links)
    assert fault_trials.on_paths(faults.Fault.parse("switch-down:L0"), topo, links)
    assert fault_trials.on_paths(faults.Fault.parse("hang-rank:3:2"), topo, links)
    row = {"fabric": topo.name, "trial": 0, "injected": "slow-link", "where": "U3-L3", "how": 0.3, "found": "none",
           "found_where": "", "confidence": 1.0, "detect_s": None, "correct": False, "during_over_before": 1.0,
           "emulator_bottleneck": False, "off_paths": ["slow-link U3-L3"]}
    assert fault_scores.trial_line(row).endswith("not on the job's paths")


def test_trials_cycle_through_the_kinds_each_fabric_has():
    class Args:
        trials, fault_free, hang_for, fault_for, design_trials, rate, queue = 7, 3, 2.0, 5.0, 3, 10.0, 100
        two_at_once = 0
    rng = random.Random(3)
    bigraph = fl.draw_trials(BiGraph(2, 8), list(fl.KINDS), Args, rng)
    hpn = fl.draw_trials(HPN7(2, 2, 2, 2), list(fl.KINDS), Args, rng)
    kinds = lambda trials: [t.fault.kind for t in trials if t.fault]
    assert "port-down" not in kinds(bigraph) and len(set(kinds(bigraph))) == 6 and len(set(kinds(hpn))) == 7
    assert sum(t.fault is None for t in bigraph + hpn) == 6
    assert all(t.fault.lasting == 5.0 for t in bigraph + hpn if t.fault and t.fault.kind != "hang-rank")
    # magnitudes across where detection stops: hangs 0.5 s to --hang-for, links 0.3-0.95, ranks 0.4-0.9
    assert all(0.5 <= t.fault.lasting <= 2.0 for t in bigraph + hpn if t.fault and t.fault.kind == "hang-rank")
    assert all(0.3 <= t.fault.how <= 0.95 for t in bigraph + hpn if t.fault and t.fault.kind == "slow-link")
    assert all(0.4 <= t.share_of_use <= 0.9 for t in bigraph + hpn if t.fault and t.fault.kind == "slow-rank")


def test_two_faults_at_once_are_of_two_kinds_at_places_apart():
    """--two-at-once: the first N faulty trials get the next kind beside theirs, and the second is
    placed where it takes nothing of the first's place (a switch down takes its links too)."""
    class Args:
        trials, fault_free, hang_for, fault_for, two_at_once = 7, 3, 2.0, 5.0, 3
    topo = BiGraph(2, 8)
    trials = fl.draw_trials(topo, list(fl.KINDS), Args, random.Random(3))
    two = [t for t in trials if t.also]
    assert len(two) == 3 and all(t.fault.kind != t.also.kind for t in two)
    assert all(t.share_of_use for t in two if "slow-rank" in (t.fault.kind, t.also.kind))
    rng = random.Random(4)
    down = fault_trials.place_fault(faults.Fault("switch-down", "", 0, 0, 5), topo, topo.links, rng, 16)
    taken = fault_trials.footprint(down, topo)
    for _ in range(30):
        link = fault_trials.place_apart(faults.Fault("slow-link", "", 0.5, 0, 5), topo, topo.links, rng, 16, None,
                                        taken)
        assert down.where not in fault_trials.expected_place(link, topo)
    with pytest.raises(TestbedError, match="no place for a slow-rank apart"):
        fault_trials.place_apart(faults.Fault("slow-rank", "", 0.5, 0, 5), topo, [], rng, 1, None,
                                 {frozenset(("rank 0",))})


def test_each_of_two_faults_is_scored_on_the_alarm_that_names_it():
    """The monitor names one place a window: the second fault's incident comes later, and is what
    that fault is scored on; a fault no alarm names takes the first new one naming neither. One
    fault alone is scored on the first new incident, as before."""
    from testbed.fidelity.monitor import Alarm
    alarm = lambda at, kind, where, new=True: Alarm(at, (at - 1, at), Finding(kind, where, 1.0, ""), new)
    raised = [alarm(1, "link-down", "U0-L1"), alarm(2, "link-down", "U0-L1", False), alarm(3, "rank-hung", "rank 4")]
    down, hung = ("link-down", frozenset(("U0", "L1"))), ("rank-hung", frozenset(("rank 4",)))
    assert fault_trials.first_alarm(raised, down, hung).at == 1
    assert fault_trials.first_alarm(raised, hung, down).at == 3
    assert fault_trials.first_alarm(raised, ("rank-slow", frozenset(("rank 2",))), down).at == 3
    assert fault_trials.first_alarm(raised[:2], hung, down) is None
    assert fault_trials.first_alarm(raised, hung).at == 1
    rows = [dict(fabric="f", trial=0, correct=True, along="b"), dict(fabric="f", trial=0, correct=False, along="a"),
            dict(fabric="f", trial=1, correct=True, along="d"), dict(fabric="f", trial=1, correct=True, along="c"),
            dict(fabric="f", trial=2, correct=True, along=None)]
    assert fault_scores.together_line(rows).startswith("two faults at once: 2 trials, both located in 1, one in 1, "
                                                       "neither in 0")


def test_a_design_comparison_hits_what_each_form_s_job_uses():
    """The same kind of fault in the same trials of both forms, each at a place its own job's data
    crosses (routes and hashing with the draw the run gives the job): a random fabric link the
    deterministic routes did not cross made the routing comparison meaningless."""
    from testbed.routing.hashing import Draw

    class Args:
        trials, fault_free, hang_for, fault_for, design_trials, rate, queue = 7, 3, 2.0, 5.0, 3, 10.0, 100
        two_at_once = 0
        algorithm, bytes = "ring", 256 << 10
    for design in fl.DESIGNS:
        a, b = fl.design_runs(design, [HPN7(2, 2, 2, 2)], Args, random.Random(5), 11)
        assert a.design == b.design == design and len(a.trials) == len(b.trials) == 3
        for run in (a, b):
            draw = Draw(11 + fl.DESIGNS.index(design) + 100, "round-robin" if run.topo.multi_port else "hash")
            used = fault_trials.job_fabric_links(run.topo, run.routing, "ring", Args.bytes // 4, draw)
            for trial in run.trials:
                trial.fault.check(run.topo, len(run.topo.hosts))
                if design == "routing":
                    assert trial.fault.where in used
                if design == "plane":
                    assert any(trial.fault.where in link.split("-") for link in used)
        assert [x.fault.kind for x in a.trials] == [a.trials[0].fault.kind] * 3
        if design == "routing":
            assert [x.fault.how for x in a.trials] == [y.fault.how for y in b.trials]   # the same magnitudes
    single = fl.design_runs("tor", [HPN7(2, 2, 2, 2)], Args, random.Random(5), 11)[1]
    assert all(len(t.fault.where.split("-")) == 2 for t in single.trials) and single.topo.tors == 1


def test_the_score_has_a_confusion_table_and_wilson_intervals():
    share, lo, hi = wilson(9, 10)
    assert share == 0.9 and 0.55 < lo < 0.6 and 0.98 < hi < 0.99
    rows = [dict(injected="slow-link", found="link-slow", correct=True, kind_correct=True, detect_s=0.5,
                 during_over_before=0.5, false_alarms=1, healthy_s=600.0),
            dict(injected="slow-link", found="none", correct=False, kind_correct=False, detect_s=None,
                 during_over_before=0.7, false_alarms=0, healthy_s=600.0),
            dict(injected="none", found="none", correct=True, kind_correct=True, detect_s=None,
                 during_over_before=1.0, false_alarms=0, healthy_s=600.0)]
    lines = fault_scores.summary_lines(rows, fl.KINDS + ("loss",), FOUND_KINDS)
    assert any(line.startswith("  slow-link") and line.endswith("1/2") for line in lines)
    assert "located correctly (kind and place): 1 of 2 = 50%" in "\n".join(lines)
    assert "fault-free trials with an alarm: 0 of 1 = 0%" in "\n".join(lines)
    assert "false alarms (incidents): 1 in 30.0 min of monitoring without a fault = 2.0 per hour" in lines
    assert fault_scores.headline(rows)["false alarms per hour"] == 2.0
    assert "slow-link    during/before 0.60 [" in "\n".join(lines)


def test_false_alarms_under_drift_are_counted_per_10_windows_apart():
    """A drift stretch (a second job coming and going) is fault-free monitoring: its incidents count
    with the others per hour and per 10 windows, and on a line of their own, named by kind."""
    alarm = lambda kind, new: {"kind": kind, "new": new}
    rows = [dict(injected="none", found="none", correct=True, kind_correct=True, detect_s=None, alarms=[],
                 during_over_before=1.0, false_alarms=0, healthy_s=10.0, healthy_windows=10, drift_s=None),
            dict(injected="none", found="rank-slow", correct=False, kind_correct=False, detect_s=None,
                 alarms=[alarm("rank-slow", True), alarm("rank-slow", False), alarm("link-slow", True)],
                 during_over_before=0.9, false_alarms=2, healthy_s=600.0, healthy_windows=600, drift_s=600.0,
                 second_job_s=240.0)]
    lines = fault_scores.summary_lines(rows, fl.KINDS, FOUND_KINDS)
    assert "false alarms (incidents): 2 in 10.2 min of monitoring without a fault = 11.8 per hour, 0.03 per 10 " \
           "windows" in lines
    assert "with a second job starting and stopping (4.0 of 10.0 min on): 2 false alarms in 600 windows = 0.03 " \
           "per 10 windows (link-slow, rank-slow)" in lines
    assert fault_scores.drift_line(rows[:1]) == ""


def test_a_straggler_from_the_start_is_spared_by_rank_faults_and_its_false_alarms_are_counted_apart():
    topo = LeafSpine(2, 2, 2)
    rng = random.Random(3)
    for _ in range(20):
        fault = fault_trials.place_fault(faults.Fault("slow-rank", "", 0.5, 0, 5), topo, [], rng, 4, straggler=2)
        assert fault.where != "2"
    row = lambda found, where, alarms: dict(injected="none", found=found, found_where=where, correct=found == "none",
                                            kind_correct=found == "none", detect_s=None, during_over_before=1.0,
                                            false_alarms=alarms, healthy_s=10.0, healthy_windows=10,
                                            straggler="rank 2 at 0.5 of its CPU", alarms=[])
    rows = [row("none", "", 0), row("rank-slow", "rank 2", 1), row("rank-slow", "rank 1", 2)]
    assert fault_scores.straggler_line(rows) == (
        "with a straggler slow from the job's start (no fault): 2 of 3 fault-free trials alarmed (1 naming the "
        "straggler), 3 false alarms in 30 windows = 1.00 per 10 windows")
    assert fault_scores.straggler_line([dict(r, straggler=None) for r in rows]) == ""


def test_the_windows_the_monitor_left_undecided_are_counted():
    rows = [{"windows": 12, "undecided_windows": 1}, {"windows": 8, "undecided_windows": 0}, {"windows": 5}]
    assert fault_scores.undecided_line(rows) == ("undecided windows (a queue grew too briefly to tell a slow link "
                                                 "from congestion): 1 of 20 (5%)")
    assert fault_scores.undecided_line(rows[2:]) == ""


def test_precision_recall_and_f1_per_c4_class_count_wrong_and_false_alarms_against_the_named_class():
    row = lambda injected, found, correct: dict(injected=injected, found=found, correct=correct)
    rows = [row("slow-link", "link-slow", True), row("slow-link", "none", False),
            row("hang-rank", "rank-slow", False), row("none", "link-slow", False), row("none", "none", True)]
    scores = fault_scores.class_scores(rows)
    (p, *_), (r, *_), f = scores["comm slow"]
    assert (p, r, f) == (0.5, 0.5, 0.5)                        # a false alarm named it, a fault missed it
    assert scores["compute hung"][0][0] is None and scores["compute hung"][1][0] == 0.0
    assert scores["compute slow"][0][0] == 0.0                 # it named a hung rank slow
    (p, *_), (r, *_), f = scores["overall"]
    assert (p, r) == (1 / 3, 1 / 3) and f == pytest.approx(1 / 3)
    assert any(line.startswith("  comm slow") for line in fault_scores.class_lines(rows))
    weak = dict(row("slow-link", "none", False), how=0.9)     # at 0.9 of its rate: not strong, left out
    assert fault_scores.strong_and_free(rows + [weak]) == rows
    assert any(line.startswith("  strong faults precision 0.33") for line in fault_scores.class_lines(rows + [weak]))


def test_the_detectability_curve_bins_faults_by_magnitude_and_strong_ones_are_scored_apart():
    row = lambda kind, correct, **m: {"injected": kind, "correct": correct, "how": None, "share_of_use": None,
                                      "lasting_s": None, **m}
    rows = [row("slow-link", True, how=0.35), row("slow-link", True, how=0.45), row("slow-link", False, how=0.9),
            row("slow-rank", False, share_of_use=0.85), row("slow-rank", True, share_of_use=0.5),
            row("hang-rank", True, lasting_s=4.0), row("link-down", True)]
    curve = {label: share for label, share, *_ in fault_scores.detectability(rows)}
    assert curve == {"slow-link 0.3-0.5 of its rate (n=2)": 1.0, "slow-link 0.85-1 of its rate (n=1)": 0.0,
                     "slow-rank 0.4-0.55 of its CPU (n=1)": 1.0, "slow-rank 0.8-1 of its CPU (n=1)": 0.0,
                     "hang-rank >= 3 s stopped (n=1)": 1.0}
    assert [fault_scores.strong(r) for r in rows] == [True, True, False, False, True, True, True]
    assert all(r["correct"] for r in rows if fault_scores.strong(r))       # the weak two missed, 5 of 5
    lossy = row("loss", False, how=0.049)               # on its own curve, a slow link's class, never strong
    assert {label: share for label, share, *_ in fault_scores.detectability([lossy])} == \
        {"loss 0.035-0.06 of its packets dropped (n=1)": 0.0}
    assert not fault_scores.strong(lossy) and fault_scores.CLASSES["loss"] == "comm slow"
    lossy.update(found="rank-slow", found_where="rank 3")       # no strong fault and no fault-free trial to score
    assert "  strong faults precision -" in "\n".join(fault_scores.class_lines([lossy]))
    assert any(line.endswith("below half") for line in fault_scores.detectability_lines(rows))
    # an injected slow rank gives its share outright: no magnitude on the scale, counted as strong
    assert fault_scores.strong(row("slow-rank", True, how=0.01)) and not fault_scores.detectability(
        [row("slow-rank", True, how=0.01)])


def test_a_flapping_link_always_ends_up():
    from testbed.emulation.events import toggles
    assert toggles(0, 5, 1)[-1] == (5, True) and toggles(0, 5, 1)[:2] == [(0, False), (1, True)]
    assert toggles(0, 5, 2) == [(0, False), (2, True), (4, False), (5, True)]
    assert toggles(3, 4, 0) == [(3, False), (7, True)]


def test_the_monitor_is_told_nothing_and_alarms_on_its_own_cadence():
    """The operator's monitor judges fixed windows against its own baseline of healthy ones: a
    queue that grows from 10 s to 20 s raises an alarm in every window it spans, at the link it
    feeds, and none before or after; the same data with the windows' grid shifted gives the same
    alarms, each within one window."""
    from testbed.fidelity.diagnosis import Window, link_label
    from testbed.fidelity.monitor import Monitor
    from testbed.topology import interface
    topo = BiGraph(2, 8)
    link = next(lk for lk in topo.links if lk.a in topo.switches and lk.b in topo.switches)
    port = interface(link.a, link.a_port)
    times = [k * 0.02 for k in range(1500)]
    samples = [(t, q, 9000 * q, 0, 0) for t in times for q in [20 if 10 <= t < 20 else 0]]     # sending nothing: slow

    def window_of(start, end):
        return Window([], {port: [s for s in samples if start <= s[0] < end]}, [])

    def alarms(started):
        monitor = Monitor(topo, window_of, started, cadence=1.0, baseline=4)
        assert monitor.poll(5.0 + started) == []                      # warming up, then healthy
        monitor.poll(30.0)
        return monitor.alarms

    on_grid, shifted = alarms(0.0), alarms(0.37)
    assert all(a.finding.kind == "link-slow" and a.finding.where == link_label(topo, link)
               for a in on_grid + shifted)
    assert [a.at for a in on_grid] == [float(t) for t in range(11, 21)]          # every window the queue spans
    assert abs(shifted[0].at - on_grid[0].at) <= 1.0 and abs(len(shifted) - len(on_grid)) <= 1


def test_a_ranks_few_ms_of_drift_on_a_long_step_is_not_a_slow_rank():
    """An own delay holds the step's transfer: on 40 ms steps, 3 ms more for one rank is drift (under
    10% of what it was) and raises nothing; 12 ms more is a slow rank."""
    from testbed.fidelity.diagnosis import Window, rank_finding

    def iteration(extra):
        """Four ranks in a ring, two steps of 40 ms each, rank 1's own part `extra` s longer."""
        ranks, t0 = [], 0.0
        for r in range(4):
            end1 = t0 + 0.040 + (extra if r == 1 else 0.0)
            ranks.append({"start": t0, "steps": [[t0, end1, None, (r + 1) % 4, False],
                                                 [end1, end1 + 0.040 + (extra if r == 1 else 0.0),
                                                  None, (r + 1) % 4, False]]})
        return ranks

    before = Window([iteration(0.0)] * 8, {}, [])
    assert rank_finding(before, Window([iteration(0.003)] * 3, {}, [])) is None
    found = rank_finding(before, Window([iteration(0.012)] * 3, {}, []))
    assert (found.kind, found.where) == ("rank-slow", "rank 1")


def test_a_stall_that_began_while_a_link_on_the_rank_s_paths_was_out_is_not_a_hung_or_slow_rank():
    """TCP backs off while a link is down: the step it held ends up to seconds after the link is
    back. That stall is neither a hung rank nor healthy, nor is a shorter one a slow rank; the same
    stalls with the outage on a link the rank's data never crosses, long before, or with no outage,
    are a hung and a slow rank."""
    from testbed.fidelity.diagnosis import UNDECIDED, Window, diagnose
    topo = LeafSpine(2, 2, 2)                       # ranks 0-3 on h0-h3; h0 h1 on leaf0

    def iteration(t0, stall=0.0):
        """Four ranks in a ring, one 40 ms step each; rank 1's step `stall` s longer."""
        return [{"start": t0, "steps": [[t0, t0 + 0.040 + (stall if r == 1 else 0.0), (r - 1) % 4, (r + 1) % 4,
                                         False]], "retrans": []} for r in range(4)]

    host_link = lambda h: next(lk for lk in topo.links if h in (lk.a, lk.b))
    paths = {(r, (r + 1) % 4): frozenset({host_link(f"h{r}"), host_link(f"h{(r + 1) % 4}")}) for r in range(4)}
    before = Window([iteration(k * 0.05) for k in range(20)], {}, [])
    stalled = Window([iteration(10.5, stall=6.0)], {}, [])             # began at 10.5, ended at 16.54
    switch, port = next((n, p) for n, p in host_link("h1").ends() if n in topo.switches)
    outage = [(10.2, switch, port, False), (12.0, switch, port, True)]
    found = diagnose(topo, before, Window(**dict(stalled.__dict__, history=outage)), paths)
    assert found.kind == UNDECIDED and "retransmission timer" in found.evidence, found
    switch, port = next((n, p) for n, p in host_link("h3").ends() if n in topo.switches)   # not rank 1's
    elsewhere = [(10.2, switch, port, False), (12.0, switch, port, True)]
    assert diagnose(topo, before, Window(**dict(stalled.__dict__, history=elsewhere)), paths).kind == "rank-hung"
    assert diagnose(topo, before, stalled, paths).kind == "rank-hung"
    long_ago = [(t - 8.0, s, p, u) for t, s, p, u in outage]      # back up 6.5 s before the stall began
    assert diagnose(topo, before, Window(**dict(stalled.__dict__, history=long_ago)), paths).kind == "rank-hung"
    spiked = Window([iteration(10.5, stall=0.3), iteration(10.9), iteration(11.0)], {}, [])
    assert diagnose(topo, before, spiked, paths).kind == "rank-slow"
    assert diagnose(topo, before, Window(**dict(spiked.__dict__, history=outage[:1])), paths).kind == UNDECIDED


def test_a_standing_shift_is_one_incident_and_becomes_the_new_normal():
    """A queue that rises at 10 s and stays (a shift, not a fault that ends) raises one incident,
    stands STANDING_WINDOWS windows and is then the monitor's baseline: no alarm after, and a
    second rise on top of it at 40 s is seen against the new normal."""
    from testbed.fidelity.diagnosis import Window
    from testbed.fidelity.monitor import STANDING_WINDOWS, Monitor
    from testbed.topology import interface
    topo = BiGraph(2, 8)
    link = next(lk for lk in topo.links if lk.a in topo.switches and lk.b in topo.switches)
    port = interface(link.a, link.a_port)
    level = lambda t: 0 if t < 10 else 20 if t < 40 else 80
    samples = [(k * 0.02, level(k * 0.02), 9000 * level(k * 0.02), 0, 0) for k in range(3000)]
    monitor = Monitor(topo, lambda a, b: Window([], {port: [x for x in samples if a <= x[0] < b]}, []), 0.0)
    monitor.poll(60.0)
    first = [a for a in monitor.alarms if a.at <= 40]
    assert [a.at for a in first] == [float(t) for t in range(11, 11 + STANDING_WINDOWS)]
    assert [a.new for a in first] == [True] + [False] * (STANDING_WINDOWS - 1) and monitor.rebased >= 1
    later = [a for a in monitor.alarms if a.at > 40]
    assert later and later[0].at == 41.0 and later[0].new             # the second rise, against the new normal


def test_a_queue_that_rose_late_in_a_window_waits_for_the_next_one():
    """A slowed link whose queue rises 0.3 s before a window ends is too briefly backlogged there
    to tell from congestion: that window raises nothing and stays out of the baseline, the next
    one names the link."""
    from testbed.fidelity.diagnosis import Window
    from testbed.fidelity.monitor import Monitor
    from testbed.topology import interface
    topo = BiGraph(2, 8)
    link = next(lk for lk in topo.links if lk.a in topo.switches and lk.b in topo.switches)
    port = interface(link.a, link.a_port)
    samples = [(k * 0.02, q, 9000 * q, 0, 0) for k in range(1000) for q in [0 if k * 0.02 < 10.7 else 30]]
    monitor = Monitor(topo, lambda a, b: Window([], {port: [x for x in samples if a <= x[0] < b]}, []), 0.0)
    monitor.poll(11.0)
    assert monitor.alarms == [] and len(monitor.healthy) == monitor.healthy.maxlen
    healthy = list(monitor.healthy)
    monitor.poll(12.0)
    assert [(a.at, a.finding.kind) for a in monitor.alarms] == [(12.0, "link-slow")]
    assert list(monitor.healthy) == healthy                        # neither window joined it
    assert monitor.undecided == [11.0]                             # and the first is on record


def test_a_rank_is_named_slow_only_where_the_job_ran_slower():
    """Greyhound's rule: a shift under 10% of the iteration is not a fault to page for."""
    from testbed.fidelity.diagnosis import iteration_seconds, slower_job
    it = lambda length: [{"start": 0.0, "steps": [[0.0, length, None, 1, False]]},
                         {"start": 0.001, "steps": [[0.001, length / 2, None, 0, False]]}]
    assert iteration_seconds(it(0.2)) == pytest.approx(0.2)
    assert not slower_job([it(0.2)] * 4, [it(0.215)] * 2)
    assert slower_job([it(0.2)] * 4, [it(0.23)] * 2)
    assert slower_job([], [it(0.2)])


def test_a_fault_s_cost_interval_stays_inside_what_the_trials_measured():
    """busbw during over before is bounded below by 0: the per-kind cost's interval is a percentile
    bootstrap, inside the trials' range, where Student's t on four skewed trials read [-0.19, 2.15]."""
    from testbed.report.paired import interval, resampled
    costs = [0.06, 1.86, 0.98, 1.0]
    assert interval(costs).lo < 0
    e = resampled(costs)
    assert min(costs) <= e.lo < e.mean < e.hi <= max(costs) and e.n == 4
    rows = [{"injected": "link-down", "during_over_before": c} for c in costs]
    assert "[" in fault_scores.cost_line(rows, "link-down") and "-0." not in fault_scores.cost_line(rows, "link-down")
    design = [{"design": "routing", "run": form, "trial": t, "injected": "slow-link", "during_over_before": v}
              for t, (a, b) in enumerate([(0.06, 0.9), (0.9, 0.05), (0.5, 0.6)])
              for form, v in (("deterministic", a), ("ecmp", b))]
    line = fault_scores.design_lines({"routing": ("deterministic", "ecmp")}, design)[1]
    forms = line.split(";")[0]
    assert "[-" not in forms, forms              # each form's figure inside what it measured


def test_a_reaction_is_timed_from_the_fault_and_from_the_alarm_with_greyhound_s_figure_beside():
    base = dict(injected="slow-link", found="link-slow", correct=True, kind_correct=True, during_over_before=0.4,
                false_alarms=0, healthy_s=10.0, busbw_before_MBps=1.0)
    rows = [dict(base, detect_s=1.0, react_s=1.25, busbw_until_react_MBps=0.3, busbw_after_react_MBps=0.9),
            dict(base, detect_s=2.0, react_s=2.25, busbw_until_react_MBps=0.4, busbw_after_react_MBps=0.8)]
    text = "\n".join(fault_scores.summary_lines(rows, fl.KINDS, FOUND_KINDS))
    assert "fault to alarm median 1.50 s, alarm to reroute median 0.25 s (2 trial(s)" in text
    assert "1.58x throughput recovered" in text and "after it, of the window before the fault: 0.90, 0.80" in text


def test_a_straggler_is_held_back_until_the_baseline_can_hold_only_its_slow_iterations():
    """``held_back`` returns once BASELINE_WINDOWS + 1 iterations ended since the straggler was held
    back and as many windows and one more passed: with 2 s iterations, ten seconds; with fast ones,
    six windows; and at its limit where the job ends none."""
    from types import SimpleNamespace

    from testbed.fidelity.monitor import BASELINE_WINDOWS, CADENCE_S

    class Watch:
        def __init__(self, every):
            self.clock, self.every = 100.0, every
            self.monitor = SimpleNamespace(healthy=SimpleNamespace(maxlen=BASELINE_WINDOWS), cadence=CADENCE_S)

        def now(self):
            return self.clock

        def alive(self):
            return True

        def wait(self, until):
            self.clock = max(self.clock, until)

        def ran(self, start, end):
            first = int(start // self.every) + 1 if self.every else 0
            return [] if not self.every else list(range(first, int(end // self.every) + 1))

    for every, waited in ((2.0, 10.0), (0.3, CADENCE_S * (BASELINE_WINDOWS + 2)), (None, 60.0)):
        watch = Watch(every)
        fault_trials.held_back(watch)
        assert watch.clock - 100.0 == pytest.approx(waited, abs=CADENCE_S / 4), every
