"""SimAI's topology files, read into HPN7 and written from it.

SimAI (aliyun/SimAI) describes a fabric in a text file that its generator writes
(``gen_Topo_Template.py -topo AlibabaHPN [--dp] ...``):

    nodes gpus_per_server nvswitches switches links gpu_type
    <the switch node ids: NVSwitches, ToRs of plane 1, ToRs of plane 2, aggregation switches>
    src dst bandwidth latency error_rate          (one line per link)

GPUs are nodes 0..G-1, server by server; each GPU has one link to its server's NVSwitch and two NIC
links, to a ToR of each plane, the ToR of its rail in its segment. In the dual-plane form a ToR links
to the aggregation switches of its plane only; in the single-plane form to all of them, so that a
single-plane file's ToRs have twice the uplinks of the dual-plane file made with the same
options: it reads as a single-plane HPN7 with all of its aggregation switches in its one plane.

``load`` turns such a file into the equal HPN7 and checks, link by link, that they are the same
fabric; NVSwitch links are left out (each accelerator is one emulated host; there is no NVLink).
Rates are scaled: the NIC links run at the emulated link rate, and every other fabric link at the
same fraction of its own SimAI bandwidth. ``dump`` writes any HPN7 in the generator's format and
order, so that a loaded file is written back as it was.
"""
import re
from dataclasses import dataclass
from pathlib import Path

from testbed.errors import TestbedError
from testbed.topology.hpn7 import HPN7

UNITS = {"Gbps": 1e9, "Mbps": 1e6, "Tbps": 1e12}


@dataclass
class Attributes:
    """The parts of a SimAI file the emulation does not use, kept to write it back."""
    gpu_type: str = "H100"
    nvswitches_per_server: int = 1
    nvlink: str = "2880Gbps"
    nvlink_latency: str = "0.000025ms"
    nic: str = "200Gbps"                  # the real HPN 7.0: 2 x 200G per NIC, 400G ToR-aggregation
    uplink: str = "400Gbps"
    latency: str = "0.0005ms"
    error_rate: str = "0"


def bits_per_s(text):
    found = re.fullmatch(r"([\d.]+)(Gbps|Mbps|Tbps)", text)
    if not found:
        raise TestbedError(f"SimAI bandwidth {text!r}: expected a number and Gbps, Mbps or Tbps")
    return float(found.group(1)) * UNITS[found.group(2)]


def load(path, rate, queue, delay=0.0):
    """The HPN7 a SimAI AlibabaHPN file describes, links at `rate` Mbit/s for the NICs and scaled alike."""
    path = Path(path)
    try:
        lines = [line.split() for line in path.read_text().splitlines() if line.strip()]
        nodes, per_server, nvswitches, switches, count = map(int, lines[0][:5])
        gpu_type = lines[0][5]
    except (OSError, ValueError, IndexError):
        raise TestbedError(f"{path}: not a SimAI topology file (first line: nodes, GPUs per server, "
                           "NVSwitches, switches, links, GPU type)") from None
    gpus, links = nodes - nvswitches - switches, lines[2:]
    if len(links) != count or any(len(line) != 5 for line in links):
        raise TestbedError(f"{path}: the header announces {count} links, the file has {len(links)} link lines "
                           "of 'src dst bandwidth latency error_rate'")
    neighbours = {}
    for src, dst, *_ in links:
        neighbours.setdefault(int(src), []).append(int(dst))
    nv_ids = set(range(gpus, gpus + nvswitches))
    nic_links = {gpu: [n for n in neighbours.get(gpu, []) if n not in nv_ids] for gpu in range(gpus)}
    if any(len(tors) != 2 for tors in nic_links.values()):
        raise TestbedError(f"{path}: every GPU needs two NIC links, to two ToRs (dual-ToR AlibabaHPN)")
    tors = [sorted({t[p] for t in nic_links.values()}) for p in (0, 1)]
    aggs = sorted(set(range(gpus + nvswitches, nodes)) - set(tors[0]) - set(tors[1]))
    rails = per_server
    servers_per_segment = sum(1 for t in nic_links.values() if t[0] == tors[0][0])
    segments = len(tors[0]) // rails if rails else 0
    plane_of_agg = {}
    for p in (0, 1):
        for tor in tors[p]:
            for agg in neighbours.get(tor, []):
                plane_of_agg.setdefault(agg, set()).add(p)
    planes = 2 if all(len(ps) == 1 for ps in plane_of_agg.values()) else 1
    if not (segments and len(aggs) % planes == 0 and gpus == segments * servers_per_segment * rails):
        raise TestbedError(f"{path}: {gpus} GPUs, {len(tors[0])} ToRs per plane and {len(aggs)} aggregation switches "
                           "do not form full segments of an HPN7 fabric")
    nic_bw = {bits_per_s(line[2]) for line in links if int(line[0]) < gpus and int(line[1]) not in nv_ids}
    up_bw = {bits_per_s(line[2]) for line in links if int(line[0]) >= gpus + nvswitches}
    if len(nic_bw) != 1 or len(up_bw) > 1:
        raise TestbedError(f"{path}: NIC links of several bandwidths, or ToR-aggregation links of several: "
                           "the testbed gives each tier one rate")
    ratio = (up_bw.pop() / next(iter(nic_bw))) if up_bw else 1.0
    topo = HPN7(segments, servers_per_segment, rails, len(aggs) // planes, planes=planes, rate=rate, queue=queue,
                delay=delay, uplink_ratio=ratio)
    names = _names(topo, gpus, nvswitches, tors, aggs)
    file_links = {frozenset((names[int(a)], names[int(b)])) for a, b, *_ in links
                  if int(a) not in nv_ids and int(b) not in nv_ids}
    ours = {frozenset((link.a, link.b)) for link in topo.links}
    if file_links != ours:
        raise TestbedError(f"{path}: its links are not those of {topo.name} ({len(file_links ^ ours)} differ): "
                           "only AlibabaHPN topologies from SimAI's generator can be emulated")
    sample = next(line for line in links if int(line[1]) in nv_ids or int(line[0]) in nv_ids)
    first_nic = next(line for line in links if int(line[0]) < gpus and int(line[1]) not in nv_ids)
    first_up = next((line for line in links if int(line[0]) >= gpus + nvswitches), first_nic)
    topo.simai = Attributes(gpu_type, nvswitches // (gpus // per_server), sample[2], sample[3], first_nic[2],
                            first_up[2], first_nic[3], first_nic[4])
    topo.source_spec = f"simai:{path.resolve()}"
    topo.origin = describe(topo)
    return topo


