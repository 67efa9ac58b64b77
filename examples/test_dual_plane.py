"""HPN 7.0's dual plane against a single plane of the same ToRs and uplinks, as a paired
experiment: each trial draws fresh 5-tuples and runs cross-segment TCP flows on both forms, in
alternating order; the gain of dual plane in goodput per NIC is reported with its 95% interval.
Copy this file and change the fabric, the bond, the streams or the trials.
Run: sudo .venv/bin/python -m pytest examples/test_dual_plane.py -s"""
import testbed

TRIALS, SEED = 3, 7


def test_dual_plane_gains_on_cross_segment_flows(emulate):
    single, dual = testbed.plane_forms(testbed.fabric("hpn7:2,2,2,2"))   # the same ToRs; wiring differs
    goodput, polarised = [], []
    for trial in range(TRIALS):
        got = {}
        for form in testbed.trial_order((single, dual), trial):
            draw = testbed.Draw(SEED + trial, bond="round-robin")        # one draw, both forms
            with emulate(form, "ecmp") as emu:
                got[form.planes] = emu.flows(form.cross_segment_pairs(), streams=4, seconds=3, draw=draw)
        goodput.append((got[1].goodput_over_nic, got[2].goodput_over_nic))
        polarised.append((got[1].tiers["agg->tor"], got[2].tiers["agg->tor"]))

    gain = testbed.compare("goodput/NIC", ("single plane", "dual plane"), goodput)
    polarisation = testbed.compare("agg->tor max/mean", ("single plane", "dual plane"), polarised)
    print(gain.line())
    print(polarisation.line())
    assert gain.gain.lo > 0, gain.line()             # measured: docs/api.md
    assert polarisation.gain.hi < 0, polarisation.line()   # the cause: dual plane's aggregation tier is even
