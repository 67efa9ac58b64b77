"""The operator's monitor reads ECN marks: a second job's flows that share a link with a watched
Ring on a fabric that marks (--ecn) make that link's port mark, and the monitor names the marks as
congestion and raises no fault on the network; its windows carry every port's mark counts.

A rank-slow alarm is not checked here: the second job's iperf3 shares the hosts' 2 cores with the
ranks, and the detector has named a rank slow for that in fault_localisation's second-job runs
(once in CI here too, rank 2 stalled in spikes up to 126 ms): CPU, a known weakness of the rank
rule, not the marks."""
import pytest

import testbed
from testbed.api import Comm, Ring
from testbed.emulation import ecn
from testbed.probes.flows import measure_flows
from testbed.topology import LeafSpine, interface

K, SIZE = 30000, 256 << 10
# the slow set (./setup.sh test -m slow): a second job's marks under the monitor, 30 s
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(ecn.missing() is not None, reason="needs clang, bpftool and libbpf-dev (setup.sh)")]


@pytest.fixture(scope="module")
def watched(tmp_path_factory):
    topo = LeafSpine(2, 2, 3)      # h0 h1 h2 on leaf0, h3 h4 h5 on leaf1
    job = ("h0", "h1", "h3", "h4")
    with (testbed.emulate(topo, folder=tmp_path_factory.mktemp("ecn_monitor"), ecn=K) as emu,
          emu.watch(Comm(Ring(), job), SIZE, stall_limit=15) as watch):
        monitor = watch.monitor
        watch.wait(watch.started + monitor.cadence * (monitor.healthy.maxlen + 2))
        before = (watch.now() - 2.0, watch.now())
        # the second job: h2 (no rank there) into h4 (a rank's host), CUBIC with ECN, 5 s
        start = watch.now()
        measure_flows(emu.emulation, [(topo.hosts["h2"].ports[0], topo.hosts["h4"].ports[0])], 5, omit=0,
                      congestion_control="cubic")
        end = watch.now()
        watch.wait(end + 1.0)
        assert watch.alive(), watch.error
        monitor.poll(watch.now())
        during = (start + 1.0, end)
        finding = watch.diagnose(before, during)
        window = watch.window(*during)
        port = interface(*topo.attachment(topo.hosts["h4"].ports[0]))
        switch, number = port.rsplit("-eth", 1)
        yield {"label": f"{topo.label(switch)}:{number}", "alarms": monitor.between(start, watch.now()),
               "finding": finding, "window": window, "port": port, "wrong": watch.wrong(),
               "congested": [c for c in monitor.congested if start < c[0] <= end + 1.0]}


def test_the_second_jobs_marks_are_named_congestion_and_raise_no_fault(watched):
    network = [a for a in watched["alarms"] if not a.finding.kind.startswith("rank")]
    assert network == [], watched["alarms"]
    finding = watched["finding"]
    assert finding.kind in ("none", "rank-slow"), finding
    assert finding.kind != "none" or "congestion, not a fault: ECN marks (" in finding.evidence, finding
    # the evidence names the ports that marked most; the monitor keeps them all, the port facing h4 among them
    assert any(watched["label"] in marked for _, marked in watched["congested"]), watched["congested"]
    assert watched["wrong"] == 0


def test_a_window_carries_every_ports_mark_counts(watched):
    marks = watched["window"].marks
    assert watched["port"] in marks and len(marks) == 2 * len(LeafSpine(2, 2, 3).links) - 6   # switch ends only
    samples = marks[watched["port"]]
    assert len(samples) >= 3 and samples[-1][1] > samples[0][1]
