#!/usr/bin/env bash
# critest (the CRI validation suite of sigs.k8s.io/cri-tools) against
# rudder's runtime, alone on a socket in a temporary directory.
#
#   sudo scripts/critest.sh                     # the whole suite, with this host's exceptions
#   sudo scripts/critest.sh -ginkgo.focus=Image # extra arguments go to critest
#
# It builds crictl and critest into $(go env GOPATH)/bin when missing
# (CRI_TOOLS_VERSION, from the Go module proxy), builds rudder and
# scripts/testimages, serves the images critest asks for under their real
# names through a loopback HTTPS proxy (see scripts/testimages), starts
# `rudder runtime` with HTTPS_PROXY and SSL_CERT_FILE pointing at it,
# runs critest, writes the summary to $CRITEST_OUT (default
# /tmp/critest-summary.txt) and exits non-zero on any failure. Every
# skip below is one this host or this network forces; docs/critest.md
# gives the reasons. Needs root, runc, busybox-static.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd)

CRI_TOOLS_VERSION=${CRI_TOOLS_VERSION:-v1.37.0}
GOBIN_DIR=$(go env GOBIN); GOBIN_DIR=${GOBIN_DIR:-$(go env GOPATH)/bin}
CRITEST=$GOBIN_DIR/critest
CRICTL=$GOBIN_DIR/crictl
OUT=${CRITEST_OUT:-/tmp/critest-summary.txt}

if [ "$(id -u)" != 0 ]; then
  echo "critest.sh: needs root (the runtime creates namespaces, cgroups and mounts)" >&2
  exit 1
fi
# critest's HostIpc specs make shared memory segments (ipcmk) in what they
# take for the host's IPC namespace and never remove them. Run the runtime
# and critest in an IPC namespace of their own, which takes the segments
# with it when the run ends (and leaves other users' segments alone).
if [ -z "${CRITEST_IPC_NS:-}" ]; then
  CRITEST_IPC_NS=1 exec unshare --ipc "$0" "$@"
fi
for t in runc /bin/busybox; do
  command -v "$t" >/dev/null 2>&1 || { echo "critest.sh: $t is missing (apt-get install runc busybox-static)" >&2; exit 1; }
done

