// Package admission holds the admission chain: the plugins every write
// passes through after authorization and before it is stored.
//
// A plugin is a Mutator (it may change the object: set defaults, add
// volumes), a Validator (it may only reject), or both. The API server runs
// the chain in two passes, as Kubernetes does:
//
//	chain.Admit(ctx, attrs)    // every mutator, in order
//	... the resource's own validation ...
//	chain.Validate(ctx, attrs) // every validator, in order, on the final object
//
// so a validator always sees what will be stored. Plugins return API errors
// from k8s.io/apimachinery/pkg/api/errors (403 Forbidden, 404 NotFound,
// 422 Invalid); the server sends them to the client unchanged.
//
// Plugins read cluster state through small interfaces they own, such as
// NamespaceGetter, which the server backs with its watch cache: admission
// never calls another component. The contract with the API server (the
// Attributes of a write, the Mutator and Validator interfaces, warnings)
// is internal/admit, which the server imports instead of this package;
// the names here are aliases of it. Quota charging shares its arithmetic
// with the quota controller through internal/quota, and policies their
// CEL environment with the API server's validation through internal/cel.
package admission
