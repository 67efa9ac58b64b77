"""A run ends cleanly whatever happens to it: signals at every phase (also twice), a stopped or killed
rank, a dead controller or switch daemon. It says what happened, in time, removes everything it
made, and keeps the results measured so far."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from testbed.emulation import ovs, runrecord
from testbed.emulation.processes import PROJECT
from tests.emulation.machine import alive, leftovers

# the slow set (./setup.sh test -m slow): signals at every phase of a run, about 2.5 minutes
pytestmark = pytest.mark.slow

SMALL_SWEEP = ["bigraph_allreduce", "--topology", "bigraph:1,4", "--algorithms", "hdrm,ring", "--max-bytes",
               "65536", "--iters", "2"]
LONG_SWEEP = ["bigraph_allreduce", "--algorithms", "hdrm", "--min-bytes", "262144", "--max-bytes", "1048576",
              "--iters", "20"]
CHECK = ["fabric_check", "--topology", "bigraph:1,4", "--duration", "20"]


class Run:
    """run_scenario.py in the background, its output read line by line."""

    def __init__(self, args, results):
        self.results = results
        self.proc = subprocess.Popen([sys.executable, "run_scenario.py", *args, "--results", str(results)],
                                     cwd=PROJECT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.seen = ""

    def wait_for(self, text, timeout=120):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            self.seen += line
            if text in line:
                return
            if not line and self.proc.poll() is not None:
                break
        pytest.fail(f"never saw {text!r}:\n{self.seen}")

    def records(self):
        return [runrecord.RunRecord.load(p) for p in runrecord.STATE_DIR.glob("*.json")]

    def end(self, timeout=60):
        """(exit code, seconds it took, the rest of its output)."""
        start = time.monotonic()
        out = self.proc.communicate(timeout=timeout)[0]
        return self.proc.returncode, time.monotonic() - start, self.seen + out


def rank_pids():
    out = subprocess.run(["pgrep", "-f", "testbed.programs.rank"], capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


PHASES = {"building": (CHECK, "building"), "checking": (CHECK, "fabric up"), "measuring": (SMALL_SWEEP, "[1/")}
CASES = [(phase, sig, twice) for phase in PHASES
         for sig, twice in ((signal.SIGINT, False), (signal.SIGTERM, True), (signal.SIGHUP, False))]


@pytest.mark.parametrize("phase,sig,twice", CASES,
                         ids=[f"{p}-{s.name}{'-twice' if t else ''}" for p, s, t in CASES])
def test_a_signal_at_any_phase_ends_the_run_cleanly_within_5_s(phase, sig, twice, run_dir, clean_machine):
    args, marker = PHASES[phase]
    run = Run(args, run_dir)
    run.wait_for(marker)
    records = run.records()
    run.proc.send_signal(sig)
    if twice:
        time.sleep(0.3)          # inside the teardown
        run.proc.send_signal(sig)
    code, took, out = run.end()
    assert code == 128 + sig, out
    assert f"interrupted by {sig.name}" in out and "Traceback" not in out, out
    assert took < 5, (took, out)
    assert alive([p for r in records for p in r.data["processes"]]) == []


def test_rows_measured_before_an_interruption_are_kept(run_dir, clean_machine):
    run = Run(SMALL_SWEEP, run_dir)
    run.wait_for("[2/")
    run.proc.send_signal(signal.SIGTERM)
    assert run.end()[0] == 143
    summary = json.loads((run_dir / "bigraph_allreduce.json").read_text())
    assert summary["status"] == "interrupted by SIGTERM"
    assert len(summary["rows"]) >= 2 and all(r["wrong"] == 0 for r in summary["rows"])
    assert len((run_dir / "allreduce.csv").read_text().splitlines()) == 1 + len(summary["rows"])


def test_a_stopped_rank_is_named_within_10_s_and_every_rank_is_reaped(run_dir, clean_machine):
    run = Run(LONG_SWEEP, run_dir)
    run.wait_for("[1/")
    victim = sorted(rank_pids())[5]
    with open(f"/proc/{victim}/cmdline") as f:
        rank = json.loads(f.read().split("\0")[3])["rank"]
    os.kill(victim, signal.SIGSTOP)
    code, took, out = run.end()
    assert code == 1, out
    assert took < 10, (took, out)
    assert f"error: hdrm: rank {rank} (h" in out and "is stopped" in out and f"pid {victim}" in out, out
    assert rank_pids() == []
    summary = json.loads((run_dir / "bigraph_allreduce.json").read_text())
    assert summary["status"].startswith("failed: hdrm: rank") and len(summary["rows"]) >= 1


def test_a_killed_rank_is_named_with_its_algorithm(run_dir, clean_machine):
    run = Run(LONG_SWEEP, run_dir)
    run.wait_for("[1/")
    os.kill(sorted(rank_pids())[3], signal.SIGKILL)
    code, took, out = run.end()
    assert code == 1 and took < 10, (took, out)
    assert "error: hdrm: rank" in out and "exited (code -9)" in out, out
    assert rank_pids() == []


def test_a_dead_controller_is_reported_within_10_s(run_dir, clean_machine):
    run = Run(CHECK, run_dir)
    run.wait_for("fabric up")
    controller = next(p for r in run.records() for p, _ in r.data["processes"]
                      if "controllers" in Path(f"/proc/{p}/cmdline").read_text())
    os.kill(controller, signal.SIGKILL)
    code, took, out = run.end()
    assert code == 1 and took < 10, (took, out)
    assert "error: the controller died during the run" in out and "Traceback" not in out, out


def test_a_dead_switch_daemon_is_reported_and_nothing_blocks_the_next_run(run_dir, clean_machine):
    run = Run(CHECK, run_dir)
    run.wait_for("fabric up")
    os.kill(ovs.vswitchd_pid(), signal.SIGKILL)
    try:
        code, took, out = run.end()
        assert code == 1 and took < 10, (took, out)
        assert "ovs-vswitchd died during the run" in out and "./setup.sh" in out, out
        assert leftovers() == []       # no bridge in the database, no tap device left by the datapath
    finally:
        subprocess.run(["./setup.sh"], cwd=PROJECT, check=True, capture_output=True)
    assert ovs.vswitchd_pid() is not None
