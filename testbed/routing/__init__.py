"""Stage 2, routing: takes a topology and a mode (``deterministic`` or ``ecmp``) and hands on one
``RoutingPlan``: the rules the controller installs on each switch, and the route every flow takes
where that is known before any packet moves. Path choice lives here and nowhere else.
"""
from testbed.routing.paths import Hop, PathFinder, Route
from testbed.routing.plan import HASHES, MODES, RoutingPlan, deterministic_routes, link_load, place_flows, plan

__all__ = ["Hop", "PathFinder", "Route", "HASHES", "MODES", "RoutingPlan", "deterministic_routes", "link_load",
           "place_flows", "plan"]
