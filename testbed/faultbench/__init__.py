"""Faults as an open benchmark: what an operator's monitor saw of a watched job, kept as a
**trace** (``trace``: one Parquet table per signal and a JSON manifest), what was injected kept
apart as **labels** (``labels``), detectors that read traces and never labels (``detectors``), and
one scorer that judges their alarms one by one against the labels (``score``)."""
