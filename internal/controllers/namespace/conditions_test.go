package namespace

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/utils/ptr"
)

var (
	configmaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	widgets    = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
)

func TestProblems(t *testing.T) {
	tests := []struct {
		name string
		res  passResult
		want map[corev1.NamespaceConditionType]string // type -> "reason: message"
	}{
		{name: "clean"},
		{
			name: "content and finalizers remain",
			res: passResult{
				remaining:  map[schema.GroupVersionResource]int{widgets: 2, configmaps: 1},
				finalizers: map[string]int{"example.com/hold": 1, "a/b": 2},
			},
			want: map[corev1.NamespaceConditionType]string{
				corev1.NamespaceContentRemaining:    "SomeResourcesRemain: Some resources are remaining: configmaps. has 1 resource instances, widgets.example.com has 2 resource instances",
				corev1.NamespaceFinalizersRemaining: "SomeFinalizerRemain: Some finalizers are remaining: a/b in 2 resource instances, example.com/hold in 1 resource instances",
			},
		},
		{
			name: "partial discovery",
			res: passResult{discoveryErr: &discovery.ErrGroupDiscoveryFailed{Groups: map[schema.GroupVersion]error{
				{Group: "metrics.k8s.io", Version: "v1beta1"}: errors.New("the server is currently unable to handle the request"),
			}}},
			want: map[corev1.NamespaceConditionType]string{
				corev1.NamespaceDeletionDiscoveryFailure: "DiscoveryFailed: Discovery failed for some groups, 1 failing: unable to retrieve the complete list of server APIs: metrics.k8s.io/v1beta1: the server is currently unable to handle the request",
			},
		},
		{
			name: "other discovery error",
			res:  passResult{discoveryErr: errors.New("boom")},
			want: map[corev1.NamespaceConditionType]string{corev1.NamespaceDeletionDiscoveryFailure: "DiscoveryFailed: boom"},
		},
		{
			name: "parse and content errors",
			res:  passResult{parseErr: errors.New("bad gv"), contentErrs: []error{errors.New("z failed"), errors.New("a failed")}},
			want: map[corev1.NamespaceConditionType]string{
				corev1.NamespaceDeletionGVParsingFailure: "GroupVersionParsingFailed: bad gv",
				corev1.NamespaceDeletionContentFailure:   "ContentDeletionFailed: Failed to delete all resource types, 2 remaining: a failed, z failed",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := map[corev1.NamespaceConditionType]string{}
			for _, c := range tt.res.problems() {
				if c.Status != corev1.ConditionTrue {
					t.Errorf("%s: status %s", c.Type, c.Status)
				}
				got[c.Type] = c.Reason + ": " + c.Message
			}
			if fmt.Sprint(got) != fmt.Sprint(orEmpty(tt.want)) {
				t.Errorf("problems:\n got %v\nwant %v", got, tt.want)
			}
		})
	}
}

func orEmpty(m map[corev1.NamespaceConditionType]string) map[corev1.NamespaceConditionType]string {
	if m == nil {
		return map[corev1.NamespaceConditionType]string{}
	}
	return m
}

