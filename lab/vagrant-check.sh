#!/usr/bin/env bash
# Runs the lab as a student does, with this repository's Vagrantfile: `vagrant up --provider=libvirt`
# (its provisioning is setup.sh), then `vagrant ssh -c 'cd /vagrant && sudo ./setup.sh run'`, each
# timed, then `vagrant destroy`. For a machine that cannot download Vagrant's boxes, it first makes
# the box the Vagrantfile names (debian/bookworm64) from Debian's packages: debootstrap of Debian 12
# with its stock kernel, sshd and the vagrant user, as the official box has them, and nothing of the
# testbed (setup.sh installs that, as it does in the official box). That box boots its kernel
# directly (libvirt's kernel/initrd), where the official one boots GRUB from a partitioned disk. It
# lives in its own VAGRANT_HOME, so a real debian/bookworm64 box is never shadowed.
#
#   sudo lab/vagrant-check.sh          # make the box where there is none, then run the lab
#   sudo lab/vagrant-check.sh --box    # only make the box (and add it to $BOX_DIR's Vagrant)
#
# Without hardware virtualisation qemu emulates the CPU (AI_TESTBED_LIBVIRT_DRIVER=qemu, TCG): slow.
# The box and Vagrant's state are kept in $BOX_DIR (default /var/tmp/ai-testbed-vagrant); remove it to
# rebuild. Extra CA certificates of this machine (/usr/local/share/ca-certificates) and pip's
# certificate setting go into the box, so that a guest behind the same egress proxy reaches PyPI.
set -euo pipefail
cd "$(dirname "$0")/.."
PROJECT=$PWD
BOX_DIR=${BOX_DIR:-/var/tmp/ai-testbed-vagrant}
MIRROR=${MIRROR:-http://deb.debian.org/debian}
export VAGRANT_HOME=$BOX_DIR/vagrant.d
BOX_DEBS="linux-image-amd64,systemd-sysv,udev,kmod,sudo,openssh-server,rsync,ca-certificates,iproute2,ifupdown,isc-dhcp-client"
case "${1:-}" in
  "" | --box) ;;
  *) echo "usage: sudo lab/vagrant-check.sh [--box]" >&2; exit 2 ;;
esac
[ "$(id -u)" -eq 0 ] || { echo "vagrant-check.sh needs root: run it as 'sudo lab/vagrant-check.sh'" >&2; exit 2; }
if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
  echo "vagrant-check.sh runs what is committed (a clone of HEAD): commit your changes first" >&2; exit 2
fi

missing=""
for p in vagrant vagrant-libvirt libvirt-daemon-system qemu-system-x86 qemu-utils debootstrap dnsmasq-base rsync; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
  echo "== installing$missing"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $missing >/dev/null
fi

