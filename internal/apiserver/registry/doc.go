// Package registry describes every resource the API server serves: its
// names as discovery shows them, and the strategy applied to its writes.
//
// A Resource is data plus small functions: Default (upstream's defaulting),
// PrepareForCreate/PrepareForUpdate (what clients may not set), Validate
// and ValidateUpdate (upstream's validation, with its field paths and
// messages, because kubectl prints them), Fields (field selectors), Table
// (the columns of `kubectl get`) and Scale (the /scale subresource). The
// API server applies them generically; nothing here does I/O.
//
// The list of resources is static: All() in registry.go concatenates one
// function per API group (core.go, apps.go, batch.go, misc.go, rbac.go).
// Adding a resource means adding an entry there and the strategy beside it.
//
// Tests render tables for representative objects into golden files under
// testdata; run `go test ./internal/apiserver/registry -update` after an
// intended change of columns.
package registry
