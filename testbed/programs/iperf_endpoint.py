"""One iperf3 endpoint through the Python wrapper (libiperf), run inside an emulated host.

    python -m testbed.programs.iperf_endpoint server BIND_IP PORT
    python -m testbed.programs.iperf_endpoint client SERVER_IP PORT DURATION OMIT [SOURCE_PORT [CC]]

The server says {"ready": true} once it listens and serves one test. The client says {"ready": true}
once loaded, starts its test on a line on stdin (so that many clients start together, not while
others are still starting up), and says {"result": {received and sent Mbit/s, retransmits}} or
{"error": ...}. A client test is one TCP connection, from SOURCE_PORT (0: the kernel's choice) as
iperf3's --cport binds it, with the congestion control CC (iperf3's -C: the socket's own, which a
host's namespace may not make its default; "" or none: the namespace's default).
"""
import json
import os
import sys
import threading
import time
from ctypes import c_char_p, c_int, c_void_p
from pathlib import Path

import iperf3


def _say(fd, **msg):
    os.write(fd, (json.dumps(msg) + "\n").encode())


def _say_when_listening(port, fd, timeout=60.0):   # probes.flows.STARTUP_S
    """libiperf listens inside its run(), which also takes over stdout: watch this namespace's TCP
    table for the listening socket and speak through a copy of the original stdout."""
    local, deadline = f":{port:04X}", time.monotonic() + timeout
    while time.monotonic() < deadline:
        for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
            fields = line.split()
            if fields[1].endswith(local) and fields[3] == "0A":   # TCP_LISTEN
                _say(fd, ready=True)
                return
        time.sleep(0.05)
    _say(fd, error=f"iperf3 server did not listen on port {port} within {timeout:.0f} s")


def server(ip, port):
    out = os.dup(1)
    threading.Thread(target=_say_when_listening, args=(int(port), out), daemon=True).start()
    server = iperf3.Server()
    server.bind_address, server.port, server.json_output = ip, int(port), True
    result = server.run()
    return 0 if result and not result.error else 1


def client(ip, port, duration, omit, source_port=0, congestion_control=""):
    out = os.dup(1)
    client = iperf3.Client()
    client.server_hostname, client.port = ip, int(port)
    client.duration, client.omit, client.protocol = int(duration), int(omit), "tcp"
    client.num_streams = 1
    if int(source_port):     # libiperf's own setter, which the wrapper does not expose
        client.lib.iperf_set_test_bind_port.argtypes = (c_void_p, c_int)
        client.lib.iperf_set_test_bind_port(client._test, int(source_port))
    if congestion_control:
        client.lib.iperf_set_test_congestion_control.argtypes = (c_void_p, c_char_p)
        client.lib.iperf_set_test_congestion_control(client._test, congestion_control.encode())
    _say(out, ready=True)
    if not sys.stdin.readline():
        return 1
    result = client.run()
    if result.error:
        _say(out, error=f"iperf3 to {ip}:{port}: {result.error}")
        return 1
    _say(out, result={"received_mbit": result.received_Mbps, "sent_mbit": result.sent_Mbps,
                      "retransmits": result.retransmits})
    return 0


if __name__ == "__main__":
    sys.exit({"server": server, "client": client}[sys.argv[1]](*sys.argv[2:]))
