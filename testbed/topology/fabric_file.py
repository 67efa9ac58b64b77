"""A fabric from a file: `--topology FILE.json` (or .yaml), in the form every run writes as its
topology.json, so that a run's fabric can be edited by hand and run again.

    {"rate_mbit": 10, "queue_packets": 100, "shared_nic_address": false,
     "switches": [{"label": "leaf0", "role": "leaf"}, {"label": "spine0", "role": "spine"}, ...],
     "hosts": [{"name": "h0"}, {"name": "h1", "server": 1}, ...],
     "links": [{"a": "h0", "b": "leaf0"}, {"a": "leaf0", "b": "spine0", "rate": 20}, ...]}

A switch's role is free text, except that a switch of role "scaleup" is a server's scale-up bridge
and one of role "rail" (its "plane" the rail's number) a rail switch: a bridge sends a message for
another server out to the destination host's rail (its "rail"), as a rail-only fabric does
(``topology.railonly``). A link names its ends by a host's name or a switch's label (or the switch's
bridge name, tbN, as topology.json writes them); its rate defaults to the fabric's. Ports are numbered in the order the
links come, as every fabric's are, so the ports a file gives are not read. The file's rate and
queue are the fabric's (`--rate` and `--queue` apply where it gives none). Checked before anything
is built: one line naming the fix for a file that is not text, a name used twice, a link to a node
that does not exist, a link from a switch to itself or from a host straight to another host, a host
without a link, hosts that cannot reach each other, an address that is not IPv4 or is given twice,
a rate the emulator cannot honour.

The testbed numbers hosts itself (10.B.P.N: its routes, neighbour entries and the controller's rules
follow from that plan): addresses a file gives (``ports``, as topology.json writes them) are checked,
and where they differ from the plan the fabric's ``notes`` say in one line that they were
reassigned, which run_scenario.py prints before anything is built.
"""
import ipaddress
import json
from pathlib import Path

from testbed.errors import TestbedError
from testbed.topology.base import DEFAULT_QUEUE, DEFAULT_RATE, Topology

SUFFIXES = (".json", ".yaml", ".yml")


def is_fabric_file(spec):
    return spec.lower().endswith(SUFFIXES)


def read(path):
    """The file's data, or a one-line error."""
    file = Path(path)
    if not file.is_file():
        raise TestbedError(f"--topology {path}: no such file (a fabric file ends in {', '.join(SUFFIXES)})")
    try:
        text = file.read_text()
    except UnicodeDecodeError:
        raise TestbedError(f"--topology {path}: not a text file: give a fabric as JSON or YAML") from None
    try:
        if file.suffix.lower() == ".json":
            return json.loads(text)
        import yaml  # Debian's python3-yaml, which setup.sh installs
        return yaml.safe_load(text)
    except ImportError:
        raise TestbedError(f"--topology {path}: reading YAML needs python3-yaml: run 'sudo ./setup.sh', "
                           "or write the fabric as JSON") from None
    except Exception as e:                    # the parsers' own errors: JSONDecodeError, YAMLError
        raise TestbedError(f"--topology {path}: not valid {file.suffix[1:].upper()}: "
                           f"{str(e).splitlines()[0]}") from None


