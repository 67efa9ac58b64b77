"""How a run emulates its fabrics, chosen once (``run_scenario.py``'s options, or ``testbed.emulate``'s
arguments) and passed as a value to every emulation of the run: no module keeps it, so two
emulations in one process can differ.

- slots: split every fabric into this many slots, an ovs-vswitchd each (emulation.slots);
- cpu_placement: auto, pinned or none (emulation.cores);
- control_class: whether every switch port serves the ranks' clear-to-sends and ACKs first
  (emulation.shaping): an idealisation, on by default (docs/design.md, *The control class*);
- ecn: K in bytes, every switch port marking ECN-capable packets above K and the hosts' TCP asking
  for ECN (emulation.ecn), or None: drop-tail FIFOs only, the default;
- congestion_control: the TCP congestion control of the ranks' connections between hosts and of the
  flows (cubic, bbr, reno or dctcp, the project's own: emulation.dctcp), or None: the ranks' CUBIC
  and the flows' machine default;
- machines: a machines file's machines (machines.inventory) that run the slots, with the run's
  Dask engine and what the machines' preflight measured per (fabric, MTU), or None: this machine;
- results: the run's folder, where its emulations write unless told otherwise.
"""
from dataclasses import dataclass, field
from pathlib import Path

from testbed.emulation import cores
from testbed.errors import TestbedError


@dataclass(frozen=True)
class RunSettings:
    slots: int = 1
    cpu_placement: str = "auto"
    control_class: bool = True
    ecn: int | None = None
    congestion_control: str | None = None
    machines: object = None          # machines.inventory.Machines
    engine: object = None            # machines.engine.Engine, started for the run
    checked: dict = field(default_factory=dict)
    results: Path | None = None

    def __post_init__(self):
        if not isinstance(self.slots, int) or isinstance(self.slots, bool) or self.slots < 1:
            raise TestbedError(f"--slots must be 1 or more (got {self.slots!r}): 1 is one ovs-vswitchd for the fabric")
        if not isinstance(self.control_class, bool):
            raise TestbedError(f"control_class must be True or False (got {self.control_class!r})")
        if self.ecn is not None and (not isinstance(self.ecn, int) or isinstance(self.ecn, bool) or self.ecn <= 0):
            raise TestbedError(f"--ecn must be a positive number of bytes (got {self.ecn!r}): e.g. --ecn 30000")
        if self.congestion_control is not None and not isinstance(self.congestion_control, str):
            raise TestbedError(f"--cc must be a congestion control's name (got {self.congestion_control!r})")
        if self.cpu_placement not in cores.MODES:
            raise TestbedError(f"--cpu-placement must be one of {', '.join(cores.MODES)} "
                               f"(got {self.cpu_placement!r})")
        if self.machines is not None:
            if self.slots > 1:
                raise TestbedError("the machines file gives each machine its slots: drop --slots")
            if self.congestion_control:
                raise TestbedError("--cc is set on the hosts of one machine's fabric: run it without --machines")
            if self.cpu_placement == "pinned":
                raise TestbedError("--cpu-placement pinned pins one ovs-vswitchd: with --machines use none")

    def placement(self):
        """The CPU placement a split or spread fabric can have: only an unsplit one is pinned."""
        return "none" if self.slots > 1 or self.machines is not None else self.cpu_placement