func TestSetConditions(t *testing.T) {
	t1 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	t2 := metav1.NewTime(t1.Add(time.Minute))
	remain := corev1.NamespaceCondition{Type: corev1.NamespaceContentRemaining, Status: corev1.ConditionTrue, Reason: "SomeResourcesRemain", Message: "Some resources are remaining: configmaps. has 1 resource instances"}
	remain2 := remain
	remain2.Message = "Some resources are remaining: configmaps. has 2 resource instances"

	var st corev1.NamespaceStatus
	st.Conditions = []corev1.NamespaceCondition{{Type: "Other", Status: corev1.ConditionTrue}}
	t.Run("first pass writes all five, other conditions kept", func(t *testing.T) {
		if !setConditions(&st, []corev1.NamespaceCondition{remain}, t1) {
			t.Fatal("no change reported")
		}
		var types []string
		for _, c := range st.Conditions {
			types = append(types, string(c.Type))
		}
		want := []string{"Other", "NamespaceDeletionDiscoveryFailure", "NamespaceDeletionGroupVersionParsingFailure",
			"NamespaceDeletionContentFailure", "NamespaceContentRemaining", "NamespaceFinalizersRemaining"}
		if !slices.Equal(types, want) {
			t.Errorf("types %v", types)
		}
		c := st.Conditions[2]
		if c.Status != corev1.ConditionFalse || c.Reason != "ParsedGroupVersions" || c.Message != "All legacy kube types successfully parsed" {
			t.Errorf("ok condition %+v", c)
		}
	})
	t.Run("same again changes nothing", func(t *testing.T) {
		if setConditions(&st, []corev1.NamespaceCondition{remain}, t2) {
			t.Error("change reported")
		}
	})
	t.Run("message change keeps transition time", func(t *testing.T) {
		if !setConditions(&st, []corev1.NamespaceCondition{remain2}, t2) {
			t.Fatal("no change reported")
		}
		c := st.Conditions[4]
		if c.Message != remain2.Message || !c.LastTransitionTime.Equal(&t1) {
			t.Errorf("%+v", c)
		}
	})
	t.Run("cleared flips to ok with new transition time", func(t *testing.T) {
		if !setConditions(&st, nil, t2) {
			t.Fatal("no change reported")
		}
		c := st.Conditions[4]
		if c.Status != corev1.ConditionFalse || c.Reason != "ContentRemoved" || c.Message != "All content successfully removed" || !c.LastTransitionTime.Equal(&t2) {
			t.Errorf("%+v", c)
		}
	})
}

func TestTargets(t *testing.T) {
	lists := []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{
			{Name: "pods", Verbs: []string{"create", "delete", "deletecollection", "get", "list"}},
			{Name: "bindings", Verbs: []string{"create"}},
			{Name: "configmaps", Verbs: []string{"delete", "deletecollection", "list"}},
		}},
		{GroupVersion: "example.com/v1", APIResources: []metav1.APIResource{
			{Name: "widgets", Verbs: []string{"delete", "list"}},
			{Name: "blackholes", Verbs: []string{"delete"}},
		}},
		{GroupVersion: "a/b/c", APIResources: []metav1.APIResource{{Name: "x", Verbs: []string{"delete"}}}},
		nil,
	}
	got, err := targets(lists)
	if err == nil {
		t.Error("no error for an unparsable group version")
	}
	var s []string
	for _, tg := range got {
		s = append(s, fmt.Sprintf("%s list=%v dc=%v", tg.gvr, tg.list, tg.deleteCollection))
	}
	want := []string{
		"/v1, Resource=configmaps list=true dc=true",
		"/v1, Resource=pods list=true dc=true",
		"example.com/v1, Resource=blackholes list=false dc=false",
		"example.com/v1, Resource=widgets list=true dc=false",
	}
	if !slices.Equal(s, want) {
		t.Errorf("targets:\n got %q\nwant %q", s, want)
	}
}

func TestPodEstimate(t *testing.T) {
	deleted := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	pod := func(grace *int64, phase corev1.PodPhase) corev1.Pod {
		return corev1.Pod{Spec: corev1.PodSpec{TerminationGracePeriodSeconds: grace}, Status: corev1.PodStatus{Phase: phase}}
	}
	tests := []struct {
		name  string
		pods  []corev1.Pod
		since time.Duration
		want  time.Duration
	}{
		{"none", nil, 0, 0},
		{"longest grace", []corev1.Pod{pod(ptr.To[int64](10), corev1.PodRunning), pod(ptr.To[int64](30), corev1.PodPending)}, time.Second, 30 * time.Second},
		{"terminal pods do not count", []corev1.Pod{pod(ptr.To[int64](30), corev1.PodSucceeded), pod(ptr.To[int64](5), corev1.PodRunning)}, 0, 5 * time.Second},
		{"grace already passed", []corev1.Pod{pod(ptr.To[int64](5), corev1.PodRunning)}, 5 * time.Second, 0},
		{"no grace set", []corev1.Pod{pod(nil, corev1.PodRunning)}, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := podEstimate(tt.pods, deleted, deleted.Add(tt.since)); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}
