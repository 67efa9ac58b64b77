"""One iperf3 endpoint through the Python wrapper (libiperf), run inside an emulated host.

    python -m testbed.iperf_flow server BIND_IP PORT
    python -m testbed.iperf_flow client SERVER_IP PORT DURATION OMIT

The client prints one JSON line: received and sent Mbit/s, retransmits, error.
"""
import json
import sys

import iperf3


def main(role, ip, port, duration=None, omit=None):
    if role == "server":
        server = iperf3.Server()
        server.bind_address, server.port, server.json_output = ip, int(port), True
        result = server.run()
        return 0 if result and not result.error else 1
    client = iperf3.Client()
    client.server_hostname, client.port = ip, int(port)
    client.duration, client.omit, client.protocol = int(duration), int(omit), "tcp"
    result = client.run()
    if result.error:
        print(json.dumps({"error": result.error}))
        return 1
    print(json.dumps({"received_mbit": result.received_Mbps, "sent_mbit": result.sent_Mbps,
                      "retransmits": result.retransmits, "error": None}))
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
