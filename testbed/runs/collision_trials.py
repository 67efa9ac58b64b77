"""Trials of one collective under the collision probe (``probes.collisions``): each trial on fresh
connections, so a fresh ECMP hash draw, every directed link captured."""
from pathlib import Path

from testbed.collectives.connections import rank_connections, source_ports
from testbed.collectives.coordinator import Coordinator, emulation_launcher
from testbed.collectives.data import ELEMENT_BYTES
from testbed.collectives.metrics import result_row
from testbed.fidelity.verdict import flag
from testbed.probes.collisions import (
    LinkCapture,
    flows_by_link,
    per_step,
    predicted_collided_steps,
    step_flows,
    steps_summary,
)


def collision_trials(emu, case, variant, schedule, hosts, size, trials, iters, folder, progress=print, on_row=None,
                     draws=None):
    """Trials of one allreduce under the probe, each with fresh connections (so fresh source ports,
    so a fresh ECMP hash draw): one row per trial with its busbw, collisions per step and link, the
    capture checked against the port counters, and the bottleneck verdict. draws: {trial number:
    routing.hashing.Draw} to take the source ports from (a paired experiment runs each draw on
    both of its forms); None: the kernel chooses them, trials numbered from 0."""
    topo, count, rows = emu.topo, size // ELEMENT_BYTES, []
    flows = step_flows(schedule, hosts, topo, count)
    predicted = predicted_collided_steps(schedule, hosts, topo, emu.routing.routes)
    for trial in (range(trials) if draws is None else sorted(draws)):
        addresses, launch = emulation_launcher(emu, hosts)
        ports = None
        if draws is not None:
            ports = source_ports(rank_connections(schedule, hosts, [p for _, p in addresses], 1, draws[trial]))
        with Coordinator(schedule, addresses, launch, pacing=topo.bytes_per_s, label=variant,
                         source_ports=ports) as coordinator:
            coordinator.iterate(count, 0, timeout=120)          # warmup: connections and windows
            with emu.cpu_monitor() as cpu, LinkCapture(emu, Path(folder) / f"trial{trial}") as cap:
                results = [coordinator.iterate(count, i + 1, timeout=120) for i in range(iters)]
        links = per_step(flows_by_link(cap.packets), flows)
        steps = steps_summary(links, len(flows))
        captured = sum(size for pkts in cap.packets.values() for _, _, size, _ in pkts)
        counted = sum(cap.counter_bytes.values())
        row = result_row(variant, size, [r["time"] for r in results], sum(r["wrong"] for r in results),
                         len(hosts), topo.rate, collective=schedule.collective)
        row.update(case=case, topology=topo.name, routing=emu.routing.mode, trial=trial,
                   collided_steps=sum(1 for s in steps if s["collided_links"]), steps=len(steps),
                   max_flows_per_link=max(s["max_flows_per_link"] for s in steps),
                   predicted_collided_steps=predicted,
                   capture_over_port_counters=round(captured / counted, 3) if counted else None,
                   capture_kernel_drops=cap.kernel_drops, per_step=steps, per_link=links)
        row.update(cpu.result())
        rows.append(row)
        if on_row:
            on_row(row)
        progress(trial_line(row))
    return rows


def trial_line(row):
    predicted = "-" if row["predicted_collided_steps"] is None else row["predicted_collided_steps"]
    return (f"  {row['case']:28s} trial {row['trial']}  busbw/link {row['busbw_over_link']:.2f}  "
            f"collided steps {row['collided_steps']:2d}/{row['steps']} (predicted {predicted})  "
            f"max flows/link {row['max_flows_per_link']}  capture/ports {row['capture_over_port_counters']}  "
            f"#wrong {row['wrong']}  {flag(row)}")

