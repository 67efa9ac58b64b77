"""Runs as records and pages drawn from them (no root): a run's fingerprint says what it does and
nothing else, a record keeps the command that reruns it and the verdicts it printed, a bad record
is refused in one line, a page's block is what its record gives, a page goes stale exactly where
its run's plan changed, and says "measured with older code" where the code that measured it did."""
import dataclasses
import importlib
import json

import pytest

import run_scenario
from scenarios import SCENARIOS
from testbed.errors import TestbedError
from testbed.experiments import code_half, pages
from testbed.experiments import record as records
from testbed.experiments.claims import Claim, check_claims, refuted
from testbed.experiments.fingerprint import ADDED, canonical, changed, of_run


def args_of(*argv):
    return run_scenario.parser().parse_args(list(argv))


def test_a_fingerprint_is_the_same_in_every_process_and_a_seed_counts_where_it_decides_the_plan():
    a = of_run(SCENARIOS["ecmp_collisions"], args_of("ecmp_collisions", "--seed", "1"))
    b = of_run(SCENARIOS["ecmp_collisions"], args_of("ecmp_collisions", "--seed", "2"))
    c = of_run(SCENARIOS["ecmp_collisions"], args_of("ecmp_collisions"), seed=3)     # a seed it drew
    assert a == b == c                                       # its trials draw at run time, from the seed
    faults = SCENARIOS["fault_localisation"]                 # its plan draws the faults
    drawn = of_run(faults, args_of("fault_localisation"), seed=7)
    assert drawn == of_run(faults, args_of("fault_localisation", "--seed", "7"))
    assert changed(drawn, of_run(faults, args_of("fault_localisation", "--seed", "8"))) == ["runs"]


def test_where_a_run_writes_changes_no_fingerprint(tmp_path):
    a = of_run(SCENARIOS["bigraph_allreduce"], args_of("bigraph_allreduce"))
    b = of_run(SCENARIOS["bigraph_allreduce"], args_of("bigraph_allreduce", "--results", str(tmp_path), "--record"))
    assert a == b


def test_auto_is_fingerprinted_by_every_choice_it_may_run():
    auto = of_run(SCENARIOS["bigraph_allreduce"], args_of("bigraph_allreduce", "--algorithms", "auto"))
    both = of_run(SCENARIOS["bigraph_allreduce"], args_of("bigraph_allreduce", "--algorithms", "rdrm,hdrm"))
    assert auto["hash"] != both["hash"] and auto["parts"]["sizes"] == both["parts"]["sizes"]


@pytest.mark.parametrize("option, parts", [
    (("--rate", "20"), {"topo"}),
    (("--topology", "bigraph:2,4"), {"topo", "fabric 0 routes", "placed", "schedules"}),
    (("--algorithms", "hd,hdrm"), {"placed", "schedules"}),
    (("--max-bytes", "262144"), {"sizes"}),
    (("--slots", "2"), {"settings"}),
])
def test_a_changed_option_changes_the_parts_it_touches_and_no_other(option, parts):
    base = of_run(SCENARIOS["bigraph_allreduce"], args_of("bigraph_allreduce"))
    other = of_run(SCENARIOS["bigraph_allreduce"], args_of("bigraph_allreduce", *option))
    assert base["hash"] != other["hash"]
    assert set(changed(base, other)) == parts


def test_the_emulation_model_is_a_part_of_every_emulated_run(monkeypatch):
    base = of_run(SCENARIOS["fabric_check"], args_of("fabric_check"))
    monkeypatch.setattr("testbed.programs.rank.EAGER_LIMIT", 1 << 20)
    assert changed(base, of_run(SCENARIOS["fabric_check"], args_of("fabric_check"))) == ["model"]


def test_a_schedule_s_steps_are_in_the_fingerprint(monkeypatch):
    from testbed.collectives import schedules
    base = of_run(SCENARIOS["bigraph_allreduce"], args_of("bigraph_allreduce", "--algorithms", "ring"))
    original = schedules.Ring.steps
    monkeypatch.setattr(schedules.Ring, "steps",
                        lambda self, rank, ranks, count: original(self, rank, ranks, count)[1:])
    after = of_run(SCENARIOS["bigraph_allreduce"], args_of("bigraph_allreduce", "--algorithms", "ring"))
    assert changed(base, after) == ["schedules"]


