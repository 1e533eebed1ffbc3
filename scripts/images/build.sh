#!/usr/bin/env bash
# Builds kubevirt-ts's container images here, with no registry and no pull: Debian 12
# root filesystems made by debootstrap from Debian's mirror, turned into OCI image layouts
# by umoci. images/*/Containerfile describe the same images for builders with a registry.
#
#   pause                     the pod sandbox (a static C binary, images/pause/pause.c)
#   virt-launcher             Debian 12 + libvirt/QEMU/OVMF/swtpm/xorriso/passt (images/virt-launcher/packages)
#                             + Node + dist/ (`kubevirt-ts virt-launcher ...`)
#   kubevirt-ts               Debian 12 minbase + images/kubevirt-ts/packages (iproute2, nftables,
#                             procps, xfsprogs) + the CSI sidecars (csi-provisioner,
#                             csi-snapshotter, snapshot-controller in /usr/bin, from
#                             scripts/csi/build-sidecars.sh, a layer of their own) + Node +
#                             dist/ + production node_modules
#                             (entry point dist/cli/kubevirt-ts.js: virt-handler, ...)
#   tiny-guest-containerdisk  the tiny guest's bootable disk at /disk/disk.qcow2 (107:107),
#                             upstream's containerDisk layout
#
# Output under $KUBEVIRT_TS_CACHE/images/: current/<name> (the OCI layout), <name>.ref
# (its reference, localhost/kubevirt-ts/<name>:<content key>) and images.json (all of
# them). scripts/cluster imports them into its containerd. Every step is cached by a key
# of its inputs: the Debian base by its package list, each image by its base, the
# content of its top layer and its config; a warm run re-makes only what changed.
# Needs root (debootstrap, chroot, file ownership), dist/ (npm run build) and the tiny
# guest (scripts/guest/build.sh).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
CACHE="${KUBEVIRT_TS_CACHE:-/var/cache/kubevirt-ts}"
IMAGES="$CACHE/images"
SUITE=bookworm
# Debian's mirror as apt on this host reaches it (deb822 or one-line sources).
default_mirror() {
  local m
  m=$(grep -hsoE '^URIs: *[^ ]+/debian/?$' /etc/apt/sources.list.d/*.sources | head -1 | sed 's/^URIs: *//')
  [ -n "$m" ] || m=$(grep -hsoE '^deb +(\[[^]]*\] +)?[a-z]+://[^ ]+/debian/? ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list |
    head -1 | awk '{print $NF}')
  echo "${m:-http://deb.debian.org/debian}"
}
MIRROR="${KUBEVIRT_TS_DEBIAN_MIRROR:-$(default_mirror)}"
# Bump to rebuild every cached rootfs and layer (it is part of every key).
CACHE_REV=1
# shellcheck source=lib.sh
source "$here/lib.sh"

if [ "$(id -u)" != 0 ]; then
  log "needs root (debootstrap, chroot, image file ownership)"
  exit 1
fi
for tool in debootstrap umoci jq gcc unshare flock; do
  command -v "$tool" >/dev/null || {
    log "$tool is missing: run scripts/cluster/setup.sh --packages-only"
    exit 1
  }
done
[ -f "$repo/dist/cli/kubevirt-ts.js" ] && [ -f "$repo/dist/cli/virt-launcher.js" ] || {
  log "dist/ is not built: run npm run build"
  exit 1
}
sidecars="$CACHE/csi-sidecars/current/bin"
for b in csi-provisioner csi-snapshotter snapshot-controller; do
  [ -x "$sidecars/$b" ] || {
    log "the CSI sidecars are not built ($sidecars/$b): run scripts/csi/build-sidecars.sh (scripts/setup-host.sh --with-kube does)"
    exit 1
  }
done
guest_disk="$CACHE/guest/current/boot.qcow2"
[ -f "$guest_disk" ] || {
  log "the tiny guest is not built ($guest_disk): run scripts/guest/build.sh"
  exit 1
}

mkdir -p "$IMAGES"
exec 9>"$IMAGES/.lock"
flock 9
t0=$SECONDS
rm -rf "$IMAGES"/.stage-*

# The host's Node (20; Debian 12's nodejs is 18, older than the project's engines field),
# a single executable that needs only libc, libstdc++ and libgcc from the image.
node_bin=$(readlink -f "$(command -v node)")
# The production dependency tree as npm resolved it for this checkout (no download).
# (npm ls exits non-zero over extraneous packages; the list it prints is still right.)
prod_modules=$(cd "$repo" && npm ls --omit=dev --all --parseable 2>/dev/null || true)
# crds/ travels with dist/: virt-operator installs the CRDs from it.
dist_key=$(key_of "$(tree_key "$repo/dist")" "$(tree_key "$repo/crds")")
node_key=$(sha256sum <"$node_bin" | cut -c1-16)
# Keys never contain the checkout's path: two clones share one cache.
modules_key=$(key_of "${prod_modules//"$repo"/}" "$(sha256sum <"$repo/package-lock.json")")

# Node, dist/ (no source maps), package.json, crds/, and `kubevirt-ts`/`virtctl` on PATH.
stage_app() {
  local dest=$1
  install -D -m 0755 "$node_bin" "$dest/usr/bin/node"
  mkdir -p "$dest/opt/kubevirt-ts" "$dest/usr/bin"
  cp -a "$repo/dist" "$dest/opt/kubevirt-ts/"
  find "$dest/opt/kubevirt-ts/dist" -name '*.map' -delete
  cp "$repo/package.json" "$dest/opt/kubevirt-ts/"
  cp -a "$repo/crds" "$dest/opt/kubevirt-ts/"
  ln -s /opt/kubevirt-ts/dist/cli/kubevirt-ts.js "$dest/usr/bin/kubevirt-ts"
  ln -s /opt/kubevirt-ts/dist/cli/virtctl.js "$dest/usr/bin/virtctl"
  chmod 0755 "$dest/opt/kubevirt-ts/dist/cli/"*.js
}
stage_components() {
  local dest=$1 p rel
  stage_app "$dest"
  while read -r p; do
    case "$p" in "$repo/node_modules/"*)
      rel=${p#"$repo/"}
      mkdir -p "$dest/opt/kubevirt-ts/$(dirname "$rel")"
      [ -e "$dest/opt/kubevirt-ts/$rel" ] || cp -a "$(readlink -f "$p")" "$dest/opt/kubevirt-ts/$rel"
      ;;
    esac
  done <<<"$prod_modules"
  # virt-handler's kernel copy for plain migration connections (migration-proxy/relay.ts).
  gcc -static -O2 -s -pthread -o "$dest/usr/bin/kubevirt-ts-migration-relay" "$repo/images/kubevirt-ts/migration-relay.c"
  # And its OpenSSL relay for TLS ones (libssl-dev's static libraries). The linker's
  # warnings about glibc's dlopen and name lookups in a static binary concern code paths
  # the relay does not take: shown only when the build fails.
  local out
  if ! out=$(gcc -static -O2 -s -o "$dest/usr/bin/kubevirt-ts-migration-tls-relay" \
    "$repo/images/kubevirt-ts/migration-tls-relay.c" -lssl -lcrypto 2>&1); then
    printf '%s\n' "$out" >&2
    return 1
  fi
}
stage_pause() {
  gcc -static -O2 -s -o "$1/pause" "$repo/images/pause/pause.c"
}
# Upstream's containerDisk layout: the disk under /disk/, owned by qemu (107).
stage_containerdisk() {
  mkdir -p "$1/disk"
  cp "$guest_disk" "$1/disk/disk.qcow2"
  chown -R 107:107 "$1/disk"
  chmod 0755 "$1/disk"
  chmod 0644 "$1/disk/disk.qcow2"
}

oci_image pause scratch "$(sha256sum <"$repo/images/pause/pause.c")" stage_pause \
  --config.entrypoint /pause --config.user 65535:65535
oci_image tiny-guest-containerdisk scratch "$(sha256sum <"$guest_disk")" stage_containerdisk

launcher_root=$(debian_rootfs virt-launcher "$repo/images/virt-launcher/packages")
# Only the one QEMU binary guests run on (upstream's launcher images carry only theirs):
# libvirt probes every qemu-system-<arch> it finds before the first domain, seconds each
# under TCG, and KubeVirt runs no 32-bit x86 guests.
launcher_base=$(oci_without virt-launcher "$(oci_base virt-launcher "$launcher_root")" /usr/bin/qemu-system-i386)
oci_image virt-launcher "$launcher_base" "$node_key $dist_key" stage_app \
  --config.entrypoint /usr/bin/kubevirt-ts --config.cmd virt-launcher --config.workingdir /

components_root=$(debian_rootfs kubevirt-ts "$repo/images/kubevirt-ts/packages")
# The sidecars: static Go binaries, 200 MB, changed only by a new sidecar build; their
# own layer, so a change of dist/ does not compress them again.
stage_sidecars() {
  mkdir -p "$1/usr/bin"
  cp "$sidecars/csi-provisioner" "$sidecars/csi-snapshotter" "$sidecars/snapshot-controller" "$1/usr/bin/"
  chmod 0755 "$1/usr/bin/"*
}
sidecars_key=$(cat "$sidecars/csi-provisioner" "$sidecars/csi-snapshotter" "$sidecars/snapshot-controller" | sha256sum | cut -c1-16)
components_base=$(oci_layer kubevirt-ts-csi-sidecars "$(oci_base kubevirt-ts "$components_root")" "$sidecars_key" stage_sidecars)
relay_key=$(cat "$repo"/images/kubevirt-ts/migration-relay.c "$repo"/images/kubevirt-ts/migration-tls-relay.c \
  "$repo"/images/kubevirt-ts/relay-counts.h | sha256sum | cut -c1-16)
oci_image kubevirt-ts "$components_base" "$node_key $dist_key $modules_key $relay_key" stage_components \
  --config.entrypoint /usr/bin/kubevirt-ts --config.workingdir /

jq -n --arg dir "$IMAGES/current" \
  --arg pause "$(cat "$IMAGES/pause.ref")" \
  --arg launcher "$(cat "$IMAGES/virt-launcher.ref")" \
  --arg components "$(cat "$IMAGES/kubevirt-ts.ref")" \
  --arg disk "$(cat "$IMAGES/tiny-guest-containerdisk.ref")" \
  '{pause: {ref: $pause, layout: ($dir + "/pause")},
    "virt-launcher": {ref: $launcher, layout: ($dir + "/virt-launcher")},
    "kubevirt-ts": {ref: $components, layout: ($dir + "/kubevirt-ts")},
    "tiny-guest-containerdisk": {ref: $disk, layout: ($dir + "/tiny-guest-containerdisk")}}' \
  >"$IMAGES/images.json.tmp"
