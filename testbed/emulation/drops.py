"""Random loss where the kernel has no netem: an nftables rule on a switch port's egress hook (the
netdev family's, Linux 5.16 on) drops a share of the packets the switch sends there, each at
random (`numgen random`), and counts them.

Only where a switch sends. A packet dropped at a host's own egress is handed back to its TCP as a
local error, which it retries at once (measured: ping's lost requests were sent again, none lost
on the wire), and one dropped at a switch port's ingress has already been read by the userspace
datapath, whose packet sockets see a frame before the ingress hooks. A switch's egress is where a
frame the datapath forwards leaves, so a drop there is lost on the wire. The rules live in one
table, TABLE, per network namespace (the root one, or a slot's); the run record removes it after
a crash (``runrecord``).
"""
import gzip
import json
import shutil
import subprocess

from testbed.errors import TestbedError

TABLE = "ai_testbed_loss"
SCALE = 1_000_000        # numgen's modulus: the share drops in millionths
KERNEL = ("CONFIG_NF_TABLES_NETDEV=y", "CONFIG_NETFILTER_EGRESS=y", "CONFIG_NFT_NUMGEN=y")


def available():
    """Whether nft is installed and the kernel has netdev egress hooks and numgen (or cannot say)."""
    if shutil.which("nft") is None:
        return False
    try:
        with gzip.open("/proc/config.gz", "rt") as config:
            lines = set(config.read().splitlines())
    except OSError:
        return True       # no config to read: nft itself refuses later, in one line
    return all(option in lines for option in KERNEL)


def _in(pid):
    return ["nsenter", "-t", str(pid), "-n"] if pid else []


def _nft(pid, script, check=True):
    done = subprocess.run(_in(pid) + ["nft", "-f", "-"], input=script, capture_output=True, text=True)
    if check and done.returncode:
        raise TestbedError(f"nft refused the loss rule: {done.stderr.strip().splitlines()[-1:]}")
    return done


def _chain(ifname):
    return "".join(c if c.isalnum() else "_" for c in ifname)      # nft takes no quoted chain name


def set_drop(pid, ifname, fraction):
    """Drop `fraction` of what leaves ifname (in the namespace of pid, None: the root one) at random;
    0 removes the rule."""
    chain = f"netdev {TABLE} {_chain(ifname)}"
    if fraction:
        _nft(pid, f"add table netdev {TABLE}\n"
                  f'add chain {chain} {{ type filter hook egress device "{ifname}" priority 0; policy accept; }}\n'
                  f"flush chain {chain}\n"
                  f"add rule {chain} numgen random mod {SCALE} < {round(fraction * SCALE)} counter drop\n")
    else:
        _nft(pid, f"flush chain {chain}\ndelete chain {chain}\n", check=False)


def dropped(pid, ifname):
    """Packets the rule on ifname has dropped so far (0 without one)."""
    done = subprocess.run(_in(pid) + ["nft", "-j", "list", "chain", "netdev", TABLE, _chain(ifname)],
                          capture_output=True, text=True)
    if done.returncode:
        return 0
    return sum(expr["counter"]["packets"] for item in json.loads(done.stdout)["nftables"]
               for expr in item.get("rule", {}).get("expr", []) if "counter" in expr)


def delete_table(pid=None):
    """Remove every loss rule of the namespace (nothing if there is none)."""
    _nft(pid, f"delete table netdev {TABLE}\n", check=False)
