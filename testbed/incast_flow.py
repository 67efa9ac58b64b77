"""Many-to-one transfers for the incast scenario, one process per end.

    python -m testbed.incast_flow server IP PORT SENDERS BYTES
        listens (and says {"listening": true}), accepts SENDERS connections, reads BYTES from
        each, and prints {"done": {sender id: time.monotonic() when its last byte arrived}}
    python -m testbed.incast_flow client IP PORT ID BYTES START
        connects, waits until time.monotonic() reaches START (every namespace shares the clock,
        so all senders start together), sends BYTES, and exits.
"""
import json
import select
import socket
import struct
import sys
import time


def server(ip, port, senders, size, timeout=120.0):
    listener = socket.create_server((ip, port), backlog=senders)
    listener.settimeout(timeout)
    print(json.dumps({"listening": True}), flush=True)
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
            raise SystemExit(f"incast server: no data for {timeout} s from senders "
                             f"{sorted(c[0] for c in conns.values())}")
        for sock in readable:
            got = sock.recv_into(buf, min(len(buf), conns[sock][1]))
            if not got:
                raise SystemExit(f"incast server: sender {conns[sock][0]} closed early")
            conns[sock][1] -= got
            if conns[sock][1] == 0:
                done[conns[sock][0]] = time.monotonic()
                sock.close()
                del conns[sock]
    print(json.dumps({"done": done}), flush=True)


def client(ip, port, sender, size, start):
    sock = socket.create_connection((ip, port), timeout=30)
    sock.sendall(struct.pack("!I", sender))
    time.sleep(max(0.0, start - time.monotonic()))
    sock.sendall(bytes(size))
    sock.close()


if __name__ == "__main__":
    mode, ip, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
    if mode == "server":
        server(ip, port, int(sys.argv[4]), int(sys.argv[5]))
    else:
        client(ip, port, int(sys.argv[4]), int(sys.argv[5]), float(sys.argv[6]))
