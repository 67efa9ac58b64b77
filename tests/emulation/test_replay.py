"""A SimAI workload file in AICB's own shape, replayed as SimAI's simulator times it: every group's
collectives between real hosts, checked against numpy; the pipeline's activations and gradients
both ways between neighbouring stages; the weight gradients' collectives overlapping the backward
pass; the bubble counted."""
import testbed
from testbed.collectives import workload
from testbed.collectives.placements import place_jobs
from testbed.runs.jobs import Job
from tests.test_workload import aicb_file

SCALE = 10e6 / 400e9         # 10 Mbit/s here for 400 Gbit/s as written


def test_a_pipelined_file_replays_with_every_kind_checked(tmp_path):
    topo = testbed.fabric("bigraph:4,4")                      # 4 servers of 4: tp 2 stays in a server
    w = workload.read(aicb_file(tmp_path / "aicb_pp2.txt", tp=2, pp=2, ep=1, gpus=16, ga=2, layers=2))
    job = Job("aicb pp2", w, w.groups(), tuple(place_jobs(topo, [16])[0]), SCALE)
    with testbed.emulate(topo, folder=tmp_path / "run") as emu:
        (row,) = emu.jobs([job], iters=2)
    assert row["wrong"] == 0
    assert row["PP_fabric_bytes"] > 0 and row["DP_fabric_bytes"] > 0 and row["TP_scaleup_bytes"] > 0
    assert row["bubble_s"] > 0                                # pp 2, ga 2, vpp 2: a quarter of the stage's time
    assert row["DP_s"] < row["iteration_s"]


def test_a_data_parallel_job_waits_for_its_gradients_before_the_next_iteration(tmp_path):
    """Its only collective is the gradients' allreduce, issued without blocking: the next
    iteration's forward pass waits for it, so an iteration is the computation and the allreduce,
    as SimAI times it (not the computation alone, with the allreduces piling up)."""
    topo = testbed.fabric("bigraph:2,4")
    w = workload.data_parallel(8, 256 << 10, 0.2)
    job = Job("dp", w, w.groups(), tuple(place_jobs(topo, [8])[0]), family="hd")
    with testbed.emulate(topo, folder=tmp_path / "run") as emu:
        (row,) = emu.jobs([job], iters=3)
    # HD's allreduce of 256 KiB on 8 ranks moves 2 x 7/8 x 256 KiB per rank: 0.37 s at 10 Mbit/s
    assert row["wrong"] == 0 and row["DP_s"] > 0.25
    assert row["iteration_s"] > 0.2 + 0.25