def test_the_paths_a_planner_gives_a_plan_s_flows_are_in_the_fingerprint(monkeypatch):
    plans = importlib.import_module("testbed.routing.plan")     # testbed.routing.plan is also a function
    base = of_run(SCENARIOS["multi_job"], args_of("multi_job"))
    original = plans.place_flows
    monkeypatch.setattr(plans, "place_flows", lambda topo, flows, **kw: original(topo, list(flows)[::-1], **kw))
    assert changed(base, of_run(SCENARIOS["multi_job"], args_of("multi_job"))) == ["planned 0 routes",
                                                                                   "planned 1 routes"]


def test_canonical_data_names_no_memory_address():
    class Thing:
        def __init__(self):
            self.x, self.seed, self._private = 1.5, 99, object()
    assert canonical(Thing()) == {"class": "Thing", "x": 1.5}
    assert "0x" not in json.dumps(canonical({"f": test_canonical_data_names_no_memory_address}))


def test_a_field_added_later_is_left_out_at_its_default_so_old_runs_stay_current():
    @dataclasses.dataclass
    class Run:
        x: int
        new: float = dataclasses.field(default=0.0, metadata={ADDED: "--new"})
    assert canonical(Run(1)) == {"class": "Run", "x": 1}           # as before the field was added
    assert canonical(Run(1, 0.5)) == {"class": "Run", "x": 1, "new": 0.5}
    base = of_run(SCENARIOS["fault_localisation"], args_of("fault_localisation", "--seed", "5"))
    other = of_run(SCENARIOS["fault_localisation"], args_of("fault_localisation", "--seed", "5", "--straggler", "0.5"))
    assert changed(base, other) == ["runs"]


def test_a_record_keeps_the_command_that_reruns_it():
    argv = ["hpn7_planes", "--trials", "4", "--results", "/tmp/x", "--record"]
    assert records.rerun(argv, 1234) == "run_scenario.py hpn7_planes --trials 4 --seed 1234"
    assert records.rerun(argv + ["--seed", "7"], 7) == "run_scenario.py hpn7_planes --trials 4 --seed 7"
    assert records.command_key(argv + ["--seed", "7"]) == ["hpn7_planes", "--trials", "4"]
    assert records.rerun(["incast", "--results=/tmp/y"], None) == "run_scenario.py incast"


def test_a_launched_programs_own_arguments_stay_its_own():
    argv = ["launch", "--topology", "bigraph:2,4", "--record", "--", "python3", "job.py", "--seed", "3", "--record"]
    assert records.command_key(argv) == ["launch", "--topology", "bigraph:2,4", "--", "python3", "job.py",
                                         "--seed", "3", "--record"]
    assert records.rerun(argv, 99, "--record") == ("run_scenario.py launch --topology bigraph:2,4 --seed 99 "
                                                   "--record -- python3 job.py --seed 3 --record")
    assert records.with_options(["launch", "--", "x"], "--rate", "20") == ["launch", "--rate", "20", "--", "x"]


ONE_FLOW = Claim("one flow gets the link", "longest path goodput/link", at_least=0.9)


def write_record(folder, **changes):
    args = args_of("fabric_check")
    record = {"format": 1, "scenario": "fabric_check", "command": "run_scenario.py fabric_check",
              "argv": ["fabric_check"], "key": ["fabric_check"], "seed": None, "started": "2026-11-26T18:00:00",
              "seconds": 61.0, "status": "complete", "exit_code": 0, "commit": records.git("rev-parse", "HEAD"),
              "dirty": False, "changed": [], "versions": {"open vswitch": "3.1"},
              "machine": {"cores": 2, "kernel": "k", "datapath": "user", "calibration": {"9000 none": 320}},
              "fingerprint": of_run(SCENARIOS["fabric_check"], args), "headline": {"longest path goodput/link": 0.99},
              "output": {"header": [], "checks": ["fabric check: ..."], "rows": [], "summary": []}}
    record.update(changes)
    if "claims" not in changes and isinstance(record["headline"], dict):
        record["claims"] = [ONE_FLOW.check(record["headline"])]
    path = folder / "fabric_check" / f"{record['started'].replace(':', '')}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record))
    return path


