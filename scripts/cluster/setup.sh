#!/usr/bin/env bash
# Host setup for the real one-node cluster and the image builds (called by scripts/test.sh
# after scripts/setup-host.sh): the Debian packages they need, then the images
# (scripts/images/build.sh, cached: a warm run takes seconds). Needs dist/ for the images,
# so the test command calls it after its build stage; with --packages-only it installs
# the packages and stops.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"

log() { printf '[cluster-setup] %s\n' "$*" >&2; }

# containerd + runc (the container runtime), the CNI plugins (bridge, host-local),
# debootstrap + umoci (the image builds), skopeo (inspecting/copying OCI images by hand),
# gcc + libc6-dev (the static pause binary), jq, util-linux (unshare, flock), iproute2.
PACKAGES=(containerd runc containernetworking-plugins debootstrap umoci skopeo gcc libc6-dev jq util-linux iproute2)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    log "installing ${missing[*]} needs root"
    exit 1
  fi
  log "installing Debian packages: ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# Debian's containerd package starts no daemon here (no systemd); the cluster runs its own.
[ "${1:-}" = --packages-only ] && exit 0
"$here/../images/build.sh"
