"""Options every emulation scenario shares."""
from testbed.emulation import DEFAULT_MTU
from testbed.topology import DEFAULT_QUEUE, DEFAULT_RATE


def add_fabric_arguments(parser, topology):
    parser.add_argument("--topology", default=topology,
                        help="bigraph:m,n[,c] | leafspine:leaves,spines,hosts_per_leaf | hpn7:S,H,R,A[,planes] "
                             "(default %(default)s)")
    parser.add_argument("--rate", type=float, default=DEFAULT_RATE, help="link rate, Mbit/s (default %(default)s)")
    parser.add_argument("--queue", type=int, default=DEFAULT_QUEUE,
                        help="egress FIFO limit per link end, packets (default %(default)s)")
    parser.add_argument("--mtu", type=int, default=DEFAULT_MTU, help="MTU of every link (default %(default)s)")
