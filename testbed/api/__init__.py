"""The testbed as a Python library: build a fabric, bring it to life, run a workload on it, and get
back plain results carrying the ratios a test asserts on. The scenarios are written on it
(through ``testbed.experiments``), and so are the project's own emulation tests;
``testbed.pytest_plugin`` gives it to pytest.

    import testbed

    topo = testbed.fabric("bigraph:2,8")                  # a family, a FILE.json|yaml, simai:FILE
    with testbed.emulate(topo) as emu:                    # root; torn down whatever happens
        sweep = emu.sweep(["hd", "hdrm"], [1 << 20])
    assert sweep.ratio("hdrm", "hd", 1 << 20) > 1.3       # busbw of one over the other
    assert sweep.wrong == 0                               # every result checked against numpy

Bad input raises ``TestbedError`` with a one-line message before anything is built.

- ``fabric``: a fabric as checked data; ``compare``: a figure over paired trials;
- ``emulate``: the running fabric (``Emulated``): ``check``, ``sweep``, ``collisions``,
  ``collectives`` (several at once, each a ``Comm``), ``flows``, ``incast``;
- the results: ``Collective``, ``Sweep``, ``Collisions``, ``Together``, ``Flows``, ``FabricCheck``.
"""
from testbed.api.emulated import Emulated, emulate
from testbed.api.fabric import compare, fabric
from testbed.api.results import Collective, Collisions, FabricCheck, Flows, Sweep, Together
from testbed.api.together import Comm
from testbed.emulation.settings import RunSettings
from testbed.errors import TestbedError
from testbed.report.paired import trial_order
from testbed.routing.hashing import Draw
from testbed.topology.hpn7 import HPN_UPLINK_CAPACITY, plane_forms

__all__ = ["fabric", "emulate", "Emulated", "plane_forms", "Draw", "compare", "trial_order", "Collective", "Sweep",
           "Collisions", "Flows", "FabricCheck", "Together", "Comm", "RunSettings", "TestbedError",
           "HPN_UPLINK_CAPACITY"]
