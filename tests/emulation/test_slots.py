"""A fabric split into slots (--slots): an ovs-vswitchd per slot in a namespace of its own, the
links between slots VXLAN tunnels. The same allreduce results as one slot, cut links that carry
their rate and fail like any other, and nothing left behind."""
import os
import signal
import subprocess
import sys
import time

import pytest

import testbed
from testbed import routing
from testbed.emulation import runrecord
from testbed.emulation.network import Emulation
from testbed.topology import BiGraph, interface
from tests.emulation.machine import alive, leftovers

# the slow set (./setup.sh test -m slow): fabrics split across ovs-vswitchd slots, about 1.5 minutes
pytestmark = pytest.mark.slow

LARGE = 1 << 20


@pytest.fixture(scope="module")
def split(tmp_path_factory):
    with testbed.emulate(testbed.fabric("bigraph:2,8"), slots=2, folder=tmp_path_factory.mktemp("slots")) as emu:
        daemons = [(s.vswitchd.pid, runrecord.start_time(s.vswitchd.pid)) for s in emu.emulation.slots]
        sweep = emu.sweep(["ring_topo", "hd", "hdrm"], [LARGE], warmup=1, iters=3, model=False)
    return sweep, daemons


def test_every_result_matches_numpy_across_slots(split):
    sweep, _ = split
    assert [c.wrong for c in sweep] == [0, 0, 0]


def test_the_split_fabric_keeps_what_one_slot_measures(split):
    # One slot: HDRM 0.98 of the link, 1.9-2x plain HD (test_allreduce); 8 of HDRM's 16 flows per
    # step cross a cut link.
    sweep, _ = split
    assert sweep.get("hdrm", LARGE).busbw_over_link >= 0.8, sweep.get("hdrm", LARGE)
    assert sweep.ratio("hdrm", "hd", LARGE) >= 1.3, (sweep.get("hdrm", LARGE), sweep.get("hd", LARGE))


def test_each_row_is_judged_per_slot(split):
    sweep, daemons = split
    for cell in sweep:
        slots = cell.row["slots"]
        assert [s["slot"] for s in slots] == [0, 1], cell.row
        assert all(s["core"].startswith("cpu") and s["ovs_vswitchd_cores"] > 0 for s in slots), slots


def test_slot_daemons_and_namespaces_go_with_the_run(split):
    _, daemons = split
    assert daemons and not [pid for pid, started in daemons if runrecord.running(pid, started)]
    assert leftovers() == []


def test_a_cut_link_fails_and_comes_back_like_any_other(tmp_path, clean_machine):
    # The slot's ovs-vswitchd reports the VXLAN port down through the relay, the controller routes
    # around it (BiGraph(1,4) has a second Upper switch), and sees it come back.
    topo = BiGraph(1, 4)
    plan = routing.plan(topo)
    with Emulation(topo, plan, tmp_path, log=lambda m: None, slot_count=2) as emu:
        cut = emu.partition.cut_links()[0].link
        ends = {(cut.a, cut.a_port), (cut.b, cut.b_port)}
        route = next(r for r in plan.routes.values() if set(r.directed_links()) & ends)
        src, dst = emu.host(route.src.host), route.dst.ip
        assert "1 received" in src.cmd(f"ping -c1 -W2 {dst}")
        assert emu.port_netns(interface(cut.a, cut.a_port)) is not None      # in its slot, not the root
        log = emu.controller.log_path
        for up, word in ((False, "down"), (True, "up")):
            emu.set_link(cut, up=up)      # the controller notes whichever end reports first

            def seen(word=word):
                return any(f"port {node}:{port} {word}" in log.read_text() for node, port in ends)
            deadline = time.monotonic() + 10
            while not seen() and time.monotonic() < deadline:
                time.sleep(0.1)
            assert seen()
            assert " 0 received" not in src.cmd(f"ping -c3 -W2 {dst}")


def test_a_killed_split_run_is_swept_by_cleanup(clean_machine, start_scenario):
    from tests.emulation.conftest import PROJECT
    from tests.emulation.machine import wait_for
    proc = start_scenario("--slots", "2")
    wait_for(proc, "fabric up")
    records = [runrecord.RunRecord.load(p) for p in runrecord.STATE_DIR.glob("*.json")]
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert leftovers() != []
    subprocess.run([sys.executable, "run_scenario.py", "--cleanup"], cwd=PROJECT, check=True, capture_output=True)
    assert alive([p for r in records for p in r.data["processes"]]) == []    # the slots' daemons and relays


def test_a_count_the_fabric_does_not_split_into_is_refused_before_anything_is_built(tmp_path, clean_machine):
    from tests.emulation.test_cleanup import PROJECT
    out = subprocess.run([sys.executable, "run_scenario.py", "fabric_check", "--topology", "bigraph:1,4",
                          "--slots", "3", "--results", str(tmp_path / "run")],
                         cwd=PROJECT, capture_output=True, text=True)
    assert out.returncode == 2 and "--slots 2 or fewer" in out.stderr and "Traceback" not in out.stderr
    assert not (tmp_path / "run").exists()
