package history

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// The data and names of revisions written by upstream's StatefulSet
// controller (1.33 and 1.34+, whose encoding of the template's metadata
// differs) for the same defaulted template.
const (
	upstream133Data = `{"spec":{"template":{"$patch":"replace","metadata":{"annotations":{"test":"value"},"creationTimestamp":null,"labels":{"app":"foo"}},"spec":{"containers":[{"image":"test","imagePullPolicy":"Always","name":"test","resources":{},"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File"}],"dnsPolicy":"ClusterFirst","restartPolicy":"Always","schedulerName":"default-scheduler","securityContext":{},"terminationGracePeriodSeconds":30}}}}`
	upstream133Hash = "c77f6d978"
	upstream134Data = `{"spec":{"template":{"$patch":"replace","metadata":{"annotations":{"test":"value"},"labels":{"app":"foo"}},"spec":{"containers":[{"image":"test","imagePullPolicy":"Always","name":"test","resources":{},"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File"}],"dnsPolicy":"ClusterFirst","restartPolicy":"Always","schedulerName":"default-scheduler","securityContext":{},"terminationGracePeriodSeconds":30}}}}`
	upstream134Hash = "776999688b"
)

func upstreamTemplate() *corev1.PodTemplateSpec {
	return &corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"test": "value"}, Labels: map[string]string{"app": "foo"}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name: "test", Image: "test", ImagePullPolicy: corev1.PullAlways,
				TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: corev1.TerminationMessageReadFile,
			}},
			DNSPolicy: corev1.DNSClusterFirst, RestartPolicy: corev1.RestartPolicyAlways, SchedulerName: "default-scheduler",
			SecurityContext: &corev1.PodSecurityContext{}, TerminationGracePeriodSeconds: ptr.To[int64](30),
		},
	}
}

func rev(name string, n int64, data string) *appsv1.ControllerRevision {
	return &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, Revision: n, Data: runtime.RawExtension{Raw: []byte(data)}}
}

func TestSameBytesAndNamesAsUpstream(t *testing.T) {
	data, err := TemplatePatch(upstreamTemplate())
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != upstream134Data {
		t.Fatalf("patch\n got %s\nwant %s", data, upstream134Data)
	}
	for _, c := range []struct{ data, hash string }{{upstream134Data, upstream134Hash}, {upstream133Data, upstream133Hash}} {
		// Upstream always hashes the collision count, 0 at first.
		if got := Hash([]byte(c.data), ptr.To[int32](0)); got != c.hash {
			t.Errorf("hash %s, want %s", got, c.hash)
		}
	}
	set := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "test", Namespace: "default", UID: "u"}}
	r := New(set, appsv1.SchemeGroupVersion.WithKind("StatefulSet"), map[string]string{"app": "foo"}, HashLabel, data, 2, ptr.To[int32](0))
	if r.Name != "test-"+upstream134Hash || r.Labels[HashLabel] != upstream134Hash || r.Labels["app"] != "foo" || r.Revision != 2 {
		t.Fatalf("revision %+v", r.ObjectMeta)
	}
	if ref := metav1.GetControllerOf(r); ref == nil || ref.Kind != "StatefulSet" || !*ref.BlockOwnerDeletion {
		t.Fatalf("owner %+v", r.OwnerReferences)
	}
}

func TestTemplateRoundTrip(t *testing.T) {
	got, err := Template(rev("a", 1, upstream133Data))
	if err != nil {
		t.Fatal(err)
	}
	if got.Spec.Containers[0].Image != "test" || got.Labels["app"] != "foo" || *got.Spec.TerminationGracePeriodSeconds != 30 {
		t.Fatalf("template %+v", got)
	}
	if _, err := Template(rev("b", 1, `{"spec":{}}`)); err == nil {
		t.Fatal("a revision without a template decoded")
	}
}

