"""The sched_yield shim the peers bench preloads into OpenMPI's ranks: a yield gives the CPU up
for as long as it says (without it sched_yield returns at once on an idle machine)."""
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SHIM = Path(__file__).resolve().parents[1] / "bench" / "peers" / "yield_sleeps.c"
YIELDS = 200
TIMED = ("import os, time; t = time.perf_counter()\n"
         f"for _ in range({YIELDS}): os.sched_yield()\n"
         "print(time.perf_counter() - t)")


def yields_take(env):
    done = subprocess.run([sys.executable, "-c", TIMED], env=env, capture_output=True, text=True, check=True)
    return float(done.stdout)


@pytest.mark.skipif(not (shutil.which("cc") or shutil.which("clang")), reason="no C compiler")
def test_a_preloaded_yield_sleeps_and_a_plain_one_does_not(tmp_path):
    built = tmp_path / "libyield_sleeps.so"
    subprocess.run([shutil.which("cc") or shutil.which("clang"), "-O2", "-shared", "-fPIC", "-o", str(built),
                    str(SHIM)], check=True)
    plain = yields_take({})
    slept = yields_take({"LD_PRELOAD": str(built), "TESTBED_YIELD_SLEEP_US": "200"})
    assert slept >= YIELDS * 200e-6             # each yield slept its 200 us at least
    assert plain < slept / 4
