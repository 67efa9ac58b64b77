"""The documentation a user reads: every scenario has its page, every command a page or the README
gives names a scenario and options that pass their checks (prepare: nothing built), and every
link between the pages leads somewhere. No root."""
import re
import shlex
import subprocess
from pathlib import Path

import pytest

import run_scenario
from scenarios import DEFAULT, SCENARIOS
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


MEASURED = re.compile(r"(\d{4}-\d{2}-\d{2}), commit ([0-9a-f]{7,40})")


def git(*args):
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True)


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_each_scenario_page_shows_a_run_no_older_than_its_scenario(name):
    """A page's measured output names its date and commit; the scenario's module has not changed
    since that commit (where the clone has the history to tell)."""
    found = MEASURED.findall((ROOT / "docs" / "scenarios" / f"{name}.md").read_text())
    assert found, f"docs/scenarios/{name}.md shows no measured run with its date and commit"
    known = [(date, c) for date, c in found if git("cat-file", "-e", f"{c}^{{commit}}").returncode == 0]
    if not known:
        pytest.skip(f"commits {', '.join(c for _, c in found)} are not in this clone's history")
    # the newest run: by date, then by its place in the history (a hash says nothing of age)
    _, commit = max(known, key=lambda f: (f[0], int(git("rev-list", "--count", f[1]).stdout)))
    changed = git("diff", "--stat", commit, "HEAD", "--", f"scenarios/{name}.py").stdout.strip()
    assert not changed, f"scenarios/{name}.py changed since the run its page shows ({commit}): measure it again"


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_each_scenario_page_lists_the_options_the_scenario_has(name, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")      # the width the pages are written at
    sub = next(a for a in run_scenario.parser()._actions if a.dest == "scenario").choices[name]
    help_ = sub.format_help()
    page = (ROOT / "docs" / "scenarios" / f"{name}.md").read_text()
    assert "## Options\n\n```\n" + help_[help_.index("options:"):].rstrip("\n") + "\n```\n" in page, \
        f"docs/scenarios/{name}.md: its Options block is not `run_scenario.py {name} --help`"
