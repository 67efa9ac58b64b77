"""One rank of a collective (allreduce, allgather, reduce-scatter, alltoall, broadcast, send/recv):
python -m testbed.programs.rank CONFIG_JSON

Opens one TCP connection to each peer its schedule needs, for sending, and accepts one from each,
for receiving: messages larger than a frame never flow both ways on one connection, where its ACKs
would queue behind the other direction's data (measured: HD's 1 MiB exchanges fell to 0.77 of the
link rate); only a one-byte clear-to-send goes back, for messages above the eager limit. One-frame
messages share one of a pair's two connections (``Plan``). Then says {"ready": true}
on stdout, then for each {"count", "iteration", "repeat", "compute_s"} line on stdin runs `repeat`
collectives back to back, each after compute_s seconds of modelled computation (none by default), and
answers {"iteration", "t0", "ends" (one per collective), "steps" (the first one's step
ends), "timing" (the first one's start and, per step, [sent, end, from, to, rendezvous]: when its
sends were handed to the kernel, when it ended, its peers, and whether its send waited for the
receiver's clear-to-send; and, where the command asks ("retrans": true), "retrans", [[peer,
segments]] it retransmitted to each peer over the batch, where it did any, less those the peer
reported by D-SACK as already had (a tail-loss probe or a timeout that a delay, not a loss, set
off): what an operator's host agent reads from TCP_INFO), "wrong" (over all of them)}, until stdin
closes. The config names the schedule (``schedules.ALGORITHMS``) and, for one that needs them,
its arguments (``schedule_args``). Any failure, including a peer that sends nothing for `timeout`
seconds, ends it with {"error": ...}. Each collective's inputs and the check against numpy are in
``testbed.collectives.data``.
"""
import contextlib
import json
import select
import socket
import struct
import sys
import time
from collections import deque

import numpy as np

from testbed.collectives.connections import schedule_peers
from testbed.collectives.data import COLLECTIVES, DTYPE, ELEMENT_BYTES
from testbed.collectives.schedules import ALGORITHMS

SO_MAX_PACING_RATE = 47   # <asm-generic/socket.h>; not in Python's socket module
TCPI_TOTAL_RETRANS = 100  # offset of tcpi_total_retrans (u32) in <linux/tcp.h>'s struct tcp_info
TCPI_DSACK_DUPS = 216     # offset of tcpi_dsack_dups (u32, Linux 5.3 on): resent segments the peer had already
UNPACED = (1 << 64) - 1   # ~0UL: no pacing limit
CLEAR_TO_SEND = b"\x01"
# Larger messages go by rendezvous, as MPI sends large messages. Sent eagerly, a message from a
# rank that is a step ahead shares links with the tail of its receiver's current step, which HD's
# mapping keeps apart only within a step, and the delay passes on along HD's step dependencies
# (HDRM at 1 MiB on 16 ranks, 10 Mbit/s: iterations took 1.6 s, or 1.9-2.4 s after such an
# overlap; with rendezvous, 1.60 s in 23 of 24). Since ovs-vswitchd forwards faster (tcmalloc),
# eager messages of 16-64 KiB did it too: HDRM at 256 KiB took 0.54 s with a limit of 64 KiB, 0.40
# s with 4 KiB; a message of one or two frames gains nothing from waiting.
EAGER_LIMIT = 4 << 10
CONGESTION_CONTROL = "cubic"     # on connections to other hosts (Rank._tune says why)


class PeerError(RuntimeError):
    """consequence: the error follows from another rank's (its connection closed or reset), so the
    other rank's own error names the cause."""

    def __init__(self, message, consequence=False):
        super().__init__(message)
        self.consequence = consequence


