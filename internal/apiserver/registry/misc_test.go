package registry

import (
	"fmt"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestLeaseValidate(t *testing.T) {
	r := mustResource(t, "coordination.k8s.io", "leases")
	for _, tc := range []struct {
		name string
		spec coordinationv1.LeaseSpec
		want []string
	}{
		{name: "node heartbeat", spec: coordinationv1.LeaseSpec{HolderIdentity: new("node-1"), LeaseDurationSeconds: new(int32(40))}},
		{name: "zero duration", spec: coordinationv1.LeaseSpec{LeaseDurationSeconds: new(int32(0))},
			want: []string{"spec.leaseDurationSeconds: Invalid value"}},
		{name: "negative transitions", spec: coordinationv1.LeaseSpec{LeaseTransitions: new(int32(-1))},
			want: []string{"spec.leaseTransitions: Invalid value"}},
		{name: "unknown strategy", spec: coordinationv1.LeaseSpec{Strategy: new(coordinationv1.CoordinatedLeaseStrategy("Youngest"))},
			want: []string{"spec.strategy.strategy: Unsupported value"}},
		{name: "custom strategy", spec: coordinationv1.LeaseSpec{Strategy: new(coordinationv1.CoordinatedLeaseStrategy("example.com/custom"))}},
		{name: "preferred holder without strategy", spec: coordinationv1.LeaseSpec{PreferredHolder: new("a")},
			want: []string{"spec.preferredHolder: Forbidden"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			expectErrs(t, runCreate(r, &coordinationv1.Lease{ObjectMeta: objMeta("node-1"), Spec: tc.spec}), tc.want...)
		})
	}
}

func endpointSlice(mutate func(*discoveryv1.EndpointSlice)) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{
		ObjectMeta:  objMeta("web-abc12"),
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.244.1.5"}, Conditions: discoveryv1.EndpointConditions{Ready: new(true)}}},
		Ports:       []discoveryv1.EndpointPort{{Name: new("http"), Port: new(int32(80))}},
	}
	if mutate != nil {
		mutate(s)
	}
	return s
}

func TestEndpointSlice(t *testing.T) {
	r := mustResource(t, "discovery.k8s.io", "endpointslices")
	t.Run("defaults", func(t *testing.T) {
		s := endpointSlice(func(s *discoveryv1.EndpointSlice) {
			s.Ports = append(s.Ports, discoveryv1.EndpointPort{Port: new(int32(53))})
		})
		r.Default(s)
		for i, p := range s.Ports {
			if p.Protocol == nil || *p.Protocol != corev1.ProtocolTCP || p.Name == nil {
				t.Errorf("ports[%d] = %+v", i, p)
			}
		}
		if *s.Ports[1].Name != "" {
			t.Errorf("default port name %q", *s.Ports[1].Name)
		}
		if c := s.Endpoints[0].Conditions; c.Serving != nil || c.Terminating != nil {
			t.Errorf("conditions defaulted: %+v", c)
		}
	})
	many := make([]discoveryv1.Endpoint, 1001)
	for i := range many {
		many[i] = discoveryv1.Endpoint{Addresses: []string{fmt.Sprintf("10.0.%d.%d", i/250, i%250+1)}}
	}
	for _, tc := range []struct {
		name   string
		mutate func(*discoveryv1.EndpointSlice)
		want   []string
	}{
		{name: "valid"},
		{name: "address type", mutate: func(s *discoveryv1.EndpointSlice) { s.AddressType = "IPv5" },
			want: []string{"addressType: Unsupported value"}},
		{name: "ipv6 in ipv4 slice", mutate: func(s *discoveryv1.EndpointSlice) { s.Endpoints[0].Addresses = []string{"fd00::5"} },
			want: []string{"endpoints[0].addresses[0]: Invalid value"}},
		{name: "loopback", mutate: func(s *discoveryv1.EndpointSlice) { s.Endpoints[0].Addresses = []string{"127.0.0.1"} },
			want: []string{"endpoints[0].addresses[0]: Invalid value"}},
		{name: "not an address", mutate: func(s *discoveryv1.EndpointSlice) { s.Endpoints[0].Addresses = []string{"web"} },
			want: []string{"endpoints[0].addresses[0]: Invalid value"}},
		{name: "fqdn", mutate: func(s *discoveryv1.EndpointSlice) {
			s.AddressType = discoveryv1.AddressTypeFQDN
			s.Endpoints[0].Addresses = []string{"db.example.com"}
		}},
		{name: "no addresses", mutate: func(s *discoveryv1.EndpointSlice) { s.Endpoints[0].Addresses = nil },
			want: []string{"endpoints[0].addresses: Required value"}},
		{name: "too many endpoints", mutate: func(s *discoveryv1.EndpointSlice) { s.Endpoints = many },
			want: []string{"endpoints: Too many"}},
		{name: "duplicate port names", mutate: func(s *discoveryv1.EndpointSlice) {
			s.Ports = append(s.Ports, discoveryv1.EndpointPort{Name: new("http"), Port: new(int32(8080))})
		}, want: []string{"ports[1].name: Duplicate value"}},
		{name: "protocol", mutate: func(s *discoveryv1.EndpointSlice) { s.Ports[0].Protocol = new(corev1.Protocol("ICMP")) },
			want: []string{"ports[0].protocol: Unsupported value"}},
		{name: "zone hints", mutate: func(s *discoveryv1.EndpointSlice) {
			s.Endpoints[0].Hints = &discoveryv1.EndpointHints{ForZones: []discoveryv1.ForZone{{Name: "a"}, {Name: "a"}}}
		}, want: []string{"endpoints[0].hints.forZones[1].name: Duplicate value"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			expectErrs(t, runCreate(r, endpointSlice(tc.mutate)), tc.want...)
		})
	}
	t.Run("address type immutable", func(t *testing.T) {
		old := endpointSlice(nil)
		runCreate(r, old)
		markStored(&old.ObjectMeta)
		s := old.DeepCopy()
		s.AddressType = discoveryv1.AddressTypeFQDN
		s.Endpoints[0].Addresses = []string{"web.example.com"}
		expectErrs(t, runUpdate(r, s, old), "addressType: Invalid value")
	})
}

