"""The documentation a user reads: every scenario has its page, every command a page or the README
gives names a scenario and options that pass their checks (prepare: nothing built), and every
link between the pages leads somewhere. No root."""
import re
import shlex
from pathlib import Path

import pytest

import run_scenario
from scenarios import DEFAULT, SCENARIOS
from testbed.emulation.shaping import netem_available
from testbed.experiments import pages
from testbed.experiments import record as records

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted((ROOT / "docs").rglob("*.md")) + [ROOT / "README.md"]
COMMANDS = sorted({(page.relative_to(ROOT).as_posix(), command.strip())
                   for page in PAGES for command in re.findall(r"run_scenario\.py([^`\n]*)", page.read_text())})


def test_every_scenario_has_its_page_and_the_readme_links_it():
    readme = (ROOT / "README.md").read_text()
    for name in SCENARIOS:
        assert (ROOT / "docs" / "scenarios" / f"{name}.md").exists(), name
        assert f"(docs/scenarios/{name}.md)" in readme, name
    assert len(readme.splitlines()) <= 170          # a front page: prerequisites and terms, the rest linked


@pytest.mark.parametrize("page, command", COMMANDS, ids=[f"{p}: {c}" for p, c in COMMANDS])
def test_each_command_of_the_docs_is_accepted(page, command):
    argv = shlex.split(command.split("#")[0])
    argv = [a for a in argv if not re.fullmatch(r"[|>].*|tee|\S+\.log", a)]
    if not argv or argv[0] in ("...", "--list", "--cleanup", "--calibrate", "--pages", "--stale") or "--help" in argv:
        return                                   # prose ("run_scenario.py ...") or no scenario run
    if argv[0].startswith("-"):
        argv = [DEFAULT] + argv
    if "--delay" in argv and not netem_available():
        pytest.skip("--delay needs netem, which this kernel lacks (the lab VM has it)")
    args = run_scenario.parser().parse_args(argv)
    if getattr(args, "score", None) and not Path(args.score).exists():
        return                                   # a run's folder the reader has made (faultbench --score DIR)
    assert SCENARIOS[args.scenario].prepare(args) is not None


def anchors(page):
    """The anchors GitHub gives a page's headings."""
    return {re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
            for heading in re.findall(r"^#+ (.+)$", page.read_text(), re.M)}


def test_links_between_the_pages_lead_to_files_and_headings():
    for page in PAGES:
        for target, anchor in re.findall(r"\]\(([^)#\s]*)(?:#([^)\s]*))?\)", page.read_text()):
            if target.startswith("http"):
                continue
            linked = page.parent / target if target else page
            assert linked.exists(), f"{page.relative_to(ROOT)}: {target}"
            if anchor and linked.suffix == ".md":
                assert anchor in anchors(linked), f"{page.relative_to(ROOT)}: {target}#{anchor}: no such heading"


READING_WORDS = 1150     # five minutes at 230 words a minute


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_a_scenario_page_reads_in_five_minutes(name):
    """What a reader reads of a page (its prose: not the measured blocks, folded details, code,
    options or tables) stays short; the method's detail belongs in docs/design.md."""
    text = (ROOT / "docs" / "scenarios" / f"{name}.md").read_text()
    for folded in (r"<!-- measured:.*?<!-- /measured -->", r"<details>.*?</details>", r"```.*?```", r"<!--.*?-->"):
        text = re.sub(folded, "", text, flags=re.S)
    words = sum(len(line.split()) for line in text.splitlines() if not line.startswith(("|", "    ")))
    assert words <= READING_WORDS, f"docs/scenarios/{name}.md: {words} words of prose, more than {READING_WORDS}"


def test_every_measured_block_of_a_page_is_what_its_record_gives():
    """A page cannot show figures its run did not produce: each block is drawn from its record
    (run_scenario.py --pages), which parses, is a run of the page's scenario, and comes from a
    commit in the history (pages.mismatches loads each one so)."""
    assert pages.mismatches(SCENARIOS) == []


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_every_scenario_page_shows_its_default_command_from_a_record(name):
    """Measured figures come from records only: a page's first block is a run of its scenario's
    default command (no options but the seed), and no page types an output block by hand."""
    text = pages.page_of(name).read_text()
    shown = pages.blocks(text)
    assert shown, f"docs/scenarios/{name}.md shows no measured block"
    first = records.load(ROOT / shown[0][1], SCENARIOS)
    assert list(first["key"]) == [name], f"docs/scenarios/{name}.md: its first block is {first['command']}"
    typed = pages.BLOCK.sub("", text)                 # what is left when the generated blocks are taken out
    assert "Run again" not in typed and not re.search(r"^Measured with `sudo", typed, re.M), \
        f"docs/scenarios/{name}.md types a measured run by hand: show it from a record"


def test_every_kept_record_parses_names_its_scenario_and_a_commit_of_the_history():
    for path in sorted(records.RECORDS.rglob("*.json")):
        record = records.load(path, SCENARIOS)
        assert path.parent.name == record["scenario"], path


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_each_scenario_page_lists_the_options_the_scenario_has(name):
    page = (ROOT / "docs" / "scenarios" / f"{name}.md").read_text()
    assert pages.options(run_scenario.parser(), name) in page, \
        f"docs/scenarios/{name}.md: its Options block is not `run_scenario.py {name} --help` (run_scenario.py --pages)"
