"""Detectors read a trace (``faultbench.trace``) and nothing else, and return their alarms:
``detect(trace) -> [Alarm]``, one alarm per incident they raise. Each is a class in a module of its
own; DETECTORS names them as ``faultbench --detector`` takes them."""
from testbed.faultbench.detectors.alarm import Alarm
from testbed.faultbench.detectors.drift import Drift
from testbed.faultbench.detectors.greyhound import Greyhound
from testbed.faultbench.detectors.minder import Minder
from testbed.faultbench.detectors.rules import Rules

DETECTORS = {detector.name: detector for detector in (Rules, Greyhound, Minder, Drift)}

__all__ = ["DETECTORS", "Alarm"]
