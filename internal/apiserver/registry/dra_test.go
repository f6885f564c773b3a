package registry

import (
	"testing"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

const resourceGroup = "resource.k8s.io"

func draSelector(expr string) resourcev1.DeviceSelector {
	return resourcev1.DeviceSelector{CEL: &resourcev1.CELDeviceSelector{Expression: expr}}
}

func TestDeviceClassValidate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*resourcev1.DeviceClass)
		want   []string
	}{
		{name: "valid", mutate: func(*resourcev1.DeviceClass) {}},
		{name: "bad name", mutate: func(c *resourcev1.DeviceClass) { c.Name = "GPU" }, want: []string{"metadata.name: Invalid value"}},
		{name: "selector does not compile", mutate: func(c *resourcev1.DeviceClass) { c.Spec.Selectors[0] = draSelector("device.driver ==") },
			want: []string{"spec.selectors[0].cel.expression: Invalid value"}},
		{name: "selector not a bool", mutate: func(c *resourcev1.DeviceClass) { c.Spec.Selectors[0] = draSelector(`"gpu"`) },
			want: []string{"spec.selectors[0].cel.expression: Invalid value"}},
		{name: "unknown variable", mutate: func(c *resourcev1.DeviceClass) { c.Spec.Selectors[0] = draSelector(`object.x == 1`) },
			want: []string{"spec.selectors[0].cel.expression: Invalid value"}},
		{name: "selector without cel", mutate: func(c *resourcev1.DeviceClass) { c.Spec.Selectors[0] = resourcev1.DeviceSelector{} },
			want: []string{"spec.selectors[0].cel: Required value"}},
		{name: "empty expression", mutate: func(c *resourcev1.DeviceClass) { c.Spec.Selectors[0] = draSelector("") },
			want: []string{"spec.selectors[0].cel.expression: Required value"}},
		{name: "too many selectors", mutate: func(c *resourcev1.DeviceClass) {
			for range 32 {
				c.Spec.Selectors = append(c.Spec.Selectors, draSelector("true"))
			}
		}, want: []string{"spec.selectors: Too many"}},
		{name: "config without parameters", mutate: func(c *resourcev1.DeviceClass) {
			c.Spec.Config = []resourcev1.DeviceClassConfiguration{{DeviceConfiguration: resourcev1.DeviceConfiguration{
				Opaque: &resourcev1.OpaqueDeviceConfiguration{Driver: "gpu.example.com"}}}}
		}, want: []string{"spec.config[0].opaque.parameters: Required value"}},
		{name: "config", mutate: func(c *resourcev1.DeviceClass) {
			c.Spec.Config = []resourcev1.DeviceClassConfiguration{{DeviceConfiguration: resourcev1.DeviceConfiguration{
				Opaque: &resourcev1.OpaqueDeviceConfiguration{Driver: "gpu.example.com", Parameters: runtime.RawExtension{Raw: []byte(`{"a":1}`)}}}}}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &resourcev1.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "gpu.example.com"},
				Spec: resourcev1.DeviceClassSpec{Selectors: []resourcev1.DeviceSelector{draSelector(`device.driver == "gpu.example.com"`)}}}
			tc.mutate(c)
			expectErrs(t, runCreate(mustResource(t, resourceGroup, "deviceclasses"), c), tc.want...)
		})
	}
}

func draClaim(mutate func(*resourcev1.ResourceClaim)) *resourcev1.ResourceClaim {
	c := &resourcev1.ResourceClaim{ObjectMeta: objMeta("gpu"), Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{
		Requests: []resourcev1.DeviceRequest{{Name: "gpu", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "gpu.example.com"}}}}}}
	mutate(c)
	return c
}