func TestEqual(t *testing.T) {
	other := `{"spec":{"template":{"$patch":"replace","metadata":{"labels":{"app":"bar"}},"spec":{"containers":[{"name":"x","image":"y"}]}}}}`
	cases := []struct {
		name string
		a, b string
		want bool
	}{
		{"same bytes", upstream134Data, upstream134Data, true},
		{"older encoding of the same template", upstream133Data, upstream134Data, true},
		{"different template", upstream134Data, other, false},
		{"garbage", "{", upstream134Data, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Equal(rev("a", 1, c.a), rev("b", 2, c.b)); got != c.want {
				t.Fatalf("Equal = %v, want %v", got, c.want)
			}
		})
	}
}

func TestToDelete(t *testing.T) {
	revs := []*appsv1.ControllerRevision{rev("r3", 3, ""), rev("r1", 1, ""), rev("r4", 4, ""), rev("r2", 2, ""), rev("r5", 5, "")}
	Sort(revs)
	if Next(revs) != 6 || revs[0].Name != "r1" || revs[4].Name != "r5" {
		t.Fatalf("sorted %v next %d", names(revs), Next(revs))
	}
	live := func(names ...string) func(*appsv1.ControllerRevision) bool {
		return func(r *appsv1.ControllerRevision) bool {
			for _, n := range names {
				if r.Name == n {
					return true
				}
			}
			return false
		}
	}
	cases := []struct {
		name  string
		live  []string
		limit int
		want  []string
	}{
		{"keeps limit old ones", []string{"r5"}, 2, []string{"r1", "r2"}},
		{"live revisions never go", []string{"r5", "r1"}, 1, []string{"r2", "r3"}},
		{"under the limit", []string{"r5"}, 10, nil},
		{"limit zero keeps only live", []string{"r4", "r5"}, 0, []string{"r1", "r2", "r3"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := names(ToDelete(revs, live(c.live...), c.limit))
			if len(got) != len(c.want) {
				t.Fatalf("got %v want %v", got, c.want)
			}
			for i := range got {
				if got[i] != c.want[i] {
					t.Fatalf("got %v want %v", got, c.want)
				}
			}
		})
	}
}

func TestPlanClaims(t *testing.T) {
	owner := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "owner"}}
	pod := func(name, app string, ctrl types.UID) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(name), Labels: map[string]string{"app": app}}}
		if ctrl != "" {
			p.OwnerReferences = []metav1.OwnerReference{{Kind: "StatefulSet", Name: "x", UID: ctrl, Controller: ptr.To(true)}}
		}
		return p
	}
	sel := labels.SelectorFromSet(labels.Set{"app": "web"})
	pods := []*corev1.Pod{
		pod("web-0", "web", "owner"),   // owned
		pod("web-1", "web", ""),        // orphan: adopt
		pod("web-2", "other", "owner"), // stopped matching: release
		pod("web-3", "web", "someone"), // another's: untouched
		pod("db-0", "web", ""),         // orphan, but not a member
	}
	member := func(p *corev1.Pod) bool { return p.Name[:3] == "web" }
	c := PlanClaims(owner, sel, pods, member)
	if got := podNames(c.Owned); got != "web-0" {
		t.Errorf("owned %s", got)
	}
	if got := podNames(c.Adopt); got != "web-1" {
		t.Errorf("adopt %s", got)
	}
	if got := podNames(c.Release); got != "web-2" {
		t.Errorf("release %s", got)
	}
	// Nothing is adopted or released while the owner is being deleted.
	owner.DeletionTimestamp = &metav1.Time{}
	c = PlanClaims(owner, sel, pods, member)
	if len(c.Adopt)+len(c.Release) != 0 || podNames(c.Owned) != "web-0" {
		t.Errorf("deleting owner: %+v", c)
	}
}

func names(revs []*appsv1.ControllerRevision) []string {
	var out []string
	for _, r := range revs {
		out = append(out, r.Name)
	}
	return out
}

func podNames(pods []*corev1.Pod) string {
	s := ""
	for i, p := range pods {
		if i > 0 {
			s += ","
		}
		s += p.Name
	}
	return s
}
