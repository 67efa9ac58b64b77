"""Nothing is left behind: after a normal exit, an exception, SIGINT, or a crash and --cleanup."""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from testbed import routing
from testbed.emulation import cores, ovs, runrecord, sendbuffer
from testbed.emulation.network import Emulation
from testbed.errors import TestbedError
from testbed.topology import BiGraph
from tests.emulation.machine import add_stray_bridge, alive, leftovers, wait_for

PROJECT = Path(__file__).resolve().parents[2]


def small():
    topo = BiGraph(1, 4)
    return topo, routing.plan(topo)


def test_exception_inside_context_leaves_nothing(run_dir, clean_machine):
    topo, plan = small()
    with pytest.raises(RuntimeError, match="boom"), Emulation(topo, plan, run_dir, log=lambda m: None) as emu:
        pids = emu.record.data["processes"]
        assert leftovers() != []
        raise RuntimeError("boom")
    assert alive(pids) == []


def test_leftovers_refuse_start_and_cleanup_removes_only_ours(run_dir, clean_machine):
    assert ovs.vsctl("--may-exist", "add-br", "userbr0", "--", "set", "bridge", "userbr0",
                     "datapath_type=netdev").returncode == 0
    try:
        add_stray_bridge("tb1")
        topo, plan = small()
        with pytest.raises(TestbedError, match=r"left OVS bridges tb1: run .*--cleanup"), \
                Emulation(topo, plan, run_dir, log=lambda m: None):
            pass
        out = subprocess.run([sys.executable, "run_scenario.py", "--cleanup"], cwd=PROJECT,
                             capture_output=True, text=True, check=True).stdout
        assert "tb1" in out
        bridges = ovs.vsctl("list-br").stdout.split()
        assert "userbr0" in bridges and "tb1" not in bridges
    finally:
        ovs.delete_bridges(["userbr0"])


def test_ctrl_c_mid_run_leaves_nothing_and_keeps_no_record_for_the_pages(clean_machine, start_scenario):
    kept = set((PROJECT / "docs" / "records" / "fabric_check").glob("*.json"))
    proc = start_scenario("--record")
    wait_for(proc, "fabric up")
    time.sleep(3)   # inside the iperf3 flows
    records = [runrecord.RunRecord.load(p) for p in runrecord.STATE_DIR.glob("*.json")]
    proc.send_signal(signal.SIGINT)
    out = proc.communicate(timeout=60)[0]
    assert proc.returncode == 130, out
    assert "interrupted" in out and "record not kept" in out, out
    assert set((PROJECT / "docs" / "records" / "fabric_check").glob("*.json")) == kept
    assert alive([p for r in records for p in r.data["processes"]]) == []


def test_killed_run_is_swept_by_cleanup(run_dir, clean_machine, start_scenario):
    vswitchd = ovs.vswitchd_pid()
    affinity = {tid: os.sched_getaffinity(tid) for tid in cores.threads(vswitchd)}
    proc = start_scenario(*(["--cpu-placement", "pinned"] if cores.possible() else []))
    wait_for(proc, "fabric up")
    records = [runrecord.RunRecord.load(p) for p in runrecord.STATE_DIR.glob("*.json")]
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert leftovers() != []
    out = subprocess.run([sys.executable, "run_scenario.py", "fabric_check", "--topology", "bigraph:1,4",
                          "--results", str(run_dir)], cwd=PROJECT, capture_output=True, text=True)
    assert out.returncode == 2 and "--cleanup" in out.stderr
    subprocess.run([sys.executable, "run_scenario.py", "--cleanup"], cwd=PROJECT, check=True,
                   capture_output=True)
    assert alive([p for r in records for p in r.data["processes"]]) == []
    for pid, _, fd, size in [r.data["send_buffer"] for r in records if "send_buffer" in r.data]:
        with sendbuffer.SendBuffer(pid, fd) as buf:
            assert buf.size == size   # ovs-vswitchd's send buffer is back to what the run found
    now = set(cores.threads(vswitchd)) & set(affinity)                  # and its threads' cores
    assert {tid: os.sched_getaffinity(tid) for tid in now} == {tid: affinity[tid] for tid in now}


def test_send_buffer_of_ovs_is_sized_for_every_queue_and_restored_after(run_dir, clean_machine):
    topo, plan = small()
    pid = ovs.vswitchd_pid()
    with Emulation(topo, plan, run_dir, log=lambda m: None) as emu:
        if emu.datapath != "user":
            pytest.skip("only the userspace datapath sends through a packet socket")
        with sendbuffer.SendBuffer(pid, sendbuffer.send_socket_fd(pid)) as during:
            needed = sendbuffer.needed([link.queue for _, link in topo.switch_ports()], emu.mtu)
            assert during.size >= needed
            found_size = emu.record.data["send_buffer"][3]
    with sendbuffer.SendBuffer(pid, sendbuffer.send_socket_fd(pid)) as after:
        assert after.size == found_size
