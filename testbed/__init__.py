"""Packet-level emulation testbed for AI-training networks (BiGraph, HPN 7.0, Clos)."""
