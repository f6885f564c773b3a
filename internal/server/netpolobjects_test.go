package server

import (
	"context"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestNodesMayEnforceNetworkPolicy: a node's identity may list and
// watch what internal/netpolicy reads, in every namespace, and may not
// change policies.
func TestNodesMayEnforceNetworkPolicy(t *testing.T) {
	_, admin := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, tc := range []struct {
		verb, group, resource string
		want                  bool
	}{
		{"list", "networking.k8s.io", "networkpolicies", true},
		{"watch", "networking.k8s.io", "networkpolicies", true},
		{"list", "", "pods", true},
		{"watch", "", "pods", true},
		{"list", "", "namespaces", true},
		{"watch", "", "namespaces", true},
		{"create", "networking.k8s.io", "networkpolicies", false},
		{"delete", "networking.k8s.io", "networkpolicies", false},
	} {
		t.Run(tc.verb+" "+tc.resource, func(t *testing.T) {
			sar, err := admin.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
				User: "system:node:node-a", Groups: []string{"system:nodes", "system:authenticated"},
				ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: tc.verb, Group: tc.group, Resource: tc.resource},
			}}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if sar.Status.Allowed != tc.want {
				t.Errorf("allowed = %v, want %v (%s)", sar.Status.Allowed, tc.want, sar.Status.Reason)
			}
		})
	}
}