class FabricFile(Topology):
    """A fabric described as data (see the module docstring)."""

    def __init__(self, path, data, rate=None, queue=None, delay=0.0):
        if not isinstance(data, dict):
            raise TestbedError(f"--topology {path}: the file should hold one object with switches, hosts and links")
        self.path, self.data = str(path), data
        self.shared_nic_address = bool(data.get("shared_nic_address", False))
        super().__init__(rate=data.get("rate_mbit", rate or DEFAULT_RATE),
                         queue=data.get("queue_packets", queue or DEFAULT_QUEUE), delay=delay,
                         scaleup_domain=data.get("scaleup_domain", 0.0))

    @property
    def name(self):
        return f"FabricFile({Path(self.path).name})"

    @property
    def spec(self):
        return self.path

    def build(self):
        where = f"--topology {self.path}"
        entries = {key: self.data.get(key) for key in ("switches", "hosts", "links")}
        for key, value in entries.items():
            if not isinstance(value, list) or not value:
                raise TestbedError(f"{where}: '{key}' should be a non-empty list")
        nodes = {}

        def named(kind, entry, key):
            if not isinstance(entry, dict) or not isinstance(entry.get(key), str) or not entry[key]:
                raise TestbedError(f"{where}: every {kind} needs a '{key}' (got {entry!r})")
            if entry[key] in nodes:
                raise TestbedError(f"{where}: the name {entry[key]!r} is used twice: give each node its own")
            return entry[key]

        for entry in entries["switches"]:
            switch = self.add_switch(named("switch", entry, "label"), str(entry.get("role", "switch")),
                                     entry.get("plane"))
            nodes[switch.label] = switch.name
        for entry in entries["switches"]:         # topology.json's links name the bridges (tbN)
            if entry.get("name") and entry["name"] not in nodes:
                nodes[entry["name"]] = nodes[entry["label"]]
        for k, entry in enumerate(entries["hosts"]):
            name = named("host", entry, "name")
            nodes[name] = self.add_host(server=entry.get("server", k), rail=entry.get("rail")).name
        linked = set()
        for entry in entries["links"]:
            if not isinstance(entry, dict) or not {"a", "b"} <= set(entry):
                raise TestbedError(f"{where}: every link needs 'a' and 'b' (got {entry!r})")
            for end in (entry["a"], entry["b"]):
                if end not in nodes:
                    raise TestbedError(f"{where}: a link names {end!r}, which is no host or switch of the file")
            if nodes[entry["a"]] == nodes[entry["b"]]:
                raise TestbedError(f"{where}: link {entry['a']}-{entry['b']} joins a node to itself: remove it")
            if nodes[entry["a"]] in self.hosts and nodes[entry["b"]] in self.hosts:
                raise TestbedError(f"{where}: link {entry['a']}-{entry['b']} joins two hosts: a host links to "
                                   "switches only")
            rate = entry.get("rate", self.rate)
            if not isinstance(rate, (int, float)) or not 1 <= rate <= 10_000:
                raise TestbedError(f"{where}: link {entry['a']}-{entry['b']} has rate {rate!r}: "
                                   "use 1 to 10000 Mbit/s")
            self.add_link(nodes[entry["a"]], nodes[entry["b"]], rate=float(rate))
            linked |= {nodes[entry["a"]], nodes[entry["b"]]}
        named_as = {v: k for k, v in nodes.items() if v in self.hosts}
        lonely = [h.name for h in self.hosts.values() if h.name not in linked]
        if lonely:
            raise TestbedError(f"{where}: host {named_as[lonely[0]]} has no link: link it to a switch or remove it")
        apart = self.unreachable()
        if apart:
            a, b = (named_as[h] for h in apart)
            raise TestbedError(f"{where}: hosts {a} and {b} cannot reach each other: link their switches")
        self.notes = self.check_addresses(where, entries["hosts"], named_as)

    def unreachable(self):
        """(host, host) of two hosts with no path between them, or None."""
        neighbours = {}
        for link in self.links:
            neighbours.setdefault(link.a, []).append(link.b)
            neighbours.setdefault(link.b, []).append(link.a)
        hosts = list(self.hosts)
        seen, todo = {hosts[0]}, [hosts[0]]
        while todo:
            for other in neighbours.get(todo.pop(), []):
                if other not in seen:
                    seen.add(other)
                    todo.append(other)
        missing = [h for h in hosts if h not in seen]
        return (hosts[0], missing[0]) if missing else None

    def check_addresses(self, where, entries, named_as):
        """The file's addresses: refused where invalid or given to two hosts; a note where they
        differ from the testbed's numbering, which the emulation uses."""
        owner, moved = {}, []
        for entry, host in zip(entries, self.hosts.values()):
            for k, port in enumerate(entry.get("ports") or []):
                ip = port.get("ip") if isinstance(port, dict) else None
                if ip is None:
                    continue
                try:
                    ipaddress.IPv4Address(ip)
                except ValueError:
                    raise TestbedError(f"{where}: host {entry['name']} has address {ip!r}, which is not IPv4: "
                                       "correct it, or leave out 'ports' (the testbed numbers hosts itself)") from None
                if owner.setdefault(ip, host.name) != host.name:
                    raise TestbedError(f"{where}: address {ip} is given to {named_as[owner[ip]]} and "
                                       f"{entry['name']}: give each its own, or leave out 'ports'")
                ours = host.ports[min(k, len(host.ports) - 1)].ip
                if ip != ours:
                    moved.append(f"{entry['name']} {ip} -> {ours}")
        if not moved:
            return []
        return [f"{where}: {len(moved)} host address{'es' if len(moved) > 1 else ''} of the file reassigned to "
                f"the testbed's numbering (e.g. {moved[0]}); the run's topology.json has the addresses used"]


def load(path, rate=None, queue=None, delay=0.0):
    return FabricFile(path, read(path), rate, queue, delay)
