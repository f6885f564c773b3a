package registry

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/rudder-dev/rudder/internal/auth"
)

// Resource describes one REST resource: its names as discovery shows them,
// and the strategy the API server applies to every write. The API server
// owns the generic parts of a write (uid, timestamps, resourceVersion,
// generation, the spec/status split); a Resource supplies only what differs
// between kinds.
//
// Every func field may be nil, meaning "nothing to do" for that kind. The
// funcs are called with objects of the Go type New returns; they must not
// keep references to them and must be safe to call concurrently.
type Resource struct {
	Group    string // "" for the core group
	Version  string
	Resource string // plural, lower case: "deployments"
	Kind     string // "Deployment"; the list kind is Kind+"List"
	Singular string // "deployment"

	Namespaced bool
	ShortNames []string
	Categories []string // e.g. "all", which `kubectl get all` expands

	// Verbs lists what the resource serves, as discovery reports it. Empty
	// means the full set: create delete deletecollection get list patch
	// update watch.
	Verbs []string

	// Virtual means the resource has no objects: nothing is stored,
	// listed or watched, and its one verb is create, whose answer the API
	// server computes from the request (access reviews, token reviews).
	// Default and Validate still apply to the posted object.
	Virtual bool
	// Computed, with Virtual, means the objects are computed by the API
	// server on each read and served by get and list only
	// (componentstatuses: the health of the control plane's parts).
	Computed bool

	// HasStatus means the object has a status subresource: writes to the
	// main resource keep the stored status, writes to /status keep
	// everything else.
	HasStatus bool
	// Scale, when non-nil, serves /scale with autoscaling/v1 Scale.
	Scale *ScaleAccess
	// HasGeneration means metadata.generation starts at 1 and is bumped on
	// every change of the object outside metadata and status.
	HasGeneration bool

	New func() runtime.Object

	// Default fills the defaults upstream's defaulting functions set, on
	// create and update alike (a client may omit a defaulted field on update).
	Default func(obj runtime.Object)
	// PrepareForCreate resets what a client may not set on create, e.g. a
	// pod's status phase.
	PrepareForCreate func(obj runtime.Object)
	// RecordCreator runs after PrepareForCreate with the requesting user
	// (nil for the server's own writes), for kinds that record who asked
	// for them: a CertificateSigningRequest's spec.username and groups.
	RecordCreator func(obj runtime.Object, user *auth.User)
	// PrepareForUpdate adjusts an update before validation, e.g. keeps
	// fields that are immutable in practice.
	PrepareForUpdate func(obj, old runtime.Object)
	// Validate checks a new object, ObjectMeta included (see ValidateMeta).
	Validate func(obj runtime.Object) field.ErrorList
	// ValidateUpdate checks an update against the stored object. When nil,
	// Validate is applied to the new object and metadata immutability is
	// checked generically.
	ValidateUpdate func(obj, old runtime.Object) field.ErrorList
	// ValidateStatusUpdate checks a write to /status; nil means accept.
	ValidateStatusUpdate func(obj, old runtime.Object) field.ErrorList

	// Approval, when set, serves the /approval subresource
	// (certificatesigningrequests): the route by which an approver adds the
	// Approved or Denied condition, kept apart from /status so that the
	// right to approve is not the right to issue.
	Approval *SubresourceStrategy

	// Fields returns the type's selectable fields besides metadata.name and
	// metadata.namespace, which the server adds itself.
	Fields func(obj runtime.Object) fields.Set

	// Table renders the object as kubectl shows it. Nil falls back to
	// NAME and CREATED AT.
	Table *Table

	// Storage, when set, means this resource has no objects of its own: it
	// serves another resource's, converted to its shape (events.k8s.io
	// events are core events, stored once, as upstream does).
	Storage *StorageView

	// ResetFields lists, per subresource ("" for the main resource,
	// "status"), the fields a write through it cannot set because the
	// strategy resets them, as upstream's strategies' GetResetFields list
	// them: server-side apply gives nobody ownership of them there, so
	// applying a manifest with a status to the main resource claims no
	// status field. Paths are dotted ("status", "metadata.labels"). Nil
	// means the usual split for a kind with HasStatus: the main resource
	// resets "status" and /status resets "spec".
	ResetFields map[string][]string
	// TypeConverter, when set, is the schema server-side apply and
	// managedFields use for the objects, in place of the built-in kinds'
	// (openapi.TypeConverter). Custom resources set it from their CRD.
	TypeConverter func() (managedfields.TypeConverter, error)
	// CustomResource means the objects are custom resources
	// (*unstructured.Unstructured): PATCH refuses strategic merge patches
	// with 415 as upstream does, and field management keeps fields the
	// schema does not declare (x-kubernetes-preserve-unknown-fields).
	CustomResource bool
}

// StorageView names the resource whose objects another one serves, and
// converts between the two shapes. The conversions return new objects and
// must not keep or change their argument.
type StorageView struct {
	Group, Version, Resource, Kind string
	New                            func() runtime.Object
	ToStorage                      func(obj runtime.Object) runtime.Object
	FromStorage                    func(obj runtime.Object) runtime.Object
}

// GroupVersion returns the resource's API group and version.
func (r *Resource) GroupVersion() schema.GroupVersion {
	return schema.GroupVersion{Group: r.Group, Version: r.Version}
}

// GroupVersionResource returns the resource's full name.
func (r *Resource) GroupVersionResource() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: r.Group, Version: r.Version, Resource: r.Resource}
}

// GroupVersionKind returns the kind of the resource's objects.
func (r *Resource) GroupVersionKind() schema.GroupVersionKind {
	return r.GroupVersion().WithKind(r.Kind)
}

// Table is the server-side printing of a resource: the columns
// `kubectl get` shows and a function filling one row. Columns with
// Priority > 0 appear only with `-o wide`. The first column is always NAME.
type Table struct {
	Columns []metav1.TableColumnDefinition
	// Row returns one cell per column; cells are strings, int64, bool or
	// float64 as the column's Type says.
	Row func(obj runtime.Object) []interface{}
}

// SubresourceStrategy is what a subresource write may change and how it is
// checked. The API server keeps system metadata and checks metadata
// immutability itself, as for /status; the strategy sees the rest.
type SubresourceStrategy struct {
	// PrepareForUpdate narrows obj, what the client sent, to what the
	// subresource may change: everything else is taken from old.
	PrepareForUpdate func(obj, old runtime.Object)
	// ValidateUpdate checks the prepared obj against old.
	ValidateUpdate func(obj, old runtime.Object) field.ErrorList
}

// ScaleAccess reads and writes the replica count behind a /scale
// subresource.
type ScaleAccess struct {
	// Get returns spec replicas, status replicas and the status label
	// selector string.
	Get func(obj runtime.Object) (spec, status int32, selector string)
	// Set writes spec replicas.
	Set func(obj runtime.Object, replicas int32)
	// SpecReplicasPath is where Set writes, as a JSON path
	// (".spec.replicas" when empty): server-side apply on /scale maps the
	// Scale's managed fields onto it.
	SpecReplicasPath string
}