func TestResourceClaimValidate(t *testing.T) {
	c := draClaim(func(*resourcev1.ResourceClaim) {})
	expectErrs(t, runCreate(mustResource(t, resourceGroup, "resourceclaims"), c))
	if e := c.Spec.Devices.Requests[0].Exactly; e.AllocationMode != resourcev1.DeviceAllocationModeExactCount || e.Count != 1 {
		t.Errorf("defaults: %+v", e)
	}
	for _, tc := range []struct {
		name   string
		mutate func(*resourcev1.ResourceClaim)
		want   []string
	}{
		{name: "no class", mutate: func(c *resourcev1.ResourceClaim) { c.Spec.Devices.Requests[0].Exactly.DeviceClassName = "" },
			want: []string{"spec.devices.requests[0].exactly.deviceClassName: Required value"}},
		{name: "neither exactly nor firstAvailable", mutate: func(c *resourcev1.ResourceClaim) { c.Spec.Devices.Requests[0].Exactly = nil },
			want: []string{"spec.devices.requests[0]: Required value"}},
		{name: "duplicate request", mutate: func(c *resourcev1.ResourceClaim) {
			c.Spec.Devices.Requests = append(c.Spec.Devices.Requests, c.Spec.Devices.Requests[0])
		}, want: []string{"spec.devices.requests[1].name: Duplicate value"}},
		{name: "bad request name", mutate: func(c *resourcev1.ResourceClaim) { c.Spec.Devices.Requests[0].Name = "GPU_0" },
			want: []string{"spec.devices.requests[0].name: Invalid value"}},
		{name: "negative count", mutate: func(c *resourcev1.ResourceClaim) { c.Spec.Devices.Requests[0].Exactly.Count = -1 },
			want: []string{"spec.devices.requests[0].exactly.count: Invalid value"}},
		{name: "count with All", mutate: func(c *resourcev1.ResourceClaim) {
			c.Spec.Devices.Requests[0].Exactly.AllocationMode, c.Spec.Devices.Requests[0].Exactly.Count = resourcev1.DeviceAllocationModeAll, 2
		}, want: []string{"spec.devices.requests[0].exactly.count: Invalid value"}},
		{name: "bad mode", mutate: func(c *resourcev1.ResourceClaim) { c.Spec.Devices.Requests[0].Exactly.AllocationMode = "Some" },
			want: []string{"spec.devices.requests[0].exactly.allocationMode: Unsupported value"}},
		{name: "bad selector", mutate: func(c *resourcev1.ResourceClaim) {
			c.Spec.Devices.Requests[0].Exactly.Selectors = []resourcev1.DeviceSelector{draSelector("device.")}
		}, want: []string{"spec.devices.requests[0].exactly.selectors[0].cel.expression: Invalid value"}},
		{name: "first available", mutate: func(c *resourcev1.ResourceClaim) {
			c.Spec.Devices.Requests[0].Exactly = nil
			c.Spec.Devices.Requests[0].FirstAvailable = []resourcev1.DeviceSubRequest{{Name: "big", DeviceClassName: "big.example.com"},
				{Name: "small", DeviceClassName: "small.example.com", Count: 2}}
			c.Spec.Devices.Constraints = []resourcev1.DeviceConstraint{{Requests: []string{"gpu/big"}, MatchAttribute: new(resourcev1.FullyQualifiedName("gpu.example.com/model"))}}
		}},
		{name: "constraint on unknown request", mutate: func(c *resourcev1.ResourceClaim) {
			c.Spec.Devices.Constraints = []resourcev1.DeviceConstraint{{Requests: []string{"nic"}, MatchAttribute: new(resourcev1.FullyQualifiedName("gpu.example.com/model"))}}
		}, want: []string{"spec.devices.constraints[0].requests[0]: Invalid value"}},
		{name: "constraint attribute without domain", mutate: func(c *resourcev1.ResourceClaim) {
			c.Spec.Devices.Constraints = []resourcev1.DeviceConstraint{{MatchAttribute: new(resourcev1.FullyQualifiedName("model"))}}
		}, want: []string{"spec.devices.constraints[0].matchAttribute: Invalid value"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			expectErrs(t, runCreate(mustResource(t, resourceGroup, "resourceclaims"), draClaim(tc.mutate)), tc.want...)
		})
	}
}

