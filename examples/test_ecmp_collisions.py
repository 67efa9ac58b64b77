"""ECMP hash collisions on a leaf-spine Clos against BiGraph's deterministic routes, as a paired
experiment: in each trial both fabrics run an allreduce on the same drawn source ports (the same
5-tuples), and the gain is reported with its 95% interval. Copy this file and change the fabrics,
the algorithms or the number of trials. Run: sudo .venv/bin/python -m pytest examples/"""
import testbed

TRIALS, SEED = 4, 2026


def test_bigraph_with_hdrm_beats_clos_with_ecmp(emulate):
    clos = testbed.fabric("leafspine:4,4,4")          # 16 hosts, 4 spines: the same link rate
    bigraph = testbed.fabric("bigraph:2,8")
    with emulate(clos, "ecmp") as emu:
        hashed = emu.collisions("hd", 1 << 20, trials=TRIALS, seed=SEED)
    with emulate(bigraph, "deterministic") as emu:
        routed = emu.collisions("hdrm", 1 << 20, trials=TRIALS, seed=SEED)

    assert all(t.wrong == 0 for t in hashed + routed)
    assert all(t.collided_steps == 0 for t in routed), routed       # as the routes predict
    # 4 cross-leaf flows per leaf and step on 4 spines: all distinct with probability 3/32 per step
    assert sum(t.collided_steps for t in hashed) >= 1, hashed
    busbw = testbed.compare("busbw/link", ("Clos + ECMP + HD", "BiGraph + HDRM"),
                            [(a.busbw_over_link, b.busbw_over_link) for a, b in zip(hashed, routed)])
    print(busbw.line())
    assert busbw.gain.lo > 0, busbw.line()          # measured: docs/api.md
