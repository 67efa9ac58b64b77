"""Runs across machines: a fabric's slots on several machines, on Dask distributed (docs/machines.md)."""
