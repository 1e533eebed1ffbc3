# Helpers of scripts/images/build.sh (sourced): Debian root filesystems made with
# debootstrap and OCI image layouts made with umoci, each cached under $IMAGES by a key
# derived from its inputs, so a warm build only re-makes what changed.
# Needs: CACHE_REV, IMAGES, MIRROR, SUITE set by the caller.

log() { printf '[images] %s\n' "$*" >&2; }

# sha256 of the arguments (as text), first 16 hex digits.
key_of() { printf '%s\n' "$@" | sha256sum | cut -c1-16; }

# sha256 of a directory tree: every path with its mode and owner, every file's content,
# every symlink's target. Two trees with the same key give the same image layer.
tree_key() {
  (
    cd "$1"
    find . -printf '%p %m %U:%G %l\n' | LC_ALL=C sort
    find . -type f -print0 | LC_ALL=C sort -z | xargs -0r sha256sum
  ) | sha256sum | cut -c1-16
}

# Debian's minimal base system ("minbase" variant), cached by suite and mirror.
# Prints its directory.
debian_minbase() {
  local key dir
  key=$(key_of "$CACHE_REV" minbase "$SUITE" "$MIRROR")
  dir="$IMAGES/rootfs/minbase-$key"
  if [ ! -f "$dir.done" ]; then
    log "debootstrap $SUITE (minbase) from $MIRROR"
    rm -rf "$dir" "$dir.tmp"
    mkdir -p "$IMAGES/debs"
    # --cache-dir keeps the downloaded .debs, so a re-made base downloads nothing.
    debootstrap --variant=minbase --cache-dir="$IMAGES/debs" "$SUITE" "$dir.tmp" "$MIRROR" >"$IMAGES/debootstrap.log" 2>&1 ||
      {
        tail -20 "$IMAGES/debootstrap.log" >&2
        return 1
      }
    slim_rootfs "$dir.tmp"
    mv "$dir.tmp" "$dir"
    touch "$dir.done"
  fi
  echo "$dir"
}

# minbase plus the packages listed in file $2 (one a line, # comments), installed with
# apt-get --no-install-recommends in a chroot, then rootfs-setup.sh next to the list (if
# any) run in the chroot. Cached by the package list and that script. Prints its directory.
debian_rootfs() {
  local name=$1 list=$2 base pkgs key dir setup
  base=$(debian_minbase)
  setup="$(dirname "$list")/rootfs-setup.sh"
  pkgs=$(sed 's/#.*//' "$list" | tr -s ' \t' '\n' | sed '/^$/d' | LC_ALL=C sort -u | tr '\n' ' ')
  key=$(key_of "$CACHE_REV" "$base" "$pkgs" "$(cat "$setup" 2>/dev/null)")
  dir="$IMAGES/rootfs/$name-$key"
  if [ ! -f "$dir.done" ]; then
    log "rootfs $name: apt-get install $pkgs"
    rm -rf "$dir" "$dir.tmp"
    cp -a "$base" "$dir.tmp"
    cp /etc/resolv.conf "$dir.tmp/etc/resolv.conf"
    # No service may start inside the chroot.
    printf '#!/bin/sh\nexit 101\n' >"$dir.tmp/usr/sbin/policy-rc.d"
    chmod 0755 "$dir.tmp/usr/sbin/policy-rc.d"
    if [ -f "$setup" ]; then cp "$setup" "$dir.tmp/rootfs-setup.sh"; fi
    # A private mount namespace: /proc and /dev vanish with it, nothing is left mounted.
    # shellcheck disable=SC2086
    unshare --mount --propagation private sh -euc '
      root=$1; shift
      mount -t proc proc "$root/proc"
      mount --rbind /dev "$root/dev"
      export DEBIAN_FRONTEND=noninteractive LC_ALL=C
      chroot "$root" apt-get update -qq
      chroot "$root" apt-get install -y -qq --no-install-recommends "$@"
      chroot "$root" apt-get clean
      if [ -f "$root/rootfs-setup.sh" ]; then chroot "$root" /bin/sh /rootfs-setup.sh; fi
    ' sh "$dir.tmp" $pkgs >"$IMAGES/apt-$name.log" 2>&1 || {
      tail -30 "$IMAGES/apt-$name.log" >&2
      return 1
    }
    rm -f "$dir.tmp/usr/sbin/policy-rc.d" "$dir.tmp/rootfs-setup.sh"
    : >"$dir.tmp/etc/resolv.conf"
    slim_rootfs "$dir.tmp"
    mv "$dir.tmp" "$dir"
    touch "$dir.done"
  fi
  echo "$dir"
}

