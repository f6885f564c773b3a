// Package apiserver is rudder's Kubernetes API server: the HTTP handlers of
// every REST verb over storage, with one watch cache per resource.
//
// # A request's path
//
//	ServeHTTP
//	  parseRequestInfo         path + method → verb, group, version, resource, namespace, name
//	  authenticate             auth.Authenticator (x509, tokens) → 401
//	  impersonate              Impersonate-* headers, each checked by the authorizer → 403
//	  authorize                auth.Authorizer (system:masters, RBAC) → 403
//	  route                    resource handler, subresource, or discovery/health/metrics/openapi
//	    get / list / watch     served from the watch cache (see below)
//	    create                 decode → defaults → managedFields → mutating admission → metadata,
//	                           PrepareForCreate → validation → validating admission → etcd create
//	                           (409 if it exists)
//	    update / patch         guaranteedUpdate: read, apply the change, record managedFields, keep
//	                           system metadata and the spec/status split, bump generation, admission,
//	                           validation, then compare-and-swap on the read revision, retrying
//	                           unless the client pinned a resourceVersion (then 409)
//	    apply                  a patch (application/apply-patch+yaml) merged by the field manager,
//	                           409 on fields another manager owns; creates a missing object
//	    delete                 graceful (pods on a node), finalizers and propagation, or removal
//
// Every client write records who set which field in metadata.managedFields
// (managedfields.go), and server-side apply builds on those records
// (apply.go).
//
// Per-kind behaviour — defaults, validation, field selectors, table
// columns — lives in the registry package; this package applies it
// generically. Every error leaves through toStatusError, the one place
// storage error classes become HTTP codes and metav1.Status.
//
// # The watch cache
//
// Each resource has one etcd watch feeding a watchCache: the current
// objects in a btree ordered by key, and a ring of recent events. Lists
// with resourceVersion "0", or N, are served from it directly; a list with
// "" (a consistent read) first learns etcd's current revision and waits
// for the cache to reach it, asking etcd for a progress notification so an
// idle resource catches up at once. Only paginated and Exact lists read
// etcd.
//
// Watchers do not get events pushed to them. Each one reads the ring from
// its position on its own goroutine, woken by a channel the cache closes
// whenever events arrive; dispatching an event therefore costs the same for
// one watcher or a thousand. A watcher that falls out of the ring is ended
// and the client resumes from its last resourceVersion (410 Gone if that
// has also left the ring).
//
// Every cached object encodes to JSON and to protobuf at most once, when
// first needed; watches and lists then write those bytes to every client.
// Lists are assembled by splicing the cached item encodings into the list
// envelope (respond.go), never by encoding the list again.
//
// # Usage
//
//	api, err := apiserver.New(apiserver.Config{Store: store, Authenticator: authn})
//	api.SetAuthorization(authz, impersonate)
//	api.SetAdmission(admission.NewChain(...))
//	err = api.Start(ctx)           // caches listed and watching
//	err = api.EnsureObjects(ctx, bootstrap)
//	http.Serve(listener, api)      // internal/server does this over TLS
//	api.MarkReady()
package apiserver
