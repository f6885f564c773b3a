#!/usr/bin/env bash
# The full test suite. Needs Go and kubectl (tests drive /usr/bin/kubectl,
# or $KUBECTL). Go modules are fetched by the go tool itself.
set -euo pipefail
cd "$(dirname "$0")/.."
# The node tests run real containers: runc (the OCI runtime) and
# busybox-static (the binary the tests build their images from), from
# Debian's packages (and containernetworking-plugins). Installed when missing and root; without root those
# tests skip with a message.
need=()
command -v runc >/dev/null 2>&1 || need+=(runc)
[ -x /bin/busybox ] || need+=(busybox-static)
# The pod network's CNI test runs Debian's bridge and host-local plugins.
[ -x /usr/lib/cni/bridge ] || need+=(containernetworking-plugins)
if [ ${#need[@]} -gt 0 ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing ${need[*]}"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
if ! command -v "${KUBECTL:-/usr/bin/kubectl}" >/dev/null 2>&1; then
  echo "kubectl not found at ${KUBECTL:-/usr/bin/kubectl}: the end-to-end tests drive a real kubectl" >&2
  exit 1
fi
# helm 3, for the helm end-to-end test: built once from the module proxy
# (the pinned version is helmVersion in internal/server/e2e_helm_test.go).
HELM_VERSION=$(sed -n 's/^const helmVersion = "\(.*\)"$/\1/p' internal/server/e2e_helm_test.go)
GOBIN_DIR=$(go env GOBIN); GOBIN_DIR=${GOBIN_DIR:-$(go env GOPATH)/bin}
if ! "$GOBIN_DIR/helm" version --short 2>/dev/null | grep -q "^$HELM_VERSION"; then
  (cd "$(mktemp -d)" && go install "helm.sh/helm/v3/cmd/helm@$HELM_VERSION")
fi
export HELM="$GOBIN_DIR/helm"
go vet ./...
# The allocation guard: allocs/op of the hot paths against docs/allocs-baseline.txt.
scripts/allocs.sh
go test -count=1 -timeout 60m ./...
