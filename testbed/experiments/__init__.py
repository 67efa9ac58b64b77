"""The engine the scenarios run on, over the public API (``testbed.api``): an ``Experiment`` (a
run's results folder and its run settings), the size sweeps of nccl-tests (``sweeps``), paired
trials over hash draws (``trials``), and trials on one running job (``watched``). A scenario
module keeps only what is its own: its options, what it measures on a running fabric, and what it
prints."""
