#!/usr/bin/env bash
# test/node/setup.sh: makes this machine able to run the node cluster (test/node/cluster.ts).
# Owns: the checks of what the cluster needs (root, network namespaces, bridges, cgroup v1,
# overlayfs) and the Debian packages it installs when missing. Idempotent: with everything
# installed it runs no apt command and takes well under a second.
# Must not touch: anything but the packages listed here; it starts no service and writes no config.
# Fails (exit 1) with a message naming what is missing; it never skips.
set -euo pipefail

fail() { echo "cluster setup: $*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || fail "needs root (network namespace, mounts, cgroups, iptables); this is uid $(id -u)"
[ "$(uname -s)" = Linux ] || fail "needs Linux"

# Package -> a file it provides (dpkg-query per package costs ~20 ms; a file test costs nothing).
declare -A provides=(
  [containerd]=/usr/bin/containerd
  [runc]=/usr/sbin/runc
  [containernetworking-plugins]=/usr/lib/cni/bridge
  [iptables]=/usr/sbin/iptables
  [conntrack]=/usr/sbin/conntrack
  [buildah]=/usr/bin/buildah
  # The Debian root of the stand-in for node:24-slim that the operator image builds on (operator-image.ts).
  [mmdebstrap]=/usr/bin/mmdebstrap
  [busybox-static]=/bin/busybox
  [gcc]=/usr/bin/gcc
  [libc6-dev]=/usr/lib/x86_64-linux-gnu/libc.a
  [iproute2]=/usr/sbin/ip
  [util-linux]=/usr/bin/nsenter
)
missing=()
for p in "${!provides[@]}"; do [ -e "${provides[$p]}" ] || missing+=("$p"); done
if [ "${#missing[@]}" -gt 0 ]; then
  command -v apt-get >/dev/null || fail "missing packages ${missing[*]} and no apt-get to install them"
  echo "cluster setup: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2 || fail "apt-get update failed; cannot install ${missing[*]}"
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2 || fail "apt-get install ${missing[*]} failed"
  for p in "${missing[@]}"; do [ -e "${provides[$p]}" ] || fail "package $p installed but ${provides[$p]} is absent"; done
fi

# What the kernel must give. Each check names what is missing.
grep -q '^cgroup .*memory' /proc/mounts || fail "no cgroup v1 memory hierarchy mounted under /sys/fs/cgroup (kubelet here runs on cgroup v1 with cgroupfs)"
grep -qw overlay /proc/filesystems || fail "no overlay filesystem in the kernel (containerd's snapshotter)"
probe="portcullis-probe-$$"
ip netns add "$probe" 2>/dev/null || fail "cannot create a network namespace (ip netns add): not permitted or not supported"
ok=1
ip -n "$probe" link add probe0 type bridge 2>/dev/null || ok=0
ip -n "$probe" link add probe1 type veth peer name probe2 2>/dev/null || ok=2
nsenter --net="/run/netns/$probe" sysctl -qw net.bridge.bridge-nf-call-iptables=1 2>/dev/null || ok=3
ip netns del "$probe"
case $ok in
  0) fail "cannot create a bridge link in a network namespace (kernel bridge support)" ;;
  2) fail "cannot create a veth pair in a network namespace (kernel veth support)" ;;
  3) fail "no net.bridge.bridge-nf-call-iptables in a network namespace (br_netfilter), which kube-proxy needs" ;;
esac
setpriv --help 2>/dev/null | grep -q -- --pdeathsig || fail "setpriv lacks --pdeathsig (util-linux too old)"
echo "cluster setup: ok" >&2
