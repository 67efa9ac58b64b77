#!/usr/bin/env bash
# Proves --machines on two virtual machines: builds the lab's Debian 12 guest image (lab/vm-image.sh),
# sets the project up in it once ('./setup.sh machine'), then boots two guests from that image (qemu,
# KVM where the CPU offers it, TCG otherwise), each with a tap on a bridge here (the underlay, MTU
# 9100) and a Dask worker named vm1 or vm2 that attaches to a Dask scheduler here. This machine is
# the head: it runs fabric_check and a small bigraph_allreduce with --machines, one slot per guest.
# Everything it prints goes to results/machines-check-<time>/.
#
#   sudo lab/machines-check.sh
#
# The guests reach nothing but this machine's bridge. $VM_DIR as lab/vm-check.sh (the image is shared).
set -euo pipefail
cd "$(dirname "$0")/.."
PROJECT=$PWD
. lab/vm-image.sh
VM_DIR=${VM_DIR:-/var/tmp/ai-testbed-vm}
MIRROR=${MIRROR:-http://deb.debian.org/debian}
TOPOLOGY=${TOPOLOGY:-bigraph:2,4}
RATE=${RATE:-2}
NET=10.253.9
BRIDGE=tbvmbr
PORT=8786
[ "$(id -u)" -eq 0 ] || { echo "machines-check.sh needs root: run it as 'sudo lab/machines-check.sh'" >&2; exit 2; }
[ -x .venv/bin/pip ] || { echo "run 'sudo ./setup.sh' first" >&2; exit 2; }

mkdir -p "$VM_DIR"
MNT="$VM_DIR/mnt"
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  ip link del tbvm1 2>/dev/null || true
  ip link del tbvm2 2>/dev/null || true
  ip link del "$BRIDGE" 2>/dev/null || true
  mountpoint -q "$MNT" && umount "$MNT" || true
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
mkdir -p "$MNT"
out="$PROJECT/results/machines-check-$(date +%Y%m%d-%H%M%S)"
mkdir -p "$out"

vm_tools
vm_image
vm_wheels

echo "== copying the project in (with its .git: the preflight compares commits)"
mount -o loop "$VM_DIR/disk.raw" "$MNT"
rm -f "$MNT/root/machines-setup.done"
vm_copy_project 1
cat > "$MNT/root/machines-job.sh" <<'EOF'
#!/bin/bash
# setup: set the project up and power off. serve: bring the underlay up and run the Dask worker.
exec > /dev/ttyS0 2>&1
arg() { tr ' ' '\n' < /proc/cmdline | sed -n "s/^tb\.$1=//p"; }
cd /root/testbed
if [ "$(arg phase)" = setup ]; then
  export PIP_NO_INDEX=1 PIP_FIND_LINKS=/root/wheels
  ./setup.sh machine && touch /root/machines-setup.done
  sync
  systemctl poweroff || echo o > /proc/sysrq-trigger
  exit
fi
ip link set eth0 mtu 9100 up
ip addr add "$(arg ip)/24" dev eth0
echo "== $(arg name) at $(arg ip): worker for $(arg scheduler)"
exec .venv/bin/dask worker "$(arg scheduler)" --name "$(arg name)" --nthreads 4 --no-nanny --no-dashboard \
  --death-timeout 120
EOF
chmod +x "$MNT/root/machines-job.sh"
vm_job /root/machines-job.sh "ai-testbed machines check"
umount "$MNT"

accel=$(vm_accel)
boot() {   # boot NAME MEMORY_MIB CMDLINE QEMU_ARGS...
  local name=$1 mem=$2 cmdline=$3; shift 3
  # shellcheck disable=SC2086
  qemu-system-x86_64 -machine q35,accel=$accel -smp 2 -m "$mem" -display none -monitor none -no-reboot \
    -serial "file:$out/console-$name.log" -kernel "$VM_DIR/vmlinuz" -initrd "$VM_DIR/initrd.img" \
    -append "root=/dev/vda rw console=ttyS0 net.ifnames=0 $cmdline" "$@" &
  PIDS+=($!)
}

echo "== setting the project up in the guest (accel=${accel%% *}; its console: $out/console-setup.log)"
t0=$SECONDS
boot setup 4096 "tb.phase=setup" -nic none -drive "file=$VM_DIR/disk.raw,format=raw,if=virtio"
wait "${PIDS[-1]}" || true
PIDS=()
mount -o loop,ro "$VM_DIR/disk.raw" "$MNT"
done=0; [ -f "$MNT/root/machines-setup.done" ] && done=1
umount "$MNT"
[ $done = 1 ] || { echo "the guest's setup failed: see $out/console-setup.log" >&2; exit 1; }
echo "   set up in $((SECONDS - t0)) s"

echo "== the underlay: bridge $BRIDGE ($NET.254/24, MTU 9100), a tap per guest; a Dask scheduler on it"
ip link add "$BRIDGE" mtu 9100 type bridge
ip addr add "$NET.254/24" dev "$BRIDGE"
ip link set "$BRIDGE" up
for n in 1 2; do
  ip tuntap add dev "tbvm$n" mode tap
  ip link set "tbvm$n" mtu 9100 master "$BRIDGE" up
done
.venv/bin/dask scheduler --host "$NET.254" --port $PORT --no-dashboard > "$out/scheduler.log" 2>&1 &
PIDS+=($!)

echo "== booting vm1 and vm2 from the image (copy-on-write: the image stays as set up)"
t0=$SECONDS
for n in 1 2; do
  boot "vm$n" 3072 "tb.phase=serve tb.name=vm$n tb.ip=$NET.$n tb.scheduler=tcp://$NET.254:$PORT" \
    -snapshot -drive "file=$VM_DIR/disk.raw,format=raw,if=virtio" \
    -netdev "tap,id=u$n,ifname=tbvm$n,script=no,downscript=no" \
    -device "virtio-net-pci,netdev=u$n,host_mtu=9100,mac=52:54:00:00:09:0$n"
done
cat > "$out/machines.toml" <<EOF
head = "$NET.254"
scheduler = "tcp://$NET.254:$PORT"

[[machine]]
name = "vm1"
underlay = "$NET.1"
slots = 1

[[machine]]
name = "vm2"
underlay = "$NET.2"
slots = 1
EOF
.venv/bin/python - "$NET.254:$PORT" <<'EOF'
import sys, time
from distributed import Client
client, deadline = Client(f"tcp://{sys.argv[1]}", timeout="60s"), time.monotonic() + 1800
while {w["name"] for w in client.scheduler_info(n_workers=-1)["workers"].values()} < {"vm1", "vm2"}:
    if time.monotonic() > deadline:
        sys.exit("the guests' workers did not join within 30 minutes")
    time.sleep(5)
client.close()
EOF
echo "   both workers joined $((SECONDS - t0)) s after boot"

status=0
run() {
  echo "== run_scenario.py $*" | tee -a "$out/head.log"
  local t0=$SECONDS rc=0
  .venv/bin/python run_scenario.py "$@" --machines "$out/machines.toml" 2>&1 | tee -a "$out/head.log" || rc=$?
  echo "== exit $rc in $((SECONDS - t0)) s" | tee -a "$out/head.log"
  [ "$rc" = 0 ] || status=1
}
run fabric_check --topology "$TOPOLOGY" --rate "$RATE" --results "$out/fabric_check"
run bigraph_allreduce --topology "$TOPOLOGY" --rate "$RATE" --algorithms ring,hdrm --min-bytes 16384 \
  --max-bytes 262144 --iters 2 --results "$out/bigraph_allreduce"
echo "results: $out"
[ $status = 0 ] && echo "machines check passed" || { echo "machines check FAILED" >&2; exit 1; }
