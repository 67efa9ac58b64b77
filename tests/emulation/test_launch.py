"""A user's own programs on the fabric, started by the launcher: PyTorch DDP over gloo (its ranks
end with one model: their losses on a shared batch agree) and an mpi4py allreduce under mpirun
(each rank's sum checked against numpy), each step reported back; a rank that fails at once ends
the others, and nothing is left behind."""
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

import testbed
from testbed.runs.jobs import bus_bytes
from testbed.runs.launch import LaunchError

PROJECT = Path(__file__).resolve().parents[2]


@pytest.fixture
def emu(tmp_path, clean_machine, monkeypatch):
    monkeypatch.chdir(PROJECT)                         # the examples' paths, as a user runs them
    with testbed.emulate(testbed.fabric("bigraph:2,4"), folder=tmp_path) as running:
        yield running


def test_ddp_s_ranks_end_with_one_model_and_its_gradients_cross_the_fabric_as_a_ring_moves_them(emu):
    pytest.importorskip("torch")
    launched = emu.launch(["python3", "examples/ddp_train.py", "--steps", "10"])
    launched.wait(300)
    results, steps = launched.results(), launched.steps()
    assert [r["rank"] for r in results] == list(range(8))
    assert len({r["loss"] for r in results}) == 1, results           # DDP averaged the gradients
    assert all(len(mine) == 10 for mine in steps)
    ring = 10 * bus_bytes("allreduce", 8, results[0]["gradient_bytes"])
    assert 0.9 <= launched.fabric_bytes() / ring <= 1.3


def test_an_mpi_program_runs_under_mpirun_on_every_host(emu):
    pytest.importorskip("mpi4py")
    launched = emu.launch(["python3", "examples/mpi_allreduce.py", "--steps", "5", "--bytes", "65536"], mpi=True)
    launched.wait(300)
    results = launched.results()
    assert [r["rank"] for r in results] == list(range(8)) and sum(r["wrong"] for r in results) == 0
    assert [len(mine) for mine in launched.steps()] == [5] * 8
    assert launched.fabric_bytes() >= 5 * bus_bytes("allreduce", 8, 65536) * 0.9


def test_a_rank_that_fails_at_once_ends_the_others(emu):
    command = ["python3", "-c", "import os, time; int(os.environ['RANK']) == 3 and exit(7); time.sleep(600)"]
    launched = emu.launch(command)
    started = time.monotonic()
    with pytest.raises(LaunchError, match="rank 3 exited with code 7"):
        launched.wait(120)
    assert time.monotonic() - started < 30
    for pid in launched.pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_ctrl_c_ends_every_rank_and_leaves_nothing(tmp_path, clean_machine):
    marker = f"launch-ctrl-c-{uuid.uuid4().hex[:8]}"
    proc = subprocess.Popen([sys.executable, "run_scenario.py", "launch", "--topology", "bigraph:2,4",
                             "--results", str(tmp_path / "run"), "--", "python3", "-c",
                             f"import time; time.sleep(600)  # {marker}"],
                            cwd=PROJECT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and len(ranks_with(marker)) < 8:
            time.sleep(0.2)
        assert len(ranks_with(marker)) == 8              # every rank started, in its host
    finally:
        proc.send_signal(signal.SIGINT)
        out = proc.communicate(timeout=60)[0]
    assert proc.returncode == 130 and "interrupted" in out, out
    assert ranks_with(marker) == []


def ranks_with(marker):
    """Pids of the rank processes whose command line holds `marker` (not the run's own)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                words = (entry / "cmdline").read_bytes().decode(errors="replace").split("\0")
                if any(marker in w for w in words) and not any(w.endswith("run_scenario.py") for w in words):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def _fault_under_ddp(emu, fault, fault_for):
    """(the fault's row, its trace folder, the launched job) for `fault` under a small DDP job."""
    pytest.importorskip("torch")
    from testbed.experiments.launch_faults import run_fault
    launched = emu.launch(["python3", "examples/ddp_train.py", "--steps", "80", "--hidden", "1024"])
    try:
        row, trace = run_fault(emu, launched, testbed.Fault.parse(fault), fault_for=fault_for)
    finally:
        launched.stop()
    return row, trace, launched


def test_the_monitor_names_a_slowed_link_under_a_launched_ddp_job_from_the_fabric_alone(emu):
    row, trace, launched = _fault_under_ddp(emu, "slow-link:U1-L0:0.1@0", 5)
    assert (row["found"], row["correct"]) == ("link-slow", True), row
    assert row["false_alarms"] == 0 and row["step_during_s"] > row["step_before_s"], row
    from testbed.faultbench import labels
    label, = labels.read(launched.folder / labels.FILE)
    assert (trace / "manifest.json").exists() and (label["kind"], label["expected_place"]) == ("slow-link", "L0-U1")
    assert label["end"] - label["start"] == pytest.approx(5, abs=0.5), label       # the fault's span, as it lasted


def test_the_monitor_names_a_lossy_link_under_a_launched_ddp_job_from_its_hosts_retransmissions(emu):
    # No queue grows at a lossy link: what names it is the job's connections that resent segments
    # their peers had not received (probes.sockets), voted by their paths
    from testbed.emulation.faults import loss_available
    if not loss_available():
        pytest.skip("random loss needs netem or nftables' egress hook")
    # The first window under loss may hold a single resent segment, whose one connection's path cannot
    # tell its links apart (the monitor names one of them, confidence 0): judged over the fault, the
    # monitor names the lossy link, from retransmissions, in most of the windows it alarms in
    row, _, _ = _fault_under_ddp(emu, "loss:U1-L0:0.05@0", 6)
    during = [a for a in row["alarms"] if row["inject_s"] <= a["at"] <= row["undone_s"] + 1.0]
    lossy = [a for a in during if (a["kind"], set(a["where"].split("-"))) == ("link-slow", {"U1", "L0"})]
    assert row["found"] == "link-slow" and row["false_alarms"] == 0, row
    assert 2 * len(lossy) > len(during), during
    assert all("segments retransmitted with no FIFO drop" in a["evidence"] for a in lossy), lossy


def test_a_program_that_reports_no_step_cannot_be_watched_and_says_how_to_report_one(emu):
    from testbed.experiments.launch_faults import NoSteps, run_fault
    launched = emu.launch(["python3", "-c", "import time; time.sleep(1)"])
    with pytest.raises(NoSteps, match="testbed.step"):
        run_fault(emu, launched, testbed.Fault.parse("link-down:U0-L0@0"), fault_for=2)
    launched.stop()
