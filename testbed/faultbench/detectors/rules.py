"""The testbed's own detector: the operator's monitor (``fidelity.monitor``, the rules of
``fidelity.diagnosis``) run over a stored trace's windows, as it runs over a live watch's."""
from testbed.faultbench.detectors.alarm import Alarm
from testbed.fidelity.monitor import Monitor


class Rules:
    name = "rules"
    about = "the testbed's monitor: each 1 s window against the healthy ones before it (C4's classes)"
    GRID = {}               # its thresholds are the diagnosis module's, set by hand on earlier runs

    def detect(self, trace):
        monitor = Monitor(trace.topo, trace.window, 0.0, trace.cadence, trace.baseline, paths=trace.paths)
        monitor.poll(trace.duration)
        return [Alarm(a.at, a.finding.kind, a.finding.where, a.finding.evidence) for a in monitor.alarms if a.new]
