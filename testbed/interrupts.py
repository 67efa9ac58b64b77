"""Signals end a run the same way wherever they arrive: SIGINT, SIGTERM and SIGHUP raise
``Interrupted`` in the main thread (``interruptible``), once: a run already ending because of one
notes any further signal instead of raising again, so a second Ctrl-C or SIGTERM cannot cut short
the removal of what the run made or the writing of its report. While a run removes what it made,
signals are held back in any case (``shielded``)."""
import signal
import threading
from contextlib import contextmanager

from testbed.errors import Interrupted

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_state = {"depth": 0, "raised": None}     # nesting of interruptible contexts; the signal raised, if any


def _raise(signum, _frame):
    if _state["raised"] is None:
        raise interrupted(signum)


def interrupted(signum):
    """The Interrupted to raise for a signal that was held back: from now on the run is ending."""
    _state["raised"] = signum
    return Interrupted(signum)


@contextmanager
def _handlers(handler, after=None):
    """Install handler for SIGNALS; on leaving, restore the previous handlers (or install `after`)."""
    if threading.current_thread() is not threading.main_thread():   # a machine's part (machines.part)
        yield
        return
    old = {sig: signal.signal(sig, handler) for sig in SIGNALS}
    try:
        yield
    finally:
        for sig, previous in old.items():
            signal.signal(sig, previous if after is None else after)


@contextmanager
def interruptible(last=False):
    """with interruptible(): the first signal raises Interrupted here. last: this is the process's
    outermost context, which is about to exit: leave the signals ignored rather than restore their
    default (which would kill the process, between its cleanup and its exit, with the signal's
    default disposition instead of its exit code)."""
    _state["depth"] += 1
    try:
        with _handlers(_raise, after=signal.SIG_IGN if last else None):
            yield
    finally:
        _state["depth"] -= 1
        if _state["depth"] == 0:
            _state["raised"] = None


@contextmanager
def shielded():
    """with shielded() as caught: signals are noted in the list `caught`, not acted on."""
    caught = []
    with _handlers(lambda signum, _frame: caught.append(signum)):
        yield caught


def name(signum):
    return signal.Signals(signum).name
