// Package cel is the expression language of admission policies: the CEL
// environment ValidatingAdmissionPolicy and webhooks' matchConditions are
// compiled in, and the type information their expressions are checked
// against. The API server's validation (internal/apiserver/registry)
// compiles expressions when a policy or webhook configuration is written;
// the admission plugins (internal/admission) compile them again and
// evaluate them per request. Both use this package, so an expression the
// server accepts is one admission can run.
//
// # Compile once, evaluate per request
//
// An expression is compiled against an environment that declares the
// variables it may read, and checked to yield the Result its field
// wants:
//
//	prog, err := cel.Compile(`object.spec.replicas <= params.data.max`, cel.Bool, cel.Decls{Params: true})
//	var ce *cel.CompileError
//	if errors.As(err, &ce) { /* the user's mistake: a 422 at the field */ }
//	ok, cost, err := prog.EvalBool(ctx, activation) // activation: internal/admission's
//
// The environment is Kubernetes': cel-go's standard library with its
// string, set, list and two-variable comprehension extensions, plus
// k8s.io/apiserver's Kubernetes libraries (quantity, url, regex, ip, cidr,
// format, semver, lists, authz). Objects are plain maps, as JSON shows
// them: `object.metadata.labels['app']`, `has(object.spec.x)`. One
// environment is built per shape of declarations and kept: building one
// costs milliseconds, compiling against it microseconds.
//
// Every evaluation is bounded: one expression may spend PerCallLimit
// cost units; callers add the returned costs up against their budgets.
//
// # Type checking
//
// Expressions run against untyped maps, so a misspelt field only fails
// when a write reaches it. Types gives built-in kinds their CEL types from
// the server's OpenAPI schemas, and TypedEnv declares object, oldObject
// and params with them, so a policy's expressions can be checked ahead of
// time (upstream writes what that finds to the policy's
// status.typeChecking):
//
//	types := cel.NewTypes(openapi.Schemas) // once per server
//	env, err := cel.TypedEnv(types.Of(deploymentGVK), nil, false)
//	_, issues := env.Compile("object.spec.replica > 1") // "undefined field 'replica'"
//
// Everything here is safe for concurrent use.
package cel
