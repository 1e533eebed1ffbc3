#!/usr/bin/env bash
# Builds Multus's thin CNI plugin (`cmd/multus` of gopkg.in/k8snetworkplumbingwg/multus-cni.v4)
# from the Go module proxy into $KUBEVIRT_TS_CACHE/multus/<version>/bin/multus, for the
# one-node cluster's pod network (scripts/cluster/network.ts wraps the bridge network in it).
#
# The module's zip carries its go.mod and go.sum but not its vendor/ tree, and its go.mod
# pins k8s.io/* with replace directives (client-go v1.5.2 => v0.29.0), which only hold in
# the main module: so the module's own directory is copied out of the module cache and
# built as the main module (-mod=mod), not required from a wrapper module.
#
# Idempotent: exits at once when the binary is present. GOMODCACHE and GOCACHE are the
# Kubernetes build's (scripts/kube/build.sh), under the cache dir.
set -euo pipefail

MULTUS_VERSION="${MULTUS_VERSION:-v4.1.0}"
MODULE=gopkg.in/k8snetworkplumbingwg/multus-cni.v4
CACHE="${KUBEVIRT_TS_CACHE:-/var/cache/kubevirt-ts}"
out="$CACHE/multus/$MULTUS_VERSION"
bin="$out/bin"
log() { printf '[multus-build] %s\n' "$*" >&2; }
# The version becomes a cache path and a module query: release tags only.
[[ "$MULTUS_VERSION" =~ ^v4\.[0-9]+\.[0-9]+$ ]] || { log "MULTUS_VERSION must look like v4.1.0, got: $MULTUS_VERSION"; exit 1; }

if [ -x "$bin/multus" ]; then
  ln -sfn "$MULTUS_VERSION" "$CACHE/multus/current"
  log "cached: $bin/multus (Multus $MULTUS_VERSION)"
  exit 0
fi
command -v go >/dev/null || { log "go is not installed"; exit 1; }
mkdir -p "$bin"
export GOMODCACHE="$CACHE/go/mod" GOCACHE="$CACHE/go/build" GOFLAGS=-mod=mod GOTOOLCHAIN=local
export CGO_ENABLED=0 GOWORK=off
exec 9>"$out/.build.lock"
flock 9
if [ -x "$bin/multus" ]; then log "cached: $bin/multus (built by a concurrent run)"; exit 0; fi

start=$(date +%s)
log "building $MODULE@$MULTUS_VERSION cmd/multus from the Go module proxy (about 1-3 min, cached afterwards)"
dir="$(cd "$out" && go mod download -json "$MODULE@$MULTUS_VERSION" |
  sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')"
[ -f "$dir/go.mod" ] || { log "could not fetch $MODULE@$MULTUS_VERSION"; exit 1; }
src="$out/src"
rm -rf "$src"
cp -r "$dir" "$src"
chmod -R u+w "$src"
rm -rf "$src/vendor" # only modules.txt is in the zip; without it -mod=mod resolves from go.sum
(cd "$src" && go build -trimpath -ldflags "-s -w \
  -X $MODULE/pkg/multus.version=$MULTUS_VERSION" -o "$bin/multus.tmp" ./cmd/multus)
mv "$bin/multus.tmp" "$bin/multus"
rm -rf "$src"
ln -sfn "$MULTUS_VERSION" "$CACHE/multus/current"
log "built Multus $MULTUS_VERSION in $(($(date +%s) - start)) s: $bin/multus"
