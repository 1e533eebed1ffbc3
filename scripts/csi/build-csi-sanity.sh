#!/usr/bin/env bash
# Builds csi-sanity (`cmd/csi-sanity` of github.com/kubernetes-csi/csi-test/v5), the CSI
# spec conformance suite the CSI driver's test runs against the driver's socket
# (test/controllers/csi-driver/csi-sanity.test.ts), from the Go module proxy into
# $KUBEVIRT_TS_CACHE/csi-sanity/<version>/bin/csi-sanity.
#
# The module's go.mod has no replace directives today, but it is built as the main module
# from a copy of its own directory (as scripts/kube/build-multus.sh does), so its go.mod and
# go.sum pin every dependency exactly and any future replace directive holds.
#
# Idempotent: exits at once when the binary is present. GOMODCACHE and GOCACHE are the
# Kubernetes build's (scripts/kube/build.sh), under the cache dir.
set -euo pipefail

CSI_TEST_VERSION="${CSI_TEST_VERSION:-v5.6.0}"
MODULE=github.com/kubernetes-csi/csi-test/v5
CACHE="${KUBEVIRT_TS_CACHE:-/var/cache/kubevirt-ts}"
out="$CACHE/csi-sanity/$CSI_TEST_VERSION"
bin="$out/bin"
log() { printf '[csi-sanity-build] %s\n' "$*" >&2; }
# The version becomes a cache path and a module query: release tags only.
[[ "$CSI_TEST_VERSION" =~ ^v5\.[0-9]+\.[0-9]+$ ]] || { log "CSI_TEST_VERSION must look like v5.6.0, got: $CSI_TEST_VERSION"; exit 1; }

if [ -x "$bin/csi-sanity" ]; then
  ln -sfn "$CSI_TEST_VERSION" "$CACHE/csi-sanity/current"
  log "cached: $bin/csi-sanity (csi-test $CSI_TEST_VERSION)"
  exit 0
fi
command -v go >/dev/null || { log "go is not installed"; exit 1; }
mkdir -p "$bin"
export GOMODCACHE="$CACHE/go/mod" GOCACHE="$CACHE/go/build" GOFLAGS=-mod=mod GOTOOLCHAIN=local
export CGO_ENABLED=0 GOWORK=off
exec 9>"$out/.build.lock"
flock 9
if [ -x "$bin/csi-sanity" ]; then log "cached: $bin/csi-sanity (built by a concurrent run)"; exit 0; fi

start=$(date +%s)
log "building $MODULE@$CSI_TEST_VERSION cmd/csi-sanity from the Go module proxy (about 1-3 min, cached afterwards)"
dir="$(cd "$out" && go mod download -json "$MODULE@$CSI_TEST_VERSION" |
  sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')"
[ -f "$dir/go.mod" ] || { log "could not fetch $MODULE@$CSI_TEST_VERSION"; exit 1; }
src="$out/src"
rm -rf "$src"
cp -r "$dir" "$src"
chmod -R u+w "$src"
rm -rf "$src/vendor"
(cd "$src" && go build -trimpath -ldflags "-s -w -X main.VERSION=$CSI_TEST_VERSION" \
  -o "$bin/csi-sanity.tmp" ./cmd/csi-sanity)
mv "$bin/csi-sanity.tmp" "$bin/csi-sanity"
rm -rf "$src"
ln -sfn "$CSI_TEST_VERSION" "$CACHE/csi-sanity/current"
log "built csi-sanity $CSI_TEST_VERSION in $(($(date +%s) - start)) s: $bin/csi-sanity"
