"""Whether a run's seed is held out from the method that scores it: computed from the kept records
and the code (experiments.held_out), never typed."""
from scenarios import SCENARIOS
from testbed.experiments import code_half, held_out

FAULTS = SCENARIOS["fault_localisation"]


def kept(seed, code, path="docs/records/fault_localisation/x.json", started="2026-12-01T10:00:00"):
    return {"seed": seed, "commit": "abcdef0123", "path": path, "started": started,
            "fingerprint": {"plan": "p", "code": code}}


def test_a_seed_run_with_other_method_code_is_not_held_out():
    now = code_half.of(FAULTS)
    other = dict(now, **{"testbed/fidelity/diagnosis.py": "0" * 16})
    shown = held_out.of(1234, FAULTS, [kept(1234, other), kept(99, now)])
    assert not shown.held_out and "docs/records/fault_localisation/x.json" in shown.why
    assert str(shown).startswith("NOT held out: ")


def test_a_seed_run_only_with_this_code_or_never_run_is_held_out():
    now = code_half.of(FAULTS)
    assert held_out.of(1234, FAULTS, [kept(1234, now), kept(1234, now)]).held_out
    assert held_out.of(5678, FAULTS, [kept(1234, dict(now, **{"testbed/fidelity/monitor.py": "x"}))]).held_out


def test_a_change_to_the_emulation_alone_is_not_the_method_s():
    now = code_half.of(FAULTS)
    emulation_only = dict(now, **{path: "changed" for path in code_half.EMULATION})
    assert held_out.of(1234, FAULTS, [kept(1234, emulation_only)]).held_out
    assert set(held_out.method_files(FAULTS)) >= {"testbed/fidelity/diagnosis.py", "scenarios/fault_localisation.py"}


def test_a_record_without_a_code_half_counts_as_other_code():
    assert not held_out.of(1234, FAULTS, [{**kept(1234, {}), "fingerprint": {"plan": "p"}}]).held_out


def test_the_smoke_s_seed_is_never_held_out():
    seed = held_out.smoke_seed(FAULTS)
    assert seed is not None and not held_out.of(seed, FAULTS, []).held_out


def test_the_kept_records_decide_it():
    records = held_out.record.history(FAULTS.NAME, SCENARIOS)
    tuned_on = [r for r in records if r["seed"] == 730353]     # the drain rule's last form was chosen on it
    assert tuned_on and not held_out.of(730353, FAULTS, records).held_out
    fresh = max(r["seed"] for r in records) + 1
    assert held_out.of(fresh, FAULTS, records).held_out


def test_a_kept_run_is_judged_as_it_stood_when_it_started():
    now = code_half.of(FAULTS)
    first = kept(1234, dict(now, **{"testbed/fidelity/diagnosis.py": "a"}), "first.json", "2026-12-01T10:00:00")
    again = kept(1234, now, "again.json", "2026-12-02T10:00:00")
    assert held_out.of_record(first, FAULTS, [first, again]).held_out        # nothing before it
    shown = held_out.of_record(again, FAULTS, [first, again])                # the detector changed since first
    assert not shown.held_out and "first.json" in shown.why
