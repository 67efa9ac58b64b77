"""The marker's virtual queue set against the FIFO's samples, without root: each virtual sample is
paired with the FIFO sample nearest in time, and only while either queue held a frame."""
from testbed.probes.markers import VirtualQueue

FRAME = 9014


def test_each_virtual_sample_meets_the_nearest_fifo_sample_and_idle_ones_are_left_out():
    vq = VirtualQueue(map_id=0, rate_bps=20e6)
    fifo = [(t / 1000, 0, b, 0, 0) for t, b in ((0, 0), (2, 10 * FRAME), (4, 10 * FRAME), (6, 0))]
    vq.samples = [(0.0, 0.0), (0.0021, 12 * FRAME), (0.0039, 10 * FRAME), (0.0061, 100.0)]
    got = vq.against(fifo, FRAME)
    assert got["marker_vs_fifo_median_frames"] == 1.0          # gaps 2 and 0 frames: both idle ones left out
    assert got["marker_over_fifo"] == 1.1


def test_no_busy_sample_gives_no_figure():
    vq = VirtualQueue(map_id=0, rate_bps=20e6)
    vq.samples = [(0.0, 10.0)]
    assert vq.against([(0.0, 0, 0, 0, 0)], FRAME)["marker_vs_fifo_median_frames"] is None
