#!/usr/bin/env bash
# One-step setup for the testbed on Debian 12 / Ubuntu, as root. Idempotent: a second run is quick.
#   sudo ./setup.sh          install and start what the testbed needs
#   sudo ./setup.sh run ...  then run a scenario (default: the default scenario)
#   sudo ./setup.sh test ... then run the linter and the test suite (extra words go to pytest;
#                            -m slow runs the slow set, which the suite leaves out)
#   sudo ./setup.sh machine  a machine that only serves slots of a run across machines (docs/machines.md):
#                            no calibration (the head's preflight measures what such a run needs)
set -euo pipefail
cd "$(dirname "$0")"

if [ "$(id -u)" -ne 0 ]; then
  echo "setup.sh needs root: run it as 'sudo ./setup.sh $*'" >&2
  exit 1
fi

# git: a run's record names the commit it ran (a Vagrant box has no git: records said commit null)
# openmpi-bin: mpirun for launch --mpi and the peers bench (mpi4py, from PyPI, finds Open MPI's library)
DEBS="mininet openvswitch-switch libtcmalloc-minimal4 iperf3 libiperf0 ethtool iproute2 iputils-ping tcpdump socat nftables python3-venv python3-wheel python3-yaml git openmpi-bin"
# --ecn's marker (testbed/emulation/ecn.py): compiled with clang, loaded with tc. A distribution
# without one of them (Ubuntu ships bpftool in linux-tools) leaves --ecn refused in one line.
ECN_DEBS="clang libbpf-dev bpftool"
not_installed() {
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || printf ' %s' "$p"
  done
}
missing=$(not_installed $DEBS)
missing_ecn=$(not_installed $ECN_DEBS)
if [ -n "$missing$missing_ecn" ]; then
  echo "== installing Debian packages:$missing$missing_ecn"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  [ -z "$missing" ] || apt-get install -y -q --no-install-recommends $missing
  [ -z "$missing_ecn" ] || apt-get install -y -q --no-install-recommends $missing_ecn || \
    echo "note: could not install$missing_ecn: --ecn (ECN marking) will say what is missing" >&2
fi

