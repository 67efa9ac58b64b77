"""SimAI workload files read and checked without root: the example AICB-format file, scaling, and
one-line refusals of files that are not what SimAI reads."""
from pathlib import Path

import pytest

from testbed.collectives import workload
from testbed.collectives.schedules import HalvingDoubling, Ring
from testbed.collectives.training import family
from testbed.errors import TestbedError
from testbed.topology import BiGraph, LeafSpine

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "workloads" / "moe_small.txt"


def test_the_example_file_reads_as_simai_writes_it():
    w = workload.read(EXAMPLE)
    assert w.parallelism == "HYBRID_TRANSFORMER_FWD_IN_BCKWD" and w.parameters["ep"] == "4"
    assert len(w.layers) == 9
    assert w.collectives() == ["allgather", "reducescatter", "allreduce", "alltoall"]
    moe = w.layers[5].phases["forward"]
    assert (moe.collective, moe.group, moe.size, moe.compute_ns) == ("alltoall", "EP", 16777216, 2400000)
    sequence = w.sequence()
    assert len(sequence) == 9 + 2 * 9
    assert [p for _, p, _ in sequence[:9]] == ["forward"] * 9
    assert sequence[9][0] == w.layers[-1].name            # the backward pass runs the layers in reverse
    assert w.compute_s() == pytest.approx(sum(p.compute_ns for layer in w.layers for p in layer.phases.values())
                                          / 1e9 + 9 * 100e-9)


def test_sizes_scale_to_whole_blocks_of_at_least_one_element_per_rank():
    assert workload.scaled_count(8388608, 10e6 / 400e9, 16) == 48           # 210 B: 52 elements -> 3 per rank
    assert workload.scaled_count(100, 1e-6, 8) == 8
    assert workload.scaled_count(1 << 20, 1.0, 16) == 262144


@pytest.mark.parametrize("text, message", [
    ("", "a parallelism line, a layer count"),
    ("DATA\n2\nl -1 1 NONE 0 1 NONE 0 1 ALLREDUCE 64 1\n", "says 2 layers but 1 layer lines follow"),
    ("DATA\n1\nl -1 1 NONE 0 1 NONE 0 1 ALLREDUCE 64\n", "a layer line has 12 fields"),
    ("DATA\n1\nl -1 1 NONE 0 1 NONE 0 1 GATHER 64 1\n", "unknown collective 'GATHER'"),
    ("DATA\n1\nl -1 x NONE 0 1 NONE 0 1 ALLREDUCE 64 1\n", "forward compute time should be a number"),
    ("DATA\n1\nl -1 1 NONE 0 1 NONE 0 1 NONE 0 1\n", "no layer runs a collective"),
])
def test_files_that_are_not_simai_workloads_are_refused_in_one_line(tmp_path, text, message):
    path = tmp_path / "w.txt"
    path.write_text(text)
    with pytest.raises(TestbedError, match=message) as caught:
        workload.read(path)
    assert "\n" not in str(caught.value)


def test_a_missing_file_is_refused():
    with pytest.raises(TestbedError, match="cannot read it"):
        workload.read("/nonexistent/workload.txt")


def test_each_system_runs_its_own_family_of_algorithms():
    kinds = ["allreduce", "allgather", "reducescatter", "alltoall"]
    topo = BiGraph(2, 8)
    hosts = sorted(topo.hosts)
    ring = family(topo, "deterministic", Ring(), hosts, kinds)
    assert [s.name for s in ring.values()] == ["ring", "ring_allgather", "ring_reducescatter", "rounds_alltoall"]
    clos = LeafSpine(4, 4, 4)
    hd = family(clos, "ecmp", HalvingDoubling(), sorted(clos.hosts), kinds)
    assert [s.name for s in hd.values()] == ["hd", "rd_allgather", "rh_reducescatter", "xor_alltoall"]