@pytest.fixture
def kept(tmp_path, monkeypatch):
    """A records folder and a scenario page of our own."""
    monkeypatch.setattr(records, "RECORDS", tmp_path / "records")
    monkeypatch.setattr(pages, "PAGES", tmp_path / "pages")
    monkeypatch.setattr(pages, "GUIDES", tmp_path / "guides")
    (tmp_path / "pages").mkdir()
    for name in SCENARIOS:
        (tmp_path / "pages" / f"{name}.md").write_text(f"# {name}\n")
    return tmp_path


@pytest.mark.skipif(records.git("rev-parse", "HEAD") is None, reason="needs the repository's history")
def test_a_page_drawn_from_its_records_matches_them_and_goes_stale_where_its_plan_changed(kept):
    first = write_record(kept / "records", started="2026-11-25T10:00:00")
    write_record(kept / "records", started="2026-11-26T18:00:00", headline={"longest path goodput/link": 0.97})
    page = kept / "pages" / "fabric_check.md"
    page.write_text(f"# fabric_check\n\n<!-- measured: {first} -->\nold\n<!-- /measured -->\n\nreading\n")
    run_scenario.main(["--pages"])
    text = page.read_text()
    assert "longest path goodput/link 0.97" in text and "(shown)" in text and text.endswith("reading\n")
    assert "2026-11-25 10:00" in text                      # the earlier run, in the history table
    assert pages.mismatches(SCENARIOS) == [] and pages.stale(SCENARIOS, run_scenario.parser()) == []
    page.write_text(text.replace("0.97", "0.99", 1))        # a figure the run did not produce
    assert [why for _, _, why in pages.mismatches(SCENARIOS)] == ["the block is not what the record gives"]
    page.write_text(text)
    newest = sorted((kept / "records" / "fabric_check").glob("*.json"))[-1]
    data = json.loads(newest.read_text())
    data["fingerprint"]["parts"]["topo"] = "0" * 16           # as if the fabric had been another
    newest.write_text(json.dumps(data))
    (found,) = pages.stale(SCENARIOS, run_scenario.parser())
    assert found[2] == ["topo"] and found[4] == [] and found[5] == "sudo python3 run_scenario.py fabric_check --record"
    run_scenario.main(["--pages"])
    assert pages.STALE in page.read_text() and pages.mismatches(SCENARIOS) == []    # the banner aside


@pytest.mark.skipif(records.git("rev-parse", "HEAD") is None, reason="needs the repository's history")
def test_a_page_in_a_scenarios_folder_is_drawn_and_checked_as_its_page_is(kept):
    """What else a scenario shows goes on pages in docs/scenarios/NAME/: their blocks are drawn
    from the records and a figure typed over is found, as on the scenario's page."""
    first = write_record(kept / "records", started="2026-11-25T10:00:00")
    write_record(kept / "records", started="2026-11-26T18:00:00", headline={"longest path goodput/link": 0.97})
    (kept / "pages" / "fabric_check").mkdir()
    page = kept / "pages" / "fabric_check" / "more.md"
    page.write_text(f"# more\n\n<!-- measured: {first} -->\nold\n<!-- /measured -->\n")
    assert pages.pages_of("fabric_check") == [kept / "pages" / "fabric_check.md", page]
    run_scenario.main(["--pages"])
    text = page.read_text()
    assert "longest path goodput/link 0.97" in text and pages.mismatches(SCENARIOS) == []
    page.write_text(text.replace("0.97", "0.99", 1))
    assert [(p, why) for p, _, why in pages.mismatches(SCENARIOS)] == \
        [(pages.named(page), "the block is not what the record gives")]


