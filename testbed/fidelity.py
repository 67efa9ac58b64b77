"""Does the emulated network deliver what it was configured to? Reachability and real TCP flows."""
import json
import subprocess
import sys
import time

from testbed.controller import PROJECT
from testbed.cpu import CpuMonitor
from testbed.routing import link_load

IPERF_BASE_PORT = 5201


def reachability(emu):
    """Ping from every host to every other host's NIC port on a shared subnet: (answered, failures)."""
    topo, ok, failures = emu.topo, 0, []
    for host in topo.hosts.values():
        ports = {nic.port for nic in host.ports}
        targets = [p.ip for p in topo.nic_ports() if p.host != host.name and p.port in ports]
        out = emu.host(host.name).cmd(
            f"for ip in {' '.join(targets)}; do ping -c1 -W1 -q $ip >/dev/null 2>&1 "
            "&& echo ok $ip || echo fail $ip; done")
        for word, ip in (line.split() for line in out.splitlines() if line.startswith(("ok ", "fail "))):
            if word == "ok":
                ok += 1
            else:
                failures.append(f"{host.name}->{ip}")
    return ok, failures


def longest_route(routes):
    return max(routes.values(), key=lambda r: (len(r.hops), r.src.ip, r.dst.ip))


def spread_pairs(topo, routes):
    """A permutation (host i -> host i+k on NIC port 0) whose flows share as few links as possible,
    and among those the one with the longest paths."""
    nics = [h.ports[0] for h in topo.hosts.values()]
    best = None
    for k in range(1, len(nics)):
        pairs = [(nics[i], nics[(i + k) % len(nics)]) for i in range(len(nics))]
        load = max(link_load(routes, [(s.ip, d.ip) for s, d in pairs]).values())
        hops = sum(len(routes[s.ip, d.ip].hops) for s, d in pairs)
        if best is None or (load, -hops) < best[0]:
            best = ((load, -hops), pairs)
    return best[1]


def _wait_listening(emu, host, port, proc, timeout=15.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if f":{port} " in emu.host(host).cmd(f"ss -Hltn 'sport = :{port}'"):
            return
        if proc.poll() is not None:
            break
        time.sleep(0.1)
    raise RuntimeError(f"iperf3 server on {host}:{port} did not start")


def run_flows(emu, pairs, duration=5, omit=1):
    """Run one TCP flow per (src NicPort, dst NicPort), all at once, measured by iperf3.

    Returns the flows, each with its received rate, the rate it should get (link rate divided by
    the most flows sharing a link on its route) and their ratio, and the CPU verdict."""
    rate = emu.topo.rate
    load = link_load(emu.routes, [(s.ip, d.ip) for s, d in pairs])
    python = [sys.executable, "-m", "testbed.iperf_flow"]
    servers, clients = [], []
    try:
        for i, (src, dst) in enumerate(pairs):
            proc = emu.popen(dst.host, python + ["server", dst.ip, str(IPERF_BASE_PORT + i)], cwd=PROJECT,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            servers.append(proc)
            _wait_listening(emu, dst.host, IPERF_BASE_PORT + i, proc)
        with CpuMonitor() as cpu:
            for i, (src, dst) in enumerate(pairs):
                clients.append(emu.popen(
                    src.host, python + ["client", dst.ip, str(IPERF_BASE_PORT + i), str(duration), str(omit)],
                    cwd=PROJECT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
            outputs = [c.communicate(timeout=duration + omit + 30)[0] for c in clients]
    finally:
        for proc in servers + clients:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
    flows = []
    for (src, dst), out in zip(pairs, outputs):
        result = json.loads(out.strip().splitlines()[-1]) if out.strip() else {"error": "no output"}
        route = emu.routes[src.ip, dst.ip]
        expected = rate / max(load[link] for link in route.directed_links())
        got = result.get("received_mbit") or 0.0
        flows.append({"src": src.ip, "dst": dst.ip, "switches": [emu.topo.switches[s].label for s in route.switches],
                      "expected_mbit": round(expected, 3), "received_mbit": round(got, 3),
                      "ratio": round(got / expected, 3), "retransmits": result.get("retransmits"),
                      "error": result.get("error")})
    return flows, cpu.result()
