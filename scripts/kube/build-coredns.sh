#!/usr/bin/env bash
# Builds the test cluster's cluster DNS: a minimal CoreDNS (scripts/kube/coredns: coremain
# plus the bind, errors, cache and kubernetes plugins only) from the Go module
# proxy into $KUBEVIRT_TS_CACHE/coredns/<key>/bin/coredns, where <key> is the CoreDNS
# version and a hash of that folder's main.go, go.mod and go.sum (scripts/cluster/dns.ts
# computes the same key to find it). `cluster up` runs it as a host process.
#
# Idempotent: exits at once when the binary for this content is present. GOMODCACHE and
# GOCACHE are the Kubernetes build's (scripts/kube/build.sh), under the cache dir.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
src="$here/coredns"
CACHE="${KUBEVIRT_TS_CACHE:-/var/cache/kubevirt-ts}"
log() { printf '[coredns-build] %s\n' "$*" >&2; }

version="$(sed -n 's#^require github.com/coredns/coredns \(v[0-9.]*\)$#\1#p' "$src/go.mod")"
[[ "$version" =~ ^v1\.[0-9]+\.[0-9]+$ ]] || { log "no CoreDNS version in $src/go.mod"; exit 1; }
# The same key as coreDnsKey() in scripts/cluster/dns.ts: sha256 over the three files in
# this order, first 12 hex digits.
hash="$(cat "$src/main.go" "$src/go.mod" "$src/go.sum" | sha256sum | cut -c1-12)"
out="$CACHE/coredns/$version-$hash"
bin="$out/bin"

if [ -x "$bin/coredns" ]; then
  log "cached: $bin/coredns (CoreDNS $version)"
  exit 0
fi
command -v go >/dev/null || { log "go is not installed"; exit 1; }
mkdir -p "$bin"
export GOMODCACHE="$CACHE/go/mod" GOCACHE="$CACHE/go/build" GOTOOLCHAIN=local
# -mod=readonly: go.sum is committed, so the build fetches exactly what it lists.
export GOFLAGS=-mod=readonly CGO_ENABLED=0 GOWORK=off
exec 9>"$out/.build.lock"
flock 9
if [ -x "$bin/coredns" ]; then log "cached: $bin/coredns (built by a concurrent run)"; exit 0; fi

start=$(date +%s)
log "building CoreDNS $version (kubernetes plugin and three small ones) from the Go module proxy"
log "  about 2 min on a 2-core host (97-132 s measured, December 2026); cached afterwards"
(cd "$src" && go build -trimpath -ldflags "-s -w \
  -X github.com/coredns/coredns/coremain.GitCommit=$version" -o "$bin/coredns.tmp" .)
mv "$bin/coredns.tmp" "$bin/coredns"
took=$(($(date +%s) - start))
echo "$took" >"$out/build-seconds"
log "built CoreDNS $version in $took s: $bin/coredns"
