"""A fabric from its command-line form, e.g. 'bigraph:2,8'."""
from testbed.errors import TestbedError
from testbed.topology import fabric_file, simai
from testbed.topology.base import DEFAULT_QUEUE, DEFAULT_RATE
from testbed.topology.bigraph import BiGraph
from testbed.topology.clos import LeafSpine
from testbed.topology.hpn7 import HPN7
from testbed.topology.railonly import RailOnly

KINDS = {"bigraph": (BiGraph, "m,n[,c]"), "leafspine": (LeafSpine, "leaves,spines,hosts_per_leaf[,uplink_ratio]"),
         "hpn7": (HPN7, "S,H,R,A[,planes[,tors[,cores]]]"), "railonly": (RailOnly, "H,R[,scaleup]")}
FORMS = " | ".join(f"{kind}:{form}" for kind, (_, form) in KINDS.items()) + " | simai:FILE | FILE.json|yaml"


def from_spec(spec, rate=DEFAULT_RATE, queue=DEFAULT_QUEUE, delay=0.0):
    """'bigraph:2,8' -> BiGraph(2, 8, rate=rate, queue=queue); see KINDS for each kind's numbers;
    'simai:FILE' reads a SimAI topology file (see simai); FILE.json or FILE.yaml a fabric as data
    (see fabric_file)."""
    if fabric_file.is_fabric_file(spec):
        return fabric_file.load(spec, rate, queue, delay)
    kind, _, numbers = spec.partition(":")
    if kind == "simai":
        return simai.load(numbers, rate, queue, delay)
    if kind not in KINDS:
        raise TestbedError(f"unknown topology {kind!r}: use one of {FORMS.replace(' |', ',')}")
    cls, form = KINDS[kind]
    try:
        args = [int(x) for x in numbers.split(",")] if numbers else []
        return cls(*args, rate=rate, queue=queue, delay=delay)
    except (ValueError, TypeError):
        raise TestbedError(f"topology {spec!r} should read {kind}:{form} with whole numbers") from None
