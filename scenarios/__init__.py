"""One module per experiment; scenarios.common says what each provides."""
from scenarios import bigraph_allreduce, ecmp_collisions, fabric_check, hpn7_planes, incast

SCENARIOS = {m.NAME: m for m in (bigraph_allreduce, fabric_check, ecmp_collisions, incast, hpn7_planes)}
DEFAULT = bigraph_allreduce.NAME
