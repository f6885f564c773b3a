package controller

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

func TestActiveNamespace(t *testing.T) {
	now := metav1.Now()
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, ns := range []*corev1.Namespace{
		{ObjectMeta: metav1.ObjectMeta{Name: "active"}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}},
		{ObjectMeta: metav1.ObjectMeta{Name: "terminating"}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating}},
		{ObjectMeta: metav1.ObjectMeta{Name: "deleting", DeletionTimestamp: &now}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}},
	} {
		if err := idx.Add(ns); err != nil {
			t.Fatal(err)
		}
	}
	lister := corelisters.NewNamespaceLister(idx)
	for name, want := range map[string]bool{"active": true, "terminating": false, "deleting": false, "missing": false} {
		t.Run(name, func(t *testing.T) {
			got, err := ActiveNamespace(lister, name)
			if err != nil || got != want {
				t.Fatalf("ActiveNamespace(%q) = %v, %v; want %v, nil", name, got, err, want)
			}
		})
	}
}

func TestIgnoreCreateRace(t *testing.T) {
	gr := schema.GroupResource{Resource: "configmaps"}
	terminating := apierrors.NewForbidden(gr, "x", errors.New("namespace is terminating"))
	terminating.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause}}
	other := apierrors.NewForbidden(gr, "x", errors.New("denied"))
	cases := []struct {
		name    string
		err     error
		ignored bool
	}{
		{"nil", nil, true},
		{"already exists", apierrors.NewAlreadyExists(gr, "x"), true},
		{"namespace gone", apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, "ns"), true},
		{"namespace terminating", terminating, true},
		{"forbidden otherwise", other, false},
		{"server error", apierrors.NewInternalError(errors.New("boom")), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := IgnoreCreateRace(tc.err)
			if (got == nil) != tc.ignored || (got != nil && got != tc.err) {
				t.Fatalf("IgnoreCreateRace(%v) = %v; ignored want %v", tc.err, got, tc.ignored)
			}
		})
	}
}
