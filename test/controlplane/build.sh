#!/usr/bin/env bash
# Builds a set of Kubernetes programs from the Go modules pinned in go.mod/go.sum, into a cache
# outside the clone keyed by go.sum, so a fresh clone reuses it.
#   build.sh          the control plane: kube-apiserver, kube-controller-manager, kubectl, etcd
#   build.sh controlplane <minor>
#                     an older supported Kubernetes' kube-apiserver, kube-controller-manager and
#                     kubectl (the oldest's: 1.35), from their own module in versions/<minor>
#                     (etcd is the newest set's)
#   build.sh node     a node: kubelet, kube-proxy, kube-scheduler (test/node's cluster)
#   build.sh helm     Helm, from its own module in ../helm (the chart's tests)
#   build.sh checkov  checkov, the manifest linter, from PyPI into a venv, pinned by ../checkov/requirements.txt
#                     (kube-linter is not served by the Go module proxy here)
#   build.sh promtool Prometheus' promtool, from its own module in ../promtool (the alert rules' tests)
# Prints the binaries' folder on its last line. Progress goes to stderr.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"

if [ "${1:-}" = checkov ]; then
  # A venv cannot be moved once made, so it is made in place and marked complete last.
  command -v python3 >/dev/null || { echo "build.sh: no python3 on PATH; checkov needs Python 3.9 or newer" >&2; exit 1; }
  requirements="$here/../checkov/requirements.txt"
  key=$(cat "$requirements" "$here/build.sh" | sha256sum | cut -c1-16)
  out="${PORTCULLIS_CACHE:-$HOME/.cache/portcullis}/checkov-$key"
  if [ ! -e "$out/.complete" ]; then
    echo "build.sh: installing checkov from PyPI into $out (about a minute)" >&2
    rm -rf "$out"
    python3 -m venv "$out" >&2
    "$out/bin/pip" install --quiet --disable-pip-version-check -r "$requirements" >&2 || { echo "build.sh: pip install of checkov failed" >&2; exit 1; }
    touch "$out/.complete"
  fi
  echo "$out/bin"
  exit 0
fi

command -v go >/dev/null || { echo "build.sh: no Go toolchain on PATH; install Go 1.26 to build the control plane" >&2; exit 1; }

set_name=${1:-controlplane}
if [ -n "${2:-}" ]; then
  # An older Kubernetes than go.mod's: its own module, so neither version's go.sum moves the other's.
  [ "$set_name" = controlplane ] && [ -f "$here/versions/$2/go.mod" ] || { echo "build.sh: no module for Kubernetes '$2' in versions/ (only the control plane has older versions)" >&2; exit 2; }
  cd "$here/versions/$2"
  set_name="controlplane-$2"
fi
# `require k8s.io/kubernetes vX` in a block or on a line of its own (go mod tidy's form for a lone one).
kube_version=$(awk '$1 == "k8s.io/kubernetes" { print $2; exit } $1 == "require" && $2 == "k8s.io/kubernetes" { print $3; exit }' go.mod)
[ -n "$kube_version" ] || { echo "build.sh: no k8s.io/kubernetes version in $PWD/go.mod" >&2; exit 1; }
case "$set_name" in
  controlplane) bins=(etcd kube-apiserver kube-controller-manager kubectl) ;;
  controlplane-*) bins=(kube-apiserver kube-controller-manager kubectl) ;;
  node) bins=(kube-scheduler kube-proxy kubelet) ;;
  helm) bins=(helm); cd "$here/../helm" ;;
  promtool) bins=(promtool); cd "$here/../promtool" ;;
  *) echo "build.sh: unknown set '$set_name' (controlplane, node, helm, checkov or promtool)" >&2; exit 2 ;;
esac
key=$(cat go.mod go.sum "$here/build.sh" | sha256sum | cut -c1-16)
out="${PORTCULLIS_CACHE:-$HOME/.cache/portcullis}/$set_name-$key"

missing=0
for b in "${bins[@]}"; do [ -x "$out/$b" ] || missing=1; done
if [ "$missing" = 0 ]; then echo "$out"; exit 0; fi

mkdir -p "$out.partial"
minor=$(echo "$kube_version" | cut -d. -f2)
ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$kube_version -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean"
declare -A pkg=(
  [kube-apiserver]=k8s.io/kubernetes/cmd/kube-apiserver
  [kube-controller-manager]=k8s.io/kubernetes/cmd/kube-controller-manager
  [kubectl]=k8s.io/kubernetes/cmd/kubectl
  [etcd]=go.etcd.io/etcd/server/v3
  [kubelet]=k8s.io/kubernetes/cmd/kubelet
  [kube-proxy]=k8s.io/kubernetes/cmd/kube-proxy
  [kube-scheduler]=k8s.io/kubernetes/cmd/kube-scheduler
  [helm]=helm.sh/helm/v4/cmd/helm
  [promtool]=github.com/prometheus/prometheus/cmd/promtool
)
echo "build.sh: building the $set_name programs ($kube_version) into $out; the first build takes many minutes" >&2
go mod download >&2
start=$SECONDS
for b in "${bins[@]}"; do
  [ -x "$out.partial/$b" ] && continue
  echo "build.sh: [$((SECONDS - start))s] go build $b ..." >&2
  # A heartbeat so a long cold build is not mistaken for a hang.
  ( while sleep 60; do echo "build.sh: [$((SECONDS - start))s] still building $b" >&2; done ) &
  beat=$!
  if ! CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$out.partial/$b" "${pkg[$b]}" >&2; then
    kill $beat 2>/dev/null; echo "build.sh: go build $b failed" >&2; exit 1
  fi
  kill $beat 2>/dev/null || true
done
echo "build.sh: [$((SECONDS - start))s] done" >&2
rm -rf "$out" && mv "$out.partial" "$out"
echo "$out"
