"""The preflight of a run across machines: every check before anything is built, one line each.

In the order a user would fix them: every machine's worker joined (machines.engine), the same
project commit and requirements as the head, root, Open vSwitch running, the underlay carrying
the fabric's full frame plus VXLAN's 50 bytes with Don't Fragment set between every pair, the
controller's port on the head reachable from every machine, and iperf3 between every pair of
machines that share cut links carrying at least what those links can offer in each direction.
"""
import itertools
import socket
import time
from collections import Counter

from testbed.emulation.processes import free_port
from testbed.errors import TestbedError
from testbed.machines import remote
from testbed.topology.partition import partition as split

BANDWIDTH_SECONDS = 2


def cut_link_load(topo, machines):
    """{(machine a, machine b): Mbit/s}: what the cut links between two machines carry at most in
    each direction (links are full duplex: one link rate each way)."""
    part = split(topo, machines.slot_count)
    owner = [m.name for m in machines.machine_of_slot()]
    load = Counter()
    for cut in part.cut_links():
        a, b = (owner[s] for s in cut.slots)
        if a != b:
            load[tuple(sorted((a, b)))] += cut.link.rate
    return part, dict(load)


def preflight(engine, topo, mtu, seconds=BANDWIDTH_SECONDS, log=print):
    """Run every check on engine's machines for topo at mtu; returns what was measured, or raises
    TestbedError on the first that fails."""
    ms, names = engine.machines, [m.name for m in engine.machines.machines]
    part, load = cut_link_load(topo, ms)
    found = {}

    ids = dict(zip(names, engine.together([(n, remote.identity) for n in names])))
    here = remote.identity()
    for name, got in ids.items():
        if (got["commit"], got["requirements"]) != (here["commit"], here["requirements"]):
            raise TestbedError(f"machine {name} runs commit {got['commit'][:10]} with requirements "
                               f"{got['requirements']}, the head {here['commit'][:10]} with {here['requirements']}: "
                               f"check out the head's commit in {got['project']} and run ./setup.sh there")
        if not got["root"]:
            raise TestbedError(f"machine {name}'s worker does not run as root: start it as root")
        if not got["ovs"]:
            raise TestbedError(f"Open vSwitch is not running on machine {name}: run ./setup.sh there "
                               "(or /usr/share/openvswitch/scripts/ovs-ctl start)")
    found["commit"] = here["commit"]
    log(f"  same project     commit {here['commit'][:10]}, requirements {here['requirements']}, root, "
        f"Open vSwitch running on {len(names)} machines")

    frame = part.underlay_mtu(mtu)
    pairs = list(itertools.permutations(names, 2))
    sent = engine.together([(a, remote.df_ping, ms.get(b).underlay, frame) for a, b in pairs])
    for (a, b), ok in zip(pairs, sent):
        if not ok:
            raise TestbedError(f"the underlay from {a} to {b} ({ms.get(b).underlay}) does not carry a {frame}-byte "
                               f"frame with Don't Fragment set: raise its MTU to at least {frame} on both "
                               "machines, or give --mtu at most the underlay's MTU less 50")
    log(f"  underlay MTU     {frame}-byte frames (MTU {mtu} + VXLAN) with DF set in {len(pairs)} directions")

    port = free_port()
    with socket.create_server((ms.head, port)):
        reached = engine.together([(n, remote.connects, ms.head, port) for n in names])
    late = [n for n, ok in zip(names, reached) if not ok]
    if late:
        raise TestbedError(f"machine {', '.join(late)} cannot reach the controller's port on the head "
                           f"({ms.head}:{port}): open TCP to the head from the machines")
    found["controller_port"] = port
    log(f"  controller       TCP to {ms.head}:{port} opens from every machine")

    found["bandwidth_mbit"] = {}
    for (a, b), need in sorted(load.items()):
        for src, dst in ((a, b), (b, a)):
            started = time.monotonic()
            server_port = free_port()
            engine.call(dst, remote.bandwidth_server, ms.get(dst).underlay, server_port)
            got = engine.call(src, remote.bandwidth_client, ms.get(dst).underlay, server_port, seconds,
                              timeout=seconds + 40)
            found["bandwidth_mbit"][f"{src}->{dst}"] = round(got, 1)
            verdict = "PASS" if got >= need else "FAIL"
            log(f"  bandwidth        {src} -> {dst}: {got:,.0f} Mbit/s for cut links of {need:,.0f} Mbit/s  {verdict} "
                f"({time.monotonic() - started:.1f} s)")
            if got < need:
                raise TestbedError(f"the underlay from {src} to {dst} carried {got:,.0f} Mbit/s, less than the "
                                   f"{need:,.0f} Mbit/s its cut links can offer: lower --rate, or give the "
                                   "machines a faster underlay")
    if not load:
        log("  bandwidth        no cut links between machines: nothing to measure")
    return found
