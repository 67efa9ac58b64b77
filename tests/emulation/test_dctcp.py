"""DCTCP (--cc dctcp) on a real fabric: the project's BPF congestion control is registered for the
run, flows and the ranks' connections run it with ECN and keep an alpha per connection, an
allreduce over it is still right, and nothing is left registered once the fabric is gone, also
after a run killed mid-way and --cleanup. Driven by a known mark pattern (the receiver's port
marking nothing, then every packet, then nothing: its marker's settings rewritten), each update of
alpha follows DCTCP's rule with gain g = 1/16 and each cut sets the window to (1 - alpha/2) of
what it was, as the kernel's tcp_dctcp.c does."""
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

import testbed
from testbed.emulation import dctcp, ecn
from testbed.topology import interface
from tests.emulation.conftest import PROJECT
from tests.emulation.machine import leftovers, wait_for

K = 30000
G_SHIFT = 4                            # g = 1/16: alpha <- (1 - g) alpha + g F
ALPHA_ONE = 1024
# A port's marker set to mark every ECN-capable packet (its queue never drains, K one byte), or none
# (it drains faster than any link, K out of reach): the pattern the sender's alpha is driven by.
MARK_ALL = ecn.Config(rate_kbps=1, k_bytes=1, limit_bytes=1 << 40)
MARK_NONE = ecn.Config(rate_kbps=10**9, k_bytes=1 << 40, limit_bytes=1 << 40)
PHASE_S = 4
# A window acknowledged just after the pattern changed may hold packets marked (or not) before it:
# a phase's windows are judged from this long after its start, many round trips later.
SETTLE_S = 0.25
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
        patterned = driven(emu)
    return {"registered": registered, "flows": flows, "marks": marks, "ports": ports.row, "sweep": sweep,
            "rank_alphas": seen, "ips": ranks, "patterned": patterned}


def driven(emu):
    """{phase: [(connection, what the program kept), sampled every 20 ms from SETTLE_S into the
    phase]} of one flow h0 -> h3 (iperf3's control connection and its data one) while the port
    facing h3 marks nothing, then every packet, then nothing, PHASE_S seconds each; every other
    switch port marks nothing throughout, so no burst on the way marks. A window whose update was
    seen before SETTLE_S is left out."""
    facing = interface(*emu.topo.attachment(emu.topo.hosts["h3"].ports[0]))
    tables = {port: maps["config"] for port, maps in emu.emulation.marker_maps().items()}
    built = {port: ecn.settings_of(table) for port, table in tables.items()}
    src, dst = emu.topo.hosts["h0"].ports[0].ip, emu.topo.hosts["h3"].ports[0].ip
    phases, stop = {}, threading.Event()

    def sample():
        for phase, settings in (("none", MARK_NONE), ("all", MARK_ALL), ("none again", MARK_NONE)):
            ecn.configure(tables[facing], settings)
            start = time.monotonic()
            unsettled = set()
            while time.monotonic() < start + PHASE_S and not stop.is_set():
                kept = [((sp, dp), v) for (s, sp, d, dp), v in dctcp.seen().items() if (s, d) == (src, dst)]
                if time.monotonic() < start + SETTLE_S:
                    unsettled.update((c, v["updates"]) for c, v in kept)
                phases.setdefault(phase, []).extend((c, v) for c, v in kept if (c, v["updates"]) not in unsettled)
                time.sleep(0.02)

    for table in tables.values():
        ecn.configure(table, MARK_NONE)
    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        emu.flows([("h0", "h3")], seconds=3 * PHASE_S + 1, congestion_control="dctcp")
    finally:
        stop.set()
        sampler.join()
        for port, table in tables.items():
            ecn.configure(table, built[port])
    return phases


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


def updated(prior, delivered, delivered_ce):
    """DCTCP's alpha after a window (RFC 8257, the kernel's integer arithmetic): decayed by g, plus
    g times the fraction of the window's packets that were echoed CE."""
    alpha = prior - (prior >> G_SHIFT or prior)
    if delivered_ce:
        alpha = min(alpha + (delivered_ce << (10 - G_SHIFT)) // max(1, delivered), ALPHA_ONE)
    return alpha


def windows(run, phase):
    """{update count: what the program kept} of the data connection (the one that updated its
    alpha most) in a phase."""
    by_connection = {}
    for connection, v in run["patterned"][phase]:
        if v["updates"]:
            by_connection.setdefault(connection, {})[v["updates"]] = v
    return max(by_connection.values(), key=len, default={})


def test_alpha_moves_by_dctcp_s_gain_g_1_16_under_a_known_mark_pattern(run):
    for phase, samples in run["patterned"].items():
        wrong = [v for _, v in samples
                 if v["updates"] and v["alpha"] != updated(v["prior_alpha"], v["delivered"], v["delivered_ce"])]
        assert wrong == [], (phase, wrong[:3])
    marked = list(windows(run, "all").values())
    assert marked and all(v["delivered_ce"] for v in marked), marked[:3]         # every window marked
    assert max(v["alpha"] for v in marked) >= 0.8 * ALPHA_ONE     # alpha climbs towards 1 (0.897 at 3 s in a suite)
    unmarked = sorted(windows(run, "none again").values(), key=lambda v: v["updates"])
    assert unmarked and all(v["delivered_ce"] == 0 for v in unmarked), [v for v in unmarked if v["delivered_ce"]][:3]
    first, last = unmarked[0], unmarked[-1]     # n windows without a mark: alpha times (15/16)^n
    n = last["updates"] - first["updates"]      # (few: unmarked, the window grows and a round trip with it)
    assert n >= 2 and abs(last["alpha"] - first["alpha"] * (1 - 1 / 16) ** n) <= n + 2, (first, last)


def test_a_marked_window_cuts_the_window_by_alpha_over_two(run):
    cuts = [v for _, v in run["patterned"]["all"] if v["cuts"]]
    assert cuts, "no cut while every packet was marked"
    for v in cuts:       # cwnd (1 - alpha / 2) in the kernel's u32 arithmetic, at least 2 segments
        cut = (v["cut_cwnd"] * v["cut_alpha"] & 0xFFFFFFFF) >> 11
        assert v["cut_ssthresh"] == max(v["cut_cwnd"] - cut, 2), v
    assert any(v["cut_alpha"] >= 0.8 * ALPHA_ONE for v in cuts), cuts[-3:]      # near half: alpha near 1


def test_nothing_is_registered_after_the_fabric(run):
    assert dctcp.registered() == [] and dctcp.NAME not in dctcp.kernel_controls()


def test_a_run_killed_mid_way_leaves_nothing_registered_after_cleanup(run_dir, clean_machine):
    proc = subprocess.Popen([sys.executable, "run_scenario.py", "fabric_check", "--topology", "bigraph:1,4",
                             "--duration", "30", "--cc", "dctcp", "--results", str(run_dir)],
                            cwd=PROJECT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    wait_for(proc, "fabric up")
    assert len(dctcp.registered()) == 1
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    done = subprocess.run([sys.executable, "run_scenario.py", "--cleanup"], cwd=PROJECT, check=True,
                          capture_output=True, text=True)
    assert leftovers() == [] and not dctcp.available()
    # Either gone, or held by the killed run's sockets until they close, and --cleanup says which.
    assert dctcp.registered() == [] or f"left: {dctcp.NAME} (struct_ops" in done.stdout, done.stdout
