"""A fabric split across machines (``--machines FILE``), seen from the head as one Emulation.

The head runs the controller, listening on its underlay address, and the Dask client
(machines.engine); each machine's worker holds a Part (machines.part) with that machine's slots.
Programs in remote hosts speak through their Part: the head batches what it writes to a machine's
programs and collects what they said, once per few milliseconds per machine, so a collective's
ranks on one machine get their command together, and those on different machines within a few
milliseconds (that skew is in every iteration's time: docs/machines.md). Rank times, taken on each
machine's monotonic clock, are mapped onto the head's when the machine has another boot id.
"""
import itertools
import json
import queue
import subprocess
import threading
import time
from pathlib import Path

from testbed.emulation import preflight, runrecord
from testbed.emulation.controller import Controller
from testbed.emulation.network import DEFAULT_MTU, Emulation
from testbed.emulation.processes import Program
from testbed.emulation.shaping import CONTROL_DSCP
from testbed.errors import RunFailure, TestbedError
from testbed.machines.checks import preflight as check_machines
from testbed.machines.engine import Engine, MachineLost
from testbed.machines.part import Part, Share
from testbed.topology.partition import partition

TICK = 0.005                      # s between a machine's batches of writes and reads
TIMESTAMPS = ("t0", "ends", "steps")     # what a rank reports on its machine's clock (programs.rank)


def open_emulation(topo, routing, run_dir, settings, mtu=DEFAULT_MTU, log=print, refuse_overload=True, priority=None):
    """An Emulation of topo as the run's settings (emulation.settings.RunSettings) say: split into
    their slots on this machine, or across their machines. priority: traffic classes on the switch
    ports (emulation.shaping), on one machine only."""
    if settings.machines is None:
        return Emulation(topo, routing, run_dir, mtu=mtu, log=log, refuse_overload=refuse_overload,
                         cpu_placement=settings.cpu_placement, slot_count=settings.slots, priority=priority,
                         control_class=settings.control_class, ecn=settings.ecn,
                         congestion_control=settings.congestion_control)
    if settings.ecn:
        raise TestbedError("--ecn marks at switch ports built on one machine: run without --machines")
    if priority is not None:
        raise TestbedError("traffic classes (priority) are built on one machine: run without --machines")
    return MachineEmulation(topo, routing, run_dir, settings.machines, mtu=mtu, log=log, engine=settings.engine,
                            checked=settings.checked.get((topo.name, mtu)), control_class=settings.control_class)


def _wait(futures, engine, timeout, what):
    """Results of Dask actor futures, the run ended at once if a machine is lost."""
    deadline, out = time.monotonic() + timeout, []
    for future in futures:
        while True:
            engine.check()
            try:
                out.append(future.result(timeout=0.2))
                break
            except TimeoutError:
                if time.monotonic() > deadline:
                    raise RunFailure(f"{what} did not finish within {timeout:.0f} s") from None
            except TestbedError:
                raise
            except Exception as e:        # raised on the machine: its type and words, without its traceback
                raise RunFailure(f"{what}: {type(e).__name__}: {e}") from None
    return out


