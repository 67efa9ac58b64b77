"""The send buffer of the userspace datapath, sized for every queue the testbed configures.

With the userspace datapath, ovs-vswitchd sends every packet, to every port, through one AF_PACKET
socket (lib/netdev-linux.c, af_packet_sock()). A packet waiting in a port's egress qdisc still
counts against that socket's send buffer, and when the buffer is full sendmmsg() fails with EAGAIN
and OVS drops the rest of the batch: no qdisc, interface, OpenFlow or coverage counter sees it. With
Linux's default (net.core.wmem_default, 212992 bytes: about 12 jumbo frames) all the switch queues
of a run together held about 12 packets and dropped silently beyond that (measured: 5581 TCP
retransmissions in 3 HD allreduces of 1 MiB on BiGraph(2,8); 10 with the buffer sized below).

OVS creates the socket at its first send and keeps it for its lifetime, so the testbed takes a
duplicate of it (pidfd_getfd, root only) and raises its limit with SO_SNDBUFFORCE for the run.
"""
import ctypes
import os
import socket
from pathlib import Path

SO_SNDBUFFORCE = 32
SYS_PIDFD_GETFD = 438
BATCH = 32            # packets OVS hands the kernel in one call
MAX_BUFFER = 1 << 30  # the kernel keeps sk_sndbuf below INT_MAX

_libc = ctypes.CDLL(None, use_errno=True)


def truesize(mtu):
    """What one frame costs the socket: a linear skb, the frame rounded up to a kmalloc size plus
    skb overhead, under 2*frame + 1 KiB."""
    return 2 * (mtu + 14) + 1024


def needed(queues, mtu):
    """Bytes the socket must hold when every queue (packets, one per switch port) is full, plus
    one batch."""
    return min(MAX_BUFFER, (sum(queues) + BATCH) * truesize(mtu))


def send_socket_fd(pid):
    """The fd number, in process pid, of its unbound AF_PACKET socket (protocol 0, no interface),
    or None if it has none yet."""
    inodes = set()
    for line in Path(f"/proc/{pid}/net/packet").read_text().splitlines()[1:]:   # its own namespace's
        fields = line.split()
        if int(fields[3], 16) == 0 and fields[4] == "0":
            inodes.add(fields[8])
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:[") and target[8:-1] in inodes:
            return int(fd)
    return None


def raise_to(pid, size, note=lambda fd, old: None):
    """Raise process pid's send buffer to at least size bytes, calling note(fd, old size) first.
    Returns False if pid has no send socket yet."""
    fd = send_socket_fd(pid)
    if fd is None:
        return False
    with SendBuffer(pid, fd) as buf:
        note(fd, buf.size)
        if buf.size < size:
            buf.set(size)
    return True


class SendBuffer:
    """with SendBuffer(pid, fd) as buf: process pid's socket fd, duplicated into this process, to
    read (buf.size) and set (buf.set) its send buffer."""

    def __init__(self, pid, fd):
        pidfd = os.pidfd_open(pid)
        try:
            local = _libc.syscall(SYS_PIDFD_GETFD, pidfd, fd, 0)
            if local < 0:
                raise OSError(ctypes.get_errno(), f"pidfd_getfd on pid {pid} fd {fd} failed")
        finally:
            os.close(pidfd)
        self.sock = socket.socket(fileno=local)

    @property
    def size(self):
        return self.sock.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF)

    def set(self, size):
        self.sock.setsockopt(socket.SOL_SOCKET, SO_SNDBUFFORCE, size // 2)   # the kernel doubles it

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.sock.close()
