"""--cli: a scenario's fabric, built with its controller and routes, handed to Mininet's CLI for
exploring by hand; everything it built is removed when the CLI exits (also on Ctrl-C or a signal)."""
from mininet.cli import CLI
from mininet.log import setLogLevel

from testbed import routing
from testbed.emulation.network import Emulation
from testbed.topology import HPN7

HELP = """\
Mininet's CLI on {fabric}, routing {mode}{hash}. Try:
  pingall                          every host pings every other (first NIC port)
  h0 ip addr; h0 ip route          a host's addresses and routes
  h1 iperf3 -s -D; h0 iperf3 -c 10.0.0.2 -t 3   one TCP flow from h0 to h1
  dpctl dump-flows -O OpenFlow13   the rules the controller installed on every switch
  links; net; dump                 the fabric as Mininet sees it
exit (or Ctrl-D) removes the fabric."""


def routing_for(plan, topo):
    """The routing mode a scenario uses for this fabric: its own when it names one, else ECMP on HPN7
    (whose scenarios hash) and deterministic routes elsewhere."""
    mode = getattr(plan, "routing", None) or ("ecmp" if isinstance(topo, HPN7) else "deterministic")
    return routing.plan(topo, mode, getattr(plan, "hash", "same"))


def explore(plan, folder, settings, stdin=None):
    """Build plan's first fabric (with the run's settings: emulation.settings) and run Mininet's CLI
    on it until exit; return 0."""
    topo = plan.fabrics[0]
    routes = routing_for(plan, topo)
    with Emulation(topo, routes, folder, mtu=plan.mtu, cpu_placement=settings.cpu_placement,
                   slot_count=settings.slots) as emu:
        hashing = f", hash {routes.hash}" if routes.mode == "ecmp" else ""
        print(HELP.format(fabric=topo.describe(), mode=routes.mode, hash=hashing), flush=True)
        setLogLevel("output")      # the emulation keeps Mininet quiet; its CLI speaks at this level
        CLI(emu.net, stdin=stdin) if stdin else CLI(emu.net)
    return 0
