"""Stage 4b, probes: what the papers claim, measured on real packets in a running emulation. The
collision probe captures every switch-to-switch link and says which flows of which collective step
shared one; the queue sampler polls a switch port's FIFO over netlink; the incast probe drives
many-to-one traffic and measures the last-hop queue with the sampler and with scapy probes at once.
"""