func TestResourceClaimUpdates(t *testing.T) {
	r := mustResource(t, resourceGroup, "resourceclaims")
	old := draClaim(func(*resourcev1.ResourceClaim) {})
	r.Default(old)
	markStored(&old.ObjectMeta)

	changed := old.DeepCopy()
	changed.Spec.Devices.Requests[0].Exactly.Count = 2
	expectErrs(t, runUpdate(r, changed, old), "spec: Invalid value")
	labelled := old.DeepCopy()
	labelled.Labels = map[string]string{"a": "b"}
	expectErrs(t, runUpdate(r, labelled, old))

	allocation := &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{Results: []resourcev1.DeviceRequestAllocationResult{{
		Request: "gpu", Driver: "gpu.example.com", Pool: "node-1", Device: "gpu-0"}}}}
	consumer := resourcev1.ResourceClaimConsumerReference{Resource: "pods", Name: "web", UID: "1234"}
	allocated := old.DeepCopy()
	allocated.Status.Allocation = allocation.DeepCopy()
	reserved := allocated.DeepCopy()
	reserved.Status.ReservedFor = []resourcev1.ResourceClaimConsumerReference{consumer}
	deleting := reserved.DeepCopy()
	deleting.DeletionTimestamp = &metav1.Time{}

	for _, tc := range []struct {
		name     string
		old      *resourcev1.ResourceClaim
		mutate   func(*resourcev1.ResourceClaim)
		want     []string
		wantText string
	}{
		{name: "allocate", old: old, mutate: func(c *resourcev1.ResourceClaim) { c.Status.Allocation = allocation.DeepCopy() }},
		{name: "allocate and reserve", old: old, mutate: func(c *resourcev1.ResourceClaim) {
			c.Status.Allocation = allocation.DeepCopy()
			c.Status.ReservedFor = []resourcev1.ResourceClaimConsumerReference{consumer}
		}},
		{name: "allocation for an unknown request", old: old, mutate: func(c *resourcev1.ResourceClaim) {
			c.Status.Allocation = allocation.DeepCopy()
			c.Status.Allocation.Devices.Results[0].Request = "nic"
		}, want: []string{"status.allocation.devices.results[0].request: Invalid value"}},
		{name: "allocation without device", old: old, mutate: func(c *resourcev1.ResourceClaim) {
			c.Status.Allocation = allocation.DeepCopy()
			c.Status.Allocation.Devices.Results[0].Device = ""
		}, want: []string{"status.allocation.devices.results[0].device: Required value"}},
		{name: "allocation changed", old: allocated, mutate: func(c *resourcev1.ResourceClaim) {
			c.Status.Allocation.Devices.Results[0].Device = "gpu-1"
		}, want: []string{"status.allocation: Invalid value"}, wantText: "field is immutable"},
		{name: "allocation cleared", old: allocated, mutate: func(c *resourcev1.ResourceClaim) { c.Status.Allocation = nil }},
		{name: "reserved without allocation", old: old, mutate: func(c *resourcev1.ResourceClaim) {
			c.Status.ReservedFor = []resourcev1.ResourceClaimConsumerReference{consumer}
		}, want: []string{"status.reservedFor: Forbidden"}, wantText: "may not be specified when `allocated` is not set"},
		{name: "duplicate consumer", old: allocated, mutate: func(c *resourcev1.ResourceClaim) {
			c.Status.ReservedFor = []resourcev1.ResourceClaimConsumerReference{consumer, consumer}
		}, want: []string{"status.reservedFor[1].uid: Duplicate value"}},
		{name: "consumer without uid", old: allocated, mutate: func(c *resourcev1.ResourceClaim) {
			c.Status.ReservedFor = []resourcev1.ResourceClaimConsumerReference{{Resource: "pods", Name: "web"}}
		}, want: []string{"status.reservedFor[0].uid: Required value"}},
		{name: "new consumer while deleting", old: deleting, mutate: func(c *resourcev1.ResourceClaim) {
			c.Status.ReservedFor = append(c.Status.ReservedFor, resourcev1.ResourceClaimConsumerReference{Resource: "pods", Name: "db", UID: "5678"})
		}, want: []string{"status.reservedFor: Forbidden"}},
		{name: "consumer removed while deleting", old: deleting, mutate: func(c *resourcev1.ResourceClaim) { c.Status.ReservedFor = nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.old.DeepCopy()
			tc.mutate(c)
			errs := r.ValidateStatusUpdate(c, tc.old)
			expectErrs(t, errs, tc.want...)
			if tc.wantText != "" {
				expectErrWith(t, errs, tc.want[0], tc.wantText)
			}
		})
	}
}

func TestResourceClaimTemplateValidate(t *testing.T) {
	r := mustResource(t, resourceGroup, "resourceclaimtemplates")
	tmpl := &resourcev1.ResourceClaimTemplate{ObjectMeta: objMeta("gpu"), Spec: resourcev1.ResourceClaimTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec:       draClaim(func(*resourcev1.ResourceClaim) {}).Spec}}
	expectErrs(t, runCreate(r, tmpl))
	bad := tmpl.DeepCopy()
	bad.Spec.ObjectMeta.Labels["bad key!"] = "x"
	bad.Spec.Spec.Devices.Requests[0].Exactly.DeviceClassName = ""
	expectErrs(t, runCreate(r, bad), "spec.metadata.labels: Invalid value", "spec.spec.devices.requests[0].exactly.deviceClassName: Required value")
	markStored(&tmpl.ObjectMeta)
	changed := tmpl.DeepCopy()
	changed.Spec.ObjectMeta.Labels["app"] = "db"
	expectErrs(t, runUpdate(r, changed, tmpl), "spec: Invalid value")
}

