"""One run of a scenario, and the skeleton every run shares (``conduct``).

A scenario's ``run(plan, experiment)`` says what it measures and what it concludes; the engine
does the rest, the same way for every scenario: the run's JSON (``<scenario>.json``: the rows, what
the scenario adds to ``about``, the status however the run ends), each row into its CSV as it is
measured and onto the screen, the output kept by section for the run's record (header, the fabric
checks, rows, summary), the headline figures the record and the page keep, the claims checked
against them, the listing of the files written, and the exit code (1 when an element differed from
numpy's result, or the scenario says the run failed).
"""
import dataclasses
import re
import time

from testbed import api
from testbed.emulation.network import DEFAULT_MTU
from testbed.emulation.settings import RunSettings
from testbed.experiments.claims import check_claims

SECTIONS = ("header", "checks", "rows", "summary")
PROGRESS = re.compile(r" \[\d+/\d+\]$")      # a table line's count of rows done


class Experiment:
    """What run_scenario.py hands a scenario's run(plan, experiment): ``results``, the run's folder
    (``report.folder.RunFolder``), and ``settings`` (``emulation.settings.RunSettings``: slots, CPU
    placement, machines), which every fabric it emulates gets. A user's own experiment is built the
    same way: Experiment(RunFolder(path).create())."""

    def __init__(self, results, settings=None, log=print, name="experiment"):
        self.results, self.log, self.name = results, log, name
        self.settings = settings or RunSettings(results=results.path)
        self.rows = []
        self.about = {"scenario": name, "rows": self.rows}     # the run's JSON
        self.headline = {}          # {figure: value}: what the record keeps and a page's history shows
        self.output = {section: [] for section in SECTIONS}
        self.failed = None          # why the run failed though every result was right, if it did
        self.started = time.monotonic()

    def emulate(self, topo, routing="deterministic", *, hash="same", folder=None, mtu=DEFAULT_MTU, log=None,
                priority=None, flows=(), ecn=None, congestion_control=None):
        """The running fabric (``api.Emulated``), its files in `folder` (default: the run's); ecn
        and congestion_control, where given, in place of the run's settings (a form's own)."""
        settings = self.settings
        if ecn or congestion_control:
            settings = dataclasses.replace(settings, ecn=ecn or settings.ecn,
                                           congestion_control=congestion_control or settings.congestion_control)
        return api.emulate(topo, routing, hash=hash, folder=folder or self.results.path, mtu=mtu,
                           log=self.log if log is None else log, settings=settings, priority=priority,
                           flows=flows)

    def say(self, *lines, section="summary"):
        """Print lines and keep them in the record's section (a line may hold several)."""
        for text in lines:
            print(text, flush=True)
            self.output[section] += str(text).strip("\n").split("\n") if str(text).strip("\n") else []

    def table(self, line):
        """A line of a table as it is measured: printed with its progress count ([3/24]), kept without."""
        print(line, flush=True)
        self.output["rows"].append(PROGRESS.sub("", line))

    def header(self, *lines):
        self.say(*lines, section="header")

    def check(self, check, label=None):
        """A fabric check's lines, kept; its pass or fail in the JSON's 'fabric_check'."""
        self.say(*check.lines, section="checks")
        self.about.setdefault("fabric_check", {})[label or "fabric"] = check.passed
        return check

    def row(self, row, line=None, csv=None, omit=()):
        """A measured row: into the JSON, into `csv` (without the fields in `omit`, nor nested
        ones), and its `line` onto the screen."""
        self.rows.append(row)
        if csv:
            self.results.append(csv, {k: v for k, v in row.items()
                                      if k not in omit and not isinstance(v, (dict, list))})
        if line is not None:
            self.say(line, section="rows")
        return row

    def figure(self, name, draw, *args, fabric, **kwargs):
        return self.results.figure(name, draw, *args, fabric=fabric, **kwargs)

    @property
    def wrong(self):
        return sum(r.get("wrong") or 0 for r in self.rows)

    @property
    def seconds(self):
        return round(time.monotonic() - self.started, 1)


def conduct(module, plan, experiment):
    """Run a scenario module's measurement on the engine's skeleton; its exit code."""
    with experiment.results.outcome(f"{module.NAME}.json", experiment.about):
        module.run(plan, experiment)
        experiment.about["headline"] = experiment.headline
        experiment.about["seconds"] = experiment.seconds
    claims = check_claims(getattr(module, "CLAIMS", ()), experiment.headline)
    if claims:
        experiment.say("claims (the page's, checked on this run's figures):",
                       *[f"  {c['verdict']}: {c['claim']} ({c['said']})" for c in claims])
    experiment.about["claims"] = claims
    experiment.results.json(f"{module.NAME}.json", experiment.about)
    print(experiment.results.listing())
    if experiment.wrong:
        return 1
    return 1 if experiment.failed else 0
