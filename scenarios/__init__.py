"""One module per experiment. Each has NAME, HELP, add_arguments(parser) and run(args, out) -> exit code."""
from scenarios import bigraph_allreduce, ecmp_collisions, fabric_check, incast

SCENARIOS = {m.NAME: m for m in (bigraph_allreduce, fabric_check, ecmp_collisions, incast)}
DEFAULT = bigraph_allreduce.NAME
