"""A job's parallelism groups, checked by hand against Megatron's rank order and SimAI's group
forming (MockNcclGroup): tensor parallel innermost, data parallel, then pipeline stage. No root."""
import pytest

from testbed.collectives.parallelism import Parallelism, group_kind
from testbed.errors import TestbedError


def test_gpt13b_shape_tp4_dp4_on_16():
    job = Parallelism(16, tp=4)
    assert job.dp == 4 and job.groups("TP")[:2] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert job.groups("DP") == [[0, 4, 8, 12], [1, 5, 9, 13], [2, 6, 10, 14], [3, 7, 11, 15]]
    assert job.groups("PP") == [[r] for r in (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15)]


def test_deepseek16b_shape_tp2_pp2_ep4_on_32():
    job = Parallelism(32, tp=2, pp=2, ep=4)
    assert (job.dp, job.dp_ep) == (8, 2)
    assert job.groups("TP")[:3] == [[0, 1], [2, 3], [4, 5]] and job.groups("TP")[8] == [16, 17]
    assert job.groups("DP")[:2] == [[0, 2, 4, 6, 8, 10, 12, 14], [1, 3, 5, 7, 9, 11, 13, 15]]
    assert job.groups("DP")[2] == [16, 18, 20, 22, 24, 26, 28, 30]
    # experts: 4 consecutive data-parallel ranks of one tensor position; the same experts 4 apart
    assert job.groups("EP")[:3] == [[0, 2, 4, 6], [1, 3, 5, 7], [8, 10, 12, 14]]
    assert job.groups("DP_EP")[:3] == [[0, 8], [1, 9], [2, 10]]
    assert job.groups("PP")[:2] == [[0, 16], [1, 17]]
    for kind in ("TP", "DP", "EP", "DP_EP", "PP"):        # every rank in exactly one group of each kind
        members = sorted(r for g in job.groups(kind) for r in g)
        assert members == list(range(32)) and {len(g) for g in job.groups(kind)} == {job.size(kind)}


def test_simai_forms_ep_and_dp_ep_groups_the_same_way():
    """MockNcclGroup, pp 1: EP takes EP consecutive TP groups at one position; DP_EP the TP groups
    g, g + EP, ... (here 16 GPUs, tp 2, ep 4: TP groups of ranks (2g, 2g + 1))."""
    job = Parallelism(16, tp=2, ep=4)
    tp_groups = [[2 * g, 2 * g + 1] for g in range(8)]
    simai_ep = [[tp_groups[g][k] for g in range(i * 4, i * 4 + 4)] for i in range(2) for k in range(2)]
    simai_dp_ep = [[tp_groups[g][k] for g in range(i, i + 2 * 4, 4)] for i in range(4) for k in range(2)]
    assert sorted(job.groups("EP")) == sorted(simai_ep)
    assert sorted(job.groups("DP_EP")) == sorted(simai_dp_ep)


def test_a_collectives_group_follows_its_phase_and_suffix():
    assert [group_kind(p, "") for p in ("forward", "input_grad", "weight_grad")] == ["TP", "TP", "DP"]
    assert group_kind("forward", "EP") == "EP" and group_kind("weight_grad", "DP_EP") == "DP_EP"
    with pytest.raises(TestbedError, match="unknown group suffix _XP"):
        group_kind("forward", "XP")


@pytest.mark.parametrize("kw, message", [
    ({"gpus": 16, "tp": 3}, "does not divide the job's 16 GPUs"),
    ({"gpus": 16, "tp": 2, "ep": 3}, "expert parallel 3 does not divide the data-parallel size 8"),
    ({"gpus": 0}, "gpus must be a positive whole number"),
])
def test_a_shape_that_does_not_divide_is_refused(kw, message):
    with pytest.raises(TestbedError, match=message):
        Parallelism(**kw)
