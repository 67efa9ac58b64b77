"""The engine the scenarios run on, over the public API (``testbed.api``): an ``Experiment`` (a
run's results folder and its run settings), its record and the page drawn from it (``record``,
``pages``, ``fingerprint``), the size sweeps of nccl-tests (``nccl_tests``), paired trials over hash
draws or one pass over forms (``trials``), fault trials on one running job (``fault_trials``), job
trials and their flow models (``job_trials``, ``job_models``, ``scheme_models``) and the claims'
smoke runs (``claims``). A scenario
module keeps only what is its own: its options, what it measures on a running fabric, and what it
prints.

What a scenario reports with, from the stages below, is named here once, so that a scenario imports
``testbed.api`` (what it builds and runs) and ``testbed.experiments`` (how it is run and reported)
and nothing else.
"""
from testbed.collectives.metrics import failure_timeline
from testbed.emulation.capacity import capacity, check_link_rate, check_mtu, check_ranks
from testbed.emulation.faults import loss_available
from testbed.emulation.ovs import datapath_name
from testbed.emulation.preflight import datapath
from testbed.emulation.shaping import netem_available
from testbed.experiments.fault_trials import SecondJob
from testbed.experiments.fingerprint import ADDED
from testbed.faultbench import labels as fault_labels
from testbed.fidelity import predict
from testbed.fidelity.diagnosis import KINDS as FOUND_KINDS
from testbed.fidelity.verdict import describe, describe_all, flag
from testbed.probes.incast import roles
from testbed.probes.loads import nic_downlink_split, tier_loads
from testbed.report import fault_scores, figures
from testbed.report.paired import Comparison
from testbed.runs import sweep
from testbed.runs.collision_trials import trial_line
from testbed.runs.sweep import check_sweep

__all__ = ["ADDED", "SecondJob",
           "failure_timeline", "capacity", "check_link_rate", "check_mtu", "check_ranks", "datapath_name",
           "datapath", "loss_available", "netem_available", "predict", "FOUND_KINDS", "describe", "describe_all",
           "flag", "roles",
           "nic_downlink_split", "tier_loads", "fault_scores", "fault_labels", "figures", "Comparison",
           "sweep", "check_sweep", "trial_line"]
