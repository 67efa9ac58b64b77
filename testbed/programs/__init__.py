"""The programs that run inside emulated hosts, each started as ``python -m testbed.programs.NAME``
by ``testbed.emulation.processes``: they say {"ready": true}, take JSON lines on stdin, answer in
JSON lines, and end when stdin closes.

- ``rank``: one allreduce rank (collectives)
- ``iperf_endpoint``: an iperf3 server or client (fidelity)
- ``incast_endpoint``: the incast receiver or one sender (probes)
- ``queue_probe``: scapy's timestamped probes through a queue, sender or receiver (probes)
"""
