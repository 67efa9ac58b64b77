"""The experiment engine's runners, driven with stand-ins for the emulation (no root)."""
from contextlib import contextmanager

from testbed.experiments.job_trials import run_watched
from testbed.experiments.trials import Form, run_trials


class Check:
    lines = ["fabric check: stand-in"]


class Watch:
    def __init__(self, log, lives):
        self.log, self.lives, self.error = log, lives, None

    def alive(self):
        if self.lives <= 0:
            self.error = "stalled"
        return self.lives > 0

    def __enter__(self):
        self.log.append("start")
        return self

    def __exit__(self, *exc):
        self.log.append("stop")


class Emu:
    def __init__(self, log, lives):
        self.log, self.lives = log, list(lives)

    def check(self):
        return Check()

    def watch(self, comm, size, draw=None, stall_limit=None):
        return Watch(self.log, self.lives.pop(0))


class Experiment:
    def __init__(self, emu, tmp_path):
        self.emu, self.built, self.rows = emu, [], []
        self.results = type("Results", (), {"path": tmp_path})()

    def check(self, check, label=None):
        return check

    def row(self, row):
        self.rows.append(row)

    @contextmanager
    def emulate(self, topo, routing="deterministic", **kw):
        self.built.append((topo, routing, kw.get("folder")))
        yield self.emu


def test_a_job_that_gives_up_is_started_again_for_the_trials_left(tmp_path):
    log = []
    emu = Emu(log, [2, 5])        # the first job lives through two trials, then stalls

    def trial(emu, watch, item, ready):
        watch.lives -= 1
        log.append(f"trial {item} on {ready}")
        return {"item": item}

    starts = iter(["links-a", "links-b"])
    rows = []
    check = run_watched(Experiment(emu, tmp_path), "topo", "ecmp", "comm", 1024, [0, 1, 2, 3], trial, draw=None,
                        stall_limit=5, mtu=9000, folder=tmp_path, on_row=rows.append,
                        prepare=lambda emu, watch: next(starts))
    assert [r["item"] for r in rows] == [0, 1, 2, 3]
    assert log == ["start", "trial 0 on links-a", "trial 1 on links-a", "stop",
                   "start", "trial 2 on links-b", "trial 3 on links-b", "stop"]
    assert check.lines == ["fabric check: stand-in"]


def test_paired_trials_alternate_the_forms_and_keep_a_row_s_own_fields(tmp_path):
    experiment = Experiment(Emu([], []), tmp_path)
    forms = [Form("a", "topo-a"), Form("b", "topo-b", "pinned")]
    seen = []
    rows, checks = run_trials(experiment, forms, trials=2, seed=10, mtu=9000, check=False, on_row=seen.append,
                              measure=lambda emu, form, draw, trial, folder: [{"draw": draw.seed, "x": 1}])
    assert [(r["trial"], r["form"], r["seed"], r["draw"]) for r in rows] == [
        (0, "a", 10, 10), (0, "b", 10, 10), (1, "b", 11, 11), (1, "a", 11, 11)]
    assert [(topo, routing) for topo, routing, _ in experiment.built] == [
        ("topo-a", "ecmp"), ("topo-b", "pinned"), ("topo-b", "pinned"), ("topo-a", "ecmp")]
    assert seen == rows and checks == {}
