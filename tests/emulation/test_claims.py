"""Each scenario page's headline claims, checked on a smoke form of its run (the scenario's SMOKE
options: its smallest fabric, few trials, seconds to a couple of minutes), as Mininet's test_hifi
states a paper's claim with a tolerance: a regression fails the suite the day it happens. The
claims are the ones each run prints and its page shows (``CLAIMS`` in the scenario's module). A
smoke run has two or three trials: a gain whose interval lies on both sides of its bound is "not
shown", which fails nothing; one the run refutes (its whole interval on the wrong side) or cannot
measure fails the test. A machine whose calibration refuses a smoke run's load (a slow machine
of this kind found no faithful load at MTU 1500) skips that scenario's claims, saying so."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from scenarios import SCENARIOS
from testbed.experiments.claims import refuted

PROJECT = Path(__file__).resolve().parents[2]


def smoke(name, folder):
    module = SCENARIOS[name]
    run = subprocess.run([sys.executable, "run_scenario.py", name, *module.SMOKE, "--results", str(folder)],
                         cwd=PROJECT, capture_output=True, text=True, timeout=900)
    refusal = run.stderr.strip().splitlines()[-1] if run.returncode == 2 and run.stderr.strip() else ""
    if "faithful" in refusal:    # this machine's calibration refuses the smoke's load, before anything is built
        pytest.skip(f"{name}'s smoke run offers more than this machine forwards faithfully: {refusal}")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    record = json.loads((folder / "record.json").read_text())
    assert record["status"] == "complete" and record["headline"].get("#wrong", 0) == 0
    return record, [f"{c['claim']}: {c['verdict']} ({c['said']})" for c in refuted(record["claims"])]


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_the_page_s_claims_hold_on_a_smoke_run(name, tmp_path, clean_machine):
    """A smoke run rests on two or three trials, and a busy 2-core machine can cost one of them
    (fault_localisation's failed one run of seven here, right after other smoke runs; in CI the
    alltoall in rounds read 1.06 of pairwise at 1 MiB on a row the verdict flagged CPU-bound,
    1.50-1.51 in runs it did not; a clean-clone run of 11e6cfc read 1.02-1.03 twice, its rounds
    flagged both times): a run that fails a claim runs once more, a third time only where the
    second's rows say the emulator was the bottleneck, and the claim fails when the last run fails
    it too."""
    record, failed = smoke(name, tmp_path / "first")
    if failed:
        record, failed = smoke(name, tmp_path / "again")
    if failed and any("BOTTLENECK" in line for line in record["output"]["rows"]):
        record, failed = smoke(name, tmp_path / "third")
    assert failed == [], "\n".join(failed) + "\n" + "\n".join(record["output"]["summary"][-30:])
