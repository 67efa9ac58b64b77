"""One allreduce rank: python -m testbed.worker CONFIG_JSON

Opens one TCP connection to each peer its schedule needs, for sending, and accepts one from each,
for receiving: data never flows both ways on one connection, where its ACKs would queue behind the
other direction's data (measured: HD's 1 MiB exchanges fell to 0.77 of the link rate). Then says {"ready": true} on stdout, then runs one allreduce for each {"count", "iteration"}
line on stdin and answers {"iteration", "t0", "t1", "wrong"}. Any failure, including a peer that
sends nothing for `timeout` seconds, ends it with {"error": ...}. Inputs are small integers stored
as float32, so sums are exact and the result is compared with numpy's sum to the last bit.
"""
import json
import select
import socket
import struct
import sys
import time

import numpy as np

from testbed.schedules import ALGORITHMS


def rank_input(rank, count):
    i = np.arange(count, dtype=np.int64)
    return (((rank * 7 + i * 13) % 97) - 48).astype(np.float32)


def expected_sum(ranks, count):
    total = np.zeros(count, dtype=np.int64)
    for q in range(ranks):
        total += rank_input(q, count).astype(np.int64)
    return total.astype(np.float32)


class PeerError(RuntimeError):
    pass


def _stripes(view, socks):
    """{socket: its contiguous part of view}, parts as equal as can be, empty ones left out."""
    n = len(socks)
    parts = {sock: view[len(view) * k // n: len(view) * (k + 1) // n] for k, sock in enumerate(socks)}
    return {sock: part for sock, part in parts.items() if len(part)}


class Rank:
    def __init__(self, cfg):
        self.rank, self.ranks = cfg["rank"], cfg["ranks"]
        self.schedule = ALGORITHMS[cfg["algorithm"]]()
        self.addresses = [tuple(a) for a in cfg["addresses"]]
        self.timeout, self.sockbuf = cfg["timeout"], cfg["sockbuf"]
        self.streams = cfg.get("streams", 1)
        self.out, self.inc = {}, {}     # peer -> [socket per stream]

    def _tune(self, sock):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, self.sockbuf)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, self.sockbuf)

    def connect(self):
        peers = {p for s in self.schedule.steps(self.rank, self.ranks, self.ranks * 4)
                 for p in (s.send_to, s.recv_from)}
        listener = socket.create_server(self.addresses[self.rank], backlog=self.ranks * self.streams)
        deadline = time.monotonic() + self.timeout
        for peer in sorted(peers):
            self.out[peer] = []
            for stream in range(self.streams):
                while True:
                    sock = socket.socket()
                    self._tune(sock)
                    try:
                        sock.connect(self.addresses[peer])
                        break
                    except OSError:
                        sock.close()
                        if time.monotonic() > deadline:
                            raise PeerError(f"rank {self.rank}: cannot connect to rank {peer} at "
                                            f"{self.addresses[peer]} within {self.timeout} s")
                        time.sleep(0.05)
                sock.sendall(struct.pack("!II", self.rank, stream))
                self.out[peer].append(sock)
        listener.settimeout(self.timeout)
        self.inc = {peer: [None] * self.streams for peer in peers}
        for _ in range(len(peers) * self.streams):
            try:
                sock, _ = listener.accept()
            except socket.timeout:
                raise PeerError(f"rank {self.rank}: peers did not all connect within {self.timeout} s") from None
            self._tune(sock)
            sock.settimeout(self.timeout)
            peer, stream = struct.unpack("!II", self._recv_exact(sock, 8))
            self.inc[peer][stream] = sock
        listener.close()
        for sock in self.sockets():
            sock.setblocking(False)

    def sockets(self):
        return [s for socks in list(self.out.values()) + list(self.inc.values()) for s in socks if s]

    @staticmethod
    def _recv_exact(sock, n):
        data = b""
        while len(data) < n:
            part = sock.recv(n - len(data))
            if not part:
                raise PeerError("peer closed during handshake")
            data += part
        return data

    def exchange(self, to, out, frm, into):
        """Send `out` to rank `to` while receiving len(into) bytes from rank `frm`, each striped in
        contiguous parts over the streams to and from that peer."""
        sending, receiving = _stripes(out, self.out[to]), _stripes(into, self.inc[frm])
        while sending or receiving:
            readable, writable, _ = select.select(list(receiving), list(sending), [], self.timeout)
            if not readable and not writable:
                waiting = f"data from rank {frm}" if receiving else f"rank {to} to take data"
                raise PeerError(f"rank {self.rank}: waited {self.timeout} s for {waiting}")
            for sock in writable:
                try:
                    sent = sock.send(sending[sock])
                except BlockingIOError:
                    continue
                except OSError as e:
                    raise PeerError(f"rank {self.rank}: sending to rank {to} failed: {e}") from None
                sending[sock] = sending[sock][sent:]
                if not len(sending[sock]):
                    del sending[sock]
            for sock in readable:
                try:
                    got = sock.recv_into(receiving[sock])
                except BlockingIOError:
                    continue
                except OSError as e:
                    raise PeerError(f"rank {self.rank}: receiving from rank {frm} failed: {e}") from None
                if got == 0:
                    raise PeerError(f"rank {self.rank}: rank {frm} closed its connection")
                # Jumbo frames at 10 Mbit/s leave a few segments in flight; a delayed ACK (40-200 ms)
                # then stalls the sender and, through it, the whole step (measured: one rank in
                # each iteration 100-200 ms late). Linux clears quickack again, so re-arm it.
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK, 1)
                receiving[sock] = receiving[sock][got:]
                if not len(receiving[sock]):
                    del receiving[sock]

    def allreduce(self, buf, scratch, steps):
        """Runs the steps; returns each step's end time."""
        as_bytes, ends = lambda a: memoryview(a).cast("B"), []
        for s in steps:
            lo, hi = s.recv
            target = scratch[: hi - lo] if s.reduce else buf[lo:hi]
            self.exchange(s.send_to, as_bytes(buf[slice(*s.send)]), s.recv_from, as_bytes(target))
            if s.reduce:
                np.add(buf[lo:hi], target, out=buf[lo:hi])
            ends.append(time.monotonic())
        return ends


def say(**msg):
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


def main(config):
    rank = Rank(json.loads(config))
    try:
        rank.connect()
        say(ready=True)
        prepared = {}
        for line in sys.stdin:
            cmd = json.loads(line)
            if cmd.get("quit"):
                break
            count = cmd["count"]
            if count not in prepared:
                prepared.clear()
                prepared[count] = (rank_input(rank.rank, count), expected_sum(rank.ranks, count),
                                   np.empty(count, dtype=np.float32), np.empty(count, dtype=np.float32),
                                   rank.schedule.steps(rank.rank, rank.ranks, count))
            data, expected, buf, scratch, steps = prepared[count]
            np.copyto(buf, data)
            t0 = time.monotonic()
            ends = rank.allreduce(buf, scratch, steps)
            say(iteration=cmd["iteration"], t0=t0, t1=ends[-1] if ends else t0, steps=ends,
                wrong=int(np.count_nonzero(buf != expected)))
    except (PeerError, OSError) as e:
        say(error=str(e))
        return 1
    finally:
        for sock in rank.sockets():
            sock.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