def _stripes(view, socks):
    """{socket: its contiguous part of view}, parts as equal as can be, empty ones left out."""
    n = len(socks)
    parts = {sock: view[len(view) * k // n: len(view) * (k + 1) // n] for k, sock in enumerate(socks)}
    return {sock: part for sock, part in parts.items() if len(part)}


def starts_flow(steps, i, peer):
    """Whether step i's message to (peer="send_to") or from ("recv_from") its peer starts a new flow.
    One that follows the previous step's message on the same connection only extends that flow, so
    it needs no rendezvous: Ring's steps would each wait a round trip (Ring at 4 MiB on 16 ranks:
    0.88 of the link with a rendezvous per step, 0.96 without). Both ends agree, since every
    transfer of step i-1 is a step i-1 transfer at both of its ends."""
    return i == 0 or getattr(steps[i - 1], peer) != getattr(steps[i], peer)


def listen(address, backlog, control_dscp=None, congestion_control=None):
    """The rank's listening socket. A receiving connection carries clear-to-send bytes and ACKs (and,
    in a one-frame plan, data both ways); it takes control_dscp from the listener, which puts them
    in the switches' control class (``emulation.shaping``), where they pass other flows' queued
    frames. Set here, not on the connection later: setting IP_TOS on a connection resets its route,
    and a Ring on HPN7's bonded NICs then took 0.74 s per iteration instead of 0.37 (0.56 unmarked).
    A job with a class of its own (dscp) keeps all its packets in it. congestion_control: the
    run's, on the listener too: a sender that runs DCTCP before connecting sends an ECN-capable SYN,
    on which only a listener that runs DCTCP agrees to ECN (without it DCTCP falls back to Reno)."""
    listener = socket.create_server(address, backlog=backlog)
    if control_dscp is not None:
        listener.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, control_dscp << 2)
    if congestion_control:
        listener.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, congestion_control.encode())
    return listener


