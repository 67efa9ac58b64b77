"""The machines of a run that spans several (``--machines FILE``): plain data, read and checked
without root or network.

A TOML file names the head (this machine: the controller and the Dask scheduler's side) by its
underlay address, and each machine by name, how to reach it and how many slots it runs::

    head = "192.168.56.1"            # the head's underlay address: slots reach the controller here
    # scheduler = "tcp://192.168.56.1:8786"   # a Dask scheduler already running, its workers named
    #                                         # as the machines; without it, Dask's SSHCluster starts
    #                                         # one scheduler here and a worker per machine over ssh
    [[machine]]
    name = "vm1"
    ssh = "root@192.168.56.11"       # with SSHCluster: the ssh target
    underlay = "192.168.56.11"       # where VXLAN tunnels and the checks reach this machine
    slots = 1                        # how many slots (one ovs-vswitchd each) it runs
"""
import ipaddress
import tomllib
from dataclasses import dataclass
from pathlib import Path

from testbed.errors import TestbedError

FIELDS = {"name", "ssh", "underlay", "slots"}


@dataclass(frozen=True)
class Machine:
    name: str
    underlay: str
    slots: int = 1
    ssh: str | None = None

    @property
    def ssh_user_host(self):
        """(user or None, host) of the ssh target."""
        user, _, host = self.ssh.rpartition("@")
        return user or None, host


@dataclass(frozen=True)
class Machines:
    head: str
    machines: tuple
    scheduler: str | None = None
    source: str = ""

    @property
    def slot_count(self):
        return sum(m.slots for m in self.machines)

    def machine_of_slot(self):
        """[machine] by slot index: machine i's slots follow machine i-1's."""
        return [m for m in self.machines for _ in range(m.slots)]

    def get(self, name):
        return next(m for m in self.machines if m.name == name)

    def to_dict(self):
        return {"head": self.head, "scheduler": self.scheduler,
                "machines": [{"name": m.name, "ssh": m.ssh, "underlay": m.underlay, "slots": m.slots}
                             for m in self.machines]}


def _address(value, what, fix):
    try:
        return str(ipaddress.IPv4Address(value))
    except (ipaddress.AddressValueError, ValueError, TypeError):
        raise TestbedError(f"{what} {value!r} is not an IPv4 address: {fix}") from None


def load(path):
    """The machines of a TOML file, or a one-line TestbedError that names the fix."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text())
    except OSError as e:
        raise TestbedError(f"--machines {path}: cannot read it ({e.strerror}): name a readable TOML file") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise TestbedError(f"--machines {path} is not TOML ({e}): see docs/machines.md for its form") from None
    return parse(data, str(path))


def parse(data, source="--machines"):
    unknown = set(data) - {"head", "scheduler", "machine"}
    if unknown:
        raise TestbedError(f"{source}: unknown key {sorted(unknown)[0]!r}: "
                           "the keys are head, scheduler and [[machine]]")
    if "head" not in data:
        raise TestbedError(f"{source}: no head: add head = \"<this machine's underlay address>\"")
    head = _address(data["head"], f"{source}: head", "give this machine's underlay address")
    scheduler = data.get("scheduler")
    if scheduler is not None and not (isinstance(scheduler, str) and scheduler.startswith("tcp://")):
        raise TestbedError(f"{source}: scheduler {scheduler!r} is not a Dask address: write it as tcp://HOST:PORT")
    entries = data.get("machine", [])
    if not isinstance(entries, list) or not entries:
        raise TestbedError(f"{source}: no machines: add a [[machine]] with name, underlay and slots for each")
    machines, names, addresses = [], set(), set()
    for i, entry in enumerate(entries, 1):
        where = f"{source}: machine {i}"
        if not isinstance(entry, dict):
            raise TestbedError(f"{where} is not a table: write it as [[machine]]")
        extra = set(entry) - FIELDS
        if extra:
            raise TestbedError(f"{where}: unknown field {sorted(extra)[0]!r}: "
                               f"the fields are {', '.join(sorted(FIELDS))}")
        name = entry.get("name")
        if not isinstance(name, str) or not name.isidentifier():
            raise TestbedError(f"{where}: name {name!r} must be a word (letters, digits, _)")
        if name in names:
            raise TestbedError(f"{where}: the name {name!r} is taken by another machine: give each its own")
        underlay = _address(entry.get("underlay"), f"{where} ({name}): underlay",
                            "give the address the other machines reach it at")
        if underlay in addresses:
            raise TestbedError(f"{where} ({name}): underlay {underlay} is another machine's: give each its own")
        slots = entry.get("slots", 1)
        if not isinstance(slots, int) or isinstance(slots, bool) or slots < 1:
            raise TestbedError(f"{where} ({name}): slots {slots!r} must be a whole number from 1")
        ssh = entry.get("ssh")
        if scheduler is None and not (isinstance(ssh, str) and ssh.strip()):
            raise TestbedError(f"{where} ({name}): no ssh target: add ssh = \"root@HOST\", or a scheduler "
                               "whose workers are named as the machines")
        names.add(name)
        addresses.add(underlay)
        machines.append(Machine(name, underlay, slots, ssh))
    return Machines(head, tuple(machines), scheduler, source)