# Open vSwitch: nothing starts it on a machine without systemd, and a stopped one must be started.
# Both daemons must answer: the database alone (ovs-vsctl) says nothing about ovs-vswitchd.
ovs_up() { ovs-vsctl --timeout=3 show >/dev/null 2>&1 && ovs-appctl -t ovs-vswitchd --timeout=3 version >/dev/null 2>&1; }
TCMALLOC=$(ls /usr/lib/*/libtcmalloc_minimal.so.4 2>/dev/null | head -1)
# ovs-vswitchd's userspace datapath allocates a batch of frame-sized buffers for every port it polls,
# whenever a packet wakes it, and frees those that stayed empty. With glibc's malloc that took a third
# of its CPU (perf), and left to glibc's defaults it also mapped, trimmed and faulted in heap pages
# (with mlockall, locked each one: 4-5x slower forwarding in its first run). tcmalloc's per-thread
# caches make it cheap: a 1 KiB HDRM allreduce on 16 ranks went from 6.3 to 4.7 ms. The glibc
# thresholds keep the heap where tcmalloc is absent.
OVS_GLIBC_TUNABLES=glibc.malloc.trim_threshold=268435456:glibc.malloc.mmap_threshold=33554432
if [ -d /run/systemd/system ]; then
  # Under systemd the unit starts ovs-vswitchd: give it the same settings through a drop-in.
  dropin=/etc/systemd/system/ovs-vswitchd.service.d/ai-testbed.conf
  want="[Service]
Environment=LD_PRELOAD=$TCMALLOC
Environment=GLIBC_TUNABLES=$OVS_GLIBC_TUNABLES
Environment=OVS_CTL_OPTS=--no-mlockall"
  if [ "$(cat "$dropin" 2>/dev/null)" != "$want" ]; then
    echo "== configuring ovs-vswitchd.service ($dropin)"
    mkdir -p "$(dirname "$dropin")"
    printf '%s\n' "$want" > "$dropin"
    systemctl daemon-reload
    if ovs_up; then systemctl restart ovs-vswitchd; fi
  fi
  if ! ovs_up; then
    echo "== starting Open vSwitch"
    systemctl start openvswitch-switch
  fi
elif ! ovs_up; then
  # No systemd (containers, CI): nothing starts Open vSwitch, so start it here.
  echo "== starting Open vSwitch"
  GLIBC_TUNABLES=$OVS_GLIBC_TUNABLES LD_PRELOAD="$TCMALLOC" \
    /usr/share/openvswitch/scripts/ovs-ctl start --system-id=random --no-mlockall 2>&1 | grep -v ulimit || true
fi
ovs_up || { echo "Open vSwitch did not start: see /var/log/openvswitch/" >&2; exit 1; }
if [ -n "$TCMALLOC" ] && ! grep -q tcmalloc "/proc/$(cat /var/run/openvswitch/ovs-vswitchd.pid)/maps" 2>/dev/null; then
  echo "note: ovs-vswitchd was started without tcmalloc, so small messages are slower than the README says;" \
       "stop it (/usr/share/openvswitch/scripts/ovs-ctl stop) and run ./setup.sh again to start it so" >&2
fi

# The venv is made from Debian's python3 so that it sees Debian's Mininet (and mnexec). A .venv made
# elsewhere (on a Vagrant host, by another Python) cannot run here: replace it.
base="$(/usr/bin/python3 -c 'import sys; print(sys.base_prefix, sys.version_info[:2])')"
if [ -e .venv ] && [ "$(.venv/bin/python -c 'import sys; print(sys.base_prefix, sys.version_info[:2])' 2>/dev/null)" != "$base" ]; then
  echo "== replacing .venv, which was made by another interpreter (not this machine's /usr/bin/python3)"
  rm -rf .venv
fi
# pip names every index location it skips, a line each (some machines configure many): keep its other words.
quiet_pip() { grep -v "^WARNING: Location '.*' is ignored" || true; }
if [ ! -x .venv/bin/python ]; then
  echo "== creating .venv"
  /usr/bin/python3 -m venv --system-site-packages .venv
fi
if ! cmp -s requirements.txt .venv/.requirements.installed; then
  echo "== installing Python packages"
  .venv/bin/pip install -q --disable-pip-version-check -r requirements.txt 2>&1 | quiet_pip
  cp requirements.txt .venv/.requirements.installed
fi
# PyTorch's CPU build (a 192 MB download, about 700 MB installed) for the launch scenario and
# examples/ddp_train.py: from PyTorch's own index, since PyPI's torch is the CUDA build (gigabytes).
# A machine that cannot reach that index takes the same file from a local wheel folder, if pip has one.
TORCH="torch==2.13.0+cpu"
if ! cmp -s <(echo "$TORCH") .venv/.torch.installed 2>/dev/null; then
  echo "== installing $TORCH (about 192 MB)"
  .venv/bin/pip install -q --disable-pip-version-check --retries 1 --extra-index-url https://download.pytorch.org/whl/cpu \
    "$TORCH" 2>&1 | quiet_pip | grep -v "Retrying\|NewConnectionError\|Could not fetch\|download.pytorch.org" || true
  if .venv/bin/python -c 'import torch' 2>/dev/null; then
    echo "$TORCH" > .venv/.torch.installed
  else
    echo "note: could not install $TORCH: launch's default program (examples/ddp_train.py) needs it" >&2
  fi
fi
# The project itself, editable: `import testbed` from any folder, and pytest's testbed plugin.
if ! cmp -s pyproject.toml .venv/.project.installed; then
  echo "== installing the testbed package (editable) and its pytest plugin"
  .venv/bin/pip install -q --disable-pip-version-check --no-deps --no-build-isolation -e . 2>&1 | quiet_pip
  cp pyproject.toml .venv/.project.installed
fi

# The rate checks and verdicts use this machine's measured forwarding capacity: measure it once per
# machine (a new kernel, Open vSwitch or core count makes it stale). Without it runs still work, on
# conservative figures.
if [ "${1:-}" != machine ] && \
    ! .venv/bin/python -c 'import sys; from testbed.emulation import capacity; sys.exit(capacity.load()[0] is None)'; then
  echo "== measuring what this machine forwards faithfully (run_scenario.py --calibrate default, once, about a minute)"
  .venv/bin/python run_scenario.py --calibrate default \
    || echo "note: the calibration failed; runs use conservative figures until 'run_scenario.py --calibrate' succeeds" >&2
fi

action="${1:-}"
[ $# -gt 0 ] && shift
case "$action" in
  "") echo "ready: sudo .venv/bin/python run_scenario.py --list" ;;
  machine) echo "ready to serve slots: start its Dask worker (docs/machines.md)" ;;
  run) exec .venv/bin/python run_scenario.py "$@" ;;
  test) .venv/bin/ruff check . && exec .venv/bin/python -m pytest "$@" ;;
  *) echo "unknown action '$action': use 'run', 'test' or 'machine'" >&2; exit 2 ;;
esac
