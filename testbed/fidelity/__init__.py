"""Stage 5, fidelity: whether the emulation delivers what it was configured to. Takes a running
emulation (or a topology, before anything is built) and hands on verdicts: the capacity check
that refuses a fabric beyond what the emulator carries, the fabric check (reachability, TCP at
the link rate), and for every measurement whether the emulator itself was the bottleneck.
"""