@pytest.mark.skipif(records.git("rev-parse", "HEAD") is None, reason="needs the repository's history")
def test_a_change_to_the_code_half_marks_a_block_measured_with_older_code_not_stale(kept):
    path = write_record(kept / "records")
    page = kept / "pages" / "fabric_check.md"
    page.write_text(f"# fabric_check\n\n<!-- measured: {path} -->\nold\n<!-- /measured -->\n")
    data = json.loads(path.read_text())
    data["fingerprint"]["code"]["testbed/fidelity/fabric_check.py"] = "0" * 16    # as an edit since would
    data["argv"] = ["fabric_check", "--results", "/tmp/x", "--record"]
    path.write_text(json.dumps(data))
    (found,) = pages.stale(SCENARIOS, run_scenario.parser())
    assert found[2] == [] and found[4] == ["testbed/fidelity/fabric_check.py"]
    assert found[5] == "sudo python3 run_scenario.py fabric_check --record"     # the run as given, kept
    run_scenario.main(["--pages"])
    text = page.read_text()
    assert pages.OLDER in text and pages.STALE not in text and pages.mismatches(SCENARIOS) == []


def test_a_code_half_hashes_what_a_file_does_not_how_it_is_written():
    one = 'CLAIMS = (1,)\ndef f(x):\n    """Doubles."""\n    return 2 * x  # twice\n'
    two = 'CLAIMS = (2,)\n\n\ndef f(x):\n    return 2 * x\n'
    assert code_half.hash_text("a.py", one) == code_half.hash_text("a.py", two)
    assert code_half.hash_text("a.py", one) != code_half.hash_text("a.py", one.replace("2 * x", "3 * x"))
    assert code_half.hash_text("m.c", "int k = 1; /* K */\n// note\n") == code_half.hash_text("m.c", "int k = 1;")
    assert code_half.hash_text("m.c", "int k = 1;") != code_half.hash_text("m.c", "int k = 2;")


def test_a_run_given_an_option_hashes_the_code_that_option_brings_and_no_other_run_does():
    parse = run_scenario.parser().parse_args
    plain = code_half.of(SCENARIOS["launch"], parse(["launch"]))
    faulty = code_half.of(SCENARIOS["launch"], parse(["launch", "--inject", "link-down:U0-L0@5"]))
    assert "testbed/fidelity/diagnosis.py" in faulty and "testbed/fidelity/diagnosis.py" not in plain
    assert set(plain) < set(faulty) and all(faulty[path] == plain[path] for path in plain)


def test_an_edit_to_the_detector_marks_the_fault_pages_and_no_other(monkeypatch):
    """What an edit to testbed/fidelity/diagnosis.py does to the kept pages: the pages that list it
    as measured with older code are those whose figures the detector decides, fault_localisation's
    (its reacting run too) and faultbench's (whose rules detector it is) and launch's page of runs
    with a fault (not its page of runs without one), and no other."""
    real = code_half.hash_text
    monkeypatch.setattr(code_half, "hash_text", lambda path, text: "edited" if path.endswith("diagnosis.py")
                        else real(path, text))
    touched = {page for page, _, _, _, older, _ in pages.stale(SCENARIOS, run_scenario.parser())
               if "testbed/fidelity/diagnosis.py" in older}
    assert touched == {"docs/scenarios/fault_localisation.md", "docs/scenarios/fault_localisation/reacting.md",
                       "docs/scenarios/faultbench.md", "docs/scenarios/launch/faults.md"}


@pytest.mark.skipif(records.git("rev-parse", "HEAD") is None, reason="needs the repository's history")
def test_an_edit_to_a_claim_changes_no_verdict_a_page_shows(kept, monkeypatch):
    path = write_record(kept / "records", headline={"longest path goodput/link": 0.85})
    page = kept / "pages" / "fabric_check.md"
    page.write_text(f"# fabric_check\n\n<!-- measured: {path} -->\nold\n<!-- /measured -->\n")
    monkeypatch.setattr(SCENARIOS["fabric_check"], "CLAIMS", (ONE_FLOW,))
    run_scenario.main(["--pages"])
    before = pages.shown_verdicts(page.read_text())
    assert [v for _, v, _ in before] == ["DOES NOT HOLD"]
    monkeypatch.setattr(SCENARIOS["fabric_check"], "CLAIMS", (Claim(ONE_FLOW.text, ONE_FLOW.figure, at_least=0.8),))
    run_scenario.main(["--pages"])
    text = page.read_text()
    assert pages.shown_verdicts(text) == before                      # the run's verdict, as it printed it
    assert "would judge this run's figures otherwise" in text and "**holds**" in text


