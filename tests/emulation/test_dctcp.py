"""DCTCP (--cc dctcp) on a real fabric: the project's BPF congestion control is registered for the
run, flows and the ranks' connections run it with ECN and keep an alpha per connection, an
allreduce over it is still right, and nothing is left registered once the fabric is gone, also
after a run killed mid-way and --cleanup."""
import os
import signal
import subprocess
import sys
import threading

import pytest

import testbed
from testbed.emulation import dctcp
from tests.emulation.machine import leftovers
from tests.emulation.test_cleanup import PROJECT, _wait_for

K = 30000
pytestmark = pytest.mark.skipif(dctcp.missing() is not None,
                                reason="needs clang, bpftool, libbpf-dev and the kernel's BTF (setup.sh)")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("dctcp")
    seen, stop = {}, threading.Event()

    def sample():                      # every connection's alpha while the allreduce runs
        while not stop.is_set():
            seen.update(dctcp.alphas())
            stop.wait(0.1)

    with testbed.emulate(testbed.fabric("leafspine:2,2,2"), folder=folder, ecn=K, congestion_control="dctcp") as emu:
        registered = dctcp.registered()
        with emu.switch_queues() as ports:
            flows = emu.flows([("h0", "h2"), ("h1", "h2")], seconds=4)
        marks = emu.emulation.ecn_counts()
        sampler = threading.Thread(target=sample)
        sampler.start()
        try:
            sweep = emu.sweep(["hd"], [1 << 20], iters=2, model=False)
        finally:
            stop.set()
            sampler.join()
        ranks = {h: emu.topo.hosts[h].ports[0].ip for h in emu.topo.hosts}
    return {"registered": registered, "flows": flows, "marks": marks, "ports": ports.row, "sweep": sweep,
            "rank_alphas": seen, "ips": ranks}


def test_the_run_registers_dctcp_and_its_flows_keep_an_alpha_each(run):
    assert len(run["registered"]) == 1
    alphas = run["flows"].alphas
    assert set(alphas) == {f"{run['ips']['h0']}->{run['ips']['h2']}", f"{run['ips']['h1']}->{run['ips']['h2']}"}
    assert all(0 < a <= 1 for a in alphas.values()), alphas     # two flows into one port: it marks
    assert sum(c["rest"]["marked"] for c in run["marks"].values()) > 0


def test_the_switch_ports_figures_count_the_flows_marks_and_queue(run):
    ports, marked = run["ports"], sum(c["rest"]["marked"] for c in run["marks"].values())
    assert 0 < ports["marked"] <= marked and ports["marked"] <= ports["ect"], ports
    assert 0 < ports["queue_busy_mean_bytes"] <= ports["queue_max_bytes"], ports


def test_an_allreduce_over_dctcp_is_right_and_its_connections_run_dctcp(run):
    assert run["sweep"].wrong == 0 and len(run["sweep"]) == 1
    rank_ports = [key for key in run["rank_alphas"] if 7000 <= key[3] < 7100 or 7000 <= key[1] < 7100]
    assert rank_ports, run["rank_alphas"]                   # the ranks' sockets took DCTCP


def test_nothing_is_registered_after_the_fabric(run):
    assert dctcp.registered() == [] and dctcp.NAME not in dctcp.kernel_controls()


def test_a_run_killed_mid_way_leaves_nothing_registered_after_cleanup(run_dir, clean_machine):
    proc = subprocess.Popen([sys.executable, "run_scenario.py", "fabric_check", "--topology", "bigraph:1,4",
                             "--duration", "30", "--cc", "dctcp", "--results", str(run_dir)],
                            cwd=PROJECT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    _wait_for(proc, "fabric up")
    assert len(dctcp.registered()) == 1
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    done = subprocess.run([sys.executable, "run_scenario.py", "--cleanup"], cwd=PROJECT, check=True,
                          capture_output=True, text=True)
    assert leftovers() == [] and not dctcp.available()
    # Either gone, or held by the killed run's sockets until they close, and --cleanup says which.
    assert dctcp.registered() == [] or f"left: {dctcp.NAME} (struct_ops" in done.stdout, done.stdout