func TestResourceSliceValidate(t *testing.T) {
	slice := func(mutate func(*resourcev1.ResourceSlice)) *resourcev1.ResourceSlice {
		s := &resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "node-1-gpu.example.com-x7k2p"}, Spec: resourcev1.ResourceSliceSpec{
			Driver: "gpu.example.com", NodeName: new("node-1"),
			Pool: resourcev1.ResourcePool{Name: "node-1", ResourceSliceCount: 1},
			Devices: []resourcev1.Device{{Name: "gpu-0",
				Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{"model": {StringValue: new("a100")}, "gpu.example.com/index": {IntValue: new(int64(0))}},
				Capacity:   map[resourcev1.QualifiedName]resourcev1.DeviceCapacity{"memory": {Value: resource.MustParse("40Gi")}}}}}}
		mutate(s)
		return s
	}
	r := mustResource(t, resourceGroup, "resourceslices")
	for _, tc := range []struct {
		name   string
		mutate func(*resourcev1.ResourceSlice)
		want   []string
	}{
		{name: "valid", mutate: func(*resourcev1.ResourceSlice) {}},
		{name: "all nodes", mutate: func(s *resourcev1.ResourceSlice) { s.Spec.NodeName, s.Spec.AllNodes = nil, new(true) }},
		{name: "no node choice", mutate: func(s *resourcev1.ResourceSlice) { s.Spec.NodeName = nil }, want: []string{"spec: Invalid value"}},
		{name: "two node choices", mutate: func(s *resourcev1.ResourceSlice) { s.Spec.AllNodes = new(true) }, want: []string{"spec: Invalid value"}},
		{name: "no driver", mutate: func(s *resourcev1.ResourceSlice) { s.Spec.Driver = "" }, want: []string{"spec.driver: Required value"}},
		{name: "no pool", mutate: func(s *resourcev1.ResourceSlice) { s.Spec.Pool.Name = "" }, want: []string{"spec.pool.name: Required value"}},
		{name: "zero slices", mutate: func(s *resourcev1.ResourceSlice) { s.Spec.Pool.ResourceSliceCount = 0 },
			want: []string{"spec.pool.resourceSliceCount: Invalid value"}},
		{name: "duplicate device", mutate: func(s *resourcev1.ResourceSlice) { s.Spec.Devices = append(s.Spec.Devices, s.Spec.Devices[0]) },
			want: []string{"spec.devices[1].name: Duplicate value"}},
		{name: "attribute with two values", mutate: func(s *resourcev1.ResourceSlice) {
			s.Spec.Devices[0].Attributes["model"] = resourcev1.DeviceAttribute{StringValue: new("a"), BoolValue: new(true)}
		}, want: []string{"spec.devices[0].attributes[model]: Invalid value"}},
		{name: "bad attribute name", mutate: func(s *resourcev1.ResourceSlice) {
			s.Spec.Devices[0].Attributes["not-an-identifier"] = resourcev1.DeviceAttribute{BoolValue: new(true)}
		}, want: []string{"spec.devices[0].attributes[not-an-identifier]: Invalid value"}},
		{name: "too many devices", mutate: func(s *resourcev1.ResourceSlice) {
			s.Spec.Devices = nil
			for i := range 129 {
				s.Spec.Devices = append(s.Spec.Devices, resourcev1.Device{Name: "gpu-" + string(rune('a'+i%26)) + string(rune('a'+i/26))})
			}
		}, want: []string{"spec.devices: Too many"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			expectErrs(t, runCreate(r, slice(tc.mutate)), tc.want...)
		})
	}
	old := slice(func(*resourcev1.ResourceSlice) {})
	markStored(&old.ObjectMeta)
	moved := old.DeepCopy()
	moved.Spec.NodeName = new("node-2")
	moved.Spec.Driver = "other.example.com"
	expectErrs(t, runUpdate(r, moved, old), "spec.nodeName: Invalid value", "spec.driver: Invalid value")
	grown := old.DeepCopy()
	grown.Spec.Pool.Generation = 2
	grown.Spec.Devices = append(grown.Spec.Devices, resourcev1.Device{Name: "gpu-1"})
	expectErrs(t, runUpdate(r, grown, old))
	if f := r.Fields(old); f["spec.nodeName"] != "node-1" || f["spec.driver"] != "gpu.example.com" {
		t.Errorf("fields %v", f)
	}
}