@pytest.mark.skipif(records.git("rev-parse", "HEAD") is None, reason="needs the repository's history")
def test_a_block_whose_verdicts_were_typed_over_is_refused_by_pages(kept, capsys):
    path = write_record(kept / "records", headline={"longest path goodput/link": 0.85})
    page = kept / "pages" / "fabric_check.md"
    page.write_text(f"# fabric_check\n\n<!-- measured: {path} -->\nold\n<!-- /measured -->\n")
    run_scenario.main(["--pages"])
    page.write_text(page.read_text().replace("**DOES NOT HOLD**", "**holds**"))
    assert pages.mismatches(SCENARIOS) != []
    capsys.readouterr()
    assert run_scenario.main(["--pages"]) == 2
    err = capsys.readouterr().err.strip()
    assert "shows verdicts its record does not hold" in err and "\n" not in err


@pytest.mark.skipif(records.git("rev-parse", "HEAD") is None, reason="needs the repository's history")
def test_a_page_with_runs_from_machines_of_two_classes_says_so_at_its_top(kept):
    first = write_record(kept / "records")
    other = write_record(kept / "records", started="2026-11-27T09:00:00", argv=["fabric_check", "--duration", "3"],
                         key=["fabric_check", "--duration", "3"],
                         machine={"cores": 2, "kernel": "k", "datapath": "system", "calibration": {"9000 none": 960}})
    page = kept / "pages" / "fabric_check.md"
    page.write_text(f"# fabric_check\n\n<!-- measured: {first} -->\n<!-- /measured -->\n\n"
                    f"<!-- measured: {other} -->\n<!-- /measured -->\n")
    run_scenario.main(["--pages"])
    text = page.read_text()
    assert "machines of 2 classes" in text.split("<!-- measured")[0]
    assert "user datapath, faithful to 320 Mbit/s at MTU 9000" in text and pages.mismatches(SCENARIOS) == []


@pytest.mark.skipif(records.git("rev-parse", "HEAD") is None, reason="needs the repository's history")
def test_a_run_of_the_same_command_on_the_kernel_datapath_is_shown_beside_not_over(kept):
    here = write_record(kept / "records")
    vm = write_record(kept / "records", started="2026-12-04T09:00:00", headline={"longest path goodput/link": 0.93},
                      machine={"cores": 2, "kernel": "6.1", "datapath": "kernel", "calibration": {"9000 none": 160}})
    page = kept / "pages" / "fabric_check.md"
    page.write_text(f"# fabric_check\n\n<!-- measured: {here} -->\n<!-- /measured -->\n\n"
                    f"<!-- measured: {vm} -->\n<!-- /measured -->\n\nIn the VM "
                    "<!-- fig: fabric_check@kernel | longest path goodput/link -->?<!-- /fig -->, here "
                    "<!-- fig: fabric_check | longest path goodput/link -->?<!-- /fig -->.\n")
    run_scenario.main(["--pages"])
    text = page.read_text()
    user_block, kernel_block = text.split("<!-- measured: ")[1:]
    assert "0.99" in user_block and "user datapath" in user_block and "0.93" not in user_block
    assert "0.93" in kernel_block and "kernel datapath" in kernel_block
    assert "In the VM <!-- fig: fabric_check@kernel | longest path goodput/link -->0.93<" in text
    assert "here <!-- fig: fabric_check | longest path goodput/link -->0.99<" in text
    assert pages.mismatches(SCENARIOS) == []


@pytest.mark.parametrize("change, said", [
    ({"scenario": "nonesuch"}, "names an unknown scenario"),
    ({"commit": "0" * 40}, "not in this repository's history"),
    ({"claims": [dict(ONE_FLOW.check({"longest path goodput/link": 0.5}), value=0.99)]},
     "keeps verdicts its figures do not give"),
    ({"fingerprint": None, "output": None, "headline": None}, None),
])
@pytest.mark.skipif(records.git("rev-parse", "HEAD") is None, reason="needs the repository's history")
def test_a_bad_record_is_refused_in_one_line(kept, change, said):
    path = write_record(kept / "records", **change)
    if said is None:                                        # missing fields
        data = json.loads(path.read_text())
        for key in change:
            del data[key]
        path.write_text(json.dumps(data))
        said = "lacks fingerprint, headline, output"
    with pytest.raises(TestbedError) as e:
        records.load(path, SCENARIOS)
    assert said in str(e.value) and "\n" not in str(e.value)


