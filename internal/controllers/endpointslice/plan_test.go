package endpointslice

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// podEps are the endpoints of pods p<from>..p<from+n-1>, ready.
func podEps(from, n int) []discoveryv1.Endpoint {
	out := make([]discoveryv1.Endpoint, n)
	for i := range n {
		k := from + i
		out[i] = ep(fmt.Sprintf("p%03d", k), fmt.Sprintf("10.1.%d.%d", k/250, k%250+1), "n0", "z0", "rs")
	}
	return out
}

// without drops the endpoints of the named pods.
func without(eps []discoveryv1.Endpoint, pods ...string) []discoveryv1.Endpoint {
	return slices.DeleteFunc(slices.Clone(eps), func(e discoveryv1.Endpoint) bool {
		return slices.Contains(pods, e.TargetRef.Name)
	})
}

func concat(parts ...[]discoveryv1.Endpoint) []discoveryv1.Endpoint { return slices.Concat(parts...) }

// wantV4 is a desired state of one IPv4 group.
func wantV4(ports []discoveryv1.EndpointPort, eps []discoveryv1.Endpoint) desiredState {
	return desiredState{discoveryv1.AddressTypeIPv4: {portKey(ports): {ports: ports, endpoints: eps}}}
}

// existingSlice is a slice of testService() as the controller writes it.
func existingSlice(name string, ports []discoveryv1.EndpointPort, eps ...discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
	s := newSlice(testService(), discoveryv1.AddressTypeIPv4, ports)
	s.Name, s.GenerateName, s.ResourceVersion = name, "", "7"
	s.Endpoints = eps
	return s
}

// summary renders a plan as "create web- [p000..p099]" lines.
func summary(p slicePlan) []string {
	var out []string
	names := func(s *discoveryv1.EndpointSlice) string {
		if len(s.Endpoints) == 0 {
			return fmt.Sprintf("ports=%d []", len(s.Ports))
		}
		first, last := s.Endpoints[0].TargetRef.Name, s.Endpoints[len(s.Endpoints)-1].TargetRef.Name
		return fmt.Sprintf("ports=%d %d [%s..%s]", len(s.Ports), len(s.Endpoints), first, last)
	}
	for _, s := range p.create {
		out = append(out, "create "+s.GenerateName+" "+names(s))
	}
	for _, s := range p.update {
		out = append(out, "update "+s.Name+" "+names(s))
	}
	for _, s := range p.delete {
		out = append(out, "delete "+s.Name)
	}
	return out
}

