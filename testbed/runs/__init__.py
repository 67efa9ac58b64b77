"""Runs on a running fabric, each a workload from launch to its rows: a size sweep (``sweep``),
several collectives at once (``together``), jobs with parallelism groups (``jobs``), hash-draw trials
(``collision_trials``), incast fan-ins (``fanins``) and a watched job with its monitor (``watch``).
``testbed.api.Emulated`` is their door; the scenarios reach them through it."""