# Drops what an image never reads: apt's package lists and caches, documentation (the
# copyright files stay), man pages, logs.
slim_rootfs() {
  local r=$1
  rm -rf "$r"/var/lib/apt/lists/* "$r"/var/cache/apt/* "$r"/var/cache/debconf/*-old \
    "$r"/usr/share/man/* "$r"/usr/share/info/* "$r"/var/log/*
  find "$r/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete 2>/dev/null || true
}

# An OCI layout whose one layer is root filesystem $2, tagged `base`. Prints its directory.
oci_base() {
  local name=$1 rootfs=$2 dir
  dir="$IMAGES/oci/base-$name-$(key_of "$CACHE_REV" "$rootfs")"
  if [ ! -f "$dir/.done" ]; then
    log "layer: $name base ($(du -sh "$rootfs" | cut -f1))"
    rm -rf "$dir"
    umoci init --layout "$dir"
    umoci new --image "$dir:base"
    umoci insert --image "$dir:base" "$rootfs" /
    touch "$dir/.done"
  fi
  echo "$dir"
}

# oci_without NAME BASE_LAYOUT PATH...: BASE plus one whiteout layer per PATH (files a
# package installs that the image must not have), tagged `base`. Prints its directory.
oci_without() {
  local name=$1 base=$2 dir p
  shift 2
  dir="$IMAGES/oci/base-$name-$(key_of "$CACHE_REV" "$base" without "$@")"
  if [ ! -f "$dir/.done" ]; then
    log "layer: $name without $*"
    rm -rf "$dir"
    mkdir -p "$dir/blobs"
    cp -al "$base/blobs/sha256" "$dir/blobs/"
    cp "$base/index.json" "$base/oci-layout" "$dir/"
    for p in "$@"; do umoci insert --image "$dir:base" --whiteout "$p"; done
    touch "$dir/.done"
  fi
  echo "$dir"
}

# oci_layer NAME BASE_LAYOUT INPUT_KEY STAGE_FN: BASE plus one layer holding what
# `STAGE_FN <dir>` puts in <dir>, tagged `base`, cached by INPUT_KEY (which must change
# whenever STAGE_FN's output would). For large inputs that change rarely (the CSI
# sidecars): the image on top of it re-makes only its own top layer. Prints its directory.
oci_layer() {
  local name=$1 base=$2 input=$3 stage_fn=$4 dir app
  dir="$IMAGES/oci/base-$name-$(key_of "$CACHE_REV" "$base" "$input" "$(declare -f "$stage_fn")")"
  if [ ! -f "$dir/.done" ]; then
    log "layer: $name"
    rm -rf "$dir"
    app=$(mktemp -d "$IMAGES/.stage-$name.XXXXXX")
    "$stage_fn" "$app"
    mkdir -p "$dir/blobs"
    cp -al "$base/blobs/sha256" "$dir/blobs/"
    cp "$base/index.json" "$base/oci-layout" "$dir/"
    umoci insert --image "$dir:base" "$app" /
    rm -rf "$app"
    touch "$dir/.done"
  fi
  echo "$dir"
}

# oci_image NAME BASE_LAYOUT|scratch INPUT_KEY STAGE_FN [umoci config flags...]
# The image BASE + one layer (inserted at /) holding what `STAGE_FN <dir>` puts in <dir>
# + the given config, named localhost/kubevirt-ts/NAME:<key>. INPUT_KEY must change
# whenever STAGE_FN's output would: the key covers it, the base and the config, and a
# warm build with an unchanged key stages nothing. Writes $IMAGES/NAME.ref (the
# reference) and $IMAGES/current/NAME (a symlink to the layout); older layouts of NAME
# are removed.
oci_image() {
  local name=$1 base=$2 input=$3 stage_fn=$4
  shift 4
  local key dir ref app
  key=$(key_of "$CACHE_REV" "$base" "$input" "$(declare -f "$stage_fn")" "$@")
  ref="localhost/kubevirt-ts/$name:$key"
  dir="$IMAGES/oci/$name-$key"
  if [ ! -f "$dir/.done" ]; then
    log "image $ref"
    rm -rf "$dir"
    app=$(mktemp -d "$IMAGES/.stage-$name.XXXXXX")
    "$stage_fn" "$app"
    if [ "$base" = scratch ]; then
      umoci init --layout "$dir"
      umoci new --image "$dir:base"
    else
      # Blobs never change (they are named by their digest): share them with the base.
      mkdir -p "$dir/blobs"
      cp -al "$base/blobs/sha256" "$dir/blobs/"
      cp "$base/index.json" "$base/oci-layout" "$dir/"
    fi
    umoci insert --image "$dir:base" "$app" /
    rm -rf "$app"
    umoci config --image "$dir:base" --tag "$key" --author kubevirt-ts "$@"
    umoci rm --image "$dir:base"
    umoci gc --layout "$dir"
    # ctr image import names the image after this annotation.
    jq --arg ref "$ref" '.manifests[0].annotations["io.containerd.image.name"] = $ref' \
      "$dir/index.json" >"$dir/index.json.tmp"
    mv "$dir/index.json.tmp" "$dir/index.json"
    touch "$dir/.done"
  fi
  mkdir -p "$IMAGES/current"
  ln -sfn "$dir" "$IMAGES/current/$name"
  echo "$ref" >"$IMAGES/$name.ref"
  for old in "$IMAGES/oci/$name-"*; do
    [ "$old" = "$dir" ] || rm -rf "$old"
  done
}
