package server

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// createConfigMaps makes n configmaps named prefix-00, prefix-01, ... so
// that name order is key order, the order lists come back in.
func createConfigMaps(t *testing.T, cs kubernetes.Interface, ns, prefix string, n int) []string {
	t.Helper()
	var out []string
	for i := range n {
		name := fmt.Sprintf("%s-%02d", prefix, i)
		if _, err := cs.CoreV1().ConfigMaps(ns).Create(context.Background(), testConfigMap(name, nil), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		out = append(out, name)
	}
	return out
}

// listPages lists in pages of limit starting at a continue token, and
// returns every page.
func listPages(t *testing.T, cs kubernetes.Interface, ns string, limit int64, cont string) []*corev1.ConfigMapList {
	t.Helper()
	var pages []*corev1.ConfigMapList
	for {
		list, err := cs.CoreV1().ConfigMaps(ns).List(context.Background(), metav1.ListOptions{Limit: limit, Continue: cont})
		if err != nil {
			t.Fatalf("page %d: %v", len(pages)+1, err)
		}
		pages = append(pages, list)
		if list.Continue == "" {
			return pages
		}
		if len(pages) > 100 {
			t.Fatal("pagination does not end")
		}
		cont = list.Continue
	}
}

func TestAPIPagination(t *testing.T) {
	e := newAPIEnv(t, Config{})
	ctx := context.Background()

	t.Run("pages return everything once in order", func(t *testing.T) {
		ns := e.namespace(t, "pages")
		want := createConfigMaps(t, e.cs, ns, "cm", 25)
		for name, cs := range map[string]*kubernetes.Clientset{"protobuf": e.cs, "json": e.jcs} {
			t.Run(name, func(t *testing.T) {
				pages := listPages(t, cs, ns, 10, "")
				var got []string
				for i, p := range pages {
					if len(p.Items) > 10 {
						t.Errorf("page %d has %d items, limit 10", i+1, len(p.Items))
					}
					// Every page is a snapshot of the same revision.
					if p.ResourceVersion != pages[0].ResourceVersion {
						t.Errorf("page %d resourceVersion %s, first page %s", i+1, p.ResourceVersion, pages[0].ResourceVersion)
					}
					got = append(got, configMapNames(p)...)
				}
				if len(pages) != 3 || !slices.Equal(got, want) {
					t.Fatalf("%d pages with %v, want 3 pages with %v", len(pages), got, want)
				}
			})
		}
	})

	t.Run("pages with a selector, across namespaces", func(t *testing.T) {
		// Objects in two namespaces, every other one selected: pages hold
		// only matches and the union is exactly the selected set, in key
		// order (namespace, then name).
		var want []string
		for _, ns := range []string{e.namespace(t, "pages-sel-a"), e.namespace(t, "pages-sel-b")} {
			for i := range 12 {
				name := fmt.Sprintf("cm-%02d", i)
				labels := map[string]string{"parity": []string{"even", "odd"}[i%2]}
				if _, err := e.cs.CoreV1().ConfigMaps(ns).Create(ctx, testConfigMap(name, labels), metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
				if i%2 == 0 {
					want = append(want, ns+"/"+name)
				}
			}
		}
		var got []string
		cont := ""
		for pages := 1; ; pages++ {
			list, err := e.cs.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{Limit: 4, Continue: cont, LabelSelector: "parity=even"})
			if err != nil {
				t.Fatal(err)
			}
			if len(list.Items) > 4 || pages > 10 {
				t.Fatalf("page %d has %d items", pages, len(list.Items))
			}
			got = append(got, names(list.Items, func(c *corev1.ConfigMap) string { return c.Namespace + "/" + c.Name })...)
			if cont = list.Continue; cont == "" {
				break
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("selected pages %v, want %v", got, want)
		}
	})

	t.Run("later pages see the first page's snapshot", func(t *testing.T) {
		ns := e.namespace(t, "pages-snapshot")
		want := createConfigMaps(t, e.cs, ns, "cm", 25)
		first, err := e.cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		// Changes after the first page must not show in the rest of the list.
		if err := e.cs.CoreV1().ConfigMaps(ns).Delete(ctx, "cm-20", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.cs.CoreV1().ConfigMaps(ns).Create(ctx, testConfigMap("cm-99", nil), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		got := configMapNames(first)
		for _, p := range listPages(t, e.cs, ns, 10, first.Continue) {
			if p.ResourceVersion != first.ResourceVersion {
				t.Errorf("continued page at %s, first page at %s", p.ResourceVersion, first.ResourceVersion)
			}
			got = append(got, configMapNames(p)...)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("snapshot list %v, want %v", got, want)
		}
	})

	t.Run("expired continue token", func(t *testing.T) {
		ns := e.namespace(t, "pages-expired")
		want := createConfigMaps(t, e.cs, ns, "cm", 25)
		first, err := e.cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		e.compact(t)
		_, err = e.cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{Limit: 10, Continue: first.Continue})
		st := wantStatus(t, err, http.StatusGone, metav1.StatusReasonExpired)
		// The 410 carries a token that continues at the latest revision,
		// so a client may finish the list, inconsistently, as upstream.
		if st.Continue == "" {
			t.Fatalf("410 without a continue token: %+v", st)
		}
		got := configMapNames(first)
		for _, p := range listPages(t, e.cs, ns, 10, st.Continue) {
			got = append(got, configMapNames(p)...)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("list finished with the 410's token: %v, want %v", got, want)
		}
	})

	t.Run("list at a compacted exact resourceVersion", func(t *testing.T) {
		ns := e.namespace(t, "pages-exact")
		createConfigMaps(t, e.cs, ns, "cm", 2)
		old, err := e.cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		e.compact(t)
		_, err = e.cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{ResourceVersion: old.ResourceVersion,
			ResourceVersionMatch: metav1.ResourceVersionMatchExact})
		wantStatus(t, err, http.StatusGone, metav1.StatusReasonExpired)
	})
}
