#!/usr/bin/env bash
# Builds the tiny test guest from Debian's packages only: the Debian kernel (extracted from
# its .deb, never installed on the host) and a busybox initramfs whose init mounts
# proc/sys/dev, loads a few modules (ACPI button, evdev, virtio, ext4), prints the boot
# marker on the serial console, powers off on the ACPI power button (busybox acpid) and
# keeps a shell on ttyS0. Also a small qcow2 disk with an ext4 filesystem the init mounts
# when a virtio disk is attached (it prints the disk's marker file).
#
# And boot.qcow2: a bootable disk (FAT, syslinux from Debian's packages, installed with
# mtools: no loop mount, no root) that boots the same kernel and initramfs.
#
# The initramfs also runs Debian's real QEMU guest agent (qemu-ga from the
# qemu-guest-agent .deb, extracted, never installed on the host, with the shared
# libraries it links copied from the host) on the virtio-serial port
# org.qemu.guest_agent.0, started in the background after the boot marker. The guest's
# /etc/os-release (also written next to the artifacts as `os-release`, so tests compare
# against it) and hostname are what guest-get-osinfo and guest-get-host-name answer.
#
# Output: $KUBEVIRT_TS_CACHE/guest/<kernel-version>-r<RECIPE>/{vmlinuz,initrd.img,
# disk.qcow2,boot.qcow2,os-release} and a `current` symlink to that directory. The cache
# key is the kernel version plus the recipe revision: bumping RECIPE builds a new
# directory next to the old one (guests booted from the old one keep their files).
# Idempotent: exits at once when the artifacts exist.
set -euo pipefail

CACHE="${KUBEVIRT_TS_CACHE:-/var/cache/kubevirt-ts}"
MARKER="KUBEVIRT-TS-GUEST-BOOTED"
DISK_MARKER="KUBEVIRT-TS-DISK-MOUNTED"
# Modules the init loads at boot, in this order (dependencies are resolved and loaded
# first); the ext4 stack is loaded only when a disk is attached, after the boot marker.
MODULES=(button evdev virtio_pci virtio_blk virtio_console virtio_net virtio_mem)
DISK_MODULES=(crc32c_generic ext4 isofs)
# In the initramfs but loaded only on demand (/etc/load-cdrom): the SATA controller (AHCI)
# and the SCSI CD-ROM driver, for the CD-ROM inject/eject tests (a drive at boot would
# slow every guest's boot by the AHCI port probe).
CDROM_MODULES=(ahci sr_mod)
# Bump when the recipe changes so cached artifacts of an older recipe are rebuilt
# (it is part of the cache directory's name). 6: qemu-ga in the initramfs. 7: networking
# (udhcpc on eth0, a TCP echo server, kvts.connect= client; see /etc/start-network).
# 8: an SSH server (Debian's dropbear, keys from a cloud-init NoCloud disk; /etc/start-ssh).
# 9: SSH keys also from cloud-init meta-data (NoCloud `public-keys`, ConfigDrive
# `public_keys`: where accessCredentials put them) and from a ConfigDrive's user_data.
# 10: virtio_mem loaded at boot, hot-plugged memory blocks onlined (memory hotplug).
# 11: ahci and sr_mod in the initramfs, loaded by /etc/load-cdrom (CD-ROM media tests).
RECIPE=11
# What the guest's /etc/os-release says (guest-get-osinfo reads it).
OS_ID="kubevirt-ts-guest"
OS_NAME="kubevirt-ts tiny guest"
OS_VERSION_ID="$RECIPE"
GUEST_HOSTNAME="kubevirt-ts-guest"
log() { printf '[guest-build] %s\n' "$*" >&2; }

# The kernel package: linux-image-amd64's dependency (e.g. linux-image-6.1.0-57-amd64),
# unless pinned with KERNEL_PACKAGE.
resolve_kernel() {
  apt-cache depends linux-image-amd64 2>/dev/null |
    sed -n 's/^ *Depends: \(linux-image-[0-9][^ ]*-amd64\)$/\1/p' | head -1
}
kpkg="${KERNEL_PACKAGE:-$(resolve_kernel)}"
if [ -z "$kpkg" ] && [ ! -e "$CACHE/guest/current/initrd.img" ] && [ "$(id -u)" = 0 ]; then
  # A fresh host without apt lists: fetch them once.
  apt-get update -qq >/dev/null 2>&1 || true
  kpkg="$(resolve_kernel)"
