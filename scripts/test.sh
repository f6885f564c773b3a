#!/usr/bin/env bash
# The full test suite. Needs Go and kubectl (tests drive /usr/bin/kubectl,
# or $KUBECTL). Go modules are fetched by the go tool itself.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v "${KUBECTL:-/usr/bin/kubectl}" >/dev/null 2>&1; then
  echo "kubectl not found at ${KUBECTL:-/usr/bin/kubectl}: the end-to-end tests drive a real kubectl" >&2
  exit 1
fi
go vet ./...
go test -count=1 -timeout 60m ./...
