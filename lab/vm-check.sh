#!/usr/bin/env bash
# Proves the lab in a real VM: builds a Debian 12 image from Debian's packages (debootstrap and the
# stock linux-image-amd64 kernel, which has the openvswitch module and netem), boots it with qemu
# (KVM where the CPU offers it, TCG otherwise: slow, but it boots anywhere), copies the project in and
# runs the README's commands inside: ./setup.sh, fabric_check and the default scenario, then the
# forwarding-capacity bench and the tests that depend on the datapath. Reports the datapath in use,
# each step's time and exit code, and copies the guest's results out.
#
#   sudo lab/vm-check.sh [--quick]      # --quick: setup and fabric_check only
#   sudo lab/vm-check.sh --capacity     # also bench.forwarding_capacity on the kernel datapath (+10 min)
#   sudo lab/vm-check.sh --run 'CMD'    # setup, then CMD in the project folder (to look into something;
#                                       # a record CMD keeps with --record is copied into docs/ too)
#   sudo lab/vm-check.sh --records      # the kernel datapath measured for the pages: --calibrate all
#                                       # kept, a refusal over capacity, then bigraph_allreduce,
#                                       # congestion and ecmp_collisions --seed 1101 with --record; the
#                                       # guest's kept calibration and records are copied into docs/
#                                       # (the tree must be committed: a record names its commit)
#
# The guest is stopped after $VM_TIMEOUT seconds (default 5400). The image is built once into $VM_DIR (default /var/tmp/ai-testbed-vm, about 3 GiB) and reused;
# remove that folder to rebuild. The guest has no network: its Debian packages come with the image
# and its Python packages as wheels downloaded here, so it reaches nothing outside this machine.
set -euo pipefail
cd "$(dirname "$0")/.."
PROJECT=$PWD
. lab/vm-image.sh
VM_DIR=${VM_DIR:-/var/tmp/ai-testbed-vm}
MIRROR=${MIRROR:-http://deb.debian.org/debian}
QUICK=0
CAPACITY=0
RECORDS=0
COMMAND=""
LABEL=${VM_LABEL:-"a Debian 12 VM under qemu TCG (2 vCPUs, 4 GiB, stock kernel) on the project's sandbox"}
case "${1:-}" in
  "") ;;
  --quick) QUICK=1 ;;
  --capacity) CAPACITY=1 ;;
  --records) RECORDS=1 ;;
  --run) [ -n "${2:-}" ] || { echo "--run needs a command" >&2; exit 2; }; COMMAND=$2 ;;
  *) echo "usage: sudo lab/vm-check.sh [--quick | --capacity | --records | --run 'CMD']" >&2; exit 2 ;;
esac
KEEP=$RECORDS; [ -n "$COMMAND" ] && KEEP=1      # the guest's records come back (they need the history)
if [ $KEEP = 1 ] && [ -n "$(git status --porcelain --untracked-files=no)" ]; then
  echo "--records and --run keep records that name their commit: commit your changes first" >&2; exit 2
fi
[ "$(id -u)" -eq 0 ] || { echo "vm-check.sh needs root: run it as 'sudo lab/vm-check.sh'" >&2; exit 2; }
[ -x .venv/bin/pip ] || { echo "run 'sudo ./setup.sh' first: the guest's wheels are downloaded with .venv's pip" >&2; exit 2; }

