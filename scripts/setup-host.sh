#!/usr/bin/env bash
# Prepares this Debian 12 host for kubevirt-ts, in two layers:
#
#   scripts/setup-host.sh              what `kubevirt-ts up` needs: Debian's libvirt and
#                                      QEMU packages, a running libvirtd, the tiny guest
#   scripts/setup-host.sh --with-kube  that, plus what the test suite and a real cluster
#                                      need: the schema checker and protoc, and the
#                                      Kubernetes binaries, Multus, CoreDNS, csi-sanity and
#                                      the CSI sidecars (scripts/kube/build.sh,
#                                      build-multus.sh, build-coredns.sh,
#                                      scripts/csi/build-csi-sanity.sh, build-sidecars.sh;
#                                      need Go)
#
# `npm run up` runs the first, `npm test` (scripts/test.sh) and scripts/kube/start.ts the
# second. Idempotent: every step checks before it acts, and heavy builds are cached
# outside the clone in $KUBEVIRT_TS_CACHE (default /var/cache/kubevirt-ts), keyed by
# version. The steps that take minutes on a fresh host say so, with an estimate.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
export KUBEVIRT_TS_CACHE="${KUBEVIRT_TS_CACHE:-/var/cache/kubevirt-ts}"

with_kube=0
for arg in "$@"; do
  case "$arg" in
    --with-kube) with_kube=1 ;;
    -h | --help)
      sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'
      exit 0
      ;;
    *)
      printf '[setup] unknown argument: %s (usage: scripts/setup-host.sh [--with-kube])\n' "$arg" >&2
      exit 2
      ;;
  esac
done
mkdir -p "$KUBEVIRT_TS_CACHE"

log() { printf '[setup] %s\n' "$*" >&2; }

need_root() {
  if [ "$(id -u)" != 0 ]; then
    log "this step needs root (apt-get, libvirtd): run as root or with sudo"
    exit 1
  fi
}

# Debian packages `up` needs: libvirt + QEMU (the hypervisor stack), OVMF firmware (EFI
# guests), xorriso (cloud-init ISOs), swtpm (TPM devices), busybox-static and cpio (the
# tiny guest's initramfs), dropbear-bin (the libraries the guest's SSH server links, which
# the guest build copies from the host), openssh-client (`virtctl ssh`/`scp` run it) and
# xfsprogs (mkfs.xfs: the CSI driver's storage pool is a loop-mounted XFS with reflink) and
# nbdkit (its curl plugin streams a DataVolume's http source into qemu-img).
UP_PACKAGES=(libvirt-daemon-system libvirt-clients qemu-system-x86 qemu-utils ovmf xorriso
  swtpm swtpm-tools busybox-static cpio dropbear-bin openssh-client xfsprogs nbdkit)
# And the tests: libvirt's schema checker virt-xml-validate needs xmllint
# (libxml2-utils); protobuf-compiler regenerates the gRPC bindings (npm run gen:proto),
# with libprotobuf-dev's well-known types (google/protobuf/*.proto, which csi.proto imports);
# socat is kept for poking at the local sockets by hand (no test uses it); prometheus
# gives the tests promtool (alert rule checks and unit tests) and a real Prometheus that
# scrapes the components' /metrics (test/e2e/metrics-prometheus.test.ts); chromium is the
# headless browser the web console's tests drive (playwright-core, no browser download);
# qemu-block-extra is qemu-img's http driver, the bare reference of `npm run bench:storage`;
# libssl-dev is the static OpenSSL the kubevirt-ts image's TLS migration relay links
# (images/kubevirt-ts/migration-tls-relay.c, built with the test cluster's images).
TEST_PACKAGES=(libxml2-utils protobuf-compiler libprotobuf-dev socat prometheus chromium qemu-block-extra libssl-dev)
# On a fresh Debian 12 (bookworm) with only its required packages, UP_PACKAGES pull in
# 147 packages, 66 MB of downloads; TEST_PACKAGES 16 more, 13 MB, before chromium (apt-get --print-uris
# against a status file of the required set, December 2026). Downloading the 147 took
# 8 s here and unpacking them 8 s; dpkg's configure steps come on top, not measured.
install_packages() {
  local what=$1 estimate=$2
  shift 2
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ "${#missing[@]}" -gt 0 ] || return 0
  need_root
  log "installing ${#missing[@]} Debian packages for $what: ${missing[*]}"
  log "  with their dependencies: $estimate on a fresh host"
  local t0=$SECONDS
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  log "  installed in $((SECONDS - t0)) s"
}
install_packages "local mode" "about 150 packages, 65 MB, about 1-3 min" "${UP_PACKAGES[@]}"
if [ "$with_kube" = 1 ]; then
  install_packages "the tests" "about 15 packages, 13 MB, plus chromium: 111 packages, 149 MB when installed with its recommends on this provisioned host, a few minutes" "${TEST_PACKAGES[@]}"
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
  # Only root's daemons: launchers run their own libvirtd and virtlogd as user 107.
  pgrep -x -u root virtlogd >/dev/null || virtlogd -d
  pgrep -x -u root libvirtd >/dev/null || libvirtd -d
  for _ in $(seq 1 50); do
    virsh -c qemu:///system version >/dev/null 2>&1 && break
    sleep 0.2
  done
  virsh -c qemu:///system version >/dev/null
fi

# The tiny test guest (Debian kernel + busybox initramfs), cached by kernel version; it
# prints its own estimate when it has to build.
"$here/guest/build.sh"

# The Kubernetes binaries for the tests and a real cluster, built from the Go module
# proxy (it prints its own estimate when it has to build).
if [ "$with_kube" = 1 ]; then
  if command -v go >/dev/null 2>&1; then
    "$here/kube/build.sh"
    # Multus's thin plugin: the one-node cluster's CNI wraps the pod network in it.
    "$here/kube/build-multus.sh"
    # The cluster's DNS: a minimal CoreDNS (scripts/kube/coredns), run by `cluster up`.
    "$here/kube/build-coredns.sh"
    # csi-sanity: the CSI spec's conformance suite, run against the CSI driver.
    "$here/csi/build-csi-sanity.sh"
    # The CSI sidecars (external-provisioner, external-snapshotter) and the VolumeSnapshot CRDs.
    "$here/csi/build-sidecars.sh"
  else
    log "Go is absent: the real-API-server tests cannot run (install Go, then rerun with --with-kube)"
  fi
fi
log "host ready$([ "$with_kube" = 1 ] && echo " (with the Kubernetes binaries)" || echo " for local mode (tests and clusters: --with-kube)")"
