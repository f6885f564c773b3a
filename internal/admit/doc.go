// Package admit is the contract between the API server and admission: what
// one write looks like to a plugin (Attributes), what a plugin may do with
// it (Mutator, Validator), the two passes the server runs (Interface), how
// a plugin warns the client (AddWarning), and how the server describes
// the resources it serves (ResourceKind, ServedResource).
//
// It exists so that the API server (internal/apiserver) runs admission
// without importing the plugins (internal/admission), as upstream's
// k8s.io/apiserver/pkg/admission stands apart from its plugins: the
// server holds an Interface, and internal/server hands it the chain.
//
//	// internal/server, wiring the two
//	api.SetAdmission(admission.Build(names, disabled, deps)) // *admission.Chain is an admit.Interface
//
//	// the API server, per write
//	ctx = admit.WithWarnings(ctx, addWarningHeader)
//	attrs := &admit.Attributes{Operation: admit.Create, Kind: gvk, Object: obj, User: user}
//	err := chain.Admit(ctx, attrs)    // mutators, in order
//	// ... the resource's own validation ...
//	err = chain.Validate(ctx, attrs)  // validators, on the final object
//
// Errors a plugin returns are API errors
// (k8s.io/apimachinery/pkg/api/errors) and go to the client unchanged.
package admit
