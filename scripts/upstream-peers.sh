#!/usr/bin/env bash
# Builds upstream kube-scheduler and kube-controller-manager at the version
# rudder serves, to run them against `rudder server --disable-scheduler
# --controllers=-*` (internal/apiserver's TestUpstreamPeers, issue 17 item 8).
#
#   scripts/upstream-peers.sh [VERSION]    # default v1.36.3; prints the bin dir
#
# The build happens in a scratch module OUTSIDE the repository
# (~/.cache/rudder/upstream/VERSION/src) that requires k8s.io/kubernetes at
# VERSION with its staging modules (k8s.io/*, which k8s.io/kubernetes names
# at v0.0.0) replaced by their published v0.X.Y tags, fetched through the Go
# module proxy. Nothing of it is imported by rudder. The binaries land in
# ~/.cache/rudder/upstream/VERSION/bin and are reused when present. The
# conformance build (~/.cache/rudder/conformance/VERSION/src) uses the same
# go.mod; when it exists its go.sum is reused, and both share the Go build
# cache. Builds run under `nice -n 10`.
set -euo pipefail

VERSION=${1:-v1.36.3}
STAGING=v0.${VERSION#v1.}
ROOT=${RUDDER_UPSTREAM_DIR:-$HOME/.cache/rudder/upstream/$VERSION}
SRC=$ROOT/src
BIN=$ROOT/bin
mkdir -p "$SRC" "$BIN"

if [ -x "$BIN/kube-scheduler" ] && [ -x "$BIN/kube-controller-manager" ]; then
  echo "$BIN"
  exit 0
fi

staging=(api apiextensions-apiserver apimachinery apiserver cli-runtime client-go
  cloud-provider cluster-bootstrap code-generator component-base component-helpers
  controller-manager cri-api cri-client cri-streaming csi-translation-lib
  dynamic-resource-allocation endpointslice externaljwt kms kube-aggregator
  kube-controller-manager kube-proxy kube-scheduler kubectl kubelet metrics
  mount-utils pod-security-admission sample-apiserver sample-cli-plugin
  sample-controller streaming)

if [ ! -f "$SRC/go.mod" ]; then
  {
    echo "module rudder.local/upstream-peers"
    echo
    echo "go 1.26.0"
    echo
    echo "require k8s.io/kubernetes $VERSION"
    echo
    echo "replace ("
    for m in "${staging[@]}"; do echo "	k8s.io/$m => k8s.io/$m $STAGING"; done
    echo ")"
  } >"$SRC/go.mod"
  conf=$HOME/.cache/rudder/conformance/$VERSION/src/go.sum
  if [ -f "$conf" ]; then cp "$conf" "$SRC/go.sum"; fi
  # A file importing the two commands keeps `go mod download` honest.
  cat >"$SRC/tools.go" <<'GO'
//go:build tools

package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
)
GO
fi

cd "$SRC"
export GOFLAGS=-mod=mod
for cmd in kube-scheduler kube-controller-manager; do
  if [ ! -x "$BIN/$cmd" ]; then
    nice -n 10 go build -trimpath -o "$BIN/$cmd.tmp" "k8s.io/kubernetes/cmd/$cmd"
    mv "$BIN/$cmd.tmp" "$BIN/$cmd"
  fi
done
echo "$BIN"