fi
if [ -z "$kpkg" ]; then
  # No apt metadata (fresh container): reuse the newest cached build if any.
  if [ -e "$CACHE/guest/current/initrd.img" ]; then
    log "apt metadata missing; using cached guest: $(readlink -f "$CACHE/guest/current")"
    exit 0
  fi
  log "cannot resolve linux-image-amd64 (run apt-get update)"; exit 1
fi
# The name becomes a cache path: accept only a kernel image package name.
if ! [[ "$kpkg" =~ ^linux-image-[0-9][A-Za-z0-9.+~-]*-amd64$ ]]; then
  log "KERNEL_PACKAGE must name a linux-image-<version>-amd64 package, got: $kpkg"; exit 1
fi
kver="${kpkg#linux-image-}"
key="$kver-r$RECIPE"
out="$CACHE/guest/$key"

if [ -f "$out/vmlinuz" ] && [ -f "$out/vmlinuz.bzImage" ] && [ -f "$out/initrd.img" ] && [ -f "$out/disk.qcow2" ] && [ -f "$out/boot.qcow2" ] &&
  [ -f "$out/os-release" ] && [ "$(cat "$out/recipe" 2>/dev/null)" = "$RECIPE" ]; then
  ln -sfn "$key" "$CACHE/guest/current"
  log "cached: $out/{vmlinuz,initrd.img,disk.qcow2,boot.qcow2}"
  exit 0
fi

for tool in cpio gzip xz qemu-img mkfs.ext4 dpkg-deb apt-get truncate ldd; do
  command -v "$tool" >/dev/null || { log "missing tool: $tool"; exit 1; }
done
busybox_bin="$(dpkg -L busybox-static 2>/dev/null | grep -E '/busybox$' | head -1 || true)"
[ -n "$busybox_bin" ] && [ -x "$busybox_bin" ] || { log "busybox-static is not installed"; exit 1; }

mkdir -p "$out"
exec 9>"$out/.build.lock"
flock 9
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

log "building the tiny guest into $out"
log "  downloads $kpkg, syslinux, syslinux-common, mtools, qemu-guest-agent, dropbear-bin, openssh-sftp-server (about 75 MB): about 1 min on a fresh host"
mkdir -p "$work/debs"
if ! (cd "$work/debs" && apt-get download "$kpkg" syslinux syslinux-common mtools qemu-guest-agent \
  dropbear-bin openssh-sftp-server >/dev/null 2>"$work/apt.log"); then
  cat "$work/apt.log" >&2
  rm -f "$out/.build.lock" && rmdir "$out" 2>/dev/null || true
  # Stale apt lists name a kernel the mirror no longer has: keep the guest we have.
  if [ -e "$CACHE/guest/current/initrd.img" ] && [ -e "$CACHE/guest/current/boot.qcow2" ]; then
    log "download failed; keeping the cached guest $(readlink -f "$CACHE/guest/current")"
    exit 0
  fi
  exit 1
fi
dpkg-deb -x "$work/debs/$kpkg"_*.deb "$work/kernel"
for deb in "$work"/debs/syslinux_*.deb "$work"/debs/syslinux-common_*.deb "$work"/debs/mtools_*.deb; do
  dpkg-deb -x "$deb" "$work/tools"
done
dpkg-deb -x "$work"/debs/qemu-guest-agent_*.deb "$work/qga"
dpkg-deb -x "$work"/debs/dropbear-bin_*.deb "$work/dropbear"
dpkg-deb -x "$work"/debs/openssh-sftp-server_*.deb "$work/sftp"
moddir="$work/kernel/lib/modules/$kver"

# --- initramfs tree ----------------------------------------------------------------------
root="$work/root"
mkdir -p "$root"/{bin,sbin,etc/acpi/PWRF,proc,sys,dev,tmp,run,mnt/disk,lib/modules,root}
cp "$busybox_bin" "$root/bin/busybox"
for applet in $("$root/bin/busybox" --list); do
  [ "$applet" = busybox ] || ln -sf busybox "$root/bin/$applet"
