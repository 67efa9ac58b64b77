"""The throughput that follows from where the flows went: max-min fair rates over the shaped links.

Given each connection's path (the directed links its data crossed: captured by the probes in an
emulation, or computed by ``routing.hashing`` from its 5-tuple) and every link's rate, TCP flows
that run long enough share each bottleneck about equally, and a flow held back elsewhere leaves
its share to the others: the max-min fair allocation, found by progressive filling (every active
flow's rate rises together until a link is full; its flows stop there; repeat).

- ``max_min``: long-lived flows (iperf3): their steady rates.
- ``completion``: transfers that start together and end (one step of a collective): the fluid
  model, max-min rates recomputed each time a transfer ends and leaves its share to the rest;
  the step ends with its last transfer. Where the transfers are of one size (to 0.1%, as a
  collective's stripes are) each ends at its size over its first rate: a transfer's bottleneck
  carries none faster than it, so no other one's end frees it first, and one filling suffices.

With traffic classes (``high``: the flows of a job whose packets the switches serve first, strict
priority) the high flows are filled first over the whole capacity, the others over what they leave.

Rates are in bytes per second on the wire; ``payload_fraction`` converts to what TCP delivers.
The model assumes lossless, perfectly fair sharing and no per-message latency; where TCP shares
unevenly or loses packets the measurement falls short of it.
"""
import numpy as np

from testbed.errors import TestbedError

TCP_IP_HEADERS = 52      # IPv4 20 + TCP 20 + timestamps 12
ETHERNET_HEADER = 14     # what HTB counts of a frame beyond the IP packet


def payload_fraction(mtu):
    """TCP payload over the bytes a shaped link carries, for full-sized segments."""
    return (mtu - TCP_IP_HEADERS) / (mtu + ETHERNET_HEADER)


class Incidence:
    """Flows against links as index arrays, for the filling loops."""

    def __init__(self, paths, capacity):
        self.keys = list(paths)
        links = sorted({link for path in paths.values() for link in path}, key=str)
        missing = [link for link in links if link not in capacity]
        if missing:
            raise TestbedError(f"the flow model has no rate for link {missing[0]}")
        index = {link: i for i, link in enumerate(links)}
        self.links = links
        self.capacity = np.array([float(capacity[link]) for link in links])
        pairs = [(f, index[link]) for f, key in enumerate(self.keys) for link in dict.fromkeys(paths[key])]
        self.flow = np.array([p[0] for p in pairs], dtype=np.int64)
        self.link = np.array([p[1] for p in pairs], dtype=np.int64)
        if np.any(np.bincount(self.flow, minlength=len(self.keys)) == 0):
            raise TestbedError("every flow in the model needs at least one link")

    def mask(self, flows):
        flows = set(flows)
        return np.array([key in flows for key in self.keys], dtype=bool)

    def fill(self, active, remaining=None):
        """Max-min fair rates of the active flows (a boolean array) over the capacity (or
        `remaining` of it); inactive flows get 0."""
        rates = np.zeros(len(self.keys))
        active = active.copy()
        remaining = (self.capacity if remaining is None else remaining).copy()
        while active.any():
            on = active[self.flow]
            count = np.bincount(self.link[on], minlength=len(self.links))
            used = count > 0
            share = np.full(len(self.links), np.inf)
            share[used] = remaining[used] / count[used]
            delta = share.min()
            rates[active] += delta
            remaining[used] -= delta * count[used]
            full = used & (remaining <= 1e-9 * self.capacity)
            stopped = np.unique(self.flow[on & full[self.link]])
            active[stopped] = False
        return rates


    def fill_classes(self, active, high):
        """Strict priority: the active high flows max-min fair over the capacity, then the other
        active flows over what the high ones leave."""
        first = self.fill(active & high)
        used = np.bincount(self.link, weights=first[self.flow], minlength=len(self.links))
        return first + self.fill(active & ~high, np.maximum(self.capacity - used, 0.0))


def max_min(paths, capacity, high=()):
    """{flow: rate}: the max-min fair rates of flows that all run at once. paths: {flow: [link]},
    capacity: {link: rate}; high: the flows served first (strict priority)."""
    if not paths:
        return {}
    inc = Incidence(paths, capacity)
    every = np.ones(len(inc.keys), dtype=bool)
    rates = inc.fill_classes(every, inc.mask(high)) if high else inc.fill(every)
    return dict(zip(inc.keys, rates.tolist()))


def completion(paths, capacity, sizes, high=()):
    """(time until the last transfer ends, {flow: its end}) for transfers that start together, of
    sizes {flow: bytes}, each ending when its bytes have crossed at its fair rate of the moment
    (high: the transfers served first, strict priority)."""
    if not paths:
        return 0.0, {}
    inc = Incidence(paths, capacity)
    total = np.array([float(sizes[key]) for key in inc.keys])
    if high:
        first = inc.mask(high)
        fill = lambda active: inc.fill_classes(active, first)
    else:
        fill = inc.fill
    if not high and total.min() > 0 and total.max() <= 1.001 * total.min():
        rates = inc.fill(np.ones(len(inc.keys), dtype=bool))
        ends = total / rates
        return float(ends.max()), dict(zip(inc.keys, ends.tolist()))
    left, active = total.copy(), total > 0
    ends, now = np.zeros(len(inc.keys)), 0.0
    while active.any():
        rates = fill(active)
        moving = active & (rates > 0)          # under strict priority a low transfer may wait
        if not moving.any():
            raise TestbedError("a transfer in the flow model has no capacity")
        dt = np.min(left[moving] / rates[moving])
        now += dt
        left[moving] -= rates[moving] * dt
        done = active & (left <= 1e-9 * np.maximum(1.0, total))
        ends[done] = now
        active &= ~done
    return float(now), dict(zip(inc.keys, ends.tolist()))
