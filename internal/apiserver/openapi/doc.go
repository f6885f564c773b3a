// Package openapi builds and serves the API server's OpenAPI documents:
// /openapi/v2 (Swagger 2.0, JSON or protobuf) and /openapi/v3 (an index
// plus one OpenAPI 3.0 document per group version). Clients read them to
// learn the shape of every kind: `kubectl explain` prints field docs from
// them, kubectl checks that writes accept fieldValidation before asking for
// server-side validation, computes strategic merge patches for `kubectl
// apply` from their patch extensions, and client-side validation rejects
// unknown fields with them.
//
// # Where the schemas come from
//
// The schemas are not written by hand. zz_generated.openapi.go is produced
// by kube-openapi's generator (openapi-gen) from the Go types of k8s.io/api
// and the apimachinery packages they use, the same way upstream produces
// its own; it reads the struct tags and the +listType, +listMapKey,
// +patchStrategy and +patchMergeKey comments into the x-kubernetes-*
// extensions that server-side apply and strategic merge patch need, and
// uses the types' OpenAPIModelName methods, so definitions carry upstream's
// names (io.k8s.api.apps.v1.Deployment). The file is committed; regenerate
// it after changing the k8s.io/api or kube-openapi version in go.mod:
//
//	go generate ./internal/apiserver/openapi/
//
// TestGeneratedFileIsCurrent checks cheaply, on every test run, that the
// generated properties still match the compiled Go types; with
// RUDDER_CHECK_GENERATED=1 it reruns the generator and compares bytes.
//
// # From schemas to documents
//
// The paths come from the resources the server serves (Config.Resources):
// each verb of each resource becomes a route, named and documented as
// upstream's API installer names them (listAppsV1NamespacedDeployment,
// "partially update the specified Deployment"), with the query parameters
// of its options type, the body it reads and what it answers. kube-openapi's
// builders walk the routes, pull in every definition a route reaches, and
// add x-kubernetes-group-version-kind to each definition that is a kind of
// the client-go scheme. kube-openapi's handlers then serve the documents
// with ETags, protobuf, gzip (v2) and hash-addressed immutable caching (v3).
//
// Nothing is built when the server starts: New only records the group
// versions. The v2 document is built on the first /openapi/v2 request, and
// every v3 document on the first /openapi/v3 request (the index needs every
// document's hash). Schemas and TypeConverter, for server-side apply, build
// their own copy on first use.
//
// # Usage
//
//	svc := openapi.New(openapi.Config{Resources: rs, Version: "v1.36.3"})
//	if !svc.Serve(w, r) {
//		// the path names no document: 404
//	}
package openapi

//go:generate go run k8s.io/kube-openapi/cmd/openapi-gen@v0.0.0-20260317180543-43fb72c5454a --output-dir . --output-pkg github.com/rudder-dev/rudder/internal/apiserver/openapi --output-file zz_generated.openapi.go --report-filename /dev/null k8s.io/api/... k8s.io/apimachinery/pkg/apis/meta/v1 k8s.io/apimachinery/pkg/runtime k8s.io/apimachinery/pkg/version k8s.io/apimachinery/pkg/util/intstr k8s.io/apimachinery/pkg/api/resource k8s.io/metrics/pkg/apis/metrics/v1beta1 k8s.io/kube-aggregator/pkg/apis/apiregistration/v1
