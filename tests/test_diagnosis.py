"""The fault detector on hand-made recordings of each kind, without root: it names the kind and the
place from port events, queues and the ranks' step timestamps, and stays quiet on a window like
the one before."""
from testbed.fidelity.diagnosis import BUSY_LEAST_S, RECOVERY_S, UNDECIDED, Window, diagnose, recent_events
from testbed.topology import LeafSpine

TOPO = LeafSpine(2, 2, 2)       # leaf0 (tb1), leaf1 (tb2), spine0 (tb3), spine1 (tb4); h0 h1 | h2 h3
RATE = TOPO.links[0].bytes_per_s


def ring_timing(ranks=4, steps=6, wire=0.01, cpu=0.0005, slow=None, slow_s=0.0, hang=None, hang_s=0.0,
                late=None, late_s=0.0, start=0.0):
    """One Ring iteration's timing as ranks report it (programs.rank), from `start`: rank r sends to
    r+1 once its previous step ended (plus its CPU time), and its step ends when its own send is
    handed over and its predecessor's message has crossed the wire. A slow rank takes slow_s longer
    before every send; a hung one stops for hang_s before its send of step 2, a late one for late_s
    before its send of step 4."""
    ready = [start] * ranks
    out = [{"start": start, "steps": []} for _ in range(ranks)]
    for k in range(steps):
        sent = [ready[r] + cpu + (slow_s if r == slow else 0.0) + (hang_s if r == hang and k == 2 else 0.0)
                + (late_s if r == late and k == 4 else 0.0) for r in range(ranks)]
        for r in range(ranks):
            before = (r - 1) % ranks
            ready[r] = max(sent[r], sent[before] + wire)
            out[r]["steps"].append([sent[r], ready[r], before, (r + 1) % ranks, int(k == 0)])
    return out


def window(timing=None, queues=None, events=()):
    return Window([timing or ring_timing()] * 3, queues or {}, list(events))


def quiet_queues(ports=("tb1-eth3", "tb1-eth4", "tb3-eth2", "tb4-eth2")):
    return {p: [(0.01 * i, 1, 9000, 0, 0.01 * i * RATE) for i in range(50)] for p in ports}


def backed_up(share, seconds=1.0):
    """A port holding 40 packets for `seconds` while it sends at `share` of its link's rate."""
    return [(0.01 * i, 40, 360000, 0, 0.01 * i * RATE * share) for i in range(round(seconds * 100) + 1)]


def test_a_window_like_the_one_before_is_no_fault():
    assert diagnose(TOPO, window(queues=quiet_queues()), window(queues=quiet_queues())).kind == "none"


def test_a_port_down_is_a_link_down_and_every_port_of_a_switch_is_the_switch():
    after = window(events=[(5.0, "tb1", 3, False), (7.0, "tb1", 3, True)])
    found = diagnose(TOPO, window(), after)
    assert (found.kind, found.where, found.at) == ("link-down", "leaf0-spine0", 5.0)
    flapping = window(events=[(5.0, "tb1", 3, False), (6.0, "tb1", 3, True), (7.0, "tb1", 3, False)])
    assert "flapping" in diagnose(TOPO, window(), flapping).evidence
    spine = window(events=[(5.0, "tb3", 1, False), (5.0, "tb3", 2, False)])
    found = diagnose(TOPO, window(), spine)
    assert (found.kind, found.where) == ("switch-down", "spine0")


def test_a_queue_that_grew_is_a_slow_link_at_its_port():
    queues = quiet_queues()
    queues["tb1-eth3"] = backed_up(0.4)                                      # leaf0 -> spine0 backs up
    found = diagnose(TOPO, window(queues=quiet_queues()), window(queues=queues))
    assert (found.kind, found.where) == ("link-slow", "leaf0-spine0") and found.confidence > 0.9
    assert "sending 0.40 of what its link's rate drains" in found.evidence