class Rank:
    def __init__(self, cfg):
        self.rank, self.ranks = cfg["rank"], cfg["ranks"]
        # several schedules (a workload's collectives) share the rank's connections; a command
        # names the one it runs ("schedule": its index, default 0)
        self.schedules = [ALGORITHMS[s["algorithm"]](**s.get("schedule_args") or {})
                          for s in cfg.get("schedules") or [cfg]]
        self.schedule = self.schedules[0]
        self.addresses = [tuple(a) for a in cfg["addresses"]]
        # {peer: (address, port)} of the ranks on another accelerator of this server, reached over
        # the server's scale-up domain at their scale-up addresses, from this rank's (near_self)
        self.near = {int(peer): tuple(a) for peer, a in (cfg.get("near") or {}).items()}
        self.near_self = cfg.get("near_self")
        self.timeout, self.sockbuf = cfg["timeout"], cfg["sockbuf"]
        self.streams, self.pacing = cfg.get("streams", 1), cfg.get("pacing")
        self.dscp = cfg.get("dscp")     # the DS field of its packets (a job's traffic class), None: 0
        self.control_dscp = cfg.get("control_dscp")     # its clear-to-sends' and ACKs' (``listen``)
        # the run's congestion control (--cc) on every connection to another host; None: CUBIC
        # where paced (``_tune`` says why), the machine's default elsewhere
        self.congestion_control = cfg.get("congestion_control")
        self.eager_limit = EAGER_LIMIT if cfg.get("eager_limit") is None else cfg["eager_limit"]
        # {peer: [source port per stream]}: a hash draw's 5-tuples (absent: the kernel's ports)
        self.source_ports = cfg.get("source_ports") or {}
        self.out, self.inc = {}, {}     # peer -> [socket per stream]
        self.pair = {}                  # peer -> the lower rank's out sockets: one connection per pair
        self.paced = []                 # sockets to another host, when pacing
        self._peer = {}                 # socket -> the peer at its other end

    def _paces(self, peer):
        """A connection to another host is paced at the link rate as an RDMA NIC paces a queue pair;
        one inside the host, or over the server's scale-up domain (shaped at its own rate), is not."""
        return bool(self.pacing) and peer not in self.near and self.addresses[peer][0] != self.addresses[self.rank][0]

    def address_of(self, peer):
        return self.near.get(peer, self.addresses[peer])

    def _tune(self, sock, peer):
        if self._paces(peer):
            # Pace at the link rate, as an RDMA NIC paces a queue pair. Unpaced, TCP's window beyond
            # the path's capacity waits in the switch queues, whose links all run at the same rate
            # and so never drain them: round trips grew to 50-110 ms and HD's dependent steps
            # waited on each other (HDRM at 1 MiB, median of 10 iterations in 3 runs each: 2.03-2.53 s
            # unpaced, 1.72-2.22 s paced). A peer on the same host (a server's accelerators, which
            # share its NIC) is reached inside the host, unshaped and unpaced, as over PCIe or NVLink.
            # A Plan lifts the limit where every message is one frame.
            sock.setsockopt(socket.SOL_SOCKET, SO_MAX_PACING_RATE, int(self.pacing))
        if self.congestion_control and peer not in self.near:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, self.congestion_control.encode())
        elif self.pacing and (self._paces(peer) or peer in self.near):
            # CUBIC, not the machine's default (BBR here): with no loss it leaves a paced flow at the
            # pacing rate, while BBR cuts its window to 4 packets for 200 ms every 10 s and paces
            # below its estimate for a round trip in each gain cycle. The dependent steps of HD
            # waited on such flows (HDRM at 1 MiB on 16 ranks: 19 of 32 iterations 30-570 ms slower
            # than 1.60 s with BBR, none with CUBIC).
            with contextlib.suppress(PermissionError):   # unprivileged, on loopback; emulated hosts run as root
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, CONGESTION_CONTROL.encode())
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if self.dscp:
            sock.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, self.dscp << 2)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, self.sockbuf)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, self.sockbuf)

    def _bind(self, sock, peer, stream):
        sport = self.source_ports.get(str(peer), [0] * self.streams)[stream]
        if sport:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((self.near_self if peer in self.near else self.addresses[self.rank][0], sport))

    def connect(self):
        peers = sorted({p for s in self.schedules for p in schedule_peers(s, self.rank, self.ranks)})
        # with peers over the scale-up domain, on every address of the host (its NIC's and its scale-up one)
        where = ("", self.addresses[self.rank][1]) if self.near else self.addresses[self.rank]
        listener = listen(where, self.ranks * self.streams, self.control_dscp if not self.dscp else None,
                          self.congestion_control)
        deadline = time.monotonic() + self.timeout
        for peer in peers:
            self.out[peer] = []
            for stream in range(self.streams):
                while True:
                    sock = socket.socket()
                    self._tune(sock, peer)
                    try:
                        self._bind(sock, peer, stream)
                        sock.connect(self.address_of(peer))
                        break
                    except OSError:
                        sock.close()
                        if time.monotonic() > deadline:
                            raise PeerError(f"rank {self.rank}: cannot connect to rank {peer} at "
                                            f"{self.address_of(peer)} within {self.timeout} s") from None
                        time.sleep(0.05)
                sock.sendall(struct.pack("!II", self.rank, stream))
                self.out[peer].append(sock)
        listener.settimeout(self.timeout)
        self.inc = {peer: [None] * self.streams for peer in peers}
        for _ in range(len(peers) * self.streams):
            try:
                sock, _ = listener.accept()
            except TimeoutError:
                raise PeerError(f"rank {self.rank}: peers did not all connect within {self.timeout} s") from None
            sock.settimeout(self.timeout)
            peer, stream = struct.unpack("!II", self._recv_exact(sock, 8))
            self._tune(sock, peer)
            self.inc[peer][stream] = sock
        listener.close()
        self.pair = {peer: self.out[peer] if self.rank < peer else self.inc[peer] for peer in peers}
        self._peer = {sock: peer for conns in (self.out, self.inc) for peer, socks in conns.items() for sock in socks}
        self.paced = [sock for sock, peer in self._peer.items() if self._paces(peer)]
        # Blocking sockets with a timeout in the kernel: a one-frame plan's step is one blocking
        # send and one blocking receive, and the general loop asks for non-blocking calls (DONTWAIT).
        timeval = struct.pack("ll", int(self.timeout), int(self.timeout % 1 * 1e6))
        for sock in self.sockets():
            sock.settimeout(None)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, timeval)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, timeval)

    def retransmitted(self):
        """{peer: segments this rank retransmitted to that peer since its connections opened, less
        those the peer had already (D-SACK: spurious); a one-frame message may go on the connection
        the peer opened}"""
        def lost(sock):
            info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, TCPI_DSACK_DUPS + 4)
            spurious = struct.unpack_from("=I", info, TCPI_DSACK_DUPS)[0] if len(info) >= TCPI_DSACK_DUPS + 4 else 0
            return struct.unpack_from("=I", info, TCPI_TOTAL_RETRANS)[0] - spurious
        return {peer: sum(lost(sock) for sock in socks + self.inc[peer] if sock) for peer, socks in self.out.items()}

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

    def run(self, plan):
        """Runs plan's steps on plan.buf; returns when each step's sends were all handed to the
        kernel and when the step ended (its receive in and reduced): [(sent, end)]."""
        buf, staging, times = plan.buf, plan.staging, []
        if not plan.one_frame:      # the general loop's receives, posted up front
            posted = {sock: deque(parts) for sock, parts in plan.posted.items()}
            left = list(plan.sizes)
        for i, s in enumerate(plan.steps):
            if plan.one_frame:
                sent = self._exchange(plan, i, s)
            else:
                sent = self._transfer(plan, i, s, posted, left)
            lo, hi = s.recv
            if s.recv_from is None:
                pass
            elif s.reduce:
                np.add(buf[lo:hi], staging[i], out=buf[lo:hi])
            else:
                buf[lo:hi] = staging[i]
            end = time.monotonic()
            times.append((sent or end, end))
        return times

    def _exchange(self, plan, i, s):
        """A step of one-frame messages, in blocking calls: a send and a receive per connection.
        A message that small fits the socket buffers at both ends and waits for no ACK, so reading
        only the current step's connections never holds a peer up, and a rank that waits for its
        data sleeps in the receive itself (a select() before each receive cost a system call per
        step: HDRM at 1 KiB on 64 ranks took 32 ms with the general loop and connections each way,
        25 ms with this and shared connections; on loopback, a rank-step's CPU fell from 24 to 15 us)."""
        for sock, part in plan.sends[i]:
            try:
                sock.sendall(part)
            except OSError as e:
                raise self._failed(e, f"rank {s.send_to} to take data", f"sending to rank {s.send_to}") from None
        sent = time.monotonic()
        for sock, part in plan.receives[i]:
            while len(part):
                try:
                    got = sock.recv_into(part)
                except OSError as e:
                    raise self._failed(e, f"data from rank {s.recv_from}",
                                       f"receiving from rank {s.recv_from}") from None
                if got == 0:
                    raise self._closed(s.recv_from)
                part = part[got:]
            # Delayed, coalesced ACKs where they do not ride on data: a Ring sends one way only
            # (ring_topo at 1 KiB on 64 ranks: 23000 switch passes per allreduce without, 21000 with).
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK, 0)
        return sent

    def _failed(self, error, waited_for, doing):
        if isinstance(error, BlockingIOError):   # the sockets' timeout (SO_RCVTIMEO, SO_SNDTIMEO)
            return PeerError(f"rank {self.rank}: waited {self.timeout} s for {waited_for}")
        return PeerError(f"rank {self.rank}: {doing} failed: {error}", consequence=True)

    def _closed(self, peer):
        return PeerError(f"rank {self.rank}: rank {peer} closed its connection", consequence=True)

    def _transfer(self, plan, i, s, posted, left):
        """A step of a plan with messages larger than a frame. Every step's receive is posted up front, into
        its own staging buffer, and every socket is read whenever it has data, also for later
        steps: a peer that is a step ahead is never left waiting on a receive window that a busy
        rank does not open, nor on the delayed ACK (40-200 ms) that Linux sends for data nobody
        reads. The sends of a step go out when its data is ready, i.e. once the previous step is
        reduced; a message larger than the eager limit that starts a new flow waits, as in MPI's
        rendezvous protocol, for the receiver's clear-to-send."""
        if plan.clear_to_send[i]:
            self._clear_to_send(plan.arriving[i], s.recv_from)
        sending = dict(plan.sends[i])
        await_cts = set(sending) if plan.rendezvous[i] else set()
        if not await_cts:
            for sock in list(sending):
                self._send_some(sock, sending, s.send_to)   # a non-blocking send needs no select first
        sent = None if sending else time.monotonic()
        while sending or left[i]:
            ready = [sock for sock in sending if sock not in await_cts]
            readable, writable, _ = select.select(list(posted) + list(await_cts), ready, [], self.timeout)
            if not readable and not writable:
                waiting = (f"data from rank {s.recv_from}" if left[i] else
                           f"rank {s.send_to} to be ready" if await_cts else f"rank {s.send_to} to take data")
                raise PeerError(f"rank {self.rank}: waited {self.timeout} s for {waiting}")
            for sock in writable:
                self._send_some(sock, sending, s.send_to)
            if sent is None and not sending:
                sent = time.monotonic()
            for sock in readable:
                if sock in await_cts:
                    if self._take_cts(sock, s.send_to):
                        await_cts.discard(sock)
                else:
                    self._recv_some(sock, posted, left, plan.quickack)
        return sent

    def _clear_to_send(self, socks, peer):
        """One byte back on each connection that the peer's stripes of this step arrive on. It goes
        the other way from that connection's data, so it never waits behind data."""
        for sock in socks:
            try:
                sock.send(CLEAR_TO_SEND)
            except OSError as e:
                raise PeerError(f"rank {self.rank}: telling rank {peer} to send failed: {e}") from None

    def _take_cts(self, sock, peer):
        try:
            got = sock.recv(1, socket.MSG_DONTWAIT)
        except BlockingIOError:
            return False
        except OSError as e:
            raise PeerError(f"rank {self.rank}: waiting for rank {peer} to be ready failed: {e}") from None
        if got != CLEAR_TO_SEND:
            raise self._closed(peer)
        return True

    def _send_some(self, sock, sending, to):
        try:
            sent = sock.send(sending[sock], socket.MSG_DONTWAIT)
        except BlockingIOError:
            return
        except OSError as e:
            raise self._failed(e, None, f"sending to rank {to}") from None
        sending[sock] = sending[sock][sent:]
        if not len(sending[sock]):
            del sending[sock]

    def _recv_some(self, sock, posted, left, quickack):
        queue = posted[sock]
        step, part = queue[0]
        try:
            got = sock.recv_into(part, 0, socket.MSG_DONTWAIT)
        except BlockingIOError:
            return
        except OSError as e:
            raise self._failed(e, None, f"receiving from rank {self._peer[sock]}") from None
        if got == 0:
            raise self._closed(self._peer[sock])
        # Jumbo frames at 10 Mbit/s leave a few segments of a large message in flight; a delayed ACK
        # then stalls the sender, so re-arm quickack (Linux leaves it on its own) after every read.
        # Small messages are one frame each and never wait for an ACK: their ACKs are delayed and
        # coalesced (quickack off), which spares the switches a packet per message.
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK, quickack[step])
        left[step] -= got
        if got < len(part):
            queue[0] = (step, part[got:])
        elif len(queue) > 1:
            queue.popleft()
        else:
            del posted[sock]


