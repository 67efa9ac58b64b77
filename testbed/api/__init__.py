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
- the results: ``Collective``, ``Sweep``, ``Collisions``, ``Together``, ``Flows``, ``FabricCheck``;
- what a run is made of, as plain data: the fabrics (``BiGraph``, ``HPN7``, ``LeafSpine``,
  ``from_spec`` and their defaults, ``faster_uplinks``, ``with_scaleup``), where ranks go
  (``place``, ``place_jobs``, ``rail_ring``, ...), the schedules (``Ring``, ``HalvingDoubling``,
  ``PairwiseAlltoall``), SimAI's ``workloads``, a training job (``Job``), a fault (``Fault``), a hash
  draw (``Draw``) and where it puts a connection (``Placer``).
"""
from testbed import routing as routing  # the routing plan, as data (``routing.plan``)
from testbed.api.emulated import Emulated, emulate
from testbed.api.fabric import compare, fabric
from testbed.api.results import Collective, Collisions, FabricCheck, Flows, Sweep, Together
from testbed.collectives import workload as workloads
from testbed.collectives.cross_segment import CrossSegmentJob, data_connections
from testbed.collectives.data import ELEMENT_BYTES
from testbed.collectives.placements import (
    COLLECTIVE_VARIANTS,
    PLACEMENTS,
    on_shared_nics,
    part_of_racks,
    place,
    place_jobs,
    rail_ring,
    servers,
)
from testbed.collectives.schedules import HalvingDoubling, PairwiseAlltoall, Ring
from testbed.collectives.training import compute_seconds, linear_ratio
from testbed.collectives.workload import scaled_count
from testbed.emulation.dctcp import check as check_congestion_control
from testbed.emulation.dctcp import offered as congestion_controls
from testbed.emulation.ecn import check as check_ecn
from testbed.emulation.faults import Fault
from testbed.emulation.network import DEFAULT_MTU
from testbed.emulation.settings import RunSettings
from testbed.emulation.shaping import HIGH_DSCP, PRIORITIES
from testbed.errors import TestbedError
from testbed.programs.rank import EAGER_LIMIT
from testbed.report.paired import trial_order
from testbed.routing.hashing import BONDS, Draw, Placer
from testbed.runs.jobs import NVLINK_GBIT, Job, bus_bytes
from testbed.runs.launch import Launch, LaunchError
from testbed.runs.together import Comm
from testbed.topology import DEFAULT_QUEUE, DEFAULT_RATE, FORMS, HPN7, BiGraph, LeafSpine, from_spec
from testbed.topology.base import interface, with_scaleup
from testbed.topology.hpn7 import HPN_UPLINK_CAPACITY, plane_forms
from testbed.topology.uplinks import RATIOS, faster_uplinks

__all__ = ["fabric", "emulate", "Emulated", "plane_forms", "Draw", "compare", "trial_order", "Collective", "Sweep",
           "Collisions", "Flows", "FabricCheck", "Together", "Comm", "RunSettings", "TestbedError",
           "HPN_UPLINK_CAPACITY",
           # what a run is made of
           "BiGraph", "HPN7", "LeafSpine", "from_spec", "FORMS", "DEFAULT_RATE", "DEFAULT_QUEUE",
           "DEFAULT_MTU", "RATIOS", "faster_uplinks", "with_scaleup", "PLACEMENTS", "COLLECTIVE_VARIANTS", "place",
           "place_jobs", "servers", "part_of_racks", "rail_ring", "on_shared_nics", "Ring", "HalvingDoubling",
           "PairwiseAlltoall", "workloads", "scaled_count", "CrossSegmentJob", "data_connections",
           "compute_seconds", "linear_ratio", "ELEMENT_BYTES", "EAGER_LIMIT", "HIGH_DSCP", "PRIORITIES", "BONDS",
           "Placer", "Fault", "Job", "NVLINK_GBIT", "bus_bytes", "Launch", "LaunchError", "check_ecn",
           "check_congestion_control", "congestion_controls", "interface"]
