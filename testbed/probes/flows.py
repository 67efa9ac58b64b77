"""TCP flows measured by iperf3: one test per (source NIC port, destination NIC port), all at once,
each of one or more connections, from inside the emulated hosts."""
from contextlib import ExitStack

from testbed.emulation.programs import ProgramError, stop_all
from testbed.fidelity.verdict import CpuMonitor

IPERF_BASE_PORT = 5201


def measure_flows(emu, pairs, duration=5, omit=1, streams=1, during=()):
    """[{src, dst, received_mbit, sent_mbit, retransmits, error}] per pair, and the CPU verdict.
    during: context managers (a capture, a queue sampler) entered while the clients run."""
    servers, clients, results = [], [], []
    try:
        for i, (_, dst) in enumerate(pairs):
            servers.append(emu.program(dst.host, "iperf_endpoint", "server", dst.ip, IPERF_BASE_PORT + i,
                                       name=f"iperf3 server {dst.ip}:{IPERF_BASE_PORT + i}"))
        for server in servers:
            server.expect("ready", 15)
        for i, (src, dst) in enumerate(pairs):
            clients.append(emu.program(src.host, "iperf_endpoint", "client", dst.ip, IPERF_BASE_PORT + i,
                                       duration, omit, streams, name=f"iperf3 {src.ip} -> {dst.ip}"))
        for client in clients:     # every client loaded before any starts: 64 starting up starve the first
            client.expect("ready", 30)
        with ExitStack() as stack:
            cpu = stack.enter_context(CpuMonitor())
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
    flows = [{"src": src.ip, "dst": dst.ip, "received_mbit": round(result.get("received_mbit") or 0.0, 3),
              "sent_mbit": round(result.get("sent_mbit") or 0.0, 3), "retransmits": result.get("retransmits"),
              "error": result.get("error")} for (src, dst), result in zip(pairs, results)]
    return flows, cpu.result()
