"""Failures while traffic runs: links and switches taken down and brought back at given moments.

    events = link_failure(emu, link, at=8, lasting=6, flap=0) + switch_failure(emu, "tb3", at=24, lasting=6)
    with Timeline(events) as timeline: <traffic>
    timeline.done    [Done(monotonic time, wall time, what happened, switch ports it changed, up?)]

The events run in a thread of their own, on the machine-wide monotonic clock that the ranks also
use. When the block ends, the events still to come that undo something (up: a link back up, a
rate restored, a rank continued) run at once; whatever a dead run left down is on the run record
and comes back up at cleanup.
"""
import threading
import time
from collections import namedtuple

Event = namedtuple("Event", "at action what ports up")
Done = namedtuple("Done", "monotonic wall what ports up")


def toggles(at, lasting, flap):
    """[(offset, up?)]: down at `at`, up at `at + lasting`; with flap > 0, up and down again every
    `flap` seconds in between."""
    if not flap:
        return [(at, False), (at + lasting, True)]
    out, t, up = [], at, False
    while t < at + lasting:
        out.append((t, up))
        t, up = t + flap, not up
    return out + ([(at + lasting, True)] if not out[-1][1] else [])


def link_failure(emu, link, at, lasting, flap=0):
    name = f"link {emu.topo.label(link.a)}:{link.a_port}-{emu.topo.label(link.b)}:{link.b_port}"
    ports = [end for end in link.ends() if end[0] in emu.topo.switches]
    return [Event(t, lambda up=up: emu.set_link(link, up), f"{name} {'up' if up else 'down'}", ports, up)
            for t, up in toggles(at, lasting, flap)]


def switch_failure(emu, switch, at, lasting, flap=0):
    name = f"switch {emu.topo.label(switch)}"
    ports = [end for link in emu.topo.links if switch in (link.a, link.b) for end in link.ends()
             if end[0] in emu.topo.switches]
    return [Event(t, lambda up=up: emu.set_switch(switch, up), f"{name} {'up' if up else 'down'}", ports, up)
            for t, up in toggles(at, lasting, flap)]


class Timeline:
    def __init__(self, events):
        self.events = sorted(events, key=lambda e: e.at)
        self.done, self.error = [], None
        self._stop = threading.Event()

    def _run(self):
        for k, event in enumerate(self.events):
            if self._stop.wait(max(0.0, self.start + event.at - time.monotonic())):
                return
            self._next = k + 1
            if not self._do(event):
                return

    def _do(self, event):
        wall = time.time()
        try:
            event.action()
        except Exception as e:    # reported by the caller; the traffic goes on
            self.error = self.error or f"{event.what}: {e}"
            return False
        self.done.append(Done(time.monotonic(), wall, event.what, event.ports, event.up))
        return True

    def __enter__(self):
        self.start, self._next = time.monotonic(), 0
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        for event in self.events[self._next:]:
            if event.up:
                self._do(event)
