"""Dual-ToR failover on real packets: an allreduce survives a NIC-ToR link cut (the bond moves its
flows, the controller routes around the link), the single-ToR baseline stalls and then ends with
an error that names the dead link, and the run record brings down links back up."""
import time
from pathlib import Path

from testbed import routing
from testbed.collectives.coordinator import Coordinator, emulation_launcher
from testbed.collectives.metrics import failure_timeline
from testbed.collectives.placements import place
from testbed.emulation import runrecord
from testbed.emulation.events import Timeline, link_failure
from testbed.emulation.network import Emulation
from testbed.topology import HPN7

SIZE = 128 << 10
CUT = (3.0, 6.0)          # the link is down from 3 s to 6 s into the run


def run_with_a_cut(topo, folder, stall_limit, run_for=10.0):
    """Allreduce iterations for run_for seconds while rank 0's NIC loses its port-0 link during CUT."""
    schedule, hosts = place("ring_cross_segment", topo)
    link = topo.link_at(*topo.attachment(topo.hosts[hosts[0]].ports[0]))
    with Emulation(topo, routing.plan(topo, "ecmp"), folder, log=lambda m: None) as emu:
        with Coordinator(schedule.name, *emulation_launcher(emu, hosts), timeout=stall_limit,
                         pacing=topo.bytes_per_s, streams=2) as ranks:
            ranks.iterate(SIZE // 4, 0, timeout=60)
            with Timeline(link_failure(emu, link, CUT[0], CUT[1] - CUT[0])) as timeline:
                iterations, error = ranks.run_for(SIZE // 4, run_for, timeout=stall_limit + 30)
                ended = time.monotonic()
        log = (Path(folder) / "controller.log").read_text()
    _, summary = failure_timeline(iterations, {"cut": CUT}, timeline.start, ended, SIZE, len(hosts), topo.rate)
    return summary, error, link, log


def test_dual_tor_survives_a_nic_link_cut(tmp_path):
    summary, error, _, log = run_with_a_cut(HPN7(2, 2, 2, 2, planes=2, cores=1), tmp_path, stall_limit=10)
    assert error is None, (error, log)
    assert summary["wrong"] == 0
    # An iteration takes 0.3 s; the controller reacts in a few ms, and what was in flight on the dead
    # port waits for one TCP retransmission timeout (200 ms at least). Measured: 0.6-0.8 s.
    assert summary["longest_stall_s"] < 2.0, summary
    assert summary["cut"]["during_over_before"] > 0.5, summary
    assert "down at" in log and "up at" in log


def test_single_tor_stalls_and_ends_with_an_error_naming_the_link(tmp_path):
    summary, error, link, _ = run_with_a_cut(HPN7(2, 2, 2, 2, planes=1, tors=1), tmp_path, stall_limit=2)
    assert error is not None and "waited 2" in error, error      # the ranks gave up while it was down
    assert summary["longest_stall_s"] >= 2, summary
    assert summary["iterations"] > 0


def test_links_taken_down_are_on_the_run_record_and_come_back_up(tmp_path, clean_machine):
    topo = HPN7(1, 2, 1, 1)
    with Emulation(topo, routing.plan(topo, "ecmp"), tmp_path, log=lambda m: None) as emu:
        link = topo.links[0]
        emu.set_link(link, up=False)
        down = emu.record.data["down"]
        assert len(down) == 1
        # The administrative flag (IFF_UP), not operstate: the kernel updates operstate later,
        # from its link-watch work (CI once read "down" just after the interface was set up).
        up = lambda: int(Path(f"/sys/class/net/{down[0]}/flags").read_text(), 16) & 1 == 1
        assert not up()
        runrecord.bring_up(down)           # what --cleanup does for a run that died with it down
        assert up()
    # and the run's own end removed everything (clean_machine checks)

