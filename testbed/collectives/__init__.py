"""Stage 4a, collectives: real allreduce between emulated hosts. Schedules say, per rank and step,
whom to send which elements to (``Ring``, ``HalvingDoubling``); placements say which host runs
which rank (rank order, alternating layers, HDRM); the coordinator drives one rank process per rank
(``testbed.programs.rank``) and checks every result against numpy; the sweep hands on one
nccl-tests-style row per variant and message size.
"""
