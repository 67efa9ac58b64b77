#!/usr/bin/env python3
"""mpirun's rsh agent for a launch (``runs.launch``) and bench.peers: `rsh_agent.py HOST COMMAND...`
runs the command (an OpenMPI daemon) in the network namespace of the emulated host HOST, whose pid
the file named by TESTBED_PEER_PIDS gives ({host: pid})."""
import json
import os
import sys

host, command = sys.argv[1], " ".join(sys.argv[2:])
with open(os.environ["TESTBED_PEER_PIDS"]) as f:
    pid = json.load(f)[host]
os.execvp("nsenter", ["nsenter", "-t", str(pid), "-n", "--", "sh", "-c", command])