class Plan:
    """One collective of `count` elements as this rank runs it, worked out once per count: its
    buffers, each step's stripes per connection, which steps rendezvous and which ACK at once."""

    def __init__(self, rank, count, schedule=None):
        schedule = schedule or rank.schedule
        self.schedule = schedule
        self.steps = steps = schedule.steps(rank.rank, rank.ranks, count)
        # Where every message is one frame (up to the eager limit, 4 KiB at most), a pair of ranks
        # exchanges them over one connection, so that each message carries the ACK of the last one
        # the other way: HD's partners send each other a message per step, and a connection each
        # way sent a bare ACK for every message or two, a sixth of the packets the switches
        # forwarded (HDRM at 1 KiB on 64 ranks: 2306 switch passes per allreduce, 1930 on shared
        # connections).
        # Larger messages keep a connection each way, where ACKs never wait behind data.
        limit = min(rank.eager_limit, EAGER_LIMIT)
        one_frame = all(ELEMENT_BYTES * (hi - lo) <= limit for s in steps for lo, hi in (s.send, s.recv))
        inc, out = (rank.pair, rank.pair) if one_frame else (rank.inc, rank.out)
        self.one_frame = one_frame
        self.receives = []                  # per step: [(socket, its part of the step's staging)]
        collective, self.count = COLLECTIVES[schedule.collective], count
        self.data = collective.buffer(rank.rank, rank.ranks, count)
        self.check, self.expected = collective.expected(rank.rank, rank.ranks, count)
        self.buf = np.empty(len(self.data), dtype=DTYPE)
        self.staging = [np.empty(s.recv[1] - s.recv[0], dtype=DTYPE) for s in steps]
        as_bytes = lambda a: memoryview(a).cast("B")
        self.posted = {}                    # socket -> [(step, its part of the step's staging)]
        self.arriving, self.sizes, self.sends = [], [], []
        self.clear_to_send, self.rendezvous, self.quickack = [], [], []
        for i, (s, area) in enumerate(zip(steps, self.staging)):
            parts = _stripes(as_bytes(area), inc[s.recv_from]) if s.recv_from is not None else {}
            for sock, part in parts.items():
                self.posted.setdefault(sock, []).append((i, part))
            size = sum(len(part) for part in parts.values())
            self.arriving.append(list(parts))
            self.receives.append(list(parts.items()))
            self.sizes.append(size)
            self.clear_to_send.append(size > rank.eager_limit and starts_flow(steps, i, "recv_from"))
            self.quickack.append(int(size > rank.eager_limit))
            message = as_bytes(self.buf[slice(*s.send)])
            self.sends.append(list(_stripes(message, out[s.send_to]).items()) if s.send_to is not None else [])
            self.rendezvous.append(len(message) > rank.eager_limit and starts_flow(steps, i, "send_to"))
        self.waits_for_receiver = [int(not one_frame and r) for r in self.rendezvous]
        # A connection whose messages are all one frame goes unpaced: a NIC puts one frame on the
        # wire at once, and the shaped link still holds the rate. Pacing them cost the kernel a
        # timer per message (64-rank Ring at 1 KiB: 254 ms paced, 158 ms not).
        large = {sock for parts in self.sends for sock, part in parts if len(part) > rank.eager_limit}
        for sock in rank.paced:
            rate = int(rank.pacing) if sock in large else UNPACED
            sock.setsockopt(socket.SOL_SOCKET, SO_MAX_PACING_RATE, struct.pack("=Q", rate))


