# The Debian 12 guest image of the lab's VM checks (lab/vm-check.sh, lab/machines-check.sh), sourced
# by them: debootstrap with the stock linux-image-amd64 kernel into $VM_DIR/disk.raw, built once and
# reused; the Python packages as wheels downloaded here, so that the guest reaches nothing outside
# this machine; the project copied in as a clean clone has it.

# The packages setup.sh installs, and what a bootable guest needs.
GUEST_DEBS="linux-image-amd64,systemd-sysv,udev,kmod,sudo,python3,python3-venv,python3-wheel,python3-yaml,mininet,\
openvswitch-switch,libtcmalloc-minimal4,iperf3,libiperf0,ethtool,iproute2,iputils-ping,tcpdump,socat,nftables,git,clang,libbpf-dev,bpftool"

vm_tools() {
  local tools="" p
  for p in debootstrap qemu-system-x86 qemu-utils e2fsprogs; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || tools="$tools $p"
  done
  if [ -n "$tools" ]; then
    echo "== installing$tools"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $tools >/dev/null
  fi
}

vm_image() {
  [ -f "$VM_DIR/disk.raw" ] && return
  echo "== building a Debian 12 image with debootstrap (about 2 minutes)"
  local t0=$SECONDS
  rm -f "$VM_DIR/disk.tmp"
  truncate -s 8G "$VM_DIR/disk.tmp"
  mkfs.ext4 -q -F -L root "$VM_DIR/disk.tmp"     # no partition table: qemu boots the kernel directly
  mount -o loop "$VM_DIR/disk.tmp" "$MNT"
  debootstrap --include="$GUEST_DEBS" bookworm "$MNT" "$MIRROR" > "$VM_DIR/debootstrap.log"
  echo "/dev/vda / ext4 defaults 0 1" > "$MNT/etc/fstab"
  echo ai-testbed-vm > "$MNT/etc/hostname"
  cp "$MNT"/boot/vmlinuz-* "$VM_DIR/vmlinuz"
  cp "$MNT"/boot/initrd.img-* "$VM_DIR/initrd.img"
  umount "$MNT"
  mv "$VM_DIR/disk.tmp" "$VM_DIR/disk.raw"
  echo "   built in $((SECONDS - t0)) s"
}

vm_wheels() {
  echo "== downloading the Python packages for the guest (Debian 12's Python 3.11)"
  WHEELS="$VM_DIR/wheels"
  mkdir -p "$WHEELS"
  grep -v '^#' requirements.txt | grep -v '^iperf3' > "$VM_DIR/requirements-binary.txt"
  .venv/bin/pip download -q --disable-pip-version-check --only-binary=:all: --python-version 3.11 \
    --platform manylinux2014_x86_64 --platform manylinux_2_28_x86_64 --platform any \
    -d "$WHEELS" -r "$VM_DIR/requirements-binary.txt" 2>&1 | grep -v WARNING || true
  .venv/bin/pip wheel -q --disable-pip-version-check --no-deps -w "$WHEELS" "$(grep '^iperf3' requirements.txt)" \
    2>&1 | grep -v WARNING || true
}

# The project's files into the mounted image's /root/testbed (with_git=1: its .git too, so that the
# guest knows the commit), and the wheels into /root/wheels.
vm_copy_project() {
  local with_git=${1:-0}
  rm -rf "$MNT/root/testbed" "$MNT/root/wheels"
  mkdir -p "$MNT/root/testbed"
  git ls-files -z --cached --others --exclude-standard | tar -c --null -T - | tar -x -C "$MNT/root/testbed"
  [ "$with_git" = 1 ] && cp -a .git "$MNT/root/testbed/.git"
  cp -r "$WHEELS" "$MNT/root/wheels"
}

vm_accel() {
  if grep -qwE 'vmx|svm' /proc/cpuinfo && [ -w /dev/kvm ]; then
    echo "kvm -cpu host"
  else
    echo "tcg -cpu max"      # no hardware virtualisation that boots a stock kernel: emulate the CPU
  fi
}

# The guest's one job at boot: the mounted image's unit ai-testbed-job.service runs SCRIPT (a path in
# the guest) once Open vSwitch is up; it replaces the job of an earlier check.
#   vm_job SCRIPT DESCRIPTION [SERVICE_TYPE]
vm_job() {
  local units="$MNT/etc/systemd/system"
  cat > "$units/ai-testbed-job.service" <<EOF
[Unit]
Description=$2
After=multi-user.target openvswitch-switch.service
[Service]
Type=${3:-simple}
ExecStart=$1
TimeoutStartSec=infinity
[Install]
WantedBy=multi-user.target
EOF
  ln -sf /etc/systemd/system/ai-testbed-job.service "$units/multi-user.target.wants/ai-testbed-job.service"
  # The console is the job's: a login prompt on it would hang up the job's writes to it.
  ln -sf /dev/null "$units/serial-getty@ttyS0.service"
}

