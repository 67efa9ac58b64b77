"""Signals end a run once: the first raises Interrupted, any later one (during the cleanup, the
report, or the interpreter's exit) is noted, never the default disposition that kills the process
with the signal instead of the run's exit code. No root."""
import signal
import subprocess
import sys
import time

import pytest

from testbed.errors import Interrupted
from testbed.interrupts import interruptible, shielded

# A run as run_scenario.py ends one: the first signal raises, the except clause says so, and the
# process takes a while to exit (here 0.5 s, as the interpreter's shutdown can) after the outermost
# context has been left.
CHILD = """
import sys, time
from testbed.errors import Interrupted
from testbed.interrupts import interruptible
def main():
    try:
        with interruptible(last=True):
            with interruptible():                       # an emulation's, inside the run's
                print("ready", flush=True)
                time.sleep(30)
    except Interrupted as e:
        print("interrupted", flush=True)
        time.sleep(0.5)
        return 128 + e.signum
code = main()
time.sleep(0.5)
sys.exit(code)
"""


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_a_second_signal_after_the_first_cannot_change_the_exit_code(sig):
    proc = subprocess.Popen([sys.executable, "-c", CHILD], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"
    proc.send_signal(sig)
    assert proc.stdout.readline().strip() == "interrupted"
    proc.send_signal(sig)                  # while the run ends
    time.sleep(0.7)
    proc.send_signal(sig)                  # after the outermost context was left, before the exit
    assert proc.wait(10) == 128 + sig


def test_the_first_signal_raises_once_and_the_state_is_fresh_for_the_next_context():
    for _ in range(2):
        with pytest.raises(Interrupted), interruptible():
            signal.raise_signal(signal.SIGTERM)
        assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


def test_a_signal_while_shielded_is_noted_not_raised():
    with interruptible(), shielded() as caught:
        signal.raise_signal(signal.SIGINT)
    assert caught == [signal.SIGINT]
