"""One run of a scenario: where its files go and how its fabrics are emulated."""
from testbed import api
from testbed.emulation.network import DEFAULT_MTU
from testbed.emulation.settings import RunSettings


class Experiment:
    """What run_scenario.py hands a scenario's run(plan, experiment): ``results``, the run's
    folder (``report.folder.RunFolder``), and ``settings`` (``emulation.settings.RunSettings``:
    slots, CPU placement, machines), which every fabric it emulates gets. A user's own experiment
    is built the same way: Experiment(RunFolder(path).create())."""

    def __init__(self, results, settings=None, log=print):
        self.results, self.log = results, log
        self.settings = settings or RunSettings(results=results.path)

    def emulate(self, topo, routing="deterministic", *, hash="same", folder=None, mtu=DEFAULT_MTU, log=None,
                priority=None, flows=()):
        """The running fabric (``api.Emulated``), its files in `folder` (default: the run's)."""
        return api.emulate(topo, routing, hash=hash, folder=folder or self.results.path, mtu=mtu,
                           log=self.log if log is None else log, settings=self.settings, priority=priority,
                           flows=flows)