mkdir -p "$VM_DIR"
MNT="$VM_DIR/mnt"
QEMU_PID=""
cleanup() {
  [ -n "$QEMU_PID" ] && kill "$QEMU_PID" 2>/dev/null || true
  mountpoint -q "$MNT" && umount "$MNT" || true
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
mkdir -p "$MNT"

vm_tools
vm_image
vm_wheels

echo "== copying the project in (files git tracks, as a clean clone has them)"
mount -o loop "$VM_DIR/disk.raw" "$MNT"
if { [ -n "$COMMAND" ] || [ $RECORDS = 1 ]; } && [ -d "$MNT/root/testbed/.venv" ]; then   # keep the venv set up before
  mv "$MNT/root/testbed/.venv" "$MNT/root/venv.kept"
fi
rm -f "$MNT/root/vm-check.log" "$MNT/root/vm-check.done"
vm_copy_project $KEEP
[ -d "$MNT/root/venv.kept" ] && mv "$MNT/root/venv.kept" "$MNT/root/testbed/.venv"

# The guest's job: the README's commands, each timed; then power off.
RUN_COMMAND=0
[ -n "$(printf %s "$COMMAND" | tr -d '[:space:]')" ] && RUN_COMMAND=1
cat > "$MNT/root/vm-check-job.sh" <<EOF
#!/bin/bash
exec > >(tee /root/vm-check.log > /dev/ttyS0) 2>&1
cd /root/testbed
export PIP_NO_INDEX=1 PIP_FIND_LINKS=/root/wheels
step() {
  local name=\$1; shift
  echo "== \$name: \$*"
  local t0=\$SECONDS; "\$@"; local rc=\$?
  echo "== \$name: exit \$rc in \$((SECONDS - t0)) s"
}
echo "== guest: \$(uname -r), \$(nproc) CPUs, \$(awk '/MemTotal/ {print int(\$2/1024)}' /proc/meminfo) MiB"
# a check stopped mid-run leaves its fabric in the guest's OVS database: clear it as a user would
[ -x .venv/bin/python ] && step cleanup .venv/bin/python run_scenario.py --cleanup
# --records with a guest set up before: calibrate (and keep) before setup, which then measures nothing
if [ $RECORDS = 1 ] && [ -x .venv/bin/python ]; then
  step calibrate .venv/bin/python run_scenario.py --calibrate all --keep $(printf %q "$LABEL")
fi
step setup ./setup.sh
echo "== datapath: \$(.venv/bin/python -c 'from testbed.emulation.preflight import datapath; print(datapath())')"
echo "== netem: \$(modprobe sch_netem 2>/dev/null && echo available || echo absent)"
if [ $RUN_COMMAND = 1 ]; then
  step command bash -c $(printf %q "$COMMAND")
elif [ $QUICK = 1 ]; then
  step fabric_check ./setup.sh run fabric_check
elif [ $RECORDS = 1 ]; then
  grep -q "^== calibrate" /root/vm-check.log || \
    step calibrate .venv/bin/python run_scenario.py --calibrate all --keep $(printf %q "$LABEL")
  step over_capacity bash -c '.venv/bin/python run_scenario.py fabric_check --rate 10000; test \$? = 2'
  step default_scenario .venv/bin/python run_scenario.py bigraph_allreduce --record
  step congestion .venv/bin/python run_scenario.py congestion --record
  step ecmp_collisions .venv/bin/python run_scenario.py ecmp_collisions --seed 1101 --record
else
  step fabric_check ./setup.sh run fabric_check
  step default_scenario ./setup.sh run
  step fabric_check_delay ./setup.sh run fabric_check --delay 5 --rate 5
  if [ $CAPACITY = 1 ]; then
    step forwarding_capacity .venv/bin/python -m bench.forwarding_capacity --patterns bigraph_2_8_16_flows \
      --rates 10,20,40 --duration 5
  fi
  step datapath_tests .venv/bin/python -m pytest -q -p no:cacheprovider \
    tests/emulation/test_cleanup.py::test_ctrl_c_mid_run_leaves_nothing \
    tests/emulation/test_cleanup.py::test_killed_run_is_swept_by_cleanup \
    tests/emulation/test_fabric.py::test_a_shared_switch_queue_fills_to_its_limit_and_drops_there
fi
touch /root/vm-check.done
sync
systemctl poweroff || echo o > /proc/sysrq-trigger
EOF
chmod +x "$MNT/root/vm-check-job.sh"
vm_job /root/vm-check-job.sh "ai-testbed VM check" oneshot
umount "$MNT"

accel=$(vm_accel)
echo "== booting the guest (qemu, accel=${accel%% *}, 2 CPUs, 4 GiB); its console: $VM_DIR/console.log"
t0=$SECONDS
# shellcheck disable=SC2086
qemu-system-x86_64 -machine q35,accel=$accel -smp 2 -m 4096 -display none -monitor none -no-reboot \
  -serial "file:$VM_DIR/console.log" -nic none \
  -kernel "$VM_DIR/vmlinuz" -initrd "$VM_DIR/initrd.img" -append "root=/dev/vda rw console=ttyS0" \
  -drive "file=$VM_DIR/disk.raw,format=raw,if=virtio" &
QEMU_PID=$!
while kill -0 "$QEMU_PID" 2>/dev/null; do
  sleep 30
  echo "   $((SECONDS - t0)) s: $(grep -a '^== ' "$VM_DIR/console.log" | tail -1)"
  if [ $((SECONDS - t0)) -gt "${VM_TIMEOUT:-5400}" ]; then
    echo "the guest ran out of time (${VM_TIMEOUT:-5400} s): stopping it" >&2
    kill "$QEMU_PID"
  fi
done
wait "$QEMU_PID" || true
QEMU_PID=""
echo "== guest ran $((SECONDS - t0)) s"

mount -o loop,ro,noload "$VM_DIR/disk.raw" "$MNT"     # noload: a guest stopped mid-run leaves a journal
out="$PROJECT/results/vm-check-$(date +%Y%m%d-%H%M%S)"
mkdir -p "$out"
cp "$MNT/root/vm-check.log" "$out/" 2>/dev/null || true
[ -d "$MNT/root/testbed/results" ] && cp -r "$MNT/root/testbed/results/." "$out/"
if [ $KEEP = 1 ]; then       # the guest's kept calibration and records, beside this machine's
  for kept in "$MNT"/root/testbed/docs/calibrations/*.json "$MNT"/root/testbed/docs/records/*/*.json; do
    here=$PROJECT/${kept#"$MNT"/root/testbed/}
    [ -e "$here" ] || { mkdir -p "$(dirname "$here")"; cp "$kept" "$here"; echo "kept: ${here#"$PROJECT"/}"; }
  done
fi
done=0; [ -f "$MNT/root/vm-check.done" ] && done=1
umount "$MNT"
grep -a '^== ' "$out/vm-check.log" 2>/dev/null || true
echo "results: $out"
if [ $done = 0 ] || grep -aq '^== .*: exit [1-9]' "$out/vm-check.log"; then
  echo "VM check FAILED" >&2
  exit 1
fi
echo "VM check passed"