func TestPlanSlices(t *testing.T) {
	http := httpPorts(8080)
	all := podEps(0, 250)
	many := podEps(0, 300)
	notReadyP005 := slices.Clone(all[:100])
	notReadyP005[5] = ep("p005", all[5].Addresses[0], "n0", "z0", "")

	cases := []struct {
		name     string
		svc      *corev1.Service
		existing []*discoveryv1.EndpointSlice
		want     desiredState
		max      int
		plan     []string
	}{{
		name: "250 new endpoints: three new slices",
		want: wantV4(http, all),
		plan: []string{
			"create web- ports=1 100 [p000..p099]",
			"create web- ports=1 100 [p100..p199]",
			"create web- ports=1 50 [p200..p249]",
		},
	}, {
		name:     "steady state: nothing to write",
		existing: []*discoveryv1.EndpointSlice{existingSlice("web-a", http, all[:100]...), existingSlice("web-b", http, all[100:200]...), existingSlice("web-c", http, all[200:]...)},
		want:     wantV4(http, all),
	}, {
		name:     "endpoints gone: their slices updated in place, the others untouched",
		existing: []*discoveryv1.EndpointSlice{existingSlice("web-a", http, all[:100]...), existingSlice("web-b", http, all[100:200]...), existingSlice("web-c", http, all[200:]...)},
		want:     wantV4(http, without(all, "p000", "p001", "p002", "p003", "p004", "p245", "p246", "p247", "p248", "p249")),
		plan:     []string{"update web-a ports=1 95 [p005..p099]", "update web-c ports=1 45 [p200..p244]"},
	}, {
		name:     "changed endpoint: updated where it is",
		existing: []*discoveryv1.EndpointSlice{existingSlice("web-a", http, all[:100]...), existingSlice("web-b", http, all[100:200]...)},
		want:     wantV4(http, concat(notReadyP005, all[100:200])),
		plan:     []string{"update web-a ports=1 100 [p000..p099]"},
	}, {
		name: "new endpoints top up slices written anyway, fullest first",
		existing: []*discoveryv1.EndpointSlice{
			existingSlice("web-a", http, all[:60]...),     // loses 10: 50 left
			existingSlice("web-b", http, all[100:200]...), // loses 5: 95 left
		},
		want: wantV4(http, concat(all[10:60], all[105:200], all[200:220])),
		plan: []string{"update web-a ports=1 65 [p010..p219]", "update web-b ports=1 100 [p105..p204]"},
	}, {
		name: "new endpoints go whole into the unchanged slice they fill best",
		existing: []*discoveryv1.EndpointSlice{
			existingSlice("web-a", http, all[:90]...),
			existingSlice("web-b", http, all[90:160]...),
			existingSlice("web-c", http, many[160:255]...),
		},
		want: wantV4(http, many[:263]),
		plan: []string{"update web-a ports=1 98 [p000..p262]"},
	}, {
		name:     "new endpoints that fit no slice whole: a new slice",
		existing: []*discoveryv1.EndpointSlice{existingSlice("web-a", http, all[:90]...)},
		want:     wantV4(http, all[:120]),
		plan:     []string{"create web- ports=1 30 [p090..p119]"},
	}, {
		name:     "more than a slice of new endpoints: a full new slice, the rest where it fits",
		existing: []*discoveryv1.EndpointSlice{existingSlice("web-a", http, all[:50]...)},
		want:     wantV4(http, all[:170]),
		plan:     []string{"create web- ports=1 100 [p050..p149]", "update web-a ports=1 70 [p000..p169]"},
	}, {
		name:     "duplicate endpoint: dropped from the second slice",
		existing: []*discoveryv1.EndpointSlice{existingSlice("web-a", http, all[:3]...), existingSlice("web-b", http, all[2:5]...)},
		want:     wantV4(http, all[:5]),
		plan:     []string{"update web-b ports=1 2 [p003..p004]"},
	}, {
		name: "small max: slices of max",
		want: wantV4(http, all[:7]),
		max:  3,
		plan: []string{"create web- ports=1 3 [p000..p002]", "create web- ports=1 3 [p003..p005]", "create web- ports=1 1 [p006..p006]"},
	}, {
		name: "no pods, no slices: a placeholder",
		want: desiredState{discoveryv1.AddressTypeIPv4: {}},
		plan: []string{"create web- ports=0 []"},
	}, {
		name:     "placeholder already there: nothing to write",
		existing: []*discoveryv1.EndpointSlice{existingSlice("web-a", []discoveryv1.EndpointPort{})},
		want:     desiredState{discoveryv1.AddressTypeIPv4: {}},
	}, {
		name:     "every endpoint gone: one slice becomes the placeholder, the rest are deleted",
		existing: []*discoveryv1.EndpointSlice{existingSlice("web-a", http, all[:100]...), existingSlice("web-b", http, all[100:150]...)},
		want:     desiredState{discoveryv1.AddressTypeIPv4: {}},
		plan:     []string{"update web-a ports=0 []", "delete web-b"},
	}, {
		name:     "port list changed: the old slice is reused for the new one",
		existing: []*discoveryv1.EndpointSlice{existingSlice("web-a", http, all[:3]...)},
		want:     wantV4(httpPorts(9090), all[:3]),
		plan:     []string{"update web-a ports=1 3 [p000..p002]"},
	}, {
		name:     "slice of an earlier Service of the same name: deleted, not reused",
		existing: []*discoveryv1.EndpointSlice{existingSlice("web-old", http, all[:3]...)},
		svc:      func() *corev1.Service { s := testService(); s.UID = "new-uid"; return s }(),
		want:     wantV4(http, all[:3]),
		plan:     []string{"create web- ports=1 3 [p000..p002]", "delete web-old"},
	}, {
		name: "address type no longer served: deleted",
		existing: []*discoveryv1.EndpointSlice{existingSlice("web-a", http, all[:3]...), func() *discoveryv1.EndpointSlice {
			s := existingSlice("web-v6", http)
			s.AddressType = discoveryv1.AddressTypeIPv6
			return s
		}()},
		want: wantV4(http, all[:3]),
		plan: []string{"delete web-v6"},
	}, {
		name:     "Service labels changed: slices relabelled in place",
		svc:      func() *corev1.Service { s := testService(); s.Labels = map[string]string{"team": "b"}; return s }(),
		existing: []*discoveryv1.EndpointSlice{existingSlice("web-a", http, all[:3]...)},
		want:     wantV4(http, all[:3]),
		plan:     []string{"update web-a ports=1 3 [p000..p002]"},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			svc := tc.svc
			if svc == nil {
				svc = testService()
			}
			max := tc.max
			if max == 0 {
				max = 100
			}
			before := make([]*discoveryv1.EndpointSlice, len(tc.existing))
			for i, s := range tc.existing {
				before[i] = s.DeepCopy()
			}
			plan := planSlices(svc, tc.existing, tc.want, max)
			if diff := cmp.Diff(tc.plan, summary(plan)); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, tc.existing, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("planSlices modified its input (cache objects):\n%s", diff)
			}
			checkPlanned(t, svc, plan, tc.want, tc.existing)
		})
	}
}

