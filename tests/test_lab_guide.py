"""Every command the lab guide and its answers give names a scenario and options that exist and
pass their checks (prepare: nothing built), so a student never meets an 'unknown option' in an
exercise; a command marked `# refused` is refused in one line with exit code 2. As root, with
`-m lab` (`sudo .venv/bin/python -m pytest tests/test_lab_guide.py -m lab`, about 17 minutes), every
command runs in its short form: the command's own options, with the scenario's smoke
options added where the command gives none and its counts (trials, iterations, draws) capped at the
smoke's."""
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

import run_scenario
from scenarios import DEFAULT, SCENARIOS
from testbed.emulation import capacity
from testbed.emulation.shaping import netem_available
from testbed.errors import TestbedError

ROOT = Path(__file__).resolve().parents[1]
GUIDES = sorted((ROOT / "docs" / "lab").glob("*.md"))
COMMANDS = sorted({(g.name, c.strip()) for g in GUIDES
                   for c in re.findall(r"sudo \./setup\.sh run([^`'\n]*)", g.read_text())})
COUNTS = ("--trials", "--iters", "--draws", "--rounds", "--fault-free", "--design-trials", "--model-draws")


def argv_of(command):
    argv = shlex.split(command.split("#")[0])
    return argv if argv and argv[0] in SCENARIOS else [DEFAULT] + argv


def short_form(argv):
    """The command's options, the smoke's where it gives none, counts capped at the smoke's; on the
    command's own fabric at its default rate (fitted to the machine, as a student's run is) where
    the smoke's fabric cannot hold its options (a fan-in above its hosts)."""
    smoke = options(SCENARIOS[argv[0]].SMOKE)
    out = with_smoke(argv, smoke)
    if "--topology" in smoke and "--topology" not in argv and not accepted(out):
        out = with_smoke(argv, {n: v for n, v in smoke.items() if n not in ("--topology", "--rate")})
    return out


def options(words):
    """{--name: its value, or None for a flag}, in order; a program's words after "--" (launch) left out."""
    words = list(words)[:list(words).index("--")] if "--" in words else list(words)
    out, k = {}, 0
    while k < len(words):
        value = words[k + 1] if k + 1 < len(words) and not words[k + 1].startswith("--") else None
        out[words[k]] = value
        k += 2 if value is not None else 1
    return out


def with_smoke(argv, smoke):
    """argv with the smoke's options it lacks, before a program's "--" (launch)."""
    cut = argv.index("--") if "--" in argv else len(argv)
    out, program = list(argv[:cut]), list(argv[cut:])
    given = {a for a in out if a.startswith("--")}
    for name, value in smoke.items():
        if name not in given:
            out += [name] + ([value] if value is not None else [])
        elif name in COUNTS and value is not None:
            at = out.index(name) + 1
            out[at] = str(min(int(out[at]), int(value)))
    return out + program


def accepted(argv):
    args = run_scenario.parser().parse_args(argv)
    try:
        SCENARIOS[args.scenario].prepare(args)
    except TestbedError:
        return False
    return True


def test_a_short_form_the_smoke_s_fabric_cannot_hold_keeps_the_command_s_fabric():
    short = short_form(["congestion", "--fanin", "4,16", "--trials", "5"])
    assert "--topology" not in short and "--rate" not in short and short[short.index("--trials") + 1] == "2"
    assert accepted(short)
    assert "--topology" in short_form(["congestion", "--fanin", "4"])


def test_the_guide_has_an_exercise_for_every_scenario():
    named = {argv_of(c)[0] for _, c in COMMANDS}
    assert set(SCENARIOS) <= named, set(SCENARIOS) - named


@pytest.mark.parametrize("guide, command", COMMANDS, ids=[f"{g}: {c}" for g, c in COMMANDS])
def test_each_command_of_the_guide_is_accepted(guide, command):
    argv = argv_of(command)
    if "--help" in argv:
        return
    if "--delay" in argv and not netem_available():
        pytest.skip("--delay needs netem, which this kernel lacks (the lab VM has it)")
    args = run_scenario.parser().parse_args(argv)
    plan = SCENARIOS[args.scenario].prepare(args)
    if "# refused" in command:          # by the rate check, before anything is built (no calibration here)
        with pytest.raises(TestbedError, match="more than .* forwards faithfully"):
            for topo in plan.fabrics:
                capacity.check_rate(topo, plan.mtu)
    else:
        assert plan is not None


@pytest.mark.lab
@pytest.mark.emulation
@pytest.mark.parametrize("guide, command", COMMANDS, ids=[f"{g}: {c}" for g, c in COMMANDS])
def test_each_command_of_the_guide_runs_in_its_short_form(guide, command, tmp_path):
    import os
    if os.geteuid() != 0:
        pytest.skip("runs need root (sudo .venv/bin/python -m pytest tests/test_lab_guide.py -m lab)")
    argv = argv_of(command)
    if "--help" in argv or ("--delay" in argv and not netem_available()):
        pytest.skip("nothing to run here" if "--help" in argv else "--delay needs netem")
    parse = run_scenario.parser().parse_args
    if vars(parse(short_form(argv))) == vars(parse([argv[0], *SCENARIOS[argv[0]].SMOKE])):
        pytest.skip("its short form is the scenario's smoke run, which tests/emulation/test_claims.py runs")
    short = short_form(argv)
    run = subprocess.run([sys.executable, "run_scenario.py", short[0], "--results", str(tmp_path / "run"), *short[1:]],
                         cwd=ROOT, capture_output=True, text=True, timeout=1200, stdin=subprocess.DEVNULL)
    if "# refused" in command:
        assert run.returncode == 2 and len(run.stderr.strip().splitlines()) == 1, run.stderr[-1000:]
    else:
        assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