mkdir -p "$BOX_DIR"
MNT=$BOX_DIR/mnt
WORK=$BOX_DIR/project
STARTED=()          # the libvirt daemons this script started, stopped by their pid files at exit
cleanup() {
  mountpoint -q "$MNT" && umount "$MNT" || true
  if [ -f "$WORK/Vagrantfile" ]; then (cd "$WORK" && vagrant destroy -f >/dev/null 2>&1) || true; fi
  for daemon in "${STARTED[@]}"; do
    [ -f "/run/$daemon.pid" ] && kill "$(cat "/run/$daemon.pid")" 2>/dev/null || true
  done
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# libvirt's daemons: systemd starts them on a normal machine; started here where nothing does.
if ! virsh -c qemu:///system version >/dev/null 2>&1; then
  echo "== starting libvirtd and virtlogd"
  if ! pgrep -x virtlogd >/dev/null; then virtlogd -d && STARTED+=(virtlogd); fi
  libvirtd -d && STARTED=(libvirtd "${STARTED[@]}")
  for _ in $(seq 30); do virsh -c qemu:///system version >/dev/null 2>&1 && break; sleep 1; done
fi

box="$BOX_DIR/debian-bookworm64.box"
if [ ! -f "$box" ]; then
  echo "== making the box debian/bookworm64 (debootstrap, about 3 minutes)"
  t0=$SECONDS
  mkdir -p "$MNT" "$BOX_DIR/box"
  rm -f "$BOX_DIR/box.raw"
  truncate -s 20G "$BOX_DIR/box.raw"
  mkfs.ext4 -q -F -L root "$BOX_DIR/box.raw"
  mount -o loop "$BOX_DIR/box.raw" "$MNT"
  debootstrap --include="$BOX_DEBS" bookworm "$MNT" "$MIRROR" > "$BOX_DIR/debootstrap.log"
  echo "/dev/vda / ext4 defaults 0 1" > "$MNT/etc/fstab"
  echo "deb $MIRROR bookworm main" > "$MNT/etc/apt/sources.list"
  echo "deb $MIRROR bookworm-updates main" >> "$MNT/etc/apt/sources.list"
  echo bookworm > "$MNT/etc/hostname"
  printf 'auto lo\niface lo inet loopback\nallow-hotplug eth0\niface eth0 inet dhcp\n' > "$MNT/etc/network/interfaces"
  chroot "$MNT" useradd -m -s /bin/bash vagrant
  echo vagrant:vagrant | chroot "$MNT" chpasswd
  echo "vagrant ALL=(ALL) NOPASSWD: ALL" > "$MNT/etc/sudoers.d/vagrant"
  install -d -m 700 -o 1000 -g 1000 "$MNT/home/vagrant/.ssh"
  install -m 600 -o 1000 -g 1000 /usr/share/rubygems-integration/all/gems/vagrant-*/keys/vagrant.pub \
    "$MNT/home/vagrant/.ssh/authorized_keys"
  echo "UseDNS no" > "$MNT/etc/ssh/sshd_config.d/vagrant.conf"
  if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then    # this machine's egress proxy
    cp /usr/local/share/ca-certificates/*.crt "$MNT/usr/local/share/ca-certificates/"
    chroot "$MNT" update-ca-certificates >/dev/null
    printf '[global]\ncert = /etc/ssl/certs/ca-certificates.crt\n' > "$MNT/etc/pip.conf"
  fi
  cp "$MNT"/boot/vmlinuz-* "$BOX_DIR/box/vmlinuz"
  cp "$MNT"/boot/initrd.img-* "$BOX_DIR/box/initrd.img"
  umount "$MNT"
  qemu-img convert -O qcow2 "$BOX_DIR/box.raw" "$BOX_DIR/box/box.img"
  rm -f "$BOX_DIR/box.raw"
  echo '{"provider": "libvirt", "format": "qcow2", "virtual_size": 20}' > "$BOX_DIR/box/metadata.json"
  cat > "$BOX_DIR/box/Vagrantfile" <<'EOF'
# The box's own settings, merged under the project's Vagrantfile: boot the box's kernel directly
# (the disk has no partition table, so no boot loader), with the console on the serial port.
Vagrant.configure("2") do |config|
  config.vm.provider :libvirt do |lv|
    lv.kernel = File.join(File.dirname(__FILE__), "vmlinuz")
    lv.initrd = File.join(File.dirname(__FILE__), "initrd.img")
    lv.cmd_line = "root=/dev/vda rw console=ttyS0 net.ifnames=0"
    lv.disk_bus = "virtio"
  end
end
EOF
  tar -C "$BOX_DIR/box" -czf "$box.tmp" metadata.json Vagrantfile box.img vmlinuz initrd.img
  mv "$box.tmp" "$box"
  rm -rf "$BOX_DIR/box"
  echo "   made in $((SECONDS - t0)) s"
fi
vagrant box list 2>/dev/null | grep -q "^debian/bookworm64 " || vagrant box add -f --name debian/bookworm64 "$box"
[ "${1:-}" = --box ] && { echo "box ready: VAGRANT_HOME=$VAGRANT_HOME vagrant box list"; exit 0; }
# vagrant-libvirt puts the box's disk in libvirt's storage pool "default"; a new libvirt has none.
if ! virsh -c qemu:///system pool-info default >/dev/null 2>&1; then
  mkdir -p /var/lib/libvirt/images
  virsh -c qemu:///system pool-define-as default dir --target /var/lib/libvirt/images >/dev/null
  virsh -c qemu:///system pool-start default >/dev/null
fi

echo "== a clone of the repository at $(git rev-parse --short HEAD), as a student has it"
rm -rf "$WORK"
git clone -q "$PROJECT" "$WORK"
cd "$WORK"
out="$PROJECT/results/vagrant-check-$(date +%Y%m%d-%H%M%S)"
mkdir -p "$out"
status=0
step() {
  local name=$1; shift
  echo "== $name: $*"
  local t0=$SECONDS rc=0
  "$@" > >(tee "$out/$name.log") 2>&1 || rc=$?
  echo "== $name: exit $rc in $((SECONDS - t0)) s"
  [ $rc = 0 ] || status=1
  return $rc
}
export AI_TESTBED_LIBVIRT_DRIVER=${AI_TESTBED_LIBVIRT_DRIVER:-$(grep -qwE 'vmx|svm' /proc/cpuinfo && echo kvm || echo qemu)}
if step vagrant_up vagrant up --provider=libvirt; then
  step setup_run vagrant ssh -c 'cd /vagrant && sudo ./setup.sh run' || true
  vagrant ssh -c 'cd /vagrant && sudo tar -cz results' > "$out/results.tar.gz" 2>/dev/null || true
fi
step vagrant_destroy vagrant destroy -f || true
echo "results: $out"
[ $status = 0 ] && echo "Vagrant check passed" || { echo "Vagrant check FAILED" >&2; exit 1; }
