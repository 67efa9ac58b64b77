"""TCP flows measured by iperf3: for each (source NIC port, destination NIC port) pair one or more
connections, all at once, from inside the emulated hosts; each connection is one iperf3 test with
a server of its own (``collectives.connections``), so that a hash draw can give it its source port."""
from contextlib import ExitStack

from testbed.collectives.connections import IPERF_BASE_PORT
from testbed.emulation.processes import ProgramError, stop_all

# s for every server, then every client, to say it is ready: 16 Python programs starting at once in
# a VM whose CPU qemu emulates (TCG) took more than 15 s after a saturated measurement
STARTUP_S = 60


def measure_flows(emu, pairs, duration=5, omit=1, streams=1, during=(), connections=None, congestion_control=None):
    """[{src, dst, received_mbit, sent_mbit, retransmits, error}] per pair (summed over its
    connections), and the CPU verdict. connections: [[Connection per stream] per pair] from a draw
    (``connections.flow_connections``), bound as they say (bond: round-robin binds each to its NIC
    port); None: `streams` per pair, ports the kernel chooses. during: context managers (a
    capture, a queue sampler) entered while the clients run. congestion_control: the senders'
    (cubic, bbr, reno or dctcp: emulation.dctcp), set on each socket; None: the run's (--cc), else
    the hosts' default."""
    congestion_control = emu.kernel_congestion_control(congestion_control or emu.congestion_control) or ""
    plan = []        # (pair index, destination NIC port, its server's port, source port, device)
    for k, (src, dst) in enumerate(pairs):
        if connections is None:
            plan += [(k, src, dst, IPERF_BASE_PORT + len(plan) + i, 0) for i in range(streams)]
        else:
            plan += [(k, src, dst, c.dport, c.sport) for c in connections[k]]
    servers, clients, results = [], [], []
    try:
        for _, _, dst, port, _ in plan:
            servers.append(emu.program(dst.host, "iperf_endpoint", "server", dst.ip, port,
                                       name=f"iperf3 server {dst.ip}:{port}"))
        for server in servers:
            server.expect("ready", STARTUP_S)
        for _, src, dst, port, sport in plan:
            clients.append(emu.program(src.host, "iperf_endpoint", "client", dst.ip, port, duration, omit,
                                       sport, congestion_control, name=f"iperf3 {src.ip} -> {dst.ip}:{port}"))
        for client in clients:     # every client loaded before any starts: 64 starting up starve the first
            client.expect("ready", STARTUP_S)
        with ExitStack() as stack:
            cpu = stack.enter_context(emu.cpu_monitor())
            for probe in during:
                stack.enter_context(probe)
            for client in clients:
                client.send(go=True)
            for client in clients:
                try:
                    results.append(client.expect("result", duration + omit + 30)["result"])
                except ProgramError as e:
                    results.append({"error": str(e)})
    finally:
        stop_all(servers + clients, grace=2)
    flows = []
    for k, (src, dst) in enumerate(pairs):
        mine = [r for (pair, *_), r in zip(plan, results) if pair == k]
        errors = [r["error"] for r in mine if r.get("error")]
        flows.append({"src": src.ip, "dst": dst.ip, "received_mbit": _total(mine, "received_mbit"),
                      "sent_mbit": _total(mine, "sent_mbit"),
                      "retransmits": sum(r.get("retransmits") or 0 for r in mine) if not errors else None,
                      "error": errors[0] if errors else None})
    return flows, cpu.result()


def _total(results, key):
    return round(sum(r.get(key) or 0.0 for r in results), 3)