mv "$IMAGES/images.json.tmp" "$IMAGES/images.json"
log "images ready in $((SECONDS - t0)) s: $IMAGES/images.json"

# KUBEVIRT_TS_IMAGES_COPY=DIR: this build's layouts hard-linked into DIR, with DIR/images.json
# naming them (still under the lock): a build from another checkout sharing the cache
# replaces current/ and removes older layouts, not DIR. Point the cluster at it with
# KUBEVIRT_TS_CLUSTER_IMAGES=DIR/images.json.
if [ -n "${KUBEVIRT_TS_IMAGES_COPY:-}" ]; then
  copy="$KUBEVIRT_TS_IMAGES_COPY"
  rm -rf "$copy.tmp"
  mkdir -p "$copy.tmp"
  for name in pause virt-launcher kubevirt-ts tiny-guest-containerdisk; do
    cp -al "$(readlink -f "$IMAGES/current/$name")" "$copy.tmp/$name"
  done
  jq --arg dir "$copy" 'with_entries(.value.layout = ($dir + "/" + .key))' "$IMAGES/images.json" \
    >"$copy.tmp/images.json"
  rm -rf "$copy"
  mv "$copy.tmp" "$copy"
  log "this build's images also in $copy (KUBEVIRT_TS_CLUSTER_IMAGES=$copy/images.json)"
fi
