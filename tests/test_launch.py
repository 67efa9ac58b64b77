"""The launcher's plain parts, without root: each rank's environment as torchrun gives it, the
step lines and result lines read back from the ranks' output, and DDP's agreement check."""
import time
from types import SimpleNamespace

import pytest

import testbed
from scenarios.launch import agreement
from testbed.runs.launch import Launch


def launch(tmp_path, hosts, topo=None):
    topo = topo or testbed.fabric("bigraph:2,4")
    return Launch(SimpleNamespace(topo=topo), ["python3", "x.py"], hosts, tmp_path)


def test_each_rank_gets_torchrun_s_environment_and_its_own_nic_for_gloo():
    topo = testbed.fabric("hpn7:1,2,4,1")                 # servers of 4 accelerators, one per rail
    hosts = [h.name for h in sorted(topo.hosts.values(), key=lambda h: (h.server, h.rail))][:6]
    run = launch(None, hosts, topo)
    envs = [run.environment(r) for r in range(6)]
    assert [e["RANK"] for e in envs] == [str(r) for r in range(6)] and {e["WORLD_SIZE"] for e in envs} == {"6"}
    assert [e["LOCAL_RANK"] for e in envs] == ["0", "1", "2", "3", "0", "1"]      # within each server
    assert [e["LOCAL_WORLD_SIZE"] for e in envs] == ["4"] * 4 + ["2"] * 2
    assert {e["MASTER_ADDR"] for e in envs} == {topo.hosts[hosts[0]].ports[0].ip}
    assert [e["GLOO_SOCKET_IFNAME"] for e in envs] == [topo.hosts[h].ports[0].intf for h in hosts]
    assert envs[0]["OMP_NUM_THREADS"] == "1" and envs[0]["PATH"].split(":")[0].endswith("bin")


def test_the_steps_and_the_last_json_line_of_each_rank_are_read_back(tmp_path):
    run = launch(tmp_path, ["h0", "h1"])
    (tmp_path / "rank0.out").write_text("starting\ntestbed-step 0.125\nnoise\ntestbed-step 0.25\n{\"loss\": 1.5}\n")
    (tmp_path / "rank1.out").write_text("testbed-step 0.5\n{\"loss\": 1.5}\ntrailing words\n")
    run.logs = {0: (tmp_path / "rank0.out", tmp_path / "rank0.err"), 1: (tmp_path / "rank1.out", tmp_path / "e")}
    assert run.steps() == [[0.125, 0.25], [0.5]]
    assert run.results() == [{"loss": 1.5}, {"loss": 1.5}]


def test_testbed_step_prints_the_line_the_launcher_reads_with_when_it_ended(capsys, tmp_path):
    before = time.time()
    testbed.step(0.0421)
    out = capsys.readouterr().out
    (tmp_path / "rank0.out").write_text(out + "testbed-step 0.5")             # a line still being written
    run = launch(tmp_path, ["h0"])
    run.logs = {0: (tmp_path / "rank0.out", tmp_path / "rank0.err")}
    (seconds, end), = run.step_times()[0]
    assert seconds == 0.0421 and before <= end <= time.time()


@pytest.mark.parametrize("losses, agree", [([2.0, 2.0, 2.0, 2.0], 1.0), ([2.0, 2.0, 2.1, 2.0], 0.75),
                                           ([2.0, None], None), ([], None)])
def test_ddp_s_check_is_the_share_of_ranks_whose_loss_is_rank_0_s(losses, agree):
    assert agreement([{"loss": v} if v is not None else {} for v in losses]) == agree
