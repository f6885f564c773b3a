#!/usr/bin/env bash
# The allocation guard: runs the hot paths' benchmarks with a fixed number
# of iterations and -benchmem, and fails when a benchmark's allocs/op grew
# more than 20 % over docs/allocs-baseline.txt (B/op is shown, not judged).
# Allocation counts do not depend on the machine's load, so this does not
# flake the way timings do. See docs/benchmarks.md, "Allocation guard".
#
#   scripts/allocs.sh            check against the baseline
#   scripts/allocs.sh --update   rewrite the baseline (commit it, saying why)
set -euo pipefail
cd "$(dirname "$0")/.."
update=()
if [ "${1:-}" = "--update" ]; then update=(--update); fi
out=$(mktemp)
trap 'rm -f "$out"' EXIT
# bench PACKAGE REGEX ITERATIONS
bench() {
  echo "== $1" >>"$out"
  if ! go test "$1" -run '^$' -bench "$2" -benchtime="$3x" -benchmem -count=1 -cpu=2 >>"$out" 2>&1; then
    cat "$out" >&2
    echo "allocs.sh: the benchmarks of $1 failed" >&2
    exit 1
  fi
}
# API server write path (create, update: the whole pipeline as a dry run;
# a kubelet's status update through field management), LIST from the
# watch cache, and one event's dispatch to 100 watchers.
bench ./internal/apiserver/ '^BenchmarkManagedFieldsOverhead$/^(create|update)$/^with$' 200
bench ./internal/apiserver/ '^(BenchmarkTrackStatusUpdate|BenchmarkWatchCacheList|BenchmarkWatchCacheDispatch)$' 200
# Scheduling one pod: Filter and Score over 5,000 nodes, and assuming it.
bench ./internal/scheduler/plugins/ '^BenchmarkFitFilterScore$' 20
bench ./internal/scheduler/ '^BenchmarkAssume$' 200
# One ReplicaSet reconcile's counting of its 10,000 pods.
bench ./internal/controllers/replicaset/ '^BenchmarkRecountMemo$' 20
go run ./scripts/allocs "${update[@]}" docs/allocs-baseline.txt <"$out"