func event(mutate func(*eventsv1.Event)) *eventsv1.Event {
	e := &eventsv1.Event{
		ObjectMeta:          objMeta("web-5d4f.17a2b"),
		EventTime:           metav1.NewMicroTime(time.Now()),
		ReportingController: "rudder.dev/deployment-controller",
		ReportingInstance:   "server-1",
		Action:              "Scaling",
		Reason:              "ScalingReplicaSet",
		Type:                corev1.EventTypeNormal,
		Regarding:           corev1.ObjectReference{Kind: "Deployment", Namespace: "default", Name: "web"},
		Note:                "Scaled up replica set web-5d4f to 3",
	}
	if mutate != nil {
		mutate(e)
	}
	return e
}

func TestEventsV1Validate(t *testing.T) {
	r := mustResource(t, "events.k8s.io", "events")
	for _, tc := range []struct {
		name   string
		mutate func(*eventsv1.Event)
		want   []string
	}{
		{name: "valid"},
		{name: "cluster-scoped object in default", mutate: func(e *eventsv1.Event) { e.Regarding = corev1.ObjectReference{Kind: "Node", Name: "n1"} }},
		{name: "empty", mutate: func(e *eventsv1.Event) {
			*e = eventsv1.Event{ObjectMeta: objMeta("e"), Regarding: corev1.ObjectReference{Namespace: "default"}}
		}, want: []string{"eventTime: Required value", "type: Invalid value"}},
		{name: "missing reporter", mutate: func(e *eventsv1.Event) {
			e.ReportingController, e.ReportingInstance, e.Action, e.Reason = "", "", "", ""
			// Upstream also runs the name check on the empty controller.
		}, want: []string{"reportingController: Required value", "reportingController: Invalid value", "reportingController: Invalid value",
			"reportingInstance: Required value", "action: Required value", "reason: Required value"}},
		{name: "deprecated fields", mutate: func(e *eventsv1.Event) {
			e.DeprecatedCount = 3
			e.DeprecatedSource = corev1.EventSource{Component: "kubelet"}
		}, want: []string{"count: Invalid value", "source: Invalid value"}},
		{name: "short series", mutate: func(e *eventsv1.Event) {
			e.Series = &eventsv1.EventSeries{Count: 1, LastObservedTime: metav1.NewMicroTime(time.Now())}
		}, want: []string{"series.count: Invalid value"}},
		{name: "cluster-scoped object elsewhere", mutate: func(e *eventsv1.Event) {
			e.Namespace = "team-a"
			e.Regarding = corev1.ObjectReference{Kind: "Node", Name: "n1"}
		}, want: []string{"involvedObject.namespace: Invalid value"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			expectErrs(t, runCreate(r, event(tc.mutate)), tc.want...)
		})
	}
	t.Run("update only the series", func(t *testing.T) {
		old := event(nil)
		markStored(&old.ObjectMeta)
		e := old.DeepCopy()
		e.Series = &eventsv1.EventSeries{Count: 2, LastObservedTime: metav1.NewMicroTime(time.Now())}
		expectErrs(t, runUpdate(r, e, old))
		e.Note = "changed"
		expectErrs(t, runUpdate(r, e, old), "message: Invalid value")
	})
	t.Run("fields", func(t *testing.T) {
		f := r.Fields(event(nil))
		for k, want := range map[string]string{"regarding.kind": "Deployment", "regarding.name": "web", "reason": "ScalingReplicaSet",
			"reportingController": "rudder.dev/deployment-controller", "type": "Normal", "regarding.namespace": "default"} {
			if f[k] != want {
				t.Errorf("%s = %q, want %q", k, f[k], want)
			}
		}
		if _, ok := f["involvedObject.name"]; ok {
			t.Errorf("core field names leak into events.k8s.io: %v", f)
		}
	})
}
