"""A fabric as checked data (no root, nothing built), and a figure compared over paired trials."""
from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from testbed.emulation.capacity import check_hosts, check_link_rate, check_mtu, check_queue
from testbed.emulation.network import DEFAULT_MTU
from testbed.emulation.shaping import netem_available
from testbed.errors import TestbedError
from testbed.report.paired import Comparison
from testbed.topology import DEFAULT_QUEUE, DEFAULT_RATE, Topology, from_spec
from testbed.topology.base import with_scaleup

MAX_DELAY_MS = 1000   # beyond this TCP's handshakes and the runs' timeouts stop fitting


def check_delay(delay: float) -> float:
    if not (math.isfinite(delay) and 0 <= delay <= MAX_DELAY_MS):
        raise TestbedError(f"--delay must be between 0 and {MAX_DELAY_MS} ms (got {delay:g})")
    if delay and not netem_available():
        raise TestbedError("--delay needs the netem qdisc, which this kernel does not have (CONFIG_NET_SCH_NETEM): "
                           "run without --delay, or in the lab VM, whose stock Debian kernel has it")
    return delay


def fabric(spec: str | Path = "bigraph:2,8", *, rate: float = DEFAULT_RATE, queue: int = DEFAULT_QUEUE,
           delay: float = 0.0, mtu: int = DEFAULT_MTU, scaleup: float | None = None) -> Topology:
    """The fabric `spec` names ('bigraph:2,8', 'leafspine:4,4,4', 'hpn7:2,2,2,2', 'simai:FILE',
    a FILE.json|yaml as each run writes topology.json), links at `rate` Mbit/s, checked: a rate,
    MTU, queue or size the emulator cannot honour is refused here. scaleup: every server's
    scale-up domain at this many times a NIC's rate (0: none; None: as the spec gives it, a fabric
    file's own or none). No root; nothing built."""
    check_mtu(mtu)
    check_link_rate(rate)
    topo = from_spec(str(spec), rate=rate, queue=queue, delay=check_delay(delay))
    if scaleup is not None:
        with_scaleup(topo, scaleup)
    if len(topo.hosts) < 2:
        raise TestbedError(f"{topo.name} has {len(topo.hosts)} host: a fabric needs at least 2 to carry traffic")
    check_hosts(topo)
    check_queue(topo, mtu)
    return topo


def compare(name: str, labels: tuple[str, str], pairs: Sequence[tuple[float, float]], by: str = "ratio") -> Comparison:
    """A figure measured on both of two forms in each trial: `.a`, `.b` and `.gain` (b / a - 1; by
    "difference": b - a, for a figure that can be zero) as a mean with its 95% interval (`.lo`,
    `.hi`, `.excludes(0)`), and `.line()` to print."""
    return Comparison(name, tuple(labels), list(pairs), by=by)
