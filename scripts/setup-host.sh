#!/usr/bin/env bash
# Prepares this Debian 12 host for kubevirt-ts: Debian packages, a running libvirtd,
# the tiny test guest and (when Go is present) the Kubernetes control-plane binaries.
# Idempotent: every step checks before it acts, and heavy builds are cached outside
# the clone in $KUBEVIRT_TS_CACHE (default /var/cache/kubevirt-ts), keyed by version.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
export KUBEVIRT_TS_CACHE="${KUBEVIRT_TS_CACHE:-/var/cache/kubevirt-ts}"
mkdir -p "$KUBEVIRT_TS_CACHE"

log() { printf '[setup] %s\n' "$*" >&2; }

need_root() {
  if [ "$(id -u)" != 0 ]; then
    log "this step needs root (apt-get, libvirtd): run as root or with sudo"
    exit 1
  fi
}

# Debian packages: libvirt + QEMU (the real hypervisor stack), libvirt's schema checker
# (virt-xml-validate, which needs xmllint from libxml2-utils),
# OVMF firmware, xorriso (cloud-init ISOs), busybox-static and cpio (the test guest),
# swtpm (TPM devices), protobuf-compiler (gRPC code generation).
PACKAGES=(libvirt-daemon-system libvirt-clients libxml2-utils qemu-system-x86 qemu-utils ovmf xorriso
  busybox-static cpio protobuf-compiler swtpm swtpm-tools socat)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  need_root
  log "installing Debian packages: ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# VM networking's packages (CNI plugins, nftables, iproute2, passt): their own script.
"$here/setup-network.sh"

# /dev/kvm as Debian's udev rules leave it (root:kvm 0660). Where it is root-only 0600,
# libvirt 9.0 sees KVM appear and vanish between probes and re-probes QEMU's capabilities
# on nearly every call (a `virsh create` then takes minutes).
if [ -c /dev/kvm ] && [ "$(id -u)" = 0 ] && getent group kvm >/dev/null; then
  chgrp kvm /dev/kvm && chmod 0660 /dev/kvm
fi

# The non-root user 107 (upstream's `qemu` account) that each launcher's own libvirt
# daemons and QEMU run as: libvirt refuses to start a domain for a uid without a passwd
# entry ("Failed to find user record for uid '107'").
if [ "$(id -u)" = 0 ] && ! getent passwd 107 >/dev/null; then
  getent group 107 >/dev/null || groupadd --system --gid 107 kubevirt-qemu
  useradd --system --uid 107 --gid 107 --no-create-home --home-dir /nonexistent \
    --shell /usr/sbin/nologin kubevirt-qemu
fi

# libvirtd: this host has no systemd, so start the daemons directly when their
# sockets do not answer.
if ! virsh -c qemu:///system version >/dev/null 2>&1; then
  need_root
  log "starting virtlogd and libvirtd"
  pgrep -x virtlogd >/dev/null || virtlogd -d
  pgrep -x libvirtd >/dev/null || libvirtd -d
  for _ in $(seq 1 50); do
    virsh -c qemu:///system version >/dev/null 2>&1 && break
    sleep 0.2
  done
  virsh -c qemu:///system version >/dev/null
fi

# The tiny test guest (Debian kernel + busybox initramfs), cached by kernel version.
if [ -x "$here/guest/build.sh" ]; then
  "$here/guest/build.sh"
fi

# The Kubernetes control plane for integration tests, built from the Go module proxy.
if [ -x "$here/kube/build.sh" ]; then
  if command -v go >/dev/null 2>&1; then
    "$here/kube/build.sh"
  else
    log "Go is absent: the real-API-server tests will skip (they say why)"
  fi
fi
log "host ready"
