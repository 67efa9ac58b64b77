"""Timestamped probe packets through a queue, sent and received with scapy.

    python -m testbed.programs.queue_probe send DST_IP INTERVAL DURATION
        says {"ready": true} once scapy is loaded, waits for {"start": T} on stdin, and from
        time.monotonic() == T sends one small UDP packet every INTERVAL s for DURATION s, each
        carrying its sequence number and the wall time (time.time()) just before sending; then
        says {"sent": N}
    python -m testbed.programs.queue_probe recv IFACE
        captures them from when it says {"ready": true} until a line arrives on stdin (or stdin
        closes), then says {"probes": [[seq, sent, received], ...]}, the received time being the
        kernel's capture timestamp (wall clock, which every namespace shares)

One-way delay = received - sent; its excess over the smallest is the time spent queued.
"""
import json
import socket
import struct
import sys
import time

from scapy.all import IP, UDP, AsyncSniffer, Raw
from scapy.supersocket import L3RawSocket

PORT = 9999
FORMAT = "!Id"


def say(**msg):
    print(json.dumps(msg), flush=True)


def send(dst, interval, duration):
    # A raw IP socket: the kernel routes and resolves the MAC (static ARP here), whereas scapy's
    # default L3 socket would ARP by itself, and the fabric carries no ARP.
    sock = L3RawSocket()
    try:
        say(ready=True)
        line = sys.stdin.readline()
        if not line:
            return
        time.sleep(max(0.0, json.loads(line)["start"] - time.monotonic()))
        seq, end = 0, time.monotonic() + duration
        next_at = time.monotonic()
        while next_at < end:
            time.sleep(max(0.0, next_at - time.monotonic()))
            sock.send(IP(dst=dst) / UDP(sport=PORT, dport=PORT) / Raw(struct.pack(FORMAT, seq, time.time())))
            seq, next_at = seq + 1, next_at + interval
        say(sent=seq)
    finally:
        sock.close()


def recv(iface):
    # A bound socket that nobody reads: the probes are taken from the capture, and without it the
    # kernel would answer each probe with an ICMP port-unreachable back across the fabric.
    sink = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sink.bind(("", PORT))
    sniffer = AsyncSniffer(iface=iface, filter=f"udp dst port {PORT}", store=True)
    sniffer.start()
    say(ready=True)
    sys.stdin.readline()
    time.sleep(0.2)
    got = sniffer.stop()
    sink.close()
    out = []
    for pkt in got:
        if Raw in pkt and len(pkt[Raw].load) >= struct.calcsize(FORMAT):
            seq, sent = struct.unpack(FORMAT, pkt[Raw].load[:struct.calcsize(FORMAT)])
            out.append([seq, sent, float(pkt.time)])
    say(probes=out)


if __name__ == "__main__":
    if sys.argv[1] == "send":
        send(sys.argv[2], float(sys.argv[3]), float(sys.argv[4]))
    else:
        recv(sys.argv[2])
