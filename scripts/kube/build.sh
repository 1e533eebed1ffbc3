#!/usr/bin/env bash
# Builds the Kubernetes control plane used by the integration tests from the Go module
# proxy: kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, the kubelet
# (the real cluster), kube-proxy (its Services, nftables mode) and etcd, at pinned versions, into $KUBEVIRT_TS_CACHE/kube/<version>/bin.
#
# k8s.io/kubernetes's own go.mod points every k8s.io/* staging module at ./staging, which
# does not exist in the module zip; so we generate a go.mod that requires
# k8s.io/kubernetes and replaces each staging module with its published v0.Y.Z release
# (the same source, tagged separately). etcd is built from go.etcd.io/etcd/server/v3 in
# its own module so its dependency versions do not fight Kubernetes'.
#
# Idempotent: exits at once when every binary is present. GOMODCACHE and GOCACHE live
# under the cache dir, so a rebuild after a version bump only compiles what changed.
set -euo pipefail

KUBE_VERSION="${KUBE_VERSION:-v1.34.4}"
ETCD_VERSION="${ETCD_VERSION:-v3.6.16}"
CACHE="${KUBEVIRT_TS_CACHE:-/var/cache/kubevirt-ts}"
out="$CACHE/kube/$KUBE_VERSION"
bin="$out/bin"
log() { printf '[kube-build] %s\n' "$*" >&2; }
# Both versions become cache paths and module queries: accept release tags only.
[[ "$KUBE_VERSION" =~ ^v1\.[0-9]+\.[0-9]+$ ]] || { log "KUBE_VERSION must look like v1.34.4, got: $KUBE_VERSION"; exit 1; }
[[ "$ETCD_VERSION" =~ ^v3\.[0-9]+\.[0-9]+$ ]] || { log "ETCD_VERSION must look like v3.6.16, got: $ETCD_VERSION"; exit 1; }

binaries=(kube-apiserver kube-controller-manager kube-scheduler kubectl kubelet kube-proxy etcd)
all_present() {
  for b in "${binaries[@]}"; do [ -x "$bin/$b" ] || return 1; done
}
if all_present; then
  ln -sfn "$KUBE_VERSION" "$CACHE/kube/current"
  log "cached: $bin (Kubernetes $KUBE_VERSION, etcd $ETCD_VERSION)"
  exit 0
fi

command -v go >/dev/null || { log "go is not installed"; exit 1; }
mkdir -p "$bin" "$out/src/kube" "$out/src/etcd"
export GOMODCACHE="$CACHE/go/mod" GOCACHE="$CACHE/go/build" GOFLAGS=-mod=mod GOTOOLCHAIN=local
export CGO_ENABLED=0 GOWORK=off
start=$(date +%s)

# Serialise concurrent builds (two setup runs at once) on a lock in the cache dir.
exec 9>"$out/.build.lock"
flock 9
if all_present; then log "cached: $bin (built by a concurrent run)"; exit 0; fi

# Measured on a 2-core host: 15.6 min (a fresh machine, December 2026) to 24.5 min (load
# average 15-19); most of it is compiling kube-apiserver and kube-controller-manager.
log "building ${binaries[*]} from the Go module proxy into $bin"
log "  about 15-25 min on a fresh 2-core host (module downloads included); cached afterwards"
minor="${KUBE_VERSION#v1.}"   # 34.4
staging_version="v0.$minor"  # v0.34.4

# --- Kubernetes ------------------------------------------------------------------------
kube_src="$out/src/kube"
upstream_gomod="$(cd "$kube_src" && go mod download -json "k8s.io/kubernetes@$KUBE_VERSION" |
  sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p')"
[ -f "$upstream_gomod" ] || { log "could not fetch k8s.io/kubernetes@$KUBE_VERSION go.mod"; exit 1; }
go_directive="$(sed -n 's/^go \([0-9.]*\)$/\1/p' "$upstream_gomod" | head -1)"
{
  echo "module kubevirt-ts.local/kube-build"
  echo
  echo "go ${go_directive:-1.24.0}"
  echo
  echo "require k8s.io/kubernetes $KUBE_VERSION"
  echo
  echo "replace ("
  # Upstream lines look like: k8s.io/api => ./staging/src/k8s.io/api
  sed -n 's#^[[:space:]]*\(k8s.io/[a-z0-9-]*\) => ./staging/src/k8s.io/.*$#\t\1 => \1 '"$staging_version"'#p' "$upstream_gomod"
  echo ")"
} >"$kube_src/go.mod"
cat >"$kube_src/tools.go" <<'GO'
//go:build tools

// Package tools pins the command packages this module builds.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
	_ "k8s.io/kubernetes/cmd/kubelet"
	_ "k8s.io/kubernetes/cmd/kube-proxy"
)
GO
log "resolving Kubernetes $KUBE_VERSION (staging modules at $staging_version)"
(cd "$kube_src" && go mod tidy -e >/dev/null 2>"$out/tidy.log" || { cat "$out/tidy.log" >&2; exit 1; })
# kube-proxy shares most packages with the kubelet: built last, it reuses their compiled
# objects from GOCACHE (one module, one cache), adding little to a fresh build.
for cmd in kube-apiserver kube-controller-manager kube-scheduler kubectl kubelet kube-proxy; do
  if [ ! -x "$bin/$cmd" ]; then
    log "building $cmd"
    t0=$(date +%s)
    (cd "$kube_src" && go build -trimpath -ldflags "-s -w \
      -X k8s.io/component-base/version.gitVersion=$KUBE_VERSION \
      -X k8s.io/component-base/version.gitMajor=1 \
      -X k8s.io/component-base/version.gitMinor=${minor%%.*} \
      -X k8s.io/component-base/version.gitTreeState=clean \
      -X k8s.io/client-go/pkg/version.gitVersion=$KUBE_VERSION" \
      -o "$bin/$cmd.tmp" "k8s.io/kubernetes/cmd/$cmd")
    mv "$bin/$cmd.tmp" "$bin/$cmd"
    log "built $cmd in $(($(date +%s) - t0)) s"
  fi
done

# --- etcd ------------------------------------------------------------------------------
if [ ! -x "$bin/etcd" ]; then
  etcd_src="$out/src/etcd"
  cat >"$etcd_src/go.mod" <<GOMOD
module kubevirt-ts.local/etcd-build

go 1.24

require go.etcd.io/etcd/server/v3 $ETCD_VERSION
GOMOD
  cat >"$etcd_src/tools.go" <<'GO'
//go:build tools

// Package tools pins the etcd server main package this module builds.
package tools

import _ "go.etcd.io/etcd/server/v3"
GO
  log "building etcd $ETCD_VERSION"
  t0=$(date +%s)
  (cd "$etcd_src" && go mod tidy -e >/dev/null 2>"$out/tidy-etcd.log" || { cat "$out/tidy-etcd.log" >&2; exit 1; })
  (cd "$etcd_src" && go build -trimpath -ldflags "-s -w" -o "$bin/etcd.tmp" go.etcd.io/etcd/server/v3)
  mv "$bin/etcd.tmp" "$bin/etcd"
  log "built etcd in $(($(date +%s) - t0)) s"
fi

all_present || { log "some binaries are missing in $bin"; exit 1; }
took=$(($(date +%s) - start))
echo "$took" >"$out/first-build-seconds"
ln -sfn "$KUBE_VERSION" "$CACHE/kube/current"
log "built Kubernetes $KUBE_VERSION + etcd $ETCD_VERSION in $took s: $bin"
