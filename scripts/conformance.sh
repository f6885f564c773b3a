#!/usr/bin/env bash
# The Kubernetes conformance suite (the [Conformance] tests of upstream's
# e2e.test) against rudder, with a JUnit file and a summary per SIG.
#
#   scripts/conformance.sh                                  # fresh cluster, every [Conformance] test
#   scripts/conformance.sh --focus 'sig-api-machinery'      # only the matching [Conformance] tests
#   scripts/conformance.sh --kubeconfig K --report-dir D    # against an existing cluster
#   scripts/conformance.sh --build-only                     # build and cache e2e.test and ginkgo
#
# Options:
#   --kubeconfig K   run against the cluster of K instead of starting one
#   --focus REGEX    narrow the run to [Conformance] tests that also match REGEX
#   --skip REGEX     leave out tests matching REGEX
#   --report-dir D   where junit_*.xml, summary.txt and the logs go
#                    (default /tmp/rudder-conformance/<date>)
#   --nodes P        parallel ginkgo processes for the parallel part (default 2);
#                    the [Serial] tests always run afterwards, one at a time
#   --real-nodes     start `rudder up --nodes 2` (real nodes: containers, pod
#                    network, Services, DNS) instead of simulated nodes, with
#                    the test images imported into every node (see below)
#   --build-only     build (or find in the cache) the binaries and stop
#   --dry-run        list the tests that would run, run none
#
# Environment: K8S_VERSION (default: from k8s.io/api in go.mod, v0.X.Y ->
# v1.X.Y), RUDDER_CONFORMANCE_CACHE (default
# ~/.cache/rudder/conformance/$K8S_VERSION), BUILD_GOFLAGS (extra go flags
# for the e2e.test build, e.g. -p=1 on a loaded machine).
#
# The binaries: e2e.test and ginkgo are built from the Go module proxy in a
# scratch module in the cache directory (never inside this repository): it
# requires k8s.io/kubernetes at K8S_VERSION and replaces each staging module
# that k8s.io/kubernetes's own go.mod points at ./staging with the published
# k8s.io/<name> at the matching v0.X.Y. e2e.test is `go test -c` of
# k8s.io/kubernetes/test/e2e, as upstream's hack/ builds it; ginkgo is the
# CLI of the github.com/onsi/ginkgo/v2 version that k8s.io/kubernetes
# requires. kubectl (k8s.io/kubernetes/cmd/kubectl) of the same version is built
# too: the sig-cli tests drive it. All three are kept in the cache and
# rebuilt only when missing. The
# first build takes long on a small machine (see docs/conformance.md).
#
# The test images (--real-nodes): scripts/testimages builds, offline, the
# images the e2e suite uses most (agnhost from k8s.io/kubernetes's own
# source in the scratch module, static; busybox from /bin/busybox; pause,
# nginx, httpd, nonewprivs, nonroot) under upstream's own names and tags
# (registry.k8s.io/e2e-test-images/agnhost:2.63.0, ...) into one
# docker-archive, and `rudder images import` puts it into every node's
# store before the run. The e2e pods' pull policy for a tagged image is
# IfNotPresent, so a node never pulls them and no --kube-test-repo-list is
# needed. An image the set lacks fails its test with ErrImagePull (no
# registry is reachable).
#
# The cluster: without --kubeconfig the script starts
# `rudder server --simulated-nodes 2` on loopback with a temporary data
# directory (start_cluster below). Simulated nodes register, hold leases
# and report pods Running without running any container, so this cluster
# passes the API-only tests and the tests that need pods only to be
# Running; tests that exec into pods, read their logs or send traffic
# between them need real nodes: --real-nodes starts `rudder up --nodes 2`
# instead (each node a `rudder agent` in its own network namespace on a
# private bridge), in start_cluster, the one place that says which cluster.
#
# Network: as root the self-started cluster and the suite run in a network
# namespace of their own with only loopback, so no route out; the real
# nodes' bridge and namespaces are made inside it. The API server is on
# 127.0.0.1 (and, with real nodes, on the bridge's first address).
#
# The last line of output is `N passed, N failed, N skipped`; the exit
# status is non-zero when any test failed.
set -euo pipefail
SELF=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")

