#!/usr/bin/env bash
# Host packages for VM networking (docs/network.md): the CNI bridge and host-local
# plugins local mode's pod runtime attaches pods with (/usr/lib/cni), nftables and
# iproute2 for the in-pod masquerade setup, passt for the passt binding.
# Separate from setup-host.sh so that script's structure stays its own; setup-host.sh
# runs it. Idempotent: installs only what is missing.
set -euo pipefail
PACKAGES=(containernetworking-plugins nftables iproute2 passt)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    printf '[setup-network] needs root to install: %s\n' "${missing[*]}" >&2
    exit 1
  fi
  printf '[setup-network] installing Debian packages: %s\n' "${missing[*]}" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# /dev/net/tun as Debian's udev rules leave it (0666): the launcher's own virtqemud runs
# as qemu (107) and opens the pod's tap, which the node agent created owned by 107
# (upstream's devices.kubevirt.io/tun gives the launcher the same access). Containers
# often leave it root-only 0600.
if [ -c /dev/net/tun ] && [ "$(id -u)" = 0 ] && [ "$(stat -c %a /dev/net/tun)" != 666 ]; then
  chmod 0666 /dev/net/tun
fi
