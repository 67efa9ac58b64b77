"""Stage 1, the topology: a fabric as plain data (hosts and their NIC ports, switches, links with
rate and queue), built by a ``Topology`` subclass's ``build()`` without root or Mininet. It owns the
facts every later stage reads: addresses, interface names, which links join two switches, a
link's rate in bytes per second. Routing turns it into paths; emulation brings it to life.
"""
from testbed.topology import simai
from testbed.topology.base import DEFAULT_QUEUE, DEFAULT_RATE, Topology, interface
from testbed.topology.bigraph import BiGraph
from testbed.topology.clos import LeafSpine
from testbed.topology.hpn7 import HPN7
from testbed.topology.railonly import RailOnly
from testbed.topology.spec import FORMS, from_spec

__all__ = ["BiGraph", "LeafSpine", "HPN7", "RailOnly", "Topology", "interface", "from_spec", "FORMS", "simai",
           "DEFAULT_RATE", "DEFAULT_QUEUE"]
