"""--compare-ecn without root: every form gets its twin under marking, the comparison pairs them,
and a run without the option does what it did before (its fingerprint unchanged)."""
import run_scenario
from scenarios import ecmp_collisions, multi_job
from testbed.experiments import job_models
from testbed.experiments.fingerprint import changed, of_run
from testbed.experiments.trials import marking_lines


def args_of(*argv):
    return run_scenario.parser().parse_args(list(argv))


def test_every_form_gets_a_twin_under_marking_on_the_same_fabric():
    plan = ecmp_collisions.prepare(args_of("ecmp_collisions", "--seed", "1", "--compare-ecn", "30000"))
    forms = plan.forms
    assert [f.label for f in forms] == ["clos-ecmp-hd", "clos-ecmp-hd+ecn", "bigraph-deterministic-hdrm",
                                        "bigraph-deterministic-hdrm+ecn"]
    for plain, marked in zip(forms[::2], forms[1::2]):
        assert (plain.ecn, plain.congestion_control) == (None, None)
        assert (marked.ecn, marked.congestion_control) == (30000, "dctcp")
        assert (marked.topo, marked.routing) == (plain.topo, plain.routing)
        assert plan.case(marked.label) is plan.case(plain.label)
    assert len(ecmp_collisions.prepare(args_of("ecmp_collisions", "--seed", "1")).forms) == 2


def test_the_option_changes_only_its_own_part_of_the_fingerprint():
    base = of_run(ecmp_collisions, args_of("ecmp_collisions", "--seed", "1"))
    marked = of_run(ecmp_collisions, args_of("ecmp_collisions", "--seed", "1", "--compare-ecn", "30000"))
    assert changed(base, marked) == ["marking"]
    cubic = of_run(ecmp_collisions, args_of("ecmp_collisions", "--seed", "1", "--compare-ecn", "30000",
                                            "--compare-cc", "cubic"))
    assert changed(marked, cubic) == ["marking"]


def rows_of(trials, iterations):
    """multi_job rows: {(form, run, job): iteration} per trial."""
    rows = []
    for t in range(trials):
        for (form, run, k), s in iterations.items():
            rows.append({"trial": t, "form": form, "run": run, "job_index": k, "iteration_s": s + 0.01 * t})
    return rows


def test_a_job_under_marking_is_slowed_against_itself_alone_under_marking():
    plan = multi_job.prepare(args_of("multi_job", "--seed", "2", "--schemes", "ecmp", "--compare-ecn", "30000"))
    labels = [f.label for f in multi_job.forms(plan)]
    assert labels == ["ecmp", "ecmp+ecn"]
    rows = rows_of(3, {("ecmp", "alone", 0): 1.0, ("ecmp", "alone", 1): 1.0, ("ecmp", "together", 0): 1.5,
                       ("ecmp", "together", 1): 1.5, ("ecmp+ecn", "alone", 0): 2.0, ("ecmp+ecn", "alone", 1): 2.0,
                       ("ecmp+ecn", "together", 0): 2.2, ("ecmp+ecn", "together", 1): 2.2})
    assert job_models.slowdowns(rows, plan.jobs, "ecmp+ecn", 0) == [1.1, 1.1]      # 2.2 over 2.0, not over 1.0
    assert job_models.slowdowns(rows, plan.jobs, "ecmp", 0) == [1.5, 1.5]
    slowed = {c.labels: c for c in job_models.comparisons(rows, plan.jobs, labels, 3)}
    assert round(slowed["alone", "ecmp+ecn"].a.mean, 2) == 2.01


def test_the_ports_figures_are_shown_per_form():
    port = {"queue_max_bytes": 90000, "queue_busy_mean_bytes": 30000, "fabric_drops": 0, "marked": 10, "ect": 100}
    rows = [dict(port, form="a+ecn"), dict(port, form="a+ecn", marked=30), {"form": "b"}]
    (line,) = marking_lines(rows, ["a", "a+ecn", "b"])
    assert line.startswith("  a+ecn: deepest queue 90.0 KB") and "marked 20 of 100" in line


def test_a_scheme_under_marking_has_its_marks_compared_with_ecmp_under_marking():
    plan = multi_job.prepare(args_of("multi_job", "--seed", "2", "--schemes", "ecmp,cassini", "--compare-ecn",
                                     "30000"))
    labels = [f.label for f in multi_job.forms(plan)]
    assert labels == ["ecmp", "ecmp+ecn", "cassini", "cassini+ecn"]
    rows = rows_of(3, {(f, run, k): 1.0 for f in labels for run in ("alone", "together") for k in (0, 1)
                       if run == "together" or f in ("ecmp", "ecmp+ecn")})
    for r in rows:
        if r["run"] == "together" and r["form"].endswith("+ecn"):
            r["marked"] = 300 if r["form"] == "ecmp+ecn" else 10
            r["sent_marked"] = (200 if r["form"] == "ecmp+ecn" else 8) if r["job_index"] == 0 else 100 - 98 * (
                r["form"] == "cassini+ecn")
    compared = job_models.comparisons(rows, plan.jobs, labels, 3)
    (marks,) = [c for c in compared if c.name.startswith("ECN marks")]
    assert marks.labels == ("ecmp+ecn", "cassini+ecn") and (marks.a.mean, marks.b.mean) == (300, 10)
    # and each job's own: the marks on the packets its hosts sent
    per_job = [c for c in compared if "'s ECN marks" in c.name]
    assert [c.name.split("'s")[0] for c in per_job] == [job.name for job in plan.jobs]
    assert [(c.a.mean, c.b.mean) for c in per_job] == [(200, 8), (100, 2)]