def test_a_queue_that_grew_on_a_link_sending_at_its_rate_is_congestion_not_a_fault():
    """Two flows hashed onto one link, or a second job's: the queue grows but the port sends at its
    link's rate. Just below the line, it is a slow link."""
    queues = quiet_queues()
    queues["tb1-eth3"] = backed_up(0.98)
    assert diagnose(TOPO, window(queues=quiet_queues()), window(queues=queues)).kind == "none"
    queues["tb1-eth3"] = backed_up(0.85)
    assert diagnose(TOPO, window(queues=quiet_queues()), window(queues=queues)).kind == "link-slow"


def test_a_port_that_marks_while_its_queue_drains_at_its_rate_is_named_congestion_not_a_fault():
    """With --ecn, a second job's flows make a port mark: no fault, and the finding says where."""
    queues = quiet_queues()
    queues["tb1-eth3"] = backed_up(0.98)
    after = window(queues=queues)
    after.marks = {"tb1-eth3": [(0.25 * i, 40 * i) for i in range(5)], "tb1-eth4": [(0.0, 7), (1.0, 7)]}
    found = diagnose(TOPO, window(queues=quiet_queues()), after)
    assert found.kind == "none" and found.evidence.endswith("congestion, not a fault: ECN marks (leaf0:3 marked 160)")
    queues["tb1-eth3"] = backed_up(0.4)                                      # marking does not hide a slow link
    after.queues = queues
    assert diagnose(TOPO, window(queues=quiet_queues()), after).kind == "link-slow"


def test_a_port_whose_short_queue_empties_between_samples_is_not_read_as_slow():
    """A ring's bursts: 30 jumbo frames at every other sample, drained at the link's rate, and one
    at the others, sent in 7 ms of the 20 ms to the next sample, the port then idle. As bytes sent
    over the time a packet was queued it read 0.68 of the link's rate; it sent all a port at its
    rate must have (the frame, or an interval's worth): congestion."""
    queues, sent = quiet_queues(), 0.0
    samples = []
    for i in range(60):
        packets = 30 if i % 2 == 0 else 1
        samples.append((0.02 * i, packets, 9000 * packets, 0, sent))
        sent += RATE * 0.02 if packets == 30 else 9000
    queues["tb1-eth3"] = samples
    assert diagnose(TOPO, window(queues=quiet_queues()), window(queues=queues)).kind == "none"


def test_a_slowed_host_link_holding_a_steps_two_frames_is_slow():
    """A host link at 0.41 of its rate under a ring's steps: its switch port holds two jumbo frames
    and a few acknowledgements at each sample and sends 0.41 of an interval's worth, less than the
    two frames a port at its rate would have sent."""
    queues, sent, samples = quiet_queues(), 0.0, []
    for i in range(60):
        samples.append((0.02 * i, 6, 2 * 9000 + 4 * 66, 0, sent))
        sent += 0.41 * RATE * 0.02
    queues["tb1-eth3"] = samples
    found = diagnose(TOPO, window(queues=quiet_queues()), window(queues=queues))
    assert (found.kind, found.where) == ("link-slow", "leaf0-spine0"), found
    assert "sending 0.56 of what its link's rate drains" in found.evidence


def test_a_queue_held_too_briefly_to_tell_its_drain_rate_is_undecided_even_with_a_slow_rank():
    """With the sampler's dumps taking half its interval, a share over 0.4 s of backlog can read
    0.7 on a healthy port: below BUSY_LEAST_S the window is undecided, however slowly the port
    seemed to drain, and not judged on the ranks (a rank behind a slowed link is late for it)."""
    queues = quiet_queues()
    queues["tb1-eth3"] = backed_up(0.5, seconds=BUSY_LEAST_S - 0.1)
    after = window(ring_timing(slow=2, slow_s=0.02), queues=queues)
    found = diagnose(TOPO, window(queues=quiet_queues()), after)
    assert (found.kind, found.where) == (UNDECIDED, "leaf0:3"), found
    queues["tb1-eth3"] = backed_up(0.5, seconds=BUSY_LEAST_S + 0.1)
    assert diagnose(TOPO, window(queues=quiet_queues()), window(queues=queues)).kind == "link-slow"


