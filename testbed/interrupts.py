"""Signals end a run the same way wherever they arrive: SIGINT, SIGTERM and SIGHUP raise
``Interrupted`` in the main thread (``interruptible``), and while a run removes what it made they are
held back (``shielded``), so that a second signal cannot cut the cleanup short."""
import signal
import threading
from contextlib import contextmanager

from testbed.errors import Interrupted

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def _raise(signum, _frame):
    raise Interrupted(signum)


@contextmanager
def _handlers(handler):
    if threading.current_thread() is not threading.main_thread():   # a machine's part (emulation.part)
        yield
        return
    old = {sig: signal.signal(sig, handler) for sig in SIGNALS}
    try:
        yield
    finally:
        for sig, previous in old.items():
            signal.signal(sig, previous)


def interruptible():
    """with interruptible(): a signal raises Interrupted here."""
    return _handlers(_raise)


@contextmanager
def shielded():
    """with shielded() as caught: signals are noted in the list `caught`, not acted on."""
    caught = []
    with _handlers(lambda signum, _frame: caught.append(signum)):
        yield caught


def name(signum):
    return signal.Signals(signum).name
