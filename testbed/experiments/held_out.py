"""Whether a run's draws are held out from the method that scores them, computed from the kept
records and the code, never typed.

The method is a scenario's code half less what every emulated run rests on (``EMULATION``): for
fault_localisation the detector, the monitor, the fault injection, the trials and the scorer. A
seed is *seen* by that method when

- a kept record (docs/records/SCENARIO/) ran the seed with other method code than this tree's: the
  code changed after that run could show its result, so the change may have been made for it; or
- the scenario's ``SMOKE`` names it: the suite runs it at every change.

Any other seed (a seed the run drew, or one kept only with this very code) is held out. A
developer who tunes on a run keeps its record, or the computation cannot see it: the runs a page
shows are kept, and with them the seeds the method has been shown.
"""
from dataclasses import dataclass

from testbed.experiments import code_half, record


@dataclass(frozen=True)
class HeldOut:
    seed: int
    held_out: bool
    why: str

    def __str__(self):
        return f"{'held out' if self.held_out else 'NOT held out'}: {self.why}"


def method_files(module):
    """The files of a scenario's method: its code half less what every emulated run rests on."""
    return [path for path in code_half.files(module) if path not in code_half.EMULATION]


def smoke_seed(module):
    smoke = list(getattr(module, "SMOKE", ()))
    return int(smoke[smoke.index("--seed") + 1]) if "--seed" in smoke else None


def of(seed, module, records, code=None):
    """HeldOut of a run's seed, from the scenario's kept records (``record.history``) made before
    the run and the method's code it ran (code: its code half; default this tree's)."""
    if seed == smoke_seed(module):
        return HeldOut(seed, False, f"seed {seed} is the smoke run's, which the suite runs at every change")
    files = method_files(module)
    now = code if code is not None else code_half.of(module)
    ran = [r for r in records if r.get("seed") == seed]
    earlier = [r for r in ran
               if any(r["fingerprint"].get("code", {}).get(path) != now.get(path) for path in files)]
    if earlier:
        first = earlier[0]
        return HeldOut(seed, False, f"{first['path']} (commit {first['commit'][:7]}) ran seed {seed} with other "
                                    f"method code ({len(earlier)} kept run(s) in all): the method changed after "
                                    "it could see them")
    if ran:
        return HeldOut(seed, True, f"the {len(ran)} kept run(s) of seed {seed} before it all ran this very method "
                                   f"code ({len(files)} files): none could have shaped it")
    return HeldOut(seed, True, f"none of the scenario's {len(records)} kept runs before it has seed {seed}, nor "
                               f"does its smoke: the method ({len(files)} files) had never been shown these draws")


def of_scenario(seed, module):
    """HeldOut of a seed for a run about to start, read from the scenario's kept records."""
    return of(seed, module, record.history(module.NAME, {module.NAME: module}))


def of_record(kept, module, records):
    """HeldOut of a kept run's seed as it stood when the run started: from the records kept before
    it and the code half it ran."""
    before = [r for r in records if r["started"] < kept["started"]]
    return of(kept.get("seed"), module, before, code=kept["fingerprint"].get("code", {}))
