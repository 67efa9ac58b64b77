"""Notices, within a second or two, that a part the run depends on has died (the controller,
ovs-vswitchd) and interrupts the main thread with a RunFailure that says which and what to do."""
import signal
import threading

from testbed.errors import RunFailure

INTERVAL = 1.0


class Watchdog:
    """with Watchdog([check, ...]): each check() returns None while its part is alive, else what died
    and the fix; the first such message ends the block with RunFailure(message)."""

    def __init__(self, checks, interval=INTERVAL):
        self.checks, self.interval = checks, interval
        self.problem, self._done = None, threading.Event()

    def _watch(self):
        while not self._done.wait(self.interval):
            for check in self.checks:
                self.problem = check()
                if self.problem:
                    signal.pthread_kill(threading.main_thread().ident, signal.SIGUSR1)
                    return

    def _raise(self, _signum, _frame):
        if self.problem and not self._done.is_set():
            raise RunFailure(self.problem)

    def __enter__(self):
        self._previous = signal.signal(signal.SIGUSR1, self._raise)
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._done.set()
        self._thread.join()
        signal.signal(signal.SIGUSR1, self._previous)