usage() { sed -n '2,/^set -euo/p' "$SELF" | sed '$d' | sed 's/^# \{0,1\}//'; }

ORIG_ARGS=("$@")
KUBECONFIG_IN=""
FOCUS=""
SKIP=""
REPORT_DIR=""
NODES=2
BUILD_ONLY=0
DRY_RUN=0
REAL_NODES=0
while [ $# -gt 0 ]; do
  case "$1" in
    --kubeconfig|--focus|--skip|--report-dir|--nodes)
      [ $# -ge 2 ] || { echo "conformance.sh: $1 needs a value" >&2; exit 2; }
      case "$1" in
        --kubeconfig) KUBECONFIG_IN=$2 ;;
        --focus) FOCUS=$2 ;;
        --skip) SKIP=$2 ;;
        --report-dir) REPORT_DIR=$2 ;;
        --nodes) NODES=$2 ;;
      esac
      shift 2 ;;
    --kubeconfig=*) KUBECONFIG_IN=${1#*=}; shift ;;
    --focus=*) FOCUS=${1#*=}; shift ;;
    --skip=*) SKIP=${1#*=}; shift ;;
    --report-dir=*) REPORT_DIR=${1#*=}; shift ;;
    --nodes=*) NODES=${1#*=}; shift ;;
    --build-only) BUILD_ONLY=1; shift ;;
    --real-nodes) REAL_NODES=1; shift ;;
    --dry-run) DRY_RUN=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "conformance.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
case "$NODES" in
  ''|*[!0-9]*|0) echo "conformance.sh: --nodes wants a positive number, got '$NODES'" >&2; exit 2 ;;
esac
if [ -n "$KUBECONFIG_IN" ] && [ ! -r "$KUBECONFIG_IN" ]; then
  echo "conformance.sh: cannot read kubeconfig $KUBECONFIG_IN" >&2; exit 2
fi
for re in "$FOCUS" "$SKIP"; do
  # grep -E is close enough to Go's RE2 to catch unbalanced brackets early
  # (exit 2 is a bad pattern; 1 is only "no match").
  [ -n "$re" ] || continue
  rc=0; grep -E -- "$re" </dev/null >/dev/null 2>&1 || rc=$?
  if [ $rc -eq 2 ]; then
    echo "conformance.sh: bad regular expression '$re'" >&2; exit 2
  fi
done
# Paths given relative to where the script was started.
if [ -n "$KUBECONFIG_IN" ]; then
  KUBECONFIG_IN=$(cd "$(dirname "$KUBECONFIG_IN")" && pwd)/$(basename "$KUBECONFIG_IN")
fi
if [ -n "$REPORT_DIR" ]; then
  mkdir -p "$REPORT_DIR" 2>/dev/null || { echo "conformance.sh: cannot create report dir $REPORT_DIR" >&2; exit 2; }
  REPORT_DIR=$(cd "$REPORT_DIR" && pwd)
fi
if [ -n "${CONFORMANCE_PARSE_ONLY:-}" ]; then
  # For scripts/conformance_test.sh: print what was parsed and stop.
  printf 'kubeconfig=%s\nfocus=%s\nskip=%s\nreport-dir=%s\nnodes=%s\nbuild-only=%s\ndry-run=%s\nreal-nodes=%s\n' \
    "$KUBECONFIG_IN" "$FOCUS" "$SKIP" "$REPORT_DIR" "$NODES" "$BUILD_ONLY" "$DRY_RUN" "$REAL_NODES"
  exit 0
fi
cd "$(dirname "$SELF")/.."

