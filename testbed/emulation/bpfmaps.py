"""BPF maps read and written with the bpf(2) system call, by id: a bpftool process per access would
take 5-10 ms, several frames' time at these rates (the ECN markers' maps: emulation.ecn,
probes.markers)."""
import ctypes
import os
import platform
import struct

BPF_SYSCALL = {"x86_64": 321, "aarch64": 280}
MAP_LOOKUP_ELEM, MAP_UPDATE_ELEM, MAP_GET_FD_BY_ID = 1, 2, 14
_libc = ctypes.CDLL(None, use_errno=True)


def _bpf(cmd, attr):
    """bpf(2) with attr (the packed union bpf_attr's fields): its result, -1 on an error."""
    return _libc.syscall(BPF_SYSCALL[platform.machine()], cmd, ctypes.create_string_buffer(attr, 128), 128)


def map_fd(map_id, what):
    """A file descriptor of the map `map_id` (close it when done); `what` names where it is, for
    the error."""
    fd = _bpf(MAP_GET_FD_BY_ID, struct.pack("III", map_id, 0, 0))
    if fd < 0:
        raise OSError(ctypes.get_errno(), f"no BPF map {map_id} at {what}: {os.strerror(ctypes.get_errno())}")
    return fd


def lookup(fd, key, value):
    """Whether the map at fd holds `key` (a ctypes value), its value then copied into `value` (a
    ctypes object of the map's value size)."""
    attr = struct.pack("IIQQQ", fd, 0, ctypes.addressof(key), ctypes.addressof(value), 0)
    return _bpf(MAP_LOOKUP_ELEM, attr) >= 0


def write(map_id, key, value):
    """Write `value` (bytes) under `key` (a ctypes value) in the map `map_id`."""
    fd = map_fd(map_id, "its port")
    try:
        data = ctypes.create_string_buffer(value, len(value))
        attr = struct.pack("IIQQQ", fd, 0, ctypes.addressof(key), ctypes.addressof(data), 0)
        if _bpf(MAP_UPDATE_ELEM, attr) < 0:
            raise OSError(ctypes.get_errno(), f"cannot write map {map_id}: {os.strerror(ctypes.get_errno())}")
    finally:
        os.close(fd)


def read(map_id, key, size):
    """The `size` bytes under `key` (a ctypes value) in the map `map_id`, or None."""
    fd = map_fd(map_id, "its port")
    try:
        value = ctypes.create_string_buffer(size)
        return value.raw if lookup(fd, key, value) else None
    finally:
        os.close(fd)