class Channel:
    """One machine's Part as the head talks to it: batched writes, drained lines, in one thread."""

    def __init__(self, name, part, engine, offset):
        self.name, self.part, self.engine, self.offset = name, part, engine, offset
        self.outbox, self.streams, self.lock = [], {}, threading.Lock()
        self.stopped, self.error, self.hung = threading.Event(), None, None
        threading.Thread(target=self._run, daemon=True).start()

    def call(self, method, *args, timeout=60.0):
        """A Part method's result. A machine that once did not answer within timeout is not asked
        again: its worker is hung, and the run ends in one timeout, not one per remaining call."""
        self.engine.check()
        if self.hung:
            raise RunFailure(self.hung)
        try:
            future = getattr(self.part, method)(*args)
        except RuntimeError:        # Dask: "Worker holding Actor was lost"
            raise MachineLost(f"machine {self.name} was lost mid-run: the run ended and every machine "
                              "ends what it made within seconds") from None
        try:
            return _wait([future], self.engine, timeout, f"machine {self.name}'s {method}")[0]
        except RunFailure as e:
            if "did not finish within" in str(e):
                self.hung = f"{e}; machine {self.name} is not answering: its worker ends what the run made when it ends"
            raise

    def _run(self):
        while not self.stopped.is_set():
            try:
                with self.lock:
                    batch, self.outbox[:] = list(self.outbox), []
                for method, key, text in batch:
                    getattr(self.part, method)(key, *([text] if text is not None else [])).result()
                said = self.part.drain().result()
            except Exception as e:   # the machine is gone: the engine says which
                self.error = e
                for stream in self.streams.values():
                    stream.put(None)
                return
            for key, lines in said.items():
                for line in lines:
                    self.streams[key].put(self._on_head_clock(line))
            if not said and not batch:
                time.sleep(TICK)

    def _on_head_clock(self, line):
        if line is None or not self.offset or not line.startswith("{"):
            return line
        msg = json.loads(line)
        for key in TIMESTAMPS:
            if key in msg:
                msg[key] = _shift(msg[key], -self.offset)
        return json.dumps(msg) + "\n"

    def send(self, method, key, text=None):
        with self.lock:
            self.outbox.append((method, key, text))


def _shift(value, by):
    return [_shift(v, by) for v in value] if isinstance(value, list) else value + by


class _Lines:
    """The stdout of a remote program: its lines as they come, None at the end."""

    def __init__(self):
        self.queue = queue.Queue()

    def put(self, line):
        self.queue.put(line)

    def __iter__(self):
        while (line := self.queue.get()) is not None:
            yield line


class _Stdin:
    def __init__(self, channel, key):
        self.channel, self.key, self.buffer = channel, key, ""

    def write(self, text):
        self.buffer += text

    def flush(self):
        text, self.buffer = self.buffer, ""
        if text:
            self.channel.send("write", self.key, text)

    def close(self):
        self.flush()
        self.channel.send("close", self.key)


class RemoteProcess:
    """What Program needs of a Popen, for a process in a host on another machine."""

    def __init__(self, channel, key, pid):
        self.channel, self.key, self.pid = channel, key, pid
        self.stdout, self.stdin = channel.streams[key], _Stdin(channel, key)
        self.returncode = None

    def poll(self):
        if self.returncode is None:
            self.returncode = self.channel.call("returncode", self.key)
        return self.returncode

    def wait(self, timeout=None):
        deadline = time.monotonic() + (timeout if timeout is not None else 1e9)
        while self.poll() is None:
            if time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(f"{self.key}", timeout)
            time.sleep(0.05)
        return self.returncode

    def kill(self):
        self.channel.call("kill", self.key)


class RemoteProgram(Program):
    def stopped(self):
        """Its /proc is on its machine: never seen stopped; a lost or hung machine ends the run
        (machines.engine) here, where a wait for the program looks at it."""
        self.proc.channel.engine.check()
        return False


class RemoteHost:
    def __init__(self, channel, name):
        self.channel, self.name = channel, name

    def cmd(self, command):
        return self.channel.call("cmd", self.name, command)


class MachinesCpu:
    """The verdict's CPU figures from every machine, over the same span (fidelity.verdict)."""

    def __init__(self, emu):
        self.emu = emu

    def __enter__(self):
        for channel in self.emu.channels.values():
            channel.call("cpu_start")
        return self

    def __exit__(self, *exc):
        self.results = {name: channel.call("cpu_stop") for name, channel in self.emu.channels.items()}

    def result(self):
        results, slots = self.results, []
        for name, got in results.items():
            indices = sorted(self.emu.share_of[name].slots)
            slots += [dict(s, slot=indices[s["slot"]], machine=name) for s in got.get("slots", [])]
        busiest = max(results, key=lambda n: results[n]["busiest_core"])
        ovs_cores = sum(r["ovs_vswitchd_cores"] for r in results.values())
        return {"datapath": "user", "ovs_vswitchd_cores": round(ovs_cores, 2),
                "busiest_core": results[busiest]["busiest_core"],
                "busiest_core_name": f"{busiest}:{results[busiest]['busiest_core_name']}",
                "busiest_core_softirq": results[busiest]["busiest_core_softirq"],
                "machine_busy": max(r["machine_busy"] for r in results.values()),
                "machines_busy": {n: r["machine_busy"] for n, r in results.items()},
                "emulator_bottleneck": any(r["emulator_bottleneck"] for r in results.values()),
                "slots": sorted(slots, key=lambda s: s["slot"])}