def test_a_hung_rank_is_named_where_the_backlog_it_held_drains_too_briefly_to_judge():
    """A rank stops for 3 s: the windows it stalled carried no traffic, and as it comes back the
    job's backlog queues at a port for under BUSY_LEAST_S. That queue alone is undecided; the
    hang is no queue's doing and is named."""
    queues = quiet_queues()
    queues["tb1-eth3"] = backed_up(0.5, seconds=BUSY_LEAST_S - 0.1)
    found = diagnose(TOPO, window(queues=quiet_queues()), window(ring_timing(hang=1, hang_s=3.0), queues=queues))
    assert (found.kind, found.where) == ("rank-hung", "rank 1"), found


def test_a_queue_that_was_already_there_is_not_a_fault():
    busy = quiet_queues()
    busy["tb1-eth3"] = backed_up(0.5)                                        # a slow link, before and after
    assert diagnose(TOPO, window(queues=busy), window(queues=busy)).kind == "none"


def test_a_rank_that_takes_longer_between_its_steps_is_slow():
    after = window(ring_timing(slow=2, slow_s=0.02))
    found = diagnose(TOPO, window(), after)
    assert (found.kind, found.where) == ("rank-slow", "rank 2")


def test_a_rank_its_cpu_share_stalls_now_and_then_is_slow():
    """Throttled by a CPU quota, a rank stalls for up to a scheduling period in some steps; the
    Ring then runs at its pace, and every rank's steps stretch, but only its own delays spike."""
    def throttled(iteration):
        timing = ring_timing(steps=12, hang=None)
        for k in (3, 8):          # rank 1 stalls 120 ms before its send of steps 3 and 8
            for step in range(k, 12):
                for r in range(4):
                    late = 0.12 if r == 1 or step > k else 0.0
                    timing[r]["steps"][step] = [x + late if i < 2 else x for i, x in
                                                enumerate(timing[r]["steps"][step])]
        return timing
    before = window(ring_timing(steps=12))
    found = diagnose(TOPO, before, Window([throttled(i) for i in range(3)], {}, []))
    assert (found.kind, found.where) == ("rank-slow", "rank 1"), found


def test_a_rank_that_sat_out_a_step_is_hung():
    after = window(ring_timing(hang=1, hang_s=3.0))
    found = diagnose(TOPO, window(), after)
    assert (found.kind, found.where) == ("rank-hung", "rank 1")


def test_a_stragglers_stalls_half_as_long_again_are_its_own_variance_and_twice_as_long_a_slow_rank():
    """Rank 1, held to a CPU quota since the job began, stalls 0.9 s an iteration (a straggler: no
    fault). Its stalls vary with the quota's periods; only where they grew by as much as they were
    is it named slow, where a rank with no stall before is named for far less."""
    before = Window([ring_timing(hang=1, hang_s=0.9)] * 3, {}, [])
    assert diagnose(TOPO, before, window(ring_timing(hang=1, hang_s=1.35))).kind == "none"
    found = diagnose(TOPO, before, window(ring_timing(hang=1, hang_s=2.0)))
    assert (found.kind, found.where) == ("rank-slow", "rank 1"), found


def test_a_straggler_whose_iterations_outlast_a_window_becomes_the_jobs_normal():
    """From its fifth iteration rank 1 stalls 0.9 s an iteration: iterations of 1.8 s, so every other
    1 s window ends none. Those windows tell nothing of the ranks: they neither end the incident the
    straggler's onset raised (which, standing, becomes the job's normal) nor push the timings of the
    windows that held some out of the baseline, nor do the five of a pause between iterations (a
    checkpoint). Nothing more is raised until rank 3 hangs 1.2 s once, named against its own
    stalls before, not the straggler's."""
    from testbed.fidelity.monitor import Monitor
    iterations, t = [], 0.1
    for k in range(45):
        iterations.append(ring_timing(wire=0.15, hang=1, hang_s=0.9 if k >= 4 else 0.0, late=3,
                                      late_s=1.2 if k == 35 else 0.0, start=t))
        t = max(r["steps"][-1][1] for r in iterations[-1]) + (5.0 if k == 25 else 0.05)
    ended = lambda it: max(r["steps"][-1][1] for r in it)
    monitor = Monitor(TOPO, lambda a, b: Window([it for it in iterations if a < ended(it) <= b], {}, []), 0.0)
    monitor.poll(t)
    incidents = [(a.finding.kind, a.finding.where) for a in monitor.alarms if a.new]
    assert incidents == [("rank-slow", "rank 1"), ("rank-hung", "rank 3")] and monitor.rebased == 1


