// Command allocs is the allocation guard's judge: it reads the output of
// `go test -bench ... -benchmem` (as scripts/allocs.sh produces it, each
// package's run preceded by a line "== <package>"), compares every
// benchmark's allocs/op with docs/allocs-baseline.txt, prints a table and
// exits 1 when one grew more than 20 % over its baseline, or when a
// benchmark of the baseline did not run. B/op is reported, not judged:
// bytes move with buffer sizes and Go versions, the count of allocations
// moves when code changes.
//
// Allocations per operation, unlike times, do not depend on the machine's
// load, so the guard does not flake: a benchmark joins it only when its
// allocs/op vary less than 5 % from run to run.
//
//	go run ./scripts/allocs docs/allocs-baseline.txt < bench.out
//	go run ./scripts/allocs --update docs/allocs-baseline.txt < bench.out
//
// --update rewrites the baseline from the run; commit it with the reason.
package main
