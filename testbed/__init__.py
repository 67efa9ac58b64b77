"""A packet-level emulation testbed for AI-training networks.

The pipeline, one package per stage:

    topology     a fabric as plain data (BiGraph, LeafSpine, HPN7, a file)
    routing      the controller's rules and the routes flows take (deterministic, ecmp)
    emulation    the fabric brought to life: Mininet hosts, Open vSwitch, shaped links, the
                 controller process, the run record that cleanup follows, programs in hosts, and
                 what this machine carries (capacity, CPU placement, the CPU while traffic runs)
    machines     a fabric's slots across machines, on Dask distributed
    collectives  schedules, placements, parallelism groups, rank processes, workload files
    probes       captures of every link, queues at switch ports, incast, iperf3 flows
    fidelity     the flow model of what a run should achieve, the fabric check, the verdict
    report       the run folder, tables, figures, paired statistics
    faultbench   faults as a benchmark: traces of what a monitor saw, labels apart, detectors, scoring
    runs         a workload on a running fabric: sweeps, jobs, trials, fan-ins, a watched job
    api          the facade over the stages (docs/api.md), what users and scenarios import
    experiments  the engine the scenarios run on: size sweeps, paired trials, records, pages

Each stage imports only from the stages above it in this list (tests/test_layers.py).
``testbed.programs`` holds the programs that run inside emulated hosts. The design, with the
measurements behind it, is in docs/design.md.

The public API (``testbed.api``, docs/api.md) is importable from here: ``testbed.fabric``,
``testbed.emulate``, ``testbed.compare``, the result classes and what a run is made of
(``testbed.BiGraph``, ``testbed.place``, ``testbed.Ring``, ...). It is loaded on first use, so
that the stages without Mininet (topology, routing) import without it. ``testbed.step(seconds)``
reports a step of a program launched on the fabric (``run_scenario.py launch``) and loads nothing.
"""
import importlib

# Only these names load it: a lookup of any other attribute (libraries probe modules for
# attributes they may lack) must not import Mininet into a process that never asked for it.
API = ("fabric", "emulate", "Emulated", "plane_forms", "Draw", "compare", "trial_order", "Collective", "Sweep",
       "Collisions", "Flows", "FabricCheck", "Together", "Comm", "RunSettings", "TestbedError",
       "HPN_UPLINK_CAPACITY", "BiGraph", "HPN7", "LeafSpine", "from_spec", "FORMS", "DEFAULT_RATE",
       "DEFAULT_QUEUE", "DEFAULT_MTU", "RATIOS", "faster_uplinks", "with_scaleup", "PLACEMENTS",
       "COLLECTIVE_VARIANTS", "place", "place_jobs", "servers", "part_of_racks", "rail_ring", "on_shared_nics",
       "Ring", "HalvingDoubling", "PairwiseAlltoall", "workloads", "scaled_count", "CrossSegmentJob",
       "data_connections", "compute_seconds", "linear_ratio", "ELEMENT_BYTES", "EAGER_LIMIT", "HIGH_DSCP",
       "PRIORITIES", "BONDS", "Placer", "Fault", "Job", "NVLINK_GBIT", "bus_bytes", "Launch", "LaunchError",
       "check_ecn", "check_congestion_control", "congestion_controls", "interface")


def __getattr__(name):
    if name == "step":          # a launched program's step report (runs.launch), without the API's imports
        return importlib.import_module("testbed.runs.launch").step
    if name in API:
        return getattr(importlib.import_module("testbed.api"), name)
    raise AttributeError(f"module 'testbed' has no attribute {name!r}")
