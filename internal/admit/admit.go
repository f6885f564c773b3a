package admit

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/rudder-dev/rudder/internal/auth"
)

// Operation is the kind of write being admitted.
type Operation string

const (
	Create  Operation = "CREATE"
	Update  Operation = "UPDATE"
	Delete  Operation = "DELETE"
	Connect Operation = "CONNECT"
)

// Attributes describe one write. Object is the object as it will be stored
// (mutators may change it); OldObject is the stored one for updates and
// deletes. Both are owned by the request: plugins may modify Object during
// Admit and must not keep either.
type Attributes struct {
	Operation   Operation
	Kind        schema.GroupVersionKind
	Resource    schema.GroupVersionResource
	Subresource string
	Namespace   string
	Name        string
	Object      runtime.Object
	OldObject   runtime.Object
	User        *auth.User
	DryRun      bool
}

// Mutator may change the object of a write. It returns an API error
// (k8s.io/apimachinery/pkg/api/errors) to reject it.
type Mutator interface {
	Admit(ctx context.Context, a *Attributes) error
}

// Validator may reject a write but not change it. Validators run after
// every mutator, on the final object.
type Validator interface {
	Validate(ctx context.Context, a *Attributes) error
}

// Plugin is a named admission plugin; it implements Mutator, Validator or
// both.
type Plugin interface {
	Name() string
}

// Interface is what the API server calls on every write: the mutating
// pass, then (after the resource's own validation) the validating pass.
// internal/admission's Chain implements it; a nil Interface admits
// everything. Both methods may be called concurrently for different
// requests.
type Interface interface {
	Admit(ctx context.Context, a *Attributes) error
	Validate(ctx context.Context, a *Attributes) error
}

// None admits every write unchanged: what a server without an admission
// chain runs.
var None Interface = none{}

type none struct{}

func (none) Admit(context.Context, *Attributes) error    { return nil }
func (none) Validate(context.Context, *Attributes) error { return nil }
