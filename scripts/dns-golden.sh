#!/usr/bin/env bash
# Regenerates internal/dns/testdata/golden.txt from CoreDNS's own answers.
#
# Builds a minimal CoreDNS (kubernetes, forward and bind plugins) from its
# Go module in a scratch module outside the repository, then runs
# internal/dns's TestGolden with -coredns: the test starts a real API
# server, creates its fixture objects, runs that CoreDNS against them with
# a kubeadm-style Corefile and writes CoreDNS's answers as the golden
# file; our server is then checked against them in the same run.
#
# Usage: scripts/dns-golden.sh [coredns-version]   (default v1.15.0)
# CI never needs this: the golden file is committed.
set -euo pipefail
version=${1:-v1.15.0}
repo=$(cd "$(dirname "$0")/.." && pwd)
work=${DNS_GOLDEN_WORK:-/tmp/dns-coredns}
mkdir -p "$work"
cd "$work"
cat > main.go <<'GO'
// A minimal CoreDNS build: only the plugins the rudder DNS golden tests use.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/forward"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/log"
)

func init() {
	dnsserver.Directives = []string{"bind", "errors", "log", "cache", "loadbalance", "kubernetes", "forward"}
}

func main() { coremain.Run() }
GO
[ -f go.mod ] || printf 'module dnscoredns\n\ngo 1.26\n' > go.mod
go get "github.com/coredns/coredns@$version"
go mod tidy
go build -o coredns .
cd "$repo"
go test ./internal/dns/ -run '^TestGolden$' -count=1 -args -coredns="$work/coredns"
echo "golden file: internal/dns/testdata/golden.txt"
