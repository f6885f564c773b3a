// Package customresource holds what the API server does to a custom
// resource's content on every write, driven by the structural schema its
// CustomResourceDefinition declares:
//
//	Default   fills fields the schema gives a default and the object lacks
//	Prune     drops fields the schema does not declare (unless
//	          x-kubernetes-preserve-unknown-fields keeps them), reporting
//	          their paths so fieldValidation=Strict can refuse them
//	Validate  checks types, formats, enums, bounds, patterns, required
//	          fields, int-or-string, nullable and embedded resources, and
//	          runs the x-kubernetes-validations CEL rules with self (and
//	          oldSelf on updates)
//	Columns   renders additionalPrinterColumns as Table cells
//
// Objects are the map[string]interface{} of an unstructured.Unstructured:
// integers are int64, other numbers float64. Messages follow upstream's
// ("spec.replicas in body must be of type integer: \"string\"") so a
// client sees the same rejection it would from Kubernetes.
//
// The package knows nothing of HTTP or storage; the API server builds one
// Schema per served CRD version (NewSchema compiles the CEL rules once) and
// calls it from its write path.
package customresource
