"""Sweeps one run record once its owner is gone: a machine's Part (machines.part) starts one beside
its worker, so that a worker killed mid-run leaves nothing on its machine either.

    python -m testbed.machines.sweeper RECORD OWNER_PID OWNER_START
"""
import sys
import time
from pathlib import Path

from testbed.emulation import runrecord


def main(path, pid, started):
    while runrecord.running(int(pid), int(started)):
        time.sleep(0.5)
    if Path(path).exists():
        runrecord.RunRecord.load(path).sweep()


if __name__ == "__main__":
    main(*sys.argv[1:])
