#!/usr/bin/env bash
# Builds the Kubernetes CSI sidecars the CSI driver runs beside (docs/storage.md) from the Go
# module proxy into $KUBEVIRT_TS_CACHE/csi-sidecars/<provisioner>-<snapshotter>/:
#   bin/csi-provisioner      github.com/kubernetes-csi/external-provisioner/v6 cmd/csi-provisioner
#   bin/csi-snapshotter      github.com/kubernetes-csi/external-snapshotter/v8 cmd/csi-snapshotter
#   bin/snapshot-controller  github.com/kubernetes-csi/external-snapshotter/v8 cmd/snapshot-controller
#   crd/*.yaml               the VolumeSnapshot CRDs (config/crd of the module
#                            github.com/kubernetes-csi/external-snapshotter/client/v8)
#
# Both modules carry replace directives, which hold only for the main module: each is
# downloaded with `go mod download` and built from a writable copy of its own directory
# (as scripts/csi/build-csi-sanity.sh does), with its vendor dir when it ships one. The
# snapshotter's go.mod replaces its client module with ./client, a nested module its
# module zip leaves out: the client module of the same version is copied there.
#
# Idempotent: exits at once when all binaries are present. GOMODCACHE and GOCACHE are the
# Kubernetes build's (scripts/kube/build.sh), under the cache dir. Each build's duration is
# logged (a fresh machine: a few minutes each on 2 cores).
set -euo pipefail

PROVISIONER_VERSION="${CSI_PROVISIONER_VERSION:-v6.3.0}"
SNAPSHOTTER_VERSION="${CSI_SNAPSHOTTER_VERSION:-v8.7.0}"
CACHE="${KUBEVIRT_TS_CACHE:-/var/cache/kubevirt-ts}"
log() { printf '[csi-sidecars-build] %s\n' "$*" >&2; }
# The versions become cache paths and module queries: release tags only.
[[ "$PROVISIONER_VERSION" =~ ^v6\.[0-9]+\.[0-9]+$ ]] || { log "CSI_PROVISIONER_VERSION must look like v6.3.0, got: $PROVISIONER_VERSION"; exit 1; }
[[ "$SNAPSHOTTER_VERSION" =~ ^v8\.[0-9]+\.[0-9]+$ ]] || { log "CSI_SNAPSHOTTER_VERSION must look like v8.7.0, got: $SNAPSHOTTER_VERSION"; exit 1; }
out="$CACHE/csi-sidecars/$PROVISIONER_VERSION-$SNAPSHOTTER_VERSION"
bin="$out/bin"
done_all() { [ -x "$bin/csi-provisioner" ] && [ -x "$bin/csi-snapshotter" ] && [ -x "$bin/snapshot-controller" ] && [ -f "$out/crd/.done" ]; }

if done_all; then
  ln -sfn "$PROVISIONER_VERSION-$SNAPSHOTTER_VERSION" "$CACHE/csi-sidecars/current"
  log "cached: $bin (provisioner $PROVISIONER_VERSION, snapshotter $SNAPSHOTTER_VERSION)"
  exit 0
fi
command -v go >/dev/null || { log "go is not installed"; exit 1; }
mkdir -p "$bin" "$out/crd"
export GOMODCACHE="$CACHE/go/mod" GOCACHE="$CACHE/go/build" GOTOOLCHAIN=local
export CGO_ENABLED=0 GOWORK=off
exec 9>"$out/.build.lock"
flock 9
if done_all; then log "cached: $bin (built by a concurrent run)"; exit 0; fi

# module version name -> a writable copy of the module's source, printed
fetch_module() {
  local dir
  dir="$(cd "$out" && go mod download -json "$1@$2" |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')"
  [ -f "$dir/go.mod" ] || { log "the Go module proxy did not serve $1@$2"; return 1; }
  local src="$out/src-$3"
  rm -rf "$src"
  cp -r "$dir" "$src"
  chmod -R u+w "$src"
  printf '%s\n' "$src"
}
# source dir, package, binary name, version
build_cmd() {
  local flags=-mod=mod
  [ -f "$1/vendor/modules.txt" ] && flags=-mod=vendor
  local start
  start=$(date +%s)
  # Explicit returns: a caller's `||` turns off set -e in here.
  (cd "$1" && GOFLAGS=$flags go build -trimpath -ldflags "-s -w -X main.version=$4" -o "$bin/$3.tmp" "$2") ||
    { log "building $3 $4 failed"; return 1; }
  mv "$bin/$3.tmp" "$bin/$3" || return 1
  log "built $3 $4 ($flags) in $(($(date +%s) - start)) s: $bin/$3"
}

total=$(date +%s)
failed=0
if [ ! -x "$bin/csi-provisioner" ]; then
  log "building external-provisioner $PROVISIONER_VERSION from the Go module proxy (a few minutes, cached afterwards)"
  if src="$(fetch_module github.com/kubernetes-csi/external-provisioner/v6 "$PROVISIONER_VERSION" provisioner)"; then
    build_cmd "$src" ./cmd/csi-provisioner csi-provisioner "$PROVISIONER_VERSION" || failed=1
    rm -rf "$src"
  else failed=1; fi
fi
if [ ! -x "$bin/csi-snapshotter" ] || [ ! -x "$bin/snapshot-controller" ] || [ ! -f "$out/crd/.done" ]; then
  log "building external-snapshotter $SNAPSHOTTER_VERSION from the Go module proxy (a few minutes, cached afterwards)"
  if src="$(fetch_module github.com/kubernetes-csi/external-snapshotter/v8 "$SNAPSHOTTER_VERSION" snapshotter)" &&
    client="$(fetch_module github.com/kubernetes-csi/external-snapshotter/client/v8 "$SNAPSHOTTER_VERSION" snapshot-client)"; then
    rm -rf "$src/client"
    mv "$client" "$src/client"
    [ -x "$bin/csi-snapshotter" ] || build_cmd "$src" ./cmd/csi-snapshotter csi-snapshotter "$SNAPSHOTTER_VERSION" || failed=1
    [ -x "$bin/snapshot-controller" ] || build_cmd "$src" ./cmd/snapshot-controller snapshot-controller "$SNAPSHOTTER_VERSION" || failed=1
    # The CRDs: the client module's config/crd (group snapshots are not used: no CRDs for them).
    crds="$(ls "$src"/client/config/crd/snapshot.storage.k8s.io_*.yaml 2>/dev/null || true)"
    if [ -n "$crds" ]; then
      cp $crds "$out/crd/" && touch "$out/crd/.done"
    else log "no VolumeSnapshot CRDs under config/crd of external-snapshotter/client $SNAPSHOTTER_VERSION"; failed=1; fi
    rm -rf "$src"
  else failed=1; fi
fi
done_all && ln -sfn "$PROVISIONER_VERSION-$SNAPSHOTTER_VERSION" "$CACHE/csi-sidecars/current"
log "CSI sidecars done in $(($(date +%s) - total)) s: $bin"
exit "$failed"