// checkPlanned checks what every plan must hold: after it, each desired
// endpoint is in exactly one slice, equal to what is desired; every
// written slice is valid for the Service.
func checkPlanned(t *testing.T, svc *corev1.Service, plan slicePlan, want desiredState, existing []*discoveryv1.EndpointSlice) {
	t.Helper()
	after := map[string]*discoveryv1.EndpointSlice{}
	for _, s := range existing {
		after[s.Name] = s
	}
	for _, s := range plan.delete {
		delete(after, s.Name)
	}
	for _, s := range plan.update {
		if s.ResourceVersion == "" {
			t.Errorf("update of %s without resourceVersion", s.Name)
		}
		after[s.Name] = s
	}
	for i, s := range plan.create {
		after[fmt.Sprintf("new-%d", i)] = s
	}
	seen := map[string]int{}
	for name, s := range after {
		if !ownedBy(s, svc) {
			t.Errorf("slice %s left that the Service does not own", name)
		}
		if s.Labels[discoveryv1.LabelServiceName] != svc.Name || s.Labels[discoveryv1.LabelManagedBy] != ManagedBy {
			t.Errorf("slice %s labels %v", name, s.Labels)
		}
		g := want[s.AddressType][portKey(s.Ports)]
		for i := range s.Endpoints {
			k := endpointKey(&s.Endpoints[i])
			seen[k]++
			if g == nil || !slices.ContainsFunc(g.endpoints, func(e discoveryv1.Endpoint) bool {
				return endpointKey(&e) == k && sameEndpoint(&e, &s.Endpoints[i])
			}) {
				t.Errorf("slice %s holds an endpoint not desired (or not as desired): %s", name, k)
			}
		}
	}
	for _, groups := range want {
		for _, g := range groups {
			for i := range g.endpoints {
				if k := endpointKey(&g.endpoints[i]); seen[k] != 1 {
					t.Errorf("endpoint %s in %d slices, want 1", strings.Split(k, "|")[0], seen[k])
				}
			}
		}
	}
}

func TestSliceLabels(t *testing.T) {
	svc := testService(headless, func(s *corev1.Service) {
		s.Labels = map[string]string{"team": "a", discoveryv1.LabelManagedBy: "someone", corev1.IsHeadlessService: "x"}
	})
	s := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"team": "a", "extra": "1"}}}
	labels, changed := sliceLabels(s, svc)
	want := map[string]string{
		"team":                       "a",
		corev1.IsHeadlessService:     "",
		discoveryv1.LabelServiceName: "web",
		discoveryv1.LabelManagedBy:   ManagedBy,
	}
	if diff := cmp.Diff(want, labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if !changed {
		t.Error("changed = false; the slice has a label the Service does not")
	}
}

func TestSlicePrefix(t *testing.T) {
	if got := slicePrefix("web"); got != "web-" {
		t.Errorf("slicePrefix(web) = %q", got)
	}
}