# critest is a Ginkgo test binary (go test -c of cmd/critest), built in a
# scratch module that requires cri-tools at the pinned version.
build_cri_tools() {
  local stamp=$GOBIN_DIR/.cri-tools-version
  if [ -x "$CRITEST" ] && [ -x "$CRICTL" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$CRI_TOOLS_VERSION" ]; then
    return
  fi
  echo "building crictl and critest $CRI_TOOLS_VERSION into $GOBIN_DIR"
  local mod; mod=$(mktemp -d)
  (
    cd "$mod"
    printf 'module scratch/critools\n\ngo 1.26\n' > go.mod
    printf '//go:build tools\n\npackage tools\n\nimport (\n\t_ "sigs.k8s.io/cri-tools/cmd/crictl"\n\t_ "sigs.k8s.io/cri-tools/cmd/critest"\n)\n' > tools.go
    go get "sigs.k8s.io/cri-tools@$CRI_TOOLS_VERSION" >/dev/null
    go mod tidy >/dev/null 2>&1
    mkdir -p "$GOBIN_DIR"
    go test -c -o "$CRITEST" -ldflags "-X sigs.k8s.io/cri-tools/pkg/version.Version=$CRI_TOOLS_VERSION" sigs.k8s.io/cri-tools/cmd/critest
    go build -o "$CRICTL" -ldflags "-X sigs.k8s.io/cri-tools/pkg/version.Version=$CRI_TOOLS_VERSION" sigs.k8s.io/cri-tools/cmd/crictl
  )
  rm -rf "$mod"
  echo "$CRI_TOOLS_VERSION" >"$stamp"
}
build_cri_tools

TMP=$(mktemp -d /tmp/critest.XXXXXX)
RUDDER=${RUDDER:-$TMP/rudder}
if [ ! -x "$RUDDER" ]; then
  go build -o "$RUDDER" ./cmd/rudder
fi
CGO_ENABLED=0 go build -o "$TMP/testimages" ./scripts/testimages

SOCK=$TMP/cri.sock
RT_PID=""; IMG_PID=""
cleanup() {
  set +e
  if [ -n "$RT_PID" ] && kill -0 "$RT_PID" 2>/dev/null; then
    # Whatever a failed spec left: remove it through the CRI, so the
    # runtime unmounts and deletes it as it would for a kubelet.
    "$CRICTL" --runtime-endpoint "unix://$SOCK" rmp -fa >/dev/null 2>&1
    "$CRICTL" --runtime-endpoint "unix://$SOCK" rm -fa >/dev/null 2>&1
    kill -TERM "$RT_PID"; wait "$RT_PID" 2>/dev/null
  fi
  [ -n "$IMG_PID" ] && kill -TERM "$IMG_PID" 2>/dev/null && wait "$IMG_PID" 2>/dev/null
  # Rootfs mounts of the image store, if any remain, before removing.
  grep -o " $TMP/[^ ]*" /proc/self/mounts | sort -r | while read -r m; do umount -l "$m"; done
  # The runtime's run directory: /run/rudder/<first 12 hex of sha256(root)>.
  rm -rf "/run/rudder/$(printf %s "$TMP/root" | sha256sum | cut -c1-12)"
  rm -rf "$TMP"
}
trap cleanup EXIT

"$TMP/testimages" serve --state "$TMP" >"$TMP/testimages.log" 2>&1 &
IMG_PID=$!
for _ in $(seq 1 600); do [ -f "$TMP/proxy" ] && break; kill -0 "$IMG_PID" 2>/dev/null || break; sleep 0.1; done
[ -f "$TMP/proxy" ] || { echo "critest.sh: testimages did not start:"; cat "$TMP/testimages.log"; exit 1; } >&2
PROXY=$(cat "$TMP/proxy")

HTTPS_PROXY="http://$PROXY" SSL_CERT_FILE="$TMP/ca.pem" NO_PROXY="" \
  "$RUDDER" runtime --root "$TMP/root" --socket "$SOCK" >"$TMP/runtime.log" 2>&1 &
RT_PID=$!
for _ in $(seq 1 300); do [ -S "$SOCK" ] && break; kill -0 "$RT_PID" 2>/dev/null || break; sleep 0.1; done
[ -S "$SOCK" ] || { echo "critest.sh: the runtime did not start:"; cat "$TMP/runtime.log"; exit 1; } >&2

# Exceptions this host or network forces (docs/critest.md says why).
SKIPS=(
  # pinned to upstream's manifest digest: no image built here can have it
  'public image with digest should be pulled and removed'
  # masks /bin/ls and expects sh to exec it; Debian's busybox-static sh
  # runs its applets in-process, so no image built here can show the mask
  'runtime should support MaskedPaths'
)
SKIP_RE=$(IFS='|'; echo "${SKIPS[*]}")

set +e
"$CRITEST" -runtime-endpoint "unix://$SOCK" -image-endpoint "unix://$SOCK" \
  -ginkgo.skip="$SKIP_RE" -ginkgo.no-color -ginkgo.timeout=60m -ginkgo.json-report="$TMP/report.json" \
  "$@" 2>&1 | tee "$TMP/critest.log"
rc=${PIPESTATUS[0]}
set -e

{
  echo "critest $CRI_TOOLS_VERSION against rudder runtime ($(date -u +%FT%TZ))"
  grep -aE '^Ran [0-9]+ of [0-9]+ Specs|Passed \| [0-9]+ Failed' "$TMP/critest.log"
  echo "failures:"
  sed -n '/^Summarizing [0-9]* Failure/,/^Ran /p' "$TMP/critest.log" | grep -aE '^\s*\[FAIL\]' | awk '!seen[$0]++' || echo "  none"
  if command -v jq >/dev/null 2>&1 && [ -f "$TMP/report.json" ]; then
    echo "skipped (by this script's list or by critest itself, with its reason):"
    jq -r '.[].SpecReports[] | select(.State == "skipped" and .LeafNodeType == "It")
      | "  \((.ContainerHierarchyTexts | join(" ")) + " " + .LeafNodeText): \(.Failure.Message // "not selected (-ginkgo.skip/-ginkgo.focus)" | split("\n")[0])"' \
      "$TMP/report.json" | sort
  fi
} | tee "$OUT"
cp "$TMP/runtime.log" "${OUT%.txt}-runtime.log" 2>/dev/null || true
exit "$rc"