def test_a_watchs_window_holds_the_iterations_that_ended_in_it_and_its_samples_and_events(tmp_path):
    from types import SimpleNamespace

    from testbed.runs.watch import Observer, Watch
    watch = Watch.__new__(Watch)
    watch.observer = seen = Observer.__new__(Observer)
    seen.offset = 1000.0                          # wall = monotonic + 1000
    watch.iterations = [{"start": 0.0, "end": 1.0, "timing": "a", "wrong": 0},
                        {"start": 1.0, "end": 2.5, "timing": "b", "wrong": 1},      # straddles 2.0
                        {"start": 2.5, "end": 3.0, "timing": "c", "wrong": 0}]
    seen.queues = SimpleNamespace(samples={"tb1-eth3": [(1000.0 + 0.5 * i, i, 0, 0, 0) for i in range(8)]})
    seen.edges = SimpleNamespace(samples={"h1-eth0": [(1000.0 + 1.5 * i, 0, 0, i, 0) for i in range(3)]})
    seen.marks = SimpleNamespace(samples={"tb1-eth3": [(1000.0 + 0.25 * i, 10 * i) for i in range(12)]})
    seen.log_path = tmp_path / "controller.log"
    seen.log_path.write_text("port tb1:3 down at 1002.200: 1 links down\nport tb1:3 up at 1003.900: 0 links down\n")
    before, after = watch.window(0.0, 2.0), watch.window(2.0, 3.0)
    assert before.timing == ["a"] and after.timing == ["b", "c"]
    assert [m for _, m in after.marks["tb1-eth3"]] == [80, 90, 100, 110]         # marks taken in (2.0, 3.0]
    assert [t for t, *_ in after.queues["tb1-eth3"]] == [2.0, 2.5, 3.0]
    assert [t for t, *_ in after.edges["h1-eth0"]] == [3.0]
    assert [round(t, 3) for t, *_ in after.events] == [2.2] and watch.wrong(2.0, 3.0) == 1


def lossy_case():
    """LeafSpine(3, 2, 1), h0 h1 h2 one per leaf; rank pairs' paths as hashing might put them: ranks 0
    and 2 reach rank 1 over spine0, rank 1 answers over spine1. A window where ranks 0 and 2
    each retransmitted 2 segments to rank 1 per iteration, and one where nobody did."""
    from testbed.emulation.faults import find_link
    topo = LeafSpine(3, 2, 1)
    path = lambda *hops: frozenset(find_link(topo, f"{a}-{b}") for a, b in zip(hops, hops[1:]))
    paths = {(0, 1): path("h0", "leaf0", "spine0", "leaf1", "h1"), (2, 1): path("h2", "leaf2", "spine0", "leaf1", "h1"),
             (1, 0): path("h1", "leaf1", "spine1", "leaf0", "h0"), (1, 2): path("h1", "leaf1", "spine1", "leaf2", "h2")}
    timing = ring_timing(ranks=3)
    lossy = [dict(t, retrans=[[1, 2]] if r in (0, 2) else []) for r, t in enumerate(timing)]
    return topo, paths, Window([timing] * 3, {}, []), Window([lossy] * 3, {}, [])


