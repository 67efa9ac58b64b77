"""A fabric from its command-line form, e.g. 'bigraph:2,8'."""
from testbed.errors import TestbedError
from testbed.topology.bigraph import BiGraph
from testbed.topology.clos import LeafSpine
from testbed.topology.hpn7 import HPN7

KINDS = {"bigraph": (BiGraph, "m,n[,c]"), "leafspine": (LeafSpine, "leaves,spines,hosts_per_leaf"),
         "hpn7": (HPN7, "S,H,R,A[,planes]")}
FORMS = " | ".join(f"{kind}:{form}" for kind, (_, form) in KINDS.items())


def from_spec(spec, **kw):
    """'bigraph:2,8' -> BiGraph(2, 8, **kw); see KINDS for each kind's numbers."""
    kind, _, numbers = spec.partition(":")
    if kind not in KINDS:
        raise TestbedError(f"unknown topology {kind!r}: use one of {FORMS.replace(' |', ',')}")
    cls, form = KINDS[kind]
    try:
        args = [int(x) for x in numbers.split(",")] if numbers else []
        return cls(*args, **kw)
    except (ValueError, TypeError):
        raise TestbedError(f"topology {spec!r} should read {kind}:{form} with whole numbers") from None
