"""The mutants of tests/mutants.py (no root): each still applies to the tree, and every scenario's
claims are named by a mutant or said not to be shown by one. One mutant, on a scenario that only
models its fabrics, runs here: its smoke's claims fail with the mechanism broken."""
import json
import subprocess
import sys

import pytest

from scenarios import SCENARIOS
from tests import mutants


@pytest.mark.parametrize("mutant", mutants.MUTANTS, ids=[m.name for m in mutants.MUTANTS])
def test_every_mutant_applies_to_the_tree_once(mutant):
    assert (mutants.ROOT / mutant.path).read_text().count(mutant.old) == 1, \
        f"{mutant.name}: its text is not in {mutant.path} once: update the mutant to the code"
    assert set(mutant.scenarios) <= set(SCENARIOS)


def test_every_scenario_s_claims_are_named_by_a_mutant():
    named = {name for m in mutants.MUTANTS for name in m.scenarios} | set(mutants.NOT_SHOWN)
    assert named == set(SCENARIOS)


def test_a_model_s_claims_fail_with_its_dual_plane_built_as_one(tmp_path):
    (mutant,) = [m for m in mutants.MUTANTS if m.name == "planes-as-single"]
    tree = tmp_path / "tree"
    mutants.copy(tree)
    mutants.applied(mutant, tree)
    run = subprocess.run([sys.executable, "run_scenario.py", "hpn7_at_scale", *SCENARIOS["hpn7_at_scale"].SMOKE,
                          "--results", str(tmp_path / "run")], cwd=tree, capture_output=True, text=True, timeout=600)
    record = json.loads((tmp_path / "run" / "record.json").read_text())
    assert {c["verdict"] for c in record["claims"]} == {"DOES NOT HOLD"}, run.stdout[-2000:]