class MachineEmulation:
    """with MachineEmulation(topo, plan, run_dir, machines) as emu: the same use as an Emulation's
    for collectives, flows and the fabric check (program, host(...).cmd, counters, link failures)."""
    datapath, cpu_placement = "user", "none"

    def __init__(self, topo, routing, run_dir, ms, mtu=DEFAULT_MTU, log=print, engine=None, checked=None,
                 control_class=True):
        """engine: a running Engine to use (else one is started and closed); checked: what its
        preflight measured for this fabric (else the preflight runs first); control_class: as an
        Emulation's."""
        self.topo, self.routing, self.run_dir, self.machines = topo, routing, Path(run_dir), ms
        self.control_class = control_class
        self.mtu, self.log, self.given_engine, self.preflight = mtu, log, engine, checked
        self.partition = partition(topo, ms.slot_count)
        self.engine = self.controller = self.record = None
        self.parts, self.channels, self.share_of, self.host_machine = {}, {}, {}, {}
        self._keys = itertools.count()

    def __enter__(self):
        preflight.require_machines(self.topo, self.mtu, self.machines)
        try:
            self._start()
        except BaseException:
            self._stop()
            raise
        return self

    def __exit__(self, *exc):
        self._stop()

    def _start(self):
        topo, ms, started = self.topo, self.machines, time.monotonic()
        runrecord.acquire_lock()
        self.record = runrecord.RunRecord.create()      # the head's part: the controller
        self.engine = self.given_engine or Engine(ms, self.log).__enter__()
        if self.preflight is None:
            self.log(f"preflight of {len(ms.machines)} machines for {topo.describe()}, MTU {self.mtu}:")
            self.preflight = check_machines(self.engine, topo, self.mtu, log=self.log)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        topology_file, plan_file = self.run_dir / "topology.json", self.run_dir / "routing.json"
        topology_file.write_text(json.dumps(topo.to_dict(), indent=1))
        plan_file.write_text(json.dumps(self.routing.to_dict()))
        (self.run_dir / "slots.json").write_text(json.dumps(self.partition.to_dict(), indent=1))
        (self.run_dir / "machines.json").write_text(json.dumps(dict(ms.to_dict(), preflight=self.preflight), indent=1))
        self.controller = Controller(self.routing, plan_file, topology_file, self.run_dir, host=ms.head)
        self.record.add(pids=[self.controller.start()])
        owner = ms.machine_of_slot()
        underlay = {k: m.underlay for k, m in enumerate(owner)}
        parts = {}
        for m in ms.machines:
            share = Share(frozenset(k for k, o in enumerate(owner) if o.name == m.name), underlay,
                          (ms.head, self.controller.port))
            self.share_of[m.name] = share
            for h in topo.hosts:
                if self.partition.slot_of[h] in share.slots:
                    self.host_machine[h] = m.name
            parts[m.name] = self.engine.client.submit(
                Part, topo, self.routing, self.mtu, ms.slot_count, share, self.control_class,
                workers=[self.engine.workers[m.name]],
                allow_other_workers=False, actor=True)
        self.parts = dict(zip(parts, _wait(list(parts.values()), self.engine, 60, "starting the machines' parts")))
        parts = self.parts
        self.log(f"building {topo.describe()} across {len(ms.machines)} machines "
                 f"({self.partition.describe()} over VXLAN on the underlay)")
        built = _wait([p.build() for p in parts.values()], self.engine, 300, "building the machines' slots")
        here = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
        for (name, part), got in zip(parts.items(), built):
            offset = 0.0 if got["boot_id"] == here else self._clock_offset(part)
            self.channels[name] = Channel(name, part, self.engine, offset)
        self.log(f"fabric up across machines in {time.monotonic() - started:.1f} s "
                 f"(controller on {ms.head}:{self.controller.port})")

    @property
    def control_dscp(self):
        return CONTROL_DSCP if self.control_class and not self.topo.delay else None

    congestion_control = None             # --cc is refused across machines (settings.RunSettings)

    def kernel_congestion_control(self, cc):
        if cc:
            raise TestbedError("a congestion control is set on the hosts of one machine's fabric: run without "
                               "--machines")
        return None

    def _clock_offset(self, part):
        """The machine's monotonic clock less the head's, from the quickest of 9 round trips."""
        best = None
        for _ in range(9):
            t0 = time.monotonic()
            there = _wait([part.now()], self.engine, 10, "reading a machine's clock")[0]
            t1 = time.monotonic()
            if best is None or t1 - t0 < best[0]:
                best = (t1 - t0, there - (t0 + t1) / 2)
        return best[1]

    def _stop(self):
        for channel in self.channels.values():
            channel.stopped.set()
        if self.parts and self.engine.client is not None and not self.engine.lost:
            try:
                answering = [p for name, p in self.parts.items() if not getattr(self.channels.get(name), "hung", None)]
                _wait([p.stop() for p in answering], self.engine, 60, "removing the machines' slots")
            except Exception as e:    # the reaper (engine.close) still ends every part
                self.log(f"removing the machines' slots: {e}")
        if self.controller is not None:
            self.controller.stop()
        if self.engine is not None and self.engine is not self.given_engine:
            self.engine.close()      # unregistering the reaper ends whatever a part left
        if self.record is not None:
            self.record.sweep()
        runrecord.release_lock()

    # --- use --------------------------------------------------------------------------------
    def _channel(self, host):
        return self.channels[self.host_machine[host]]

    def host(self, name):
        return RemoteHost(self._channel(name), name)

    def program(self, host, module, *args, name=None, inbox=None):
        channel, key = self._channel(host), f"p{next(self._keys)}"
        channel.streams[key] = _Lines()
        pid = channel.call("start", key, host, module, [str(a) for a in args])
        return RemoteProgram(name or f"{module} on {host}", RemoteProcess(channel, key, pid), inbox)

    def spawn(self, args, host=None, switch=None, **kwargs):
        raise TestbedError("this scenario starts its own processes in the fabric, which a run across "
                           "machines does not carry yet: run it on one machine (--slots)")

    def port_netns(self, ifname):
        raise TestbedError("queue sampling is not carried across machines yet: run this scenario on one "
                           "machine (--slots)")

    def switch_drops(self):
        return sum(c.call("switch_drops") for c in self.channels.values())

    def forget_flows(self):
        for channel in self.channels.values():
            channel.call("forget_flows")

    def underlay_errors(self):
        out = {}
        for channel in self.channels.values():
            for key, value in channel.call("underlay_errors").items():
                out[key] = out.get(key, 0) + value
        return out

    def set_link(self, link, up):
        index = self.topo.links.index(link)
        owners = {self.host_machine.get(n) or self._switch_machine(n) for n in (link.a, link.b)}
        for name in owners:
            self.channels[name].call("set_link", index, up)

    def _switch_machine(self, switch):
        k = self.partition.slot_of[switch]
        return next(n for n, share in self.share_of.items() if k in share.slots)

    def set_switch(self, switch, up):
        for link in self.topo.links:
            if switch in (link.a, link.b):
                self.set_link(link, up)

    def counters(self, nic):
        return self._channel(nic.host).call("counters", nic)

    def cpu_monitor(self):
        return MachinesCpu(self)

    def describe_slots(self):
        return f", {self.partition.describe()} over VXLAN across {len(self.machines.machines)} machines"