def test_a_record_that_does_not_parse_is_refused_by_pages_in_one_line(kept, capsys):
    bad = kept / "records" / "fabric_check" / "broken.json"
    bad.parent.mkdir(parents=True)
    bad.write_text("{not json")
    (kept / "pages" / "fabric_check.md").write_text(f"<!-- measured: {bad} -->\nx\n<!-- /measured -->\n")
    assert run_scenario.main(["--pages"]) == 2
    err = capsys.readouterr().err.strip()
    assert "does not parse" in err and "\n" not in err


def test_a_claim_reads_one_headline_figure():
    claim = Claim("HDRM at the link rate", "hdrm busbw/link", at_least=0.9)
    assert claim.check({"hdrm busbw/link": 0.95})["verdict"] == "holds"
    assert claim.check({"hdrm busbw/link": 0.5})["verdict"] == "DOES NOT HOLD"
    assert claim.check({})["verdict"] == "NOT MEASURED"


def test_a_gain_is_judged_on_its_interval_not_its_mean():
    claim = Claim("paths win", "utilisation: gain", at_least=0.05)
    def figures(mean, lo, hi):
        return {"utilisation: gain": mean, "utilisation: gain low": lo, "utilisation: gain high": hi}
    assert claim.check(figures(0.10, 0.06, 0.14))["verdict"] == "holds"
    assert claim.check(figures(0.10, -0.2, 0.4))["verdict"] == "not shown"
    assert claim.check(figures(0.047, -0.1, 0.2))["verdict"] == "not shown"
    assert claim.check(figures(0.0, 0.0, 0.0))["verdict"] == "DOES NOT HOLD"
    checked = check_claims([claim], figures(0.0, -0.01, 0.01)) + check_claims([claim], {})
    assert [c["verdict"] for c in refuted(checked)] == ["DOES NOT HOLD", "NOT MEASURED"]


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_every_scenario_states_its_claims_on_figures_it_reports_and_a_smoke_form(name):
    module = SCENARIOS[name]
    assert module.CLAIMS, f"{name} states no claim"
    args = args_of(name, *module.SMOKE)
    assert module.prepare(args) is not None
    assert not hasattr(args, "seed") or args.seed is not None, \
        f"{name}'s SMOKE draws a fresh seed on every run: give it --seed, one that exercises its claims"


def test_the_runs_table_shows_a_compared_figure_as_its_gain_and_interval_and_few_figures():
    record = {"headline": {"busbw: clos": 0.45, "busbw: bigraph": 0.98, "busbw: gain": 1.2, "busbw: gain low": 1.0,
                           "busbw: gain high": 1.4, "wrong": 0, **{f"x{k}": k for k in range(9)}}}
    cell = pages.headline_text(record)
    assert cell.startswith("busbw: gain +1.2 [+1, +1.4]; wrong 0; x0 0") and "clos" not in cell
    assert cell.endswith("; 5 more in the record")
    assert pages.headline_text({"headline": {}}) == "-"


@pytest.mark.skipif(records.git("rev-parse", "HEAD") is None, reason="needs the repository's history")
def test_a_record_whose_code_half_names_a_file_not_in_the_tree_is_refused_by_pages(kept, capsys):
    path = write_record(kept / "records")
    data = json.loads(path.read_text())
    data["fingerprint"]["code"]["testbed/fidelity/gone.py"] = "0" * 16
    path.write_text(json.dumps(data))
    (kept / "pages" / "fabric_check.md").write_text(f"# f\n\n<!-- measured: {path} -->\nx\n<!-- /measured -->\n")
    capsys.readouterr()
    assert run_scenario.main(["--pages"]) == 2
    err = capsys.readouterr().err.strip()
    assert "testbed/fidelity/gone.py, not in the tree" in err and "\n" not in err
