"""The communication of a training job that spans segments 0 and 1 of an HPN7 fabric, as the HPN
scenarios emulate it and model it at the paper's scale, one connection list for both
(``connections``, numbered by a hash draw):

- cross-segment flows: every host of the job to its counterpart on the other segment, long-lived
  (iperf3), ``streams`` connections each;
- allreduce: one Ring over every host of the job whose neighbours sit on different segments
  (``placements.cross_segment``): every flow crosses the aggregation tier, all rails at once, and
  the slowest flow sets the pace of all, as in NCCL's allreduce over hosts of several NICs;
- Multi-AllReduce: each rail's own Ring over the job's hosts of that rail, all at once (the HPN
  paper's "GPUs with the same index in the same DP group conduct AllReduce in parallel").
Ranks listen on LISTEN_PORT (one rank per host) and open ``streams`` connections to each peer.
"""
from dataclasses import dataclass

from testbed.collectives.connections import flow_connections, rank_connections
from testbed.collectives.placements import cross_segment, rail_ring
from testbed.collectives.schedules import Ring

LISTEN_PORT = 7000


@dataclass
class CrossSegmentJob:
    topo: object         # HPN7 with 2 or more segments
    servers: range       # the servers of each segment the job holds
    streams: int

    @property
    def ring_hosts(self):
        return cross_segment(self.topo, self.servers)

    @property
    def rail_rings(self):
        return [rail_ring(self.topo, r, (0, 1), self.servers) for r in range(self.topo.rails)]

    def flows(self, draw):
        """[[Connection per stream] per (host, counterpart) pair], and the pairs' NIC ports."""
        pairs = self.topo.cross_segment_pairs(self.servers)
        return flow_connections([(s.host, d.host) for s, d in pairs], self.streams, draw), pairs

    def ranks(self, hosts, draw):
        """{rank: {peer: [Connection]}} of a Ring over hosts."""
        return rank_connections(Ring(), hosts, [LISTEN_PORT] * len(hosts), self.streams, draw)

    def allreduce(self, draw):
        return self.ranks(self.ring_hosts, draw)

    def multi_allreduce(self, draw):
        return [self.ranks(hosts, draw) for hosts in self.rail_rings]


def data_connections(ranks):
    """The connections of a Ring's ranks that carry its data: each rank's to the next."""
    n = len(ranks)
    return [c for r, peers in ranks.items() for c in peers[(r + 1) % n]]
