"""Many-to-one transfers for the incast probe, one process per end.

    python -m testbed.programs.incast_endpoint server IP PORT SENDERS BYTES
        listens and says {"ready": true}, accepts SENDERS connections, reads BYTES from each, and
        says {"done": {sender id: time.monotonic() when its last byte arrived}}
    python -m testbed.programs.incast_endpoint client IP PORT ID BYTES
        connects and says {"ready": true}, waits for {"start": T} on stdin and then until
        time.monotonic() reaches T (every namespace shares the clock, so all senders start
        together), sends BYTES and says {"sent": BYTES}
"""
import json
import select
import socket
import struct
import sys
import time


def say(**msg):
    print(json.dumps(msg), flush=True)


def server(ip, port, senders, size, timeout=120.0):
    listener = socket.create_server((ip, port), backlog=senders)
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


def client(ip, port, sender, size):
    sock = socket.create_connection((ip, port), timeout=30)
    sock.sendall(struct.pack("!I", sender))
    say(ready=True)
    line = sys.stdin.readline()
    if not line:
        return
    time.sleep(max(0.0, json.loads(line)["start"] - time.monotonic()))
    chunk, left = bytes(min(size, 1 << 20)), size
    while left:
        left -= sock.send(memoryview(chunk)[:left])
    sock.close()
    say(sent=size)


if __name__ == "__main__":
    mode, ip, port, number, size = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
    (server if mode == "server" else client)(ip, port, number, size)