def say(**msg):
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


def main(config):
    rank = Rank(json.loads(config))
    try:
        rank.connect()
        say(ready=True)
        plan = None
        for line in sys.stdin:
            cmd = json.loads(line)
            if cmd.get("quit"):
                break
            schedule = rank.schedules[cmd.get("schedule", 0)]
            if plan is None or plan.count != cmd["count"] or plan.schedule is not schedule:
                plan = Plan(rank, cmd["count"], schedule)
            # A batch runs back to back, as nccl-tests launches its iterations: a rank that is done
            # starts the next at once; the data of each connection stays in order, so iterations
            # never mix. The first iteration's step ends show a straggling flow.
            # read only where asked (a watched job), and outside the batch's time: 16 ranks' TCP_INFO
            # reads on 2 cores made a 1 KiB allreduce 1.4 ms slower
            resent = rank.retransmitted() if cmd.get("retrans") else None
            t0, ends, timing, wrong = time.monotonic(), [], None, 0
            for _ in range(cmd.get("repeat", 1)):
                if cmd.get("compute_s"):        # a training step's modelled computation, before its allreduce
                    time.sleep(cmd["compute_s"])
                np.copyto(plan.buf, plan.data)
                start = time.monotonic()
                times = rank.run(plan)
                timing = timing or {"start": start, "steps": [[sent, end, s.recv_from, s.send_to, waits] for
                                                              (sent, end), s, waits in
                                                              zip(times, plan.steps, plan.waits_for_receiver)]}
                ends.append(times[-1][1] if times else time.monotonic())
                wrong += int(np.count_nonzero(plan.buf[slice(*plan.check)] != plan.expected))
            if resent is not None:
                timing["retrans"] = [[peer, n - resent[peer]] for peer, n in rank.retransmitted().items()
                                     if n > resent[peer]]
            say(iteration=cmd["iteration"], t0=t0, ends=ends, steps=[step[1] for step in timing["steps"]],
                timing=timing, wrong=wrong)
    except (PeerError, OSError) as e:
        say(error=str(e), consequence=getattr(e, "consequence", False))
        return 1
    finally:
        for sock in rank.sockets():
            sock.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
