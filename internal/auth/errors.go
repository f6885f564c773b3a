package auth

import (
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ForbiddenError is a 403: the request, or one of the impersonation checks
// made for it, was not allowed. It carries the attributes that were denied
// so the server can log or audit them, and it implements
// apierrors.APIStatus, so apierrors.IsForbidden works on it and the server
// can write Status() as the response body unchanged.
type ForbiddenError struct {
	Attributes Attributes
	// Reason is the authorizer's explanation, appended to the message
	// after a colon; empty when the authorizer gave none (RBAC gives none
	// when simply no rule matched).
	Reason string
}

func (e *ForbiddenError) Error() string { return e.Status().Message }

// Status is the metav1.Status upstream sends, e.g. for a denied list:
//
//	pods is forbidden: User "jane" cannot list resource "pods" in API group "" in the namespace "default"
func (e *ForbiddenError) Status() metav1.Status {
	msg := ForbiddenMessage(e.Attributes)
	if e.Reason != "" {
		msg += ": " + e.Reason
	}
	a := e.Attributes
	gr := schema.GroupResource{Group: a.APIGroup, Resource: a.Resource}
	return apierrors.NewForbidden(gr, a.Name, errors.New(msg)).ErrStatus
}

// ForbiddenMessage is the sentence upstream puts after "is forbidden:"
// (without the authorizer's reason). Clients and tests match on it, so its
// wording is upstream's to the letter.
func ForbiddenMessage(a Attributes) string {
	username := ""
	if a.User != nil {
		username = a.User.Name
	}
	if !a.ResourceRequest {
		return fmt.Sprintf("User %q cannot %s path %q", username, a.Verb, a.Path)
	}
	resource := a.Resource
	if a.Subresource != "" {
		resource += "/" + a.Subresource
	}
	if a.Namespace != "" {
		return fmt.Sprintf("User %q cannot %s resource %q in API group %q in the namespace %q",
			username, a.Verb, resource, a.APIGroup, a.Namespace)
	}
	return fmt.Sprintf("User %q cannot %s resource %q in API group %q at the cluster scope",
		username, a.Verb, resource, a.APIGroup)
}
