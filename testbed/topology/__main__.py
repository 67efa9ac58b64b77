"""Write a fabric as data, without building it:

    python -m testbed.topology SPEC            the fabric as JSON (what every run folder holds)
    python -m testbed.topology SPEC --simai    an HPN7 fabric as a SimAI topology file
"""
import argparse
import json
import sys

from testbed.errors import TestbedError
from testbed.topology import FORMS, from_spec, simai


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("spec", help=FORMS)
    parser.add_argument("--simai", action="store_true", help="SimAI's topology format (HPN7 only)")
    args = parser.parse_args(argv)
    try:
        topo = from_spec(args.spec)
        sys.stdout.write(simai.dump(topo) if args.simai else json.dumps(topo.to_dict(), indent=1) + "\n")
    except TestbedError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
