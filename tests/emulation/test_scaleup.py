"""A server's scale-up domain in a running emulation: a data-parallel job on one HPN 7.0 segment, its
Ring in NCCL's order, sends its hops inside a server over the scale-up links and its hops between
servers through one rail's ToR: the capture sees no byte at the aggregation tier, and every result
is numpy's."""
import testbed
from testbed.collectives.workload import data_parallel
from testbed.routing.hashing import Draw
from testbed.runs.jobs import Job


def test_a_job_on_one_segment_s_rails_never_meets_the_aggregation_tier(tmp_path):
    topo = testbed.fabric("hpn7:2,2,2,2", scaleup=9)
    segment = sorted((h for h in topo.hosts if topo.segment_of(topo.hosts[h]) == 0), key=lambda h: topo.hosts[h].index)
    w = data_parallel(len(segment), 1 << 20, 0.0)
    job = Job("one segment", w, w.groups(), tuple(segment), port=7000)
    with testbed.emulate(topo, "ecmp", folder=tmp_path) as emu:
        (row,) = emu.jobs([job], iters=2, draws=[Draw(3, "round-robin")], capture="capture")
    assert row["wrong"] == 0
    assert not [link for link, size in row["link_bytes"].items() if "agg" in link and size], row["link_bytes"]
    assert row["DP_scaleup_bytes"] > 0 and row["DP_fabric_bytes"] > 0
