package server

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// TestAPIRemainingItemCount checks metadata.remainingItemCount of paged
// lists, as upstream's Chunking conformance tests do: each page of an
// unfiltered list tells how many objects follow it; the last page and
// every page of a selector-filtered list leave it unset, since etcd's
// count would include objects the selector drops.
func TestAPIRemainingItemCount(t *testing.T) {
	e := newAPIEnv(t, Config{})
	ctx := context.Background()
	ns := e.namespace(t, "chunks")
	createConfigMaps(t, e.cs, ns, "cm", 25)

	ptr := func(n int64) *int64 { return &n }
	cases := []struct {
		name     string
		cs       *kubernetes.Clientset
		opts     metav1.ListOptions
		wantRest []*int64 // per page, until the last
	}{
		{name: "protobuf pages of 10", cs: e.cs, opts: metav1.ListOptions{Limit: 10}, wantRest: []*int64{ptr(15), ptr(5), nil}},
		{name: "json pages of 10", cs: e.jcs, opts: metav1.ListOptions{Limit: 10}, wantRest: []*int64{ptr(15), ptr(5), nil}},
		{name: "exact page count", cs: e.cs, opts: metav1.ListOptions{Limit: 25}, wantRest: []*int64{nil}},
		{name: "label selector leaves it unset", cs: e.cs, opts: metav1.ListOptions{Limit: 10, LabelSelector: "!absent"}, wantRest: []*int64{nil, nil, nil}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			opts := tc.opts
			for i, want := range tc.wantRest {
				list, err := tc.cs.CoreV1().ConfigMaps(ns).List(ctx, opts)
				if err != nil {
					t.Fatalf("page %d: %v", i+1, err)
				}
				got := list.RemainingItemCount
				if (got == nil) != (want == nil) || (got != nil && *got != *want) {
					t.Errorf("page %d: remainingItemCount %v, want %v", i+1, deref(got), deref(want))
				}
				if last := i == len(tc.wantRest)-1; last != (list.Continue == "") {
					t.Fatalf("page %d: continue %q (last page: %v)", i+1, list.Continue, last)
				}
				opts.Continue = list.Continue
			}
		})
	}

	t.Run("cluster-wide list counts every namespace", func(t *testing.T) {
		all, err := e.cs.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		page, err := e.cs.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{Limit: 3, ResourceVersion: all.ResourceVersion, ResourceVersionMatch: metav1.ResourceVersionMatchExact})
		if err != nil {
			t.Fatal(err)
		}
		if want := int64(len(all.Items) - 3); page.RemainingItemCount == nil || *page.RemainingItemCount != want {
			t.Errorf("remainingItemCount %v, want %d", deref(page.RemainingItemCount), want)
		}
	})
}

func deref(p *int64) any {
	if p == nil {
		return "<unset>"
	}
	return *p
}
