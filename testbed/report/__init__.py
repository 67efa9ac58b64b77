"""Stage 6, report: takes a scenario's rows and verdicts and hands on what a person reads: the run
folder (checked before anything is built, with JSON and CSV files), the nccl-tests-style table,
and PNG figures.
"""
