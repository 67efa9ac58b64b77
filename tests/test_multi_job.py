"""multi_job's flow model on one HPN 7.0 segment, without root: every job alone and together under
each scheme, in every draw, and the comparisons it prints beside Crux's figures."""
from scenarios import multi_job as mj


def test_the_segment_model_compares_every_scheme_over_the_draws():
    rows, jobs, order = mj.scale_model(seed=3, draws=2, mtu=9000)
    assert len(jobs) == len(mj.SCALE_JOBS) and sorted(order) == list(range(len(jobs)))
    assert {(r["form"], r["trial"]) for r in rows} == {(f, t) for f in ("alone", "ecmp", "priority", "paths")
                                                       for t in (0, 1)}
    for t in (0, 1):
        for form in ("ecmp", "priority", "paths"):
            assert 0 < mj.utilisation(rows, jobs, form, t) <= 1
    alone = {(r["trial"], r["job_index"]): r["iteration_s"] for r in rows if r["form"] == "alone"}
    for r in rows:
        if r["form"] == "ecmp":                      # together never beats alone under the same hashing
            assert r["iteration_s"] >= alone[r["trial"], r["job_index"]] - 1e-9