def test_a_link_that_loses_packets_is_named_from_the_pairs_that_retransmitted():
    """leaf1-spine0 is the one link both retransmitting pairs cross and no clean pair does (rank 1's
    own link carries its clean sends too): 007's vote names it."""
    topo, paths, clean, lossy = lossy_case()
    found = diagnose(topo, clean, lossy, paths)
    assert (found.kind, found.where) == ("link-slow", "leaf1-spine0") and found.confidence == 0.5
    assert "12 segments retransmitted" in found.evidence and "2 of the 2 rank pairs" in found.evidence
    one = Window([[dict(t, retrans=[[1, 2]] if r == 0 else []) for r, t in enumerate(lossy.timing[0])]] * 3, {}, [])
    alone = {pair: links for pair, links in paths.items() if pair != (2, 1)}
    found = diagnose(topo, clean, one, alone)       # one pair alone crosses spine0: its two fabric links tie
    assert (found.where, found.confidence) == ("leaf0-spine0", 0.0)
    assert found.evidence.endswith("the paths cannot tell it from leaf1-spine0")


def test_retransmissions_a_full_fifo_explains_or_the_baseline_had_are_no_lossy_link():
    """Drops at a switch port's FIFO limit on the pairs' path are congestion; the same retransmissions
    in the window before are the job's normal; and without the paths nothing is named from them."""
    topo, paths, clean, lossy = lossy_case()
    dropping = dict(lossy.__dict__, queues={"tb4-eth2": [(0.0, 90, 810000, 3, 0.0), (1.0, 90, 810000, 9, RATE)]})
    assert diagnose(topo, clean, Window(**dropping), paths).kind == "none"      # spine0 -> leaf1 dropped
    assert diagnose(topo, lossy, lossy, paths).kind == "none"
    assert diagnose(topo, clean, lossy).kind == "none"


def test_retransmissions_a_hosts_full_egress_explains_are_no_lossy_link():
    """A second job on the ranks' hosts overflows the host's own egress FIFO (its NIC's drop
    counter): the retransmissions over that host's link are congestion."""
    topo, paths, clean, lossy = lossy_case()
    full = dict(lossy.__dict__, edges={"h1-eth0": [(0.0, 90, 810000, 3, 0.0), (1.0, 90, 810000, 9, RATE)]})
    assert diagnose(topo, clean, Window(**full), paths).kind == "none"
    calm = dict(lossy.__dict__, edges={"h1-eth0": [(0.0, 90, 810000, 3, 0.0), (1.0, 90, 810000, 3, RATE)]})
    assert diagnose(topo, clean, Window(**calm), paths).where == "leaf1-spine0"


def test_retransmissions_over_a_link_that_was_cut_are_recovery_not_loss():
    """spine0 (tb4) port 2 faces leaf1: while it is down, or RECOVERY_S after it came back, the
    retransmissions of the pairs crossing it are TCP resending what the cut lost."""
    topo, paths, clean, lossy = lossy_case()
    down, up = (10.0, "tb4", 2, False), (12.0, "tb4", 2, True)
    assert recent_events([down], 20.0) == [down]                                  # still down
    assert recent_events([down, up], 12.0 + RECOVERY_S) == [up]
    assert recent_events([down, up], 12.1 + RECOVERY_S) == []                     # long back up
    assert diagnose(topo, clean, Window(**dict(lossy.__dict__, earlier=[down, up])), paths).kind == "none"
    assert diagnose(topo, clean, Window(**dict(lossy.__dict__, earlier=[(12.0, "tb5", 1, True)])),
                    paths).where == "leaf1-spine0"                                # a link no lossy pair crosses


def test_a_hung_rank_is_named_before_the_retransmissions_its_stop_caused():
    topo, paths, clean, lossy = lossy_case()
    hung = [dict(t, retrans=[[1, 2]] if r in (0, 2) else []) for r, t in enumerate(ring_timing(3, hang=1, hang_s=2.0))]
    found = diagnose(topo, clean, Window([hung] * 3, {}, []), paths)
    assert (found.kind, found.where) == ("rank-hung", "rank 1")
