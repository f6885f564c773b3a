// Command conformancereport turns the JSON report of a ginkgo run of
// upstream's e2e.test (ginkgo --json-report) into the conformance summary
// that scripts/conformance.sh prints and keeps: counts of passed, failed
// and skipped tests, the same per SIG ("[sig-api-machinery]" ...), the
// wall time, and every failing test with the first line of its failure
// message.
//
//	go run ./scripts/conformancereport [--markdown FILE] report.json
//
// A ginkgo report lists every spec of the suite, also those the focus
// filtered out; those are "skipped" with no failure attached and are not
// counted. A spec that ran and skipped itself (e2eskipper: "Only supported
// for providers ...") carries its reason and counts as skipped. Failed,
// panicked, timed-out, interrupted and aborted specs all count as failed.
//
// The last line printed is the plain `N passed, N failed, N skipped`, and
// the exit status is 1 when a test failed (2 when the report is unreadable).
package main
