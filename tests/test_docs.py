"""The documentation a user reads: every scenario has its page, every command a page or the README
gives names a scenario and options that pass their checks (prepare: nothing built), and every
link between the pages leads somewhere. No root."""
import ast
import re
import shlex
import subprocess
from pathlib import Path

import pytest

import run_scenario
from scenarios import DEFAULT, SCENARIOS
from testbed import API
from testbed.emulation.shaping import netem_available

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted((ROOT / "docs").rglob("*.md")) + [ROOT / "README.md"]
COMMANDS = sorted({(page.relative_to(ROOT).as_posix(), command.strip())
                   for page in PAGES for command in re.findall(r"run_scenario\.py([^`\n]*)", page.read_text())})


def test_every_scenario_has_its_page_and_the_readme_links_it():
    readme = (ROOT / "README.md").read_text()
    for name in SCENARIOS:
        assert (ROOT / "docs" / "scenarios" / f"{name}.md").exists(), name
        assert f"(docs/scenarios/{name}.md)" in readme, name
    assert len(readme.splitlines()) <= 150


@pytest.mark.parametrize("page, command", COMMANDS, ids=[f"{p}: {c}" for p, c in COMMANDS])
def test_each_command_of_the_docs_is_accepted(page, command):
    argv = shlex.split(command.split("#")[0])
    argv = [a for a in argv if not re.fullmatch(r"[|>].*|tee|\S+\.log", a)]
    if not argv or argv[0] in ("...", "--list", "--cleanup", "--calibrate") or "--help" in argv:
        return                                   # prose ("run_scenario.py ...") or no scenario run
    if argv[0].startswith("-"):
        argv = [DEFAULT] + argv
    if "--delay" in argv and not netem_available():
        pytest.skip("--delay needs netem, which this kernel lacks (the lab VM has it)")
    args = run_scenario.parser().parse_args(argv)
    assert SCENARIOS[args.scenario].prepare(args) is not None


def test_links_between_the_pages_lead_to_files():
    for page in PAGES:
        for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", page.read_text()):
            if not target.startswith("http"):
                assert (page.parent / target).exists(), f"{page.relative_to(ROOT)}: {target}"


MEASURED = re.compile(r"(\d{4}-\d{2}-\d{2}),\s+commit\s+([0-9a-f]{7,40})")   # a line may break anywhere


def git(*args):
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True)


def module_file(dotted):
    """The project's file of a dotted module name, or None when it is not the project's."""
    path = ROOT.joinpath(*dotted.split("."))
    for candidate in (path.with_suffix(".py"), path / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def code_of(name):
    """The files a scenario's run executes: its module and every project module it imports, followed
    through their imports; with an emulation, also the programs the run starts as processes (the
    controller app, the ranks, the hosts' tools). The scenarios package's __init__, which imports
    every scenario, is not followed."""
    todo, seen = [ROOT / "scenarios" / f"{name}.py"], set()
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        for node in ast.walk(ast.parse(path.read_text())):
            dotted = []
            if isinstance(node, ast.Import):
                dotted = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                dotted = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
                if node.module == "testbed" and any(a.name in API for a in node.names):
                    dotted.append("testbed.api")            # testbed loads its API on first use
            for d in dotted:
                parts = d.split(".")
                for k in range(1, len(parts) + 1):          # a submodule runs its packages' __init__
                    found = module_file(".".join(parts[:k]))
                    if found and found != ROOT / "scenarios" / "__init__.py":
                        todo.append(found)
    if ROOT / "testbed" / "emulation" / "network.py" in seen:
        seen |= set((ROOT / "controllers").glob("*.py")) | set((ROOT / "testbed" / "programs").glob("*.py"))
    return sorted(p.relative_to(ROOT).as_posix() for p in seen)


def test_a_scenarios_code_is_its_module_and_what_it_imports():
    code = code_of("load_balancing")
    assert "scenarios/load_balancing.py" in code and "testbed/routing/hashing.py" in code
    assert "controllers/path_installer.py" in code and "testbed/programs/rank.py" in code
    assert "scenarios/fabric_check.py" not in code and "scenarios/__init__.py" not in code


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_each_scenario_page_shows_a_run_no_older_than_its_code(name):
    """A page's measured output names its date and commit; neither the scenario's module nor any
    project code its run executes has changed since that commit (where the clone has the history
    to tell)."""
    found = MEASURED.findall((ROOT / "docs" / "scenarios" / f"{name}.md").read_text())
    assert found, f"docs/scenarios/{name}.md shows no measured run with its date and commit"
    known = [(date, c) for date, c in found if git("cat-file", "-e", f"{c}^{{commit}}").returncode == 0]
    if not known:
        pytest.skip(f"commits {', '.join(c for _, c in found)} are not in this clone's history")
    # the newest run: by date, then by its place in the history (a hash says nothing of age)
    _, commit = max(known, key=lambda f: (f[0], int(git("rev-list", "--count", f[1]).stdout)))
    changed = git("diff", "--name-only", commit, "HEAD", "--", *code_of(name)).stdout.split()
    assert not changed, (f"{', '.join(changed)} changed since the run docs/scenarios/{name}.md shows ({commit}): "
                         "measure it again")


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_each_scenario_page_lists_the_options_the_scenario_has(name, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")      # the width the pages are written at
    sub = next(a for a in run_scenario.parser()._actions if a.dest == "scenario").choices[name]
    help_ = sub.format_help()
    page = (ROOT / "docs" / "scenarios" / f"{name}.md").read_text()
    assert "## Options\n\n```\n" + help_[help_.index("options:"):].rstrip("\n") + "\n```\n" in page, \
        f"docs/scenarios/{name}.md: its Options block is not `run_scenario.py {name} --help`"
