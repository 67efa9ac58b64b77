"""Without root: the marker's settings and its model's virtual queues, worked by hand; and its
virtual queue set against the FIFO's samples: each virtual sample is paired with the FIFO sample
nearest in time, and only while either queue held a frame."""
from testbed.emulation import ecn
from testbed.emulation.shaping import CONTROL_DSCP, HIGH_DSCP
from testbed.probes.markers import VirtualQueue

FRAME = 9014


def test_each_virtual_sample_meets_the_nearest_fifo_sample_and_idle_ones_are_left_out():
    vq = VirtualQueue(map_id=0, config_map_id=0)
    fifo = [(t / 1000, 0, b, 0, 0) for t, b in ((0, 0), (2, 10 * FRAME), (4, 10 * FRAME), (6, 0))]
    vq.samples = [(0.0, 0.0), (0.0021, 12 * FRAME), (0.0039, 10 * FRAME), (0.0061, 100.0)]
    got = vq.against(fifo, FRAME)
    assert got["marker_vs_fifo_median_frames"] == 1.0          # gaps 2 and 0 frames: both idle ones left out
    assert got["marker_over_fifo"] == 1.1


def test_no_busy_sample_gives_no_figure():
    vq = VirtualQueue(map_id=0, config_map_id=0)
    vq.samples = [(0.0, 10.0)]
    assert vq.against([(0.0, 0, 0, 0, 0)], FRAME)["marker_vs_fifo_median_frames"] is None


def test_a_marker_is_set_to_serve_its_classes_as_the_port_s_htb_does():
    one = ecn.config(20, 30000, 100 * FRAME)
    assert (one.mode, one.high_dscps, one.rate_kbps) == (ecn.ONE_FIFO, (), 20000)
    assert ecn.config(20, 30000, 100 * FRAME, classes="control", delay_ms=5).mode == ecn.ONE_FIFO   # netem: one FIFO
    strict = ecn.config(20, 30000, 100 * FRAME, classes="control")
    assert (strict.mode, strict.high_dscps) == (ecn.STRICT, (CONTROL_DSCP,))
    weighted = ecn.config(20, 30000, 100 * FRAME, classes="weighted", control=False)
    assert (weighted.mode, weighted.high_permille, weighted.high_dscps) == (ecn.WEIGHTED, 750, (HIGH_DSCP,))
    assert ecn.config(20, 30000, 100 * FRAME, drain=0.95).rate_kbps == 19000                   # HULL's phantom
    assert ecn.Config.unpacked(weighted.packed()) == weighted


# 8 Mbit/s: the port sends a byte a microsecond, 1000 bytes a millisecond
MS = 1_000_000


def test_one_fifo_drains_every_packet_in_one_queue_and_marks_over_k():
    q = ecn.VirtualQueues(ecn.config(8, 2500, 10_000))
    assert [q.arrive(0, 1000, 0), q.arrive(0, 1000, CONTROL_DSCP), q.arrive(0, 1000, 0)] == [False, False, False]
    assert q.arrive(0, 1000, 0) is True                     # 3000 bytes ahead of it: over K
    assert q.backlog(MS) == 3000 and q.arrive(2 * MS, 1000, 0) is False     # drained to 2000
    assert q.arrive(2 * MS, 1000, 0, ect=False) is False    # not ECN-capable: never marked


def test_strict_priority_drains_the_high_class_first_and_the_rest_gets_what_it_leaves():
    q = ecn.VirtualQueues(ecn.config(8, 2500, 10_000, classes="control"))
    for _ in range(3):
        q.arrive(0, 1000, 0)
        q.arrive(0, 1000, CONTROL_DSCP)
    q.drain(2 * MS)                                         # 2000 bytes sent, all of them high
    assert q.bytes == [3000, 1000]
    assert q.arrive(2 * MS, 100, 0) is True and q.arrive(2 * MS, 100, CONTROL_DSCP) is False
    q.drain(4 * MS)
    assert q.bytes == [2200, 0]                             # 2000 more: the 1100 high, then 900 rest


def test_weighted_gives_each_class_its_share_then_what_the_other_leaves():
    q = ecn.VirtualQueues(ecn.config(8, 2500, 10_000, classes="weighted"))
    q.bytes = [4000, 4000]
    q.drain(4 * MS)                                         # 4000 bytes: 3000 high, 1000 rest
    assert q.bytes == [3000, 1000]
    q.drain(6 * MS)                                         # 2000: 1500 high (of 1000 left: +500 rest), 500 rest
    assert q.bytes == [2000, 0]


def test_a_slower_link_drains_less_and_a_full_queue_takes_no_more():
    q = ecn.VirtualQueues(ecn.config(8, 2500, 3000))
    for _ in range(4):
        q.arrive(0, 1000, 0)
    assert q.bytes == [3000, 0]                             # the fourth found the FIFO full
    q.config = ecn.config(4, 2500, 3000)
    q.drain(2 * MS)
    assert q.bytes == [2000, 0]
