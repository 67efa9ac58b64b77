"""Fewer, faster uplinks at the same uplink capacity (ByteDance's MegaScale, NSDI 2024: a ToR's
uplinks at twice a downlink's rate make ECMP collisions rarer, since fewer flows share a choice)."""
from testbed.errors import TestbedError
from testbed.topology.clos import LeafSpine
from testbed.topology.hpn7 import HPN7

RATIOS = (1, 2, 4)


def faster_uplinks(topo, ratio, asked=None):
    """The fabric with 1/ratio as many leaf (ToR) uplinks, each `ratio` times as fast: the same
    uplink capacity per leaf (ToR), split over fewer links. ratio 1: the fabric itself. asked:
    what the user asked for, as the errors name it (default --uplink-ratio's)."""
    asked = asked or f"--uplink-ratio {ratio}"
    if ratio not in RATIOS:
        raise TestbedError(f"--uplink-ratio must be one of {', '.join(map(str, RATIOS))} (got {ratio})")
    if ratio == 1:
        return topo
    if isinstance(topo, LeafSpine):
        if topo.spines % ratio:
            raise TestbedError(f"{asked} divides the spines by {ratio}: give a spine count that "
                               f"{ratio} divides (got {topo.spines})")
        return LeafSpine(topo.leaves, topo.spines // ratio, topo.hosts_per_leaf, uplink_ratio=ratio * topo.uplink_ratio,
                         rate=topo.rate, queue=topo.queue, delay=topo.delay, scaleup_domain=topo.scaleup_domain)
    if isinstance(topo, HPN7):
        if topo.aggs % ratio:
            raise TestbedError(f"{asked} divides the aggregation switches per plane by {ratio}: give "
                               f"an A that {ratio} divides (got {topo.aggs})")
        return HPN7(topo.segments, topo.servers, topo.rails, topo.aggs // ratio, planes=topo.planes, tors=topo.tors,
                    cores=topo.cores, uplink_ratio=ratio * topo.uplink_ratio, rate=topo.rate, queue=topo.queue,
                    delay=topo.delay, scaleup_domain=topo.scaleup_domain)
    raise TestbedError(f"{asked} needs a leaf-spine or HPN7 fabric (got {topo.name}): leave it out on this one")
