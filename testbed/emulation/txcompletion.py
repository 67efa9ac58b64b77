"""A NIC's transmit completion, for the kernel datapath.

A NIC frees a frame once it is on the wire, and the sending socket stops counting it. A veth and
Open vSwitch's kernel datapath pass the sender's own buffer on instead, all the way to the receiving
host's IP layer, so TCP's small-queue limit (about two frames at the emulated rates) and a socket's
send buffer count the packets waiting in every switch queue on the path: a switch queue never fills
past what its senders may have outstanding, and a sender stalls while its few frames wait anywhere
in the fabric. An XDP program that passes every packet, on the switch end of each host link, makes
the veth driver copy a frame it does not own (TCP keeps the original for retransmission) into a
buffer of its own and free the sender's: the frame counts as sent once it has left the host, as
behind a NIC. The userspace datapath needs none of this: it copies every frame out of the kernel.
The program is gone with the interface it is attached to.
"""
import ctypes
import os
import platform
import struct

from testbed.emulation import shaping
from testbed.errors import TestbedError

BPF_SYSCALL = {"x86_64": 321, "aarch64": 280}
BPF_PROG_LOAD, BPF_PROG_TYPE_XDP = 5, 6
BPF_F_XDP_HAS_FRAGS = 1 << 5          # jumbo frames: without it veth refuses XDP above a page's MTU
XDP_PASS, XDP_FLAGS_DRV_MODE = 2, 1 << 2
PASS = struct.pack("<BBhi", 0xB7, 0, 0, XDP_PASS) + struct.pack("<BBhi", 0x95, 0, 0, 0)   # r0 = XDP_PASS; exit


def _load_pass_program():
    libc = ctypes.CDLL(None, use_errno=True)
    insns = ctypes.create_string_buffer(PASS, len(PASS))
    license_ = ctypes.create_string_buffer(b"GPL")
    attr = ctypes.create_string_buffer(128)       # union bpf_attr, BPF_PROG_LOAD's fields; the rest zero
    struct.pack_into("<IIQQ", attr, 0, BPF_PROG_TYPE_XDP, len(PASS) // 8,
                     ctypes.addressof(insns), ctypes.addressof(license_))
    struct.pack_into("<I", attr, 44, BPF_F_XDP_HAS_FRAGS)                  # prog_flags
    number = BPF_SYSCALL.get(platform.machine())
    if number is None:
        raise TestbedError(f"no bpf() system call number for {platform.machine()}: the kernel datapath "
                           "needs one to free a host's frames as they leave it")
    fd = libc.syscall(number, BPF_PROG_LOAD, attr, len(attr))
    if fd < 0:
        raise TestbedError(f"could not load an XDP program ({os.strerror(ctypes.get_errno())}): "
                           "the kernel datapath needs one to free a host's frames as they leave it")
    return fd


def free_on_send(ifnames):
    """Attach the pass-everything XDP program to each interface (the switch ends of host links)."""
    fd = _load_pass_program()
    try:
        with shaping.netlink() as ipr:
            for name in ifnames:
                ipr.link("set", index=shaping.index_of(ipr, name), xdp_fd=fd, xdp_flags=XDP_FLAGS_DRV_MODE)
    finally:
        os.close(fd)