def _names(topo, gpus, nvswitches, tors, aggs):
    """{SimAI node id: our node name} for GPUs, ToRs and aggregation switches."""
    names = {gpu: f"h{gpu}" for gpu in range(gpus)}
    by_label = {s.label: s.name for s in topo.switches.values()}
    for p in (0, 1):
        for k, tor in enumerate(tors[p]):
            names[tor] = by_label[f"tor.s{k // topo.rails}.r{k % topo.rails}.p{p}"]
    for k, agg in enumerate(aggs):
        names[agg] = by_label[topo.agg_label(k // topo.aggs, k % topo.aggs)]
    return names


def expressible(topo):
    """Whether SimAI's AlibabaHPN format can say this fabric: HPN7, dual-ToR, no core tier."""
    return isinstance(topo, HPN7) and topo.tors == 2 and not topo.cores


def dump(topo):
    """The SimAI file of an HPN7 fabric, in the generator's node numbering and line order."""
    if not expressible(topo):
        raise TestbedError(f"only dual-ToR HPN7 fabrics without a core tier have a SimAI form (got {topo.name})")
    attrs = getattr(topo, "simai", None) or Attributes()
    hosts = sorted(topo.hosts.values(), key=lambda h: h.index)
    gpus, servers = len(hosts), len(hosts) // topo.rails
    nv = attrs.nvswitches_per_server
    labels = {s.label: s for s in topo.switches.values()}
    tor_ids, agg_ids, next_id = {}, {}, gpus + servers * nv
    for p in (0, 1):
        for s in range(topo.segments):
            for r in range(topo.rails):
                tor_ids[labels[f"tor.s{s}.r{r}.p{p}"].name] = next_id
                next_id += 1
    for p in range(topo.planes):
        for a in range(topo.aggs):
            agg_ids[labels[topo.agg_label(p, a)].name] = next_id
            next_id += 1
    ids = {**{h.name: h.index for h in hosts}, **tor_ids, **agg_ids}
    lines = []
    for host in hosts:
        for k in range(nv):
            lines.append(f"{host.index} {gpus + host.server * nv + k} {attrs.nvlink} {attrs.nvlink_latency} "
                         f"{attrs.error_rate}")
        for nic in host.ports:
            lines.append(f"{host.index} {ids[topo.attachment(nic)[0]]} {attrs.nic} {attrs.latency} {attrs.error_rate}")
    for tor in sorted(tor_ids, key=tor_ids.get):
        for agg in sorted((link.b for link in topo.links if link.a == tor and link.b in agg_ids), key=agg_ids.get):
            lines.append(f"{tor_ids[tor]} {agg_ids[agg]} {attrs.uplink} {attrs.latency} {attrs.error_rate}")
    switch_ids = range(gpus, next_id)
    header = (f"{next_id} {topo.rails} {servers * nv} {next_id - gpus - servers * nv} {len(lines)} {attrs.gpu_type}\n"
              + "".join(f"{i} " for i in switch_ids) + "\n")
    return header + "\n".join(lines) + "\n"


def describe(topo):
    """How a fabric read from SimAI is scaled, in words."""
    attrs = topo.simai
    scale = topo.rate * 1e6 / bits_per_s(attrs.nic)
    return (f"from SimAI's {topo.source_spec[len('simai:'):]}: its {attrs.nic} NIC links run at {topo.rate:g} Mbit/s "
            f"and its {attrs.uplink} ToR-aggregation links at {topo.rate * topo.uplink_ratio:g} Mbit/s "
            f"(1/{1 / scale:,.0f} of their rates)")



def exports(topo):
    """{file name: text}: the fabric in other tools' formats, written into every run folder (SimAI's
    topology file, for an HPN7 it can express)."""
    return {"topology.simai": dump(topo)} if isinstance(topo, HPN7) and expressible(topo) else {}
