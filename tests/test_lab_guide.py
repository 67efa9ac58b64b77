"""Every command the lab guide gives names a scenario and options that exist and pass their checks
(prepare: nothing built), so a student never meets an 'unknown option' in an exercise."""
import re
import shlex
from pathlib import Path

import pytest

import run_scenario
from scenarios import DEFAULT, SCENARIOS
from testbed.emulation.shaping import netem_available

GUIDE = Path(__file__).resolve().parents[1] / "docs" / "lab" / "README.md"
COMMANDS = re.findall(r"sudo \./setup\.sh run([^`\n]*)", GUIDE.read_text())


def test_the_guide_has_an_exercise_for_every_scenario():
    named = {c.split()[0] for c in COMMANDS if c.strip() and not c.strip().startswith("-")}
    assert set(SCENARIOS) <= named | {DEFAULT}, set(SCENARIOS) - named


@pytest.mark.parametrize("command", COMMANDS)
def test_each_command_of_the_guide_is_accepted(command):
    argv = shlex.split(command.split("#")[0])
    if not argv or argv[0] not in SCENARIOS:
        argv = [DEFAULT] + argv
    if "--help" in argv:
        return
    if "--delay" in argv and not netem_available():
        pytest.skip("--delay needs netem, which this kernel lacks (the lab VM has it)")
    args = run_scenario.parser().parse_args(argv)
    assert SCENARIOS[args.scenario].prepare(args) is not None