done
ln -sf ../bin/busybox "$root/sbin/init"

# Resolve module dependencies from each .ko's modinfo section (no depmod on the host) and
# write them in load order.
declare -A seen=()
order=()
find_ko() {
  local name="$1" alt="${1//_/-}"
  find "$moddir/kernel" \( -name "$name.ko" -o -name "$alt.ko" \) -print -quit
}
add_module() {
  local name="$1" ko deps dep
  [ -n "${seen[$name]:-}" ] && return 0
  seen[$name]=1
  ko="$(find_ko "$name")"
  [ -n "$ko" ] || { log "module $name not found in $kpkg"; exit 1; }
  deps="$(tr '\0' '\n' <"$ko" | sed -n 's/^depends=//p' | head -1)"
  for dep in ${deps//,/ }; do add_module "$dep"; done
  cp "$ko" "$root/lib/modules/"
  order+=("$(basename "$ko")")
}
for m in "${MODULES[@]}"; do add_module "$m"; done
printf '%s\n' "${order[@]}" >"$root/etc/modules.order"
boot_modules=${#order[@]}
for m in "${DISK_MODULES[@]}"; do add_module "$m"; done
printf '%s\n' "${order[@]:$boot_modules}" >"$root/etc/modules-disk.order"
disk_modules=${#order[@]}
for m in "${CDROM_MODULES[@]}"; do add_module "$m"; done
printf '%s\n' "${order[@]:$disk_modules}" >"$root/etc/modules-cdrom.order"
cat >"$root/etc/load-cdrom" <<'SH'
#!/bin/sh
# Loads the SATA (AHCI) and CD-ROM drivers: /dev/sr0 appears for a SATA cdrom drive.
cat /etc/modules-disk.order /etc/modules-cdrom.order | while read -r ko; do insmod "/lib/modules/$ko" 2>/dev/null; done
SH
chmod 755 "$root/etc/load-cdrom"

# acpid maps the power button (KEY_POWER) to PWRF and runs /etc/acpi/PWRF/00000080.
cat >"$root/etc/acpi/PWRF/00000080" <<'SH'
#!/bin/sh
echo "KUBEVIRT-TS-GUEST: ACPI power button, powering off" >/dev/console
sync
poweroff -f
SH
chmod 755 "$root/etc/acpi/PWRF/00000080"
# An empty action file would map no events at all: name the one we handle.
echo "PWRF PWRF/00000080" >"$root/etc/acpid.conf"

cat >"$root/etc/inittab" <<'TAB'
::sysinit:/etc/rc
ttyS0::respawn:-/bin/sh
::ctrlaltdel:/bin/poweroff -f
::shutdown:/bin/sync
TAB
cat >"$root/etc/profile" <<'SH'
export PATH=/bin:/sbin
export PS1='guest# '
SH
echo "root:x:0:0:root:/root:/bin/sh" >"$root/etc/passwd"
echo "root:x:0:" >"$root/etc/group"
echo "$GUEST_HOSTNAME" >"$root/etc/hostname"

# --- the QEMU guest agent and the SSH server ---------------------------------------------
# qemu-ga, dropbear (with dropbearkey) and OpenSSH's sftp-server (what scp speaks by
# default since OpenSSH 9) as Debian ships them, with the libraries they link (and their
# loader) copied from the host at the paths ldd resolves them to, so the loader finds
# them without a cache. The host has them when the packages' dependencies are installed
# (scripts/setup-host.sh installs dropbear-bin for that).
copy_libs() {
  local bin="$1" ldd_out lib
  ldd_out="$(ldd "$bin")"
  if grep -q 'not found' <<<"$ldd_out"; then
    log "$(basename "$bin") needs libraries this host lacks (install its package's dependencies):"
    grep 'not found' <<<"$ldd_out" >&2
    exit 1
  fi
  for lib in $(awk '/=> \//{print $3} /^[[:space:]]*\/[^ ]+/{print $1}' <<<"$ldd_out"); do
    mkdir -p "$root$(dirname "$lib")"
    cp -L "$lib" "$root$lib"
  done
}
mkdir -p "$root/usr/sbin" "$root/usr/bin" "$root/usr/lib" "$root/var/run" "$root/var/log" "$root/etc/dropbear"
cp "$work/qga/usr/sbin/qemu-ga" "$root/usr/sbin/qemu-ga"
cp "$work/dropbear/usr/sbin/dropbear" "$root/usr/sbin/dropbear"
cp "$work/dropbear/usr/bin/dropbearkey" "$root/usr/bin/dropbearkey"
# dropbear runs the sftp subsystem from /usr/lib/sftp-server (its compiled-in path).
cp "$work/sftp/usr/lib/openssh/sftp-server" "$root/usr/lib/sftp-server"
for bin in usr/sbin/qemu-ga usr/sbin/dropbear usr/bin/dropbearkey usr/lib/sftp-server; do
  copy_libs "$root/$bin"
done
echo /bin/sh >"$root/etc/shells"
cat >"$root/etc/os-release" <<OS
NAME="$OS_NAME"
ID=$OS_ID
VERSION_ID="$OS_VERSION_ID"
VERSION="$OS_VERSION_ID (recipe $RECIPE, busybox)"
PRETTY_NAME="$OS_NAME $OS_VERSION_ID"
OS
# What the agent does once the port is there. udev would make the by-name link under
# /dev/virtio-ports; this guest has no udev, so make it from sysfs.
cat >"$root/etc/start-qemu-ga" <<'SH'
#!/bin/sh
# Waits (up to ~5 s) for the guest-agent port, links it by name, runs qemu-ga on it.
for _ in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25; do
  for p in /sys/class/virtio-ports/vport*; do
    [ -f "$p/name" ] || continue
    n="$(cat "$p/name")"
    [ -n "$n" ] || continue
    mkdir -p /dev/virtio-ports
    ln -sf "../${p##*/}" "/dev/virtio-ports/$n"
  done
  if [ -e /dev/virtio-ports/org.qemu.guest_agent.0 ]; then
    exec /usr/sbin/qemu-ga -m virtio-serial -p /dev/virtio-ports/org.qemu.guest_agent.0 \
      -t /var/run -f /var/run/qemu-ga.pid -l /var/log/qemu-ga.log
  fi
  sleep 0.2
done
SH
chmod 755 "$root/etc/start-qemu-ga"

# Networking, when the guest has a NIC: DHCP on eth0 with busybox udhcpc (the lease is
# applied by /etc/udhcpc.script), the address printed on the console, a TCP echo server
# on port 8080 (busybox nc -ll -e cat), and with `kvts.connect=IP:PORT` on the kernel
# command line one 65536-byte send to that server, its outcome printed.
cat >"$root/etc/udhcpc.script" <<'SH'
#!/bin/sh
[ "$1" = bound ] || [ "$1" = renew ] || exit 0
ip addr flush dev "$interface"
ip addr add "$ip/$mask" dev "$interface"
[ -n "$mtu" ] && ip link set "$interface" mtu "$mtu"
[ -n "$router" ] && ip route replace default via "${router%% *}"
: >/etc/resolv.conf
for d in $dns; do echo "nameserver $d" >>/etc/resolv.conf; done
echo "KUBEVIRT-TS-GUEST-NET $interface=$ip/$mask router=${router:-none} mtu=${mtu:-none} dns=${dns:-none}" >/dev/console
SH
chmod 755 "$root/etc/udhcpc.script"
cat >"$root/etc/start-network" <<'SH'
#!/bin/sh
# Waits (up to ~5 s) for eth0 (virtio_net probes after the marker on a busy host).
i=0
while [ ! -e /sys/class/net/eth0 ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
[ -e /sys/class/net/eth0 ] || exit 0
ip link set eth0 up
if ! udhcpc -i eth0 -n -q -t 10 -T 1 -s /etc/udhcpc.script >/dev/null 2>&1; then
  echo "KUBEVIRT-TS-GUEST-NET eth0=none (no DHCP answer)" >/dev/console
  exit 0
fi
nc -ll -p 8080 -e /bin/cat </dev/null >/dev/null 2>&1 &
echo "KUBEVIRT-TS-GUEST-LISTENING tcp/8080 echo" >/dev/console
/etc/start-ssh </dev/null >/dev/null 2>&1 &
for arg in $(cat /proc/cmdline); do
  case "$arg" in
    kvts.connect=*)
      target="${arg#kvts.connect=}"
      host="${target%:*}"
      port="${target##*:}"
      got="$(dd if=/dev/zero bs=1024 count=64 2>/dev/null | nc -w 10 "$host" "$port" | wc -c)"
      echo "KUBEVIRT-TS-GUEST-SENT bytes=65536 to=$target reply_bytes=$got" >/dev/console
      ;;
  esac
done
SH
chmod 755 "$root/etc/start-network"
# SSH, once the guest has an address: root's authorized keys from a cloud-init disk (an
# ISO 9660 virtio disk): NoCloud's user-data `ssh_authorized_keys:` lists (top level or
# under users) and meta-data `public-keys`, or a ConfigDrive's openstack/latest/user_data
# and meta_data.json `public_keys` (what cloud-init reads; the meta-data keys are where
# KubeVirt's accessCredentials put them). Then a fresh ed25519 host key and dropbear on
# port 22 with password logins off. No cloud-init disk: no keys, dropbear still listens
# (and refuses everyone).
cat >"$root/etc/public-keys.awk" <<'AWK'
# Prints the SSH public keys of cloud-init meta-data, one per line (an entry holding
# several lines gives several keys, as cloud-init splits them).
# mode=yaml: NoCloud meta-data, `public-keys:` then indented `"N": "key"` (or `N: key`) lines.
# mode=json: ConfigDrive meta_data.json, its "public_keys": {"N": "key", ...} object.
function unjson(s,   out, i, c, n) {
  out = ""
  n = length(s)
  for (i = 1; i <= n; i++) {
    c = substr(s, i, 1)
    if (c == "\\" && i < n) {
      i++
      c = substr(s, i, 1)
      if (c == "n") c = "\n"
      else if (c == "t") c = "\t"
      else if (c == "r") c = ""
    }
    out = out c
  }
  return out
}
mode == "yaml" {
  if ($0 ~ /^public-keys:[[:space:]]*$/) { on = 1; next }
  if (on && $0 ~ /^[[:space:]]+[^[:space:]]/) {
    v = $0
    sub(/^[[:space:]]*("[^"]*"|[^:"]*):[[:space:]]*/, "", v)
    sub(/[[:space:]]*$/, "", v)
    if (v ~ /^".*"$/) v = unjson(substr(v, 2, length(v) - 2))
    if (v != "") print v
    next
  }
  on = 0
}
mode == "json" { doc = doc $0 "\n" }
END {
  if (mode != "json") exit
  p = index(doc, "\"public_keys\"")
  if (!p) exit
  rest = substr(doc, p + 13)
  b = index(rest, "{")
  if (!b) exit
  n = length(rest)
  instr = 0
  isval = 0
  for (i = b + 1; i <= n; i++) {
    c = substr(rest, i, 1)
    if (instr) {
      if (c == "\\") { cur = cur c substr(rest, i + 1, 1); i++; continue }
      if (c == "\"") {
        instr = 0
        if (isval && cur != "") print unjson(cur)
        isval = !isval
        continue
      }
      cur = cur c
      continue
    }
    if (c == "\"") { instr = 1; cur = ""; continue }
    if (c == "}") break
  }
}
AWK
cat >"$root/etc/start-ssh" <<'SH'
#!/bin/sh
i=0
while ! grep -q iso9660 /proc/filesystems && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
mkdir -p /mnt/cidata /root/.ssh
chmod 700 /root /root/.ssh
: >/root/.ssh/authorized_keys
chmod 600 /root/.ssh/authorized_keys
# user-data's ssh_authorized_keys: entries (top level or under users:).
user_keys() {
  awk '/^[[:space:]]*(-[[:space:]]+)?ssh_authorized_keys:/ { on = 1; next }
    on && /^[[:space:]]*-[[:space:]]/ {
      sub(/^[[:space:]]*-[[:space:]]*/, ""); gsub(/^["\047]|["\047][[:space:]]*$/, ""); print; next }
    { on = 0 }' "$1"
}
source=none
for dev in /dev/vd[a-z] /dev/sr[0-9]; do
  [ -b "$dev" ] || continue
  mount -t iso9660 -o ro "$dev" /mnt/cidata 2>/dev/null || continue
  if [ -f /mnt/cidata/meta-data ]; then
    [ -f /mnt/cidata/user-data ] && user_keys /mnt/cidata/user-data >>/root/.ssh/authorized_keys
    awk -v mode=yaml -f /etc/public-keys.awk /mnt/cidata/meta-data >>/root/.ssh/authorized_keys
    source=nocloud
  elif [ -f /mnt/cidata/openstack/latest/meta_data.json ]; then
    [ -f /mnt/cidata/openstack/latest/user_data ] && user_keys /mnt/cidata/openstack/latest/user_data >>/root/.ssh/authorized_keys
    awk -v mode=json -f /etc/public-keys.awk /mnt/cidata/openstack/latest/meta_data.json >>/root/.ssh/authorized_keys
    source=configdrive
  fi
  umount /mnt/cidata
  [ "$source" = none ] || break
done
keys=$(grep -c . /root/.ssh/authorized_keys)
/usr/bin/dropbearkey -t ed25519 -f /etc/dropbear/dropbear_ed25519_host_key >/var/log/dropbearkey.log 2>&1
# In the foreground of this background script, its log in a file: its death is reported.
/usr/sbin/dropbear -F -E -r /etc/dropbear/dropbear_ed25519_host_key -p 22 -s 2>/var/log/dropbear.log &
sleep 1
if kill -0 $! 2>/dev/null; then
  echo "KUBEVIRT-TS-GUEST-SSH dropbear tcp/22 authorized_keys=$keys source=$source" >/dev/console
else
  echo "KUBEVIRT-TS-GUEST-SSH failed: $(cat /var/log/dropbearkey.log /var/log/dropbear.log | tr '\n' ' ')" >/dev/console
fi
SH
chmod 755 "$root/etc/start-ssh"

cat >"$root/etc/rc" <<SH
#!/bin/sh
# Early userspace of the kubevirt-ts test guest.
export PATH=/bin:/sbin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mkdir -p /dev/pts && mount -t devpts devpts /dev/pts
hostname -F /etc/hostname
# Memory a virtio-mem device plugs later goes online at once (no udev here to do it).
echo online >/sys/devices/system/memory/auto_online_blocks 2>/dev/null
while read -r ko; do insmod "/lib/modules/\$ko" 2>/dev/null; done </etc/modules.order
# Power button -> poweroff. acpid reads every /dev/input/event* device.
acpid -l /dev/null -a /etc/acpid.conf -c /etc/acpi
ip link set lo up
echo "$MARKER kernel=\$(uname -r) uptime=\$(cut -d' ' -f1 /proc/uptime)" >/dev/console
# The guest agent and the network, in the background, after the marker: they never delay the boot.
/etc/start-qemu-ga </dev/null >/dev/null 2>&1 &
/etc/start-network </dev/null >/dev/null 2>&1 &
# A virtio disk with the project's ext4 filesystem: mount it and show its marker.
if [ -b /dev/vda ]; then
  while read -r ko; do insmod "/lib/modules/\$ko" 2>/dev/null; done </etc/modules-disk.order
  if mount -t ext4 -o ro /dev/vda /mnt/disk 2>/dev/null && [ -f /mnt/disk/marker ]; then
    echo "$DISK_MARKER \$(cat /mnt/disk/marker)" >/dev/console
  fi
fi
SH
chmod 755 "$root/etc/rc"
# The kernel runs /init from the initramfs; busybox init then reads /etc/inittab.
ln -sf bin/busybox "$root/init"

log "packing initramfs (${#order[@]} modules: ${order[*]})"
(cd "$root" && find . -print0 | sort -z | cpio --null -o -H newc --quiet --owner=0:0 | gzip -9n) >"$out/initrd.img.tmp"
cp "$work/kernel/boot/vmlinuz-$kver" "$out/vmlinuz.bzImage.tmp"
# Under software emulation (TCG) most of a boot went into decompressing the XZ-packed
# bzImage: 20-60 s of a 25-75 s boot on this loaded host. The kernel inside is an ELF
# with a PVH entry note (CONFIG_PVH), which QEMU boots directly with no decompression
# and no real-mode setup. So `vmlinuz` is that uncompressed ELF, unpacked from Debian's
# bzImage (the XZ stream after its setup code); `vmlinuz.bzImage` keeps the original
# (for boot loaders and EFI). If unpacking fails, `vmlinuz` is the bzImage.
xz_offset="$(LC_ALL=C grep -obUaP '\xfd7zXZ\x00' "$out/vmlinuz.bzImage.tmp" | head -1 | cut -d: -f1 || true)"
if [ -n "$xz_offset" ]; then
  # xz stops at the end of the stream and complains about the bytes after it.
  tail -c +$((xz_offset + 1)) "$out/vmlinuz.bzImage.tmp" | xz -dc >"$work/vmlinux" 2>/dev/null || true
fi
if [ -s "$work/vmlinux" ] && [ "$(head -c 4 "$work/vmlinux" | od -An -c | tr -d ' ')" = '177ELF' ]; then
  mv "$work/vmlinux" "$out/vmlinuz.tmp"
  log "vmlinuz: uncompressed PVH-bootable ELF ($(stat -c %s "$out/vmlinuz.tmp") bytes)"
else
  log "could not unpack the bzImage; vmlinuz is the compressed bzImage"
  cp "$out/vmlinuz.bzImage.tmp" "$out/vmlinuz.tmp"
fi

# --- disk image --------------------------------------------------------------------------
disk="$work/disk"
mkdir -p "$disk"
echo "$kver" >"$disk/marker"
truncate -s 64M "$work/disk.raw"
mkfs.ext4 -q -F -L kubevirt-ts -d "$disk" "$work/disk.raw"
qemu-img convert -q -f raw -O qcow2 "$work/disk.raw" "$out/disk.qcow2.tmp"

# --- bootable disk -----------------------------------------------------------------------
# A 32 MiB FAT "superfloppy" (no partition table: the syslinux boot sector is sector 0,
# which SeaBIOS boots), formatted and filled with mtools, made bootable by syslinux's
# mtools installer. Both come from the extracted .debs, found on PATH.
boot="$work/boot.raw"
truncate -s 32M "$boot"
(
  export PATH="$work/tools/usr/bin:$PATH" MTOOLS_SKIP_CHECK=1
  mformat -i "$boot" -h 64 -s 32 -T 65536 -v KVTSBOOT ::
  syslinux --install "$boot"
  printf 'DEFAULT linux\nPROMPT 0\nTIMEOUT 0\nLABEL linux\n  KERNEL vmlinuz\n  INITRD initrd.img\n  APPEND %s\n' \
    "console=ttyS0 quiet panic=-1" >"$work/syslinux.cfg"
  mcopy -i "$boot" "$out/vmlinuz.bzImage.tmp" ::/vmlinuz
  mcopy -i "$boot" "$out/initrd.img.tmp" ::/initrd.img
  mcopy -i "$boot" "$work/syslinux.cfg" ::/syslinux.cfg
)
qemu-img convert -q -f raw -O qcow2 "$boot" "$out/boot.qcow2.tmp"

chmod 644 "$out"/*.tmp
mv "$out/vmlinuz.bzImage.tmp" "$out/vmlinuz.bzImage"
mv "$out/vmlinuz.tmp" "$out/vmlinuz"
mv "$out/initrd.img.tmp" "$out/initrd.img"
mv "$out/disk.qcow2.tmp" "$out/disk.qcow2"
mv "$out/boot.qcow2.tmp" "$out/boot.qcow2"
cp "$root/etc/os-release" "$out/os-release.tmp" && chmod 644 "$out/os-release.tmp"
mv "$out/os-release.tmp" "$out/os-release"
echo "$kver" >"$out/kernel-version"
echo "$RECIPE" >"$out/recipe"
ln -sfn "$key" "$CACHE/guest/current"
log "built guest for kernel $kver: $out/{vmlinuz,initrd.img,disk.qcow2,boot.qcow2}"
