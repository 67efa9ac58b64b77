"""One module per experiment. Each has NAME, HELP, add_arguments(parser) and run(args, out) -> exit code."""
from scenarios import fabric_check

SCENARIOS = {m.NAME: m for m in (fabric_check,)}
DEFAULT = fabric_check.NAME