API_VERSION=$(awk '$1=="k8s.io/api"{print $2; exit}' go.mod)
K8S_VERSION=${K8S_VERSION:-v1.${API_VERSION#v0.}}
STAGING_VERSION=v0.${K8S_VERSION#v1.}
CACHE=${RUDDER_CONFORMANCE_CACHE:-$HOME/.cache/rudder/conformance/$K8S_VERSION}
E2E=$CACHE/e2e.test
GINKGO=$CACHE/ginkgo
KUBECTL=$CACHE/kubectl
AGNHOST=$CACHE/agnhost

log() { echo "conformance.sh: $*" >&2; }

# build_binaries makes $E2E and $GINKGO when either is missing.
build_binaries() {
  # A kubectl without its version stamped (an earlier script's) is rebuilt.
  # (Output captured first: with pipefail, grep -q closing the pipe early
  # made kubectl die of SIGPIPE and every run rebuild it.)
  if [ -x "$KUBECTL" ] && ! [[ "$("$KUBECTL" version --client 2>/dev/null)" == *"$K8S_VERSION"* ]]; then
    rm -f "$KUBECTL"
  fi
  if [ -x "$E2E" ] && [ -x "$GINKGO" ] && [ -x "$KUBECTL" ] &&
    { [ "$REAL_NODES" = 0 ] || [ -x "$AGNHOST" ]; }; then
    return 0
  fi
  local src=$CACHE/src
  mkdir -p "$src"
  log "building what is missing of e2e.test, ginkgo, kubectl for $K8S_VERSION in $src (e2e.test: long)"
  local start=$SECONDS
  (
    cd "$src"
    # The scratch module's go.mod: k8s.io/kubernetes plus a replace for each
    # of its staging modules, read from its own go.mod.
    local kmod
    kmod=$(GOFLAGS=-mod=mod go mod download -json "k8s.io/kubernetes@$K8S_VERSION" |
      sed -n 's/^\t"GoMod": "\(.*\)",$/\1/p')
    [ -r "$kmod" ] || { log "could not download k8s.io/kubernetes@$K8S_VERSION's go.mod"; exit 1; }
    {
      echo "module rudder.local/conformance-build"
      echo
      sed -n 's/^go \(.*\)$/go \1/p' "$kmod" | head -1
      echo
      echo "require k8s.io/kubernetes $K8S_VERSION"
      echo
      echo "replace ("
      sed -n 's|^\t\(k8s.io/[^ ]*\) => ./staging/src/.*$|\t\1 => \1 '"$STAGING_VERSION"'|p' "$kmod"
      echo ")"
    } >go.mod
    export GOFLAGS="-mod=mod -buildvcs=false ${BUILD_GOFLAGS:-}"
    if [ ! -x "$E2E" ]; then
      nice -n 10 go test -c -o "$E2E.tmp" k8s.io/kubernetes/test/e2e
      mv "$E2E.tmp" "$E2E"
    fi
    # The ginkgo CLI at the version the module graph selected for e2e.test.
    if [ ! -x "$GINKGO" ]; then
      nice -n 10 go build -o "$GINKGO.tmp" github.com/onsi/ginkgo/v2/ginkgo
      mv "$GINKGO.tmp" "$GINKGO"
    fi
    # kubectl of the same version: the sig-cli tests drive it, and a
    # skewed kubectl fails them for reasons that are not the server's.
    # With the version stamped as upstream's hack/lib/version.sh does: the
    # "Kubectl version" test parses it.
    if [ "$REAL_NODES" = 1 ] && [ ! -x "$AGNHOST" ]; then
      # agnhost for the test images: static, it runs in an image with no libc.
      CGO_ENABLED=0 nice -n 10 go build -ldflags "-s -w" -o "$AGNHOST.tmp" k8s.io/kubernetes/test/images/agnhost
      mv "$AGNHOST.tmp" "$AGNHOST"
    fi
    if [ ! -x "$KUBECTL" ]; then
      local minor=${K8S_VERSION#v1.}; minor=${minor%%.*} ldflags=""
      for pkg in k8s.io/client-go/pkg/version k8s.io/component-base/version; do
        ldflags+=" -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
      done
      nice -n 10 go build -ldflags "$ldflags" -o "$KUBECTL.tmp" k8s.io/kubernetes/cmd/kubectl
      mv "$KUBECTL.tmp" "$KUBECTL"
    fi
  )
  log "built in $((SECONDS - start))s: $E2E, $GINKGO, $KUBECTL"
}

build_binaries
if [ "$BUILD_ONLY" = 1 ]; then
  exit 0
fi

RUN_DIR=${CONFORMANCE_RUN_DIR:-}
if [ -z "$RUN_DIR" ]; then
  RUN_DIR=$(mktemp -d /tmp/rudder-conformance-run.XXXXXX)
  export CONFORMANCE_RUN_DIR=$RUN_DIR
fi
REPORT_DIR=${REPORT_DIR:-/tmp/rudder-conformance/$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$REPORT_DIR"

# Everything that needs the module proxy happens before the run may move
# into a network namespace: rudder itself and the report tool.
if [ -z "$KUBECONFIG_IN" ] && [ ! -x "$RUN_DIR/rudder" ]; then
  log "building rudder into $RUN_DIR"
  nice -n 10 go build -o "$RUN_DIR/rudder" ./cmd/rudder
fi
[ -x "$RUN_DIR/conformancereport" ] || nice -n 10 go build -o "$RUN_DIR/conformancereport" ./scripts/conformancereport
if [ -z "$KUBECONFIG_IN" ] && [ "$REAL_NODES" = 1 ] && [ ! -s "$RUN_DIR/images.tar" ]; then
  log "building the test images into $RUN_DIR/images.tar"
  CGO_ENABLED=0 nice -n 10 go build -o "$RUN_DIR/testimages" ./scripts/testimages
  "$RUN_DIR/testimages" archive --set conformance --agnhost "$AGNHOST" --out "$RUN_DIR/images.tar"
fi

# A self-started cluster runs, with the suite, in a network namespace of
# its own that has only loopback (so no route out), when this is root.
if [ -z "$KUBECONFIG_IN" ] && [ -z "${CONFORMANCE_IN_NETNS:-}" ] && [ "$(id -u)" = 0 ] &&
  command -v unshare >/dev/null 2>&1 && command -v ip >/dev/null 2>&1; then
  log "entering a network namespace with only loopback"
  args=(--report-dir "$REPORT_DIR" --nodes "$NODES")
  [ -n "$FOCUS" ] && args+=(--focus "$FOCUS")
  [ -n "$SKIP" ] && args+=(--skip "$SKIP")
  [ "$DRY_RUN" = 1 ] && args+=(--dry-run)
  [ "$REAL_NODES" = 1 ] && args+=(--real-nodes)
  exec env CONFORMANCE_IN_NETNS=1 unshare --net -- bash -c 'ip link set lo up && exec "$0" "$@"' "$SELF" "${args[@]}"
fi

CLUSTER_PID=""
cleanup() {
  local rc=$?
  if [ -n "$CLUSTER_PID" ] && kill -0 "$CLUSTER_PID" 2>/dev/null; then
    kill "$CLUSTER_PID" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$CLUSTER_PID" 2>/dev/null || break; sleep 0.2; done
    kill -9 "$CLUSTER_PID" 2>/dev/null || true
  fi
  if [ -n "${CONFORMANCE_RUN_DIR:-}" ] && [ -z "${KEEP_RUN_DIR:-}" ]; then
    rm -rf "$RUN_DIR"
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# start_cluster starts the cluster the suite runs against and sets
# KUBECONFIG_IN. It is the one place that says which cluster that is:
# today `rudder server --simulated-nodes 2` (see the header comment).
start_cluster() {
  local data=$RUN_DIR/data
  mkdir -p "$data"
  if [ "$REAL_NODES" = 1 ]; then
    log "starting rudder up --nodes 2 (log: $REPORT_DIR/rudder.log)"
    "$RUN_DIR/rudder" up --nodes 2 --data-dir "$data" >"$REPORT_DIR/rudder.log" 2>&1 &
  else
    log "starting rudder server --simulated-nodes 2 (log: $REPORT_DIR/rudder.log)"
    "$RUN_DIR/rudder" server --simulated-nodes 2 --data-dir "$data" --https-port 0 \
      >"$REPORT_DIR/rudder.log" 2>&1 &
  fi
  CLUSTER_PID=$!
  KUBECONFIG_IN=$data/admin.kubeconfig
  local deadline=$((SECONDS + 120))
  until [ -r "$KUBECONFIG_IN" ] && "$KUBECTL" --kubeconfig "$KUBECONFIG_IN" get --raw /readyz >/dev/null 2>&1; do
    kill -0 "$CLUSTER_PID" 2>/dev/null || { log "rudder server exited; see $REPORT_DIR/rudder.log"; exit 1; }
    [ $SECONDS -lt $deadline ] || { log "rudder server not ready after 120s"; exit 1; }
    sleep 1
  done
  if [ "$REAL_NODES" = 1 ]; then
    # The nodes register a little after the API answers.
    until [ "$("$KUBECTL" --kubeconfig "$KUBECONFIG_IN" get nodes -o name 2>/dev/null | wc -l)" -ge 2 ]; do
      kill -0 "$CLUSTER_PID" 2>/dev/null || { log "rudder up exited; see $REPORT_DIR/rudder.log"; exit 1; }
      [ $SECONDS -lt $deadline ] || { log "the nodes did not register within 120s"; exit 1; }
      sleep 1
    done
    # Every node's store, before any test pod asks for an image.
    log "importing the test images into every node"
    "$RUN_DIR/rudder" images import "$RUN_DIR/images.tar" --data-dir "$data" >"$REPORT_DIR/images-import.log" 2>&1 ||
      { log "rudder images import failed; see $REPORT_DIR/images-import.log"; exit 1; }
  fi
  "$KUBECTL" --kubeconfig "$KUBECONFIG_IN" wait --for=condition=Ready node --all --timeout=120s >/dev/null
}

if [ -z "$KUBECONFIG_IN" ] && [ "$DRY_RUN" = 0 ]; then
  start_cluster
fi

# ginkgo's --focus flags are ORed; a user's focus is ANDed with
# [Conformance] by accepting either order of the two in the spec's text.
CONF='\[Conformance\]'
if [ -n "$FOCUS" ]; then
  GFOCUS="$CONF.*($FOCUS)|($FOCUS).*$CONF"
else
  GFOCUS=$CONF
fi
ginkgo_args=(--focus="$GFOCUS" --nodes="$NODES" --timeout=24h --no-color
  --output-dir="$REPORT_DIR" --json-report=report.json --junit-report=junit.xml)
[ -n "$SKIP" ] && ginkgo_args+=(--skip="$SKIP")
if [ "$DRY_RUN" = 1 ]; then
  "$GINKGO" "${ginkgo_args[@]}" --dry-run -v "$E2E" -- --provider=skeleton 2>&1 | grep -F '[Conformance]' || true
  exit 0
fi
e2e_args=(--kubeconfig="$KUBECONFIG_IN"
  --provider=skeleton --report-dir="$REPORT_DIR" --kubectl-path="$KUBECTL")
# No --kube-test-repo-list: with --real-nodes the images are imported
# under upstream's own names (see the header).

log "ginkgo --nodes=$NODES focus $GFOCUS${SKIP:+ skip $SKIP}; report in $REPORT_DIR"
start=$SECONDS
set +e
PATH=$(dirname "$KUBECTL"):$PATH "$GINKGO" "${ginkgo_args[@]}" "$E2E" -- "${e2e_args[@]}" \
  >"$REPORT_DIR/e2e.log" 2>&1
ginkgo_rc=$?
set -e
wall=$((SECONDS - start))
log "ginkgo exited $ginkgo_rc after ${wall}s (log: $REPORT_DIR/e2e.log)"
if [ ! -s "$REPORT_DIR/report.json" ]; then
  tail -30 "$REPORT_DIR/e2e.log" >&2
  log "no report written"
  exit 1
fi
{
  echo "command: scripts/conformance.sh $(printf '%q ' "${ORIG_ARGS[@]}")"
  echo "kubernetes $K8S_VERSION e2e.test, ginkgo --nodes=$NODES, $(date -u +%Y-%m-%dT%H:%MZ)"
} >"$REPORT_DIR/summary.txt"
set +e
"$RUN_DIR/conformancereport" --markdown "$REPORT_DIR/summary.md" "$REPORT_DIR/report.json" >>"$REPORT_DIR/summary.txt"
report_rc=$?
set -e
cat "$REPORT_DIR/summary.txt"
if [ $report_rc -ne 0 ] || [ $ginkgo_rc -ne 0 ]; then
  exit 1
fi
