"""The engine the scenarios run on, over the public API (``testbed.api``): an ``Experiment`` (a
run's results folder and its run settings), the size sweeps of nccl-tests (``sweeps``), paired
trials over hash draws (``trials``), and trials on one running job (``watched``). A scenario
module keeps only what is its own: its options, what it measures on a running fabric, and what it
prints.

What a scenario reports with, from the stages below, is named here once, so that a scenario imports
``testbed.api`` (what it builds and runs) and ``testbed.experiments`` (how it is run and reported)
and nothing else.
"""
from testbed.collectives.metrics import failure_timeline
from testbed.emulation.capacity import capacity, check_link_rate, check_mtu, check_ranks
from testbed.emulation.ovs import datapath_name
from testbed.emulation.preflight import datapath
from testbed.emulation.shaping import netem_available
from testbed.fidelity import predict
from testbed.fidelity.diagnosis import KINDS as FOUND_KINDS
from testbed.fidelity.verdict import describe, describe_all, flag
from testbed.probes.incast import roles
from testbed.probes.loads import nic_downlink_split, tier_loads
from testbed.report import fault_scores, figures
from testbed.report.paired import Comparison

__all__ = ["failure_timeline", "capacity", "check_link_rate", "check_mtu", "check_ranks", "datapath_name",
           "datapath", "netem_available", "predict", "FOUND_KINDS", "describe", "describe_all", "flag", "roles",
           "nic_downlink_split", "tier_loads", "fault_scores", "figures", "Comparison"]
