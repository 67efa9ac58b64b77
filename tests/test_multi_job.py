"""multi_job's flow model on one HPN 7.0 segment, without root: every job alone and together under
each scheme, in every draw, and the comparisons it prints beside Crux's figures."""
from scenarios import multi_job as mj
from testbed.experiments import job_models


def test_the_segment_model_compares_every_scheme_over_the_draws():
    rows, jobs, order = job_models.scale_model(seed=3, draws=2, mtu=9000)
    assert len(jobs) == len(job_models.SCALE_JOBS) and sorted(order) == list(range(len(jobs)))
    assert {(r["form"], r["trial"]) for r in rows} == {(f, t) for f in ("alone", "ecmp", "priority", "paths")
                                                       for t in (0, 1)}
    for t in (0, 1):
        for form in ("ecmp", "priority", "paths"):
            assert 0 < job_models.utilisation(rows, jobs, form, t) <= 1
    alone = {(r["trial"], r["job_index"]): r["iteration_s"] for r in rows if r["form"] == "alone"}
    for r in rows:
        if r["form"] == "ecmp":                      # together never beats alone under the same hashing
            assert r["iteration_s"] >= alone[r["trial"], r["job_index"]] - 1e-9


def test_a_job_has_the_same_5_tuples_alone_together_and_in_the_model(monkeypatch):
    """A Draw hands out ports in turn: a run and its model given one Draw object would differ."""
    import run_scenario
    from testbed.routing import plan as routes
    plan = mj.prepare(run_scenario.parser().parse_args(["multi_job", "--seed", "5", "--trials", "2"]))
    taken, connections = [], job_models.job_connections

    def recorded(topo, job, draw):
        schedule, conns = connections(topo, job, draw)
        flat = [c for p in conns.values() for cs in p.values() for c in cs]
        taken.append((job.name, sorted((c.src, c.dst, c.sport) for c in flat)))
        return schedule, conns

    class Emu:
        routing = routes(plan.topo, "ecmp")

        def jobs(self, jobs, iters, draws, capture=None, offsets=None):
            for job, draw in zip(jobs, draws):
                recorded(plan.topo, job, draw)       # the run opens its connections from the draw
            return [{"iteration_s": 1.0, "wrong": 0} for _ in jobs]

    monkeypatch.setattr(job_models, "job_connections", recorded)
    (ecmp,) = [f for f in mj.forms(plan) if f.label == "ecmp"]
    list(mj.measure(plan, {})(Emu(), ecmp, None, 0, None))
    for job in plan.jobs:
        mine = [ports for name, ports in taken if name == job.name]
        # alone, its model, together, its model
        assert len(mine) == 4 and all(ports == mine[0] for ports in mine), job.name


def test_the_model_sends_each_connection_out_of_the_nic_port_its_turn_gives_it():
    """A bonded NIC's connections go out in turn (round-robin), as the emulated hosts' source-port
    rules send them: the model knows each one's port instead of guessing a hash it cannot compute."""
    import run_scenario
    from testbed import routing
    from testbed.routing.hashing import Draw
    plan = mj.prepare(run_scenario.parser().parse_args(["multi_job", "--seed", "5", "--trials", "2"]))
    job = plan.jobs[0]
    _, conns = job_models.job_connections(plan.topo, job, Draw(11, mj.BOND))
    flat = [c for peers in conns.values() for cs in peers.values() for c in cs]
    paths = job_models.model_paths(plan.topo, routing.plan(plan.topo, "ecmp"), flat)
    fabric = [c for c in flat if not plan.topo.same_server(c.src, c.dst)]   # the others: the scale-up domain
    for c in fabric:
        (host, port), *_ = paths[c]
        assert host == c.src and port == plan.topo.hosts[c.src].ports[c.turn % 2].port
    assert {c.turn % 2 for c in fabric} == {0, 1}
    assert all(paths[c] == [(c.src, plan.topo.scaleup_port(c.src, c.dst))] for c in flat if c not in fabric)
