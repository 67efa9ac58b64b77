"""Many-to-one transfers for the incast probe, one process per end.

    python -m testbed.programs.incast_endpoint server IP PORT SENDERS BYTES [CC]
        listens and says {"ready": true}, accepts SENDERS connections, reads BYTES from each, and
        says {"done": {sender id: time.monotonic() when its last byte arrived}}
    python -m testbed.programs.incast_endpoint client IP PORT ID BYTES [CC]
        connects and says {"ready": true}, waits for {"start": T} on stdin and then until
        time.monotonic() reaches T (every namespace shares the clock, so all senders start
        together), sends BYTES, waits until the receiver has them all (it closes), and says
        {"sent": BYTES, "retransmits": segments resent, "timeouts": retransmission timeouts}
CC: the TCP congestion control of the connections, on the listener and each sender (default: the
host's).
"""
import json
import select
import socket
import struct
import sys
import time


def say(**msg):
    print(json.dumps(msg), flush=True)


TCP_INFO_BYTES = 248
TOTAL_RETRANS = 100          # tcp_info's tcpi_total_retrans (u32)
TOTAL_RTO = 240              # tcpi_total_rto (u16, Linux 6.7 and later)


def take(sock, congestion_control):
    if congestion_control:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, congestion_control.encode())


def server(ip, port, senders, size, congestion_control="", timeout=120.0):
    listener = socket.create_server((ip, port), backlog=senders)
    take(listener, congestion_control)
    listener.settimeout(timeout)
    say(ready=True)
    conns = {}
    for _ in range(senders):
        sock, _ = listener.accept()
        sender = struct.unpack("!I", sock.recv(4, socket.MSG_WAITALL))[0]
        sock.setblocking(False)
        conns[sock] = [sender, size]
    done, buf = {}, bytearray(1 << 20)
    while conns:
        readable, _, _ = select.select(list(conns), [], [], timeout)
        if not readable:
            return say(error=f"incast receiver: no data for {timeout:.0f} s from senders "
                             f"{sorted(c[0] for c in conns.values())}")
        for sock in readable:
            got = sock.recv_into(buf, min(len(buf), conns[sock][1]))
            if not got:
                return say(error=f"incast receiver: sender {conns[sock][0]} closed early")
            conns[sock][1] -= got
            if conns[sock][1] == 0:
                done[conns[sock][0]] = time.monotonic()
                sock.close()
                del conns[sock]
    say(done=done)


def client(ip, port, sender, size, congestion_control=""):
    sock = socket.socket()
    take(sock, congestion_control)
    sock.settimeout(30)
    sock.connect((ip, port))
    sock.sendall(struct.pack("!I", sender))
    say(ready=True)
    line = sys.stdin.readline()
    if not line:
        return
    time.sleep(max(0.0, json.loads(line)["start"] - time.monotonic()))
    chunk, left = bytes(min(size, 1 << 20)), size
    while left:
        left -= sock.send(memoryview(chunk)[:left])
    sock.settimeout(120)
    sock.shutdown(socket.SHUT_WR)
    sock.recv(1)                               # the receiver closes once it has every byte
    info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, TCP_INFO_BYTES)
    sock.close()
    rto = struct.unpack_from("H", info, TOTAL_RTO)[0] if len(info) >= TOTAL_RTO + 2 else None
    say(sent=size, retransmits=struct.unpack_from("I", info, TOTAL_RETRANS)[0], timeouts=rto)


if __name__ == "__main__":
    mode, ip, port, number, size = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
    (server if mode == "server" else client)(ip, port, number, size, sys.argv[6] if len(sys.argv) > 6 else "")
