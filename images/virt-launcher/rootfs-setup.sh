#!/bin/sh
# Runs inside the virt-launcher root filesystem after its packages are installed (by
# scripts/images/build.sh in a chroot, by the Containerfile in a RUN step).
# The qemu user and group as upstream KubeVirt's images have them: uid/gid 107, which
# owns containerDisk files (/disk/*, 107:107).
set -eu
getent group qemu >/dev/null || groupadd --system --gid 107 qemu
getent passwd qemu >/dev/null || useradd --system --uid 107 --gid 107 --home-dir /var/run/libvirt/qemu --no-create-home --shell /usr/sbin/nologin qemu
# QEMU loads TCG as a module: without it QEMU fails "could not load module for type 'tcg-accel-ops'".
test -f /usr/lib/x86_64-linux-gnu/qemu/accel-tcg-x86_64.so
