"""A scenario's default link rate fitted to the machine: where the default --rate offers more than
this machine's datapath forwards faithfully (``capacity``), a run lowers the rate to fit and says
so, instead of refusing. A rate the user gave is never changed (the rate check refuses it as
before), nor one for split or spread fabrics, whose limits are their slots' and machines'.
"""
import math

from testbed.emulation import capacity


def given(argv, option="--rate"):
    return any(a == option or a.startswith(option + "=") for a in argv)


def two_figures_down(value):
    """value rounded down to two significant figures (a rate a person reads)."""
    if value <= 0:
        return 0.0
    step = 10 ** (math.floor(math.log10(value)) - 1)
    return math.floor(value / step + 1e-9) * step


def fitted_rate(fabrics, rate, mtu, datapath, placement):
    """The --rate at which every one of `fabrics` (built at `rate`) offers no more than the
    datapath's capacity, or None where `rate` fits (or no lower rate would be honoured)."""
    cap = capacity.capacity(mtu, datapath, placement)
    worst = max((len(topo.nic_ports()) * topo.rate / cap for topo in fabrics), default=0.0) if cap else 0.0
    if worst <= 1.0:
        return None
    lower = two_figures_down(rate / worst)
    return lower if lower >= capacity.MIN_RATE_MBIT else None


def note(old, new, fabrics, mtu, datapath, placement):
    busiest = max(fabrics, key=lambda topo: len(topo.nic_ports()))
    ports = len(busiest.nic_ports())
    return (f"note: the default --rate {old:g} offers {ports * old:g} Mbit/s on {busiest.name}, more than this "
            f"machine forwards faithfully at MTU {mtu} (about {capacity.capacity(mtu, datapath, placement):g} Mbit/s; "
            f"{capacity.source(mtu, datapath, placement)}): running at --rate {new:g} instead (give --rate to "
            "choose; the record keeps the rate run)")
