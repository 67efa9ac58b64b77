"""The ECN marker (programs/ecn_marker.bpf.c) held to its model (emulation.ecn.VirtualQueues),
packet by packet: the program, compiled with its clock read from each packet's timestamp, is fed a
known arrival trace through BPF_PROG_TEST_RUN (bpftool prog run), and each packet's CE bit as the
program leaves it must be the model's, under each way a port serves its classes (one FIFO, strict
priority, weighted), with the link's rate changed mid-trace as a slowed link changes it, and with a
phantom queue's drain. The program is pinned in a bpffs mounted for the test alone, and unmounted
after."""
import ctypes
import json
import random
import shutil
import struct
import subprocess
import tempfile
from pathlib import Path

import pytest

from testbed.emulation import bpfmaps, ecn
from testbed.emulation.shaping import CONTROL_DSCP, HIGH_DSCP

pytestmark = pytest.mark.skipif(ecn.missing() is not None or shutil.which("bpftool") is None,
                                reason="needs clang, bpftool and libbpf-dev (setup.sh)")
FRAME = 1514                      # BPF_PROG_TEST_RUN takes a page of packet at most: MTU 1500's frames
TSTAMP_AT, CTX_SIZE = 152, 160    # struct __sk_buff: tstamp's offset, and the part of it given
ECT0, CE = 0x2, 0x3


@pytest.fixture(scope="module")
def marker():
    """(run(packet bytes, time ns) -> packet bytes out, config map id, queues map id)."""
    folder = Path(tempfile.mkdtemp(prefix="tbmarker"))
    pins = folder / "bpffs"
    pins.mkdir()
    subprocess.run(["mount", "-t", "bpf", "bpf", str(pins)], check=True)
    try:
        obj = ecn.build(str(folder / "build"), test_clock=True)
        subprocess.run(["bpftool", "prog", "load", str(obj), str(pins / "prog"), "type", "classifier",
                        "pinmaps", str(pins / "maps")], check=True, capture_output=True)
        ids = {name: json.loads(subprocess.run(["bpftool", "-j", "map", "show", "pinned", str(pins / "maps" / name)],
                                               check=True, capture_output=True, text=True).stdout)["id"]
               for name in ("config", "queues")}

        def run(packet, now_ns):
            (folder / "in").write_bytes(packet)
            ctx = bytearray(CTX_SIZE)
            struct.pack_into("=Q", ctx, TSTAMP_AT, now_ns)
            (folder / "ctx").write_bytes(bytes(ctx))
            subprocess.run(["bpftool", "prog", "run", "pinned", str(pins / "prog"), "data_in", str(folder / "in"),
                            "data_out", str(folder / "out"), "ctx_in", str(folder / "ctx")],
                           check=True, capture_output=True)
            return (folder / "out").read_bytes()

        yield run, ids["config"], ids["queues"]
    finally:
        subprocess.run(["umount", str(pins)], check=False)
        shutil.rmtree(folder, ignore_errors=True)


def frame(dscp, ecn_bits, length=FRAME):
    """An Ethernet frame carrying an IPv4 header with that DS field and ECN codepoint."""
    eth = b"\x02" * 6 + b"\x04" * 6 + b"\x08\x00"
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, dscp << 2 | ecn_bits, length - 14, 0, 0, 64, 6, 0,
                     bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2]))
    return eth + ip + bytes(length - len(eth) - len(ip))


def trace(seed, packets=240, rate_mbit=20):
    """A burst-and-gap arrival trace: (time ns, DS field, ECN codepoint, length), several times
    the link's rate in bursts of 40 so that the queues cross K and fill, with idle gaps that drain
    them."""
    draw, at, out = random.Random(seed), 1_000_000, []
    frame_ns = FRAME * 8 * 1000 // rate_mbit
    for i in range(packets):
        bursting = (i // 40) % 2 == 0
        at += draw.randrange(frame_ns // 10, frame_ns // 3) if bursting else draw.randrange(frame_ns, 4 * frame_ns)
        out.append((at, draw.choice([0, 0, 0, CONTROL_DSCP, HIGH_DSCP]), draw.choice([ECT0, ECT0, ECT0, 0]),
                    draw.choice([FRAME, FRAME, 600, 90])))
    return out


def replay(marker, settings, packets, change=None):
    """[(marked by the program, marked by the model)] per packet; change: (packet index, settings)
    written before that packet, as set_link_rate writes a link's new rate."""
    run, config_map, queues_map = marker
    ecn.configure(config_map, settings)
    bpfmaps.write(queues_map, ctypes.c_uint32(0), ecn.QUEUES.pack(0, 0, 0))     # empty, as a new port's
    model, out = ecn.VirtualQueues(settings), []
    for i, (at, dscp, ecn_bits, length) in enumerate(packets):
        if change and i == change[0]:
            ecn.configure(config_map, change[1])
            model.config = change[1]
        got = run(frame(dscp, ecn_bits, length), at)[15] & 0x3
        out.append((got == CE, model.arrive(at, length, dscp, ect=ecn_bits != 0)))
    return out


SETTINGS = {
    "one FIFO": ecn.config(20, 15000, 30 * FRAME),
    "strict, control class": ecn.config(20, 15000, 30 * FRAME, classes="control"),
    "weighted, control and a high job": ecn.config(20, 15000, 30 * FRAME, classes="weighted"),
    "phantom queue at 0.9": ecn.config(20, 15000, 30 * FRAME, drain=0.9),
}


@pytest.mark.parametrize("name", SETTINGS)
def test_the_marker_marks_the_packets_its_model_marks(marker, name):
    got = replay(marker, SETTINGS[name], trace(seed=len(name)))
    differ = [i for i, (program, model) in enumerate(got) if program != model]
    assert differ == [], f"packets {differ[:10]} marked otherwise than the model: {[got[i] for i in differ[:10]]}"
    assert 10 <= sum(model for _, model in got) <= len(got) - 10          # the trace crosses K both ways


def test_a_link_slowed_mid_trace_drains_its_marker_at_the_new_rate(marker):
    packets = trace(seed=7)
    slowed = (len(packets) // 2, ecn.config(5, 15000, 30 * FRAME, classes="control"))
    got = replay(marker, SETTINGS["strict, control class"], packets, change=slowed)
    assert [program for program, _ in got] == [model for _, model in got]
    unchanged = replay(marker, SETTINGS["strict, control class"], packets)
    half = len(packets) // 2
    assert sum(m for m, _ in got[half:]) > sum(m for m, _ in unchanged[half:])   # slower: more marks
