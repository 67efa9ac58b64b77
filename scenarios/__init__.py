"""One module per experiment; scenarios.common says what each provides."""
from scenarios import (
    bigraph_allreduce,
    collectives,
    congestion,
    dual_tor_failover,
    ecmp_collisions,
    fabric_check,
    fault_localisation,
    faultbench,
    hpn7_at_scale,
    hpn7_planes,
    hpn7_rails,
    incast,
    launch,
    load_balancing,
    multi_job,
    server_nics,
    training_scaling,
)

SCENARIOS = {m.NAME: m for m in (bigraph_allreduce, collectives, fabric_check, ecmp_collisions, incast, hpn7_planes,
                                 hpn7_rails, hpn7_at_scale, dual_tor_failover, server_nics, training_scaling,
                                 multi_job, fault_localisation, faultbench, load_balancing, congestion, launch)}
DEFAULT = bigraph_allreduce.NAME
