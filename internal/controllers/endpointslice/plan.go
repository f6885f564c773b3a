package endpointslice

import (
	"cmp"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rudder-dev/rudder/internal/serviceendpoints"
)

// The pure half of a sync, part two: from the slices that exist and the
// endpoints wanted, the slices to create, update and delete. The aim is
// the least churn, not the best packing: every write is fanned out to
// every proxy and DNS server in the cluster, so an endpoint that did not
// change stays in the slice it is in, a changed one is updated where it
// is, and new endpoints go first into slices that are being written
// anyway, then into one existing slice they fill best, and only then
// into new slices.

// ManagedBy is the endpointslice.kubernetes.io/managed-by value of the
// slices this controller owns; slices with another value (mirrored from
// custom Endpoints, or written by other controllers) are never touched.
const ManagedBy = "endpointslice-controller.k8s.io"

// slicePlan is the writes one sync makes. Creates carry generateName;
// updates are copies of existing slices (resourceVersion kept, so a
// stale one is refused with a conflict).
type slicePlan struct {
	create, update, delete []*discoveryv1.EndpointSlice
}

func (p *slicePlan) empty() bool { return len(p.create)+len(p.update)+len(p.delete) == 0 }

// planSlices plans the writes for one Service. existing are the slices
// labelled as the Service's and managed by this controller, none of them
// being deleted.
func planSlices(svc *corev1.Service, existing []*discoveryv1.EndpointSlice, want desiredState, maxPerSlice int) slicePlan {
	var plan slicePlan
	existing = slices.Clone(existing)
	slices.SortFunc(existing, byName)
	byType := map[discoveryv1.AddressType][]*discoveryv1.EndpointSlice{}
	var unsupported []*discoveryv1.EndpointSlice
	for _, s := range existing {
		if _, ok := want[s.AddressType]; !ok {
			// The Service no longer has that IP family.
			unsupported = append(unsupported, s)
			continue
		}
		byType[s.AddressType] = append(byType[s.AddressType], s)
	}
	for _, t := range slices.Sorted(maps.Keys(want)) {
		p := planAddressType(svc, t, byType[t], want[t], maxPerSlice)
		plan.create = append(plan.create, p.create...)
		plan.update = append(plan.update, p.update...)
		plan.delete = append(plan.delete, p.delete...)
	}
	plan.delete = append(plan.delete, unsupported...)
	return plan
}

// planAddressType plans the slices of one address type.
func planAddressType(svc *corev1.Service, t discoveryv1.AddressType, existing []*discoveryv1.EndpointSlice, want map[string]*endpointGroup, maxPerSlice int) slicePlan {
	var plan slicePlan
	byPorts := map[string][]*discoveryv1.EndpointSlice{}
	for _, s := range existing {
		if !ownedBy(s, svc) {
			// Left by an earlier Service of the same name (the garbage
			// collector may not have got to it yet).
			plan.delete = append(plan.delete, s)
			continue
		}
		k := portKey(s.Ports)
		byPorts[k] = append(byPorts[k], s)
	}
	for _, k := range slices.Sorted(maps.Keys(want)) {
		p := planPortGroup(svc, t, byPorts[k], want[k], maxPerSlice)
		plan.create = append(plan.create, p.create...)
		plan.update = append(plan.update, p.update...)
		plan.delete = append(plan.delete, p.delete...)
	}
	for _, k := range slices.Sorted(maps.Keys(byPorts)) {
		if _, ok := want[k]; !ok {
			plan.delete = append(plan.delete, byPorts[k]...)
		}
	}

	// A Service that selects no endpoints still gets one empty slice, so
	// consumers can tell "no endpoints" from "not synced yet".
	if len(existing) == len(plan.delete) && len(plan.create) == 0 {
		ph := newSlice(svc, t, []discoveryv1.EndpointPort{})
		if len(plan.delete) == 1 && isPlaceholder(plan.delete[0], ph) {
			plan.delete = nil // already there
		} else {
			plan.create = append(plan.create, ph)
		}
	}

	// A slice to delete and one to create become one update: one write
	// instead of two, and consumers never see the endpoints vanish in
	// between.
	for i := 0; i < len(plan.delete) && len(plan.create) > 0; {
		old := plan.delete[i]
		if !ownedBy(old, svc) {
			i++
			continue
		}
		s := plan.create[len(plan.create)-1]
		plan.create = plan.create[:len(plan.create)-1]
		s.Name, s.GenerateName, s.ResourceVersion = old.Name, old.GenerateName, old.ResourceVersion
		s.Annotations = maps.Clone(old.Annotations)
		plan.update = append(plan.update, s)
		plan.delete = slices.Delete(plan.delete, i, i+1)
	}
	return plan
}

// planPortGroup plans the slices of one port list (upstream's three
// steps, made deterministic: the same inputs always give the same plan).
func planPortGroup(svc *corev1.Service, t discoveryv1.AddressType, existing []*discoveryv1.EndpointSlice, want *endpointGroup, maxPerSlice int) slicePlan {
	var plan slicePlan
	wanted := make(map[string]int, len(want.endpoints)) // key -> index in want.endpoints
	for i := range want.endpoints {
		wanted[endpointKey(&want.endpoints[i])] = i
	}
	placed := make([]bool, len(want.endpoints))

	// 1. Keep every existing endpoint still wanted where it is, updated
	// if it changed; drop the rest. Slices left empty are deleted.
	var changed, unchanged []*discoveryv1.EndpointSlice
	for _, s := range existing {
		var eps []discoveryv1.Endpoint
		dirty := false
		for i := range s.Endpoints {
			j, ok := wanted[endpointKey(&s.Endpoints[i])]
			if !ok || placed[j] {
				continue // not wanted, or a duplicate
			}
			placed[j] = true
			eps = append(eps, want.endpoints[j])
			if !sameEndpoint(&want.endpoints[j], &s.Endpoints[i]) {
				dirty = true
			}
		}
		labels, relabel := sliceLabels(s, svc)
		switch {
		case dirty || len(eps) != len(s.Endpoints):
			if len(eps) == 0 {
				plan.delete = append(plan.delete, s)
				continue
			}
			c := s.DeepCopy()
			c.Endpoints, c.Labels = eps, labels
			changed = append(changed, c)
		case relabel:
			c := s.DeepCopy()
			c.Labels = labels
			changed = append(changed, c)
		default:
			unchanged = append(unchanged, s)
		}
	}
	var rest []discoveryv1.Endpoint
	for i := range want.endpoints {
		if !placed[i] {
			rest = append(rest, want.endpoints[i])
		}
	}

	// 2. Top up the slices written anyway, fullest first.
	slices.SortStableFunc(changed, func(a, b *discoveryv1.EndpointSlice) int {
		return cmp.Compare(len(b.Endpoints), len(a.Endpoints))
	})
	for _, s := range changed {
		n := min(maxPerSlice-len(s.Endpoints), len(rest))
		if n > 0 {
			s.Endpoints = append(s.Endpoints, rest[:n]...)
			rest = rest[n:]
		}
	}

	// 3. What is left goes into the one unchanged slice it fills best,
	// when it fits whole, else into new slices.
	for len(rest) > 0 {
		var s *discoveryv1.EndpointSlice
		if len(rest) < maxPerSlice {
			if i := sliceToFill(unchanged, len(rest), maxPerSlice); i >= 0 {
				s = unchanged[i].DeepCopy()
				unchanged = slices.Delete(unchanged, i, i+1)
				changed = append(changed, s)
			}
		}
		if s == nil {
			s = newSlice(svc, t, want.ports)
			plan.create = append(plan.create, s)
		}
		n := min(maxPerSlice-len(s.Endpoints), len(rest))
		s.Endpoints = append(s.Endpoints, rest[:n]...)
		rest = rest[n:]
	}
	slices.SortFunc(changed, byName)
	plan.update = changed
	return plan
}

// sliceToFill returns the index of the slice that n more endpoints bring
// closest to full without overflowing it; -1 when none has room.
func sliceToFill(candidates []*discoveryv1.EndpointSlice, n, maxPerSlice int) int {
	best, bestGap := -1, maxPerSlice
	for i, s := range candidates {
		gap := maxPerSlice - len(s.Endpoints) - n
		if gap >= 0 && gap < bestGap {
			best, bestGap = i, gap
			if gap == 0 {
				break
			}
		}
	}
	return best
}

// newSlice is an empty slice of the Service for one address type and
// port list, to be created with a generated name.
func newSlice(svc *corev1.Service, t discoveryv1.AddressType, ports []discoveryv1.EndpointPort) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       svc.Namespace,
			GenerateName:    slicePrefix(svc.Name),
			OwnerReferences: []metav1.OwnerReference{ownerRef(svc)},
		},
		AddressType: t,
		Ports:       ports,
		Endpoints:   []discoveryv1.Endpoint{},
	}
	s.Labels, _ = sliceLabels(s, svc)
	return s
}

// slicePrefix is "<service>-", or the bare name when the dash would make
// the generated name invalid.
func slicePrefix(name string) string {
	if p := name + "-"; len(validation.NameIsDNSSubdomain(p, true)) == 0 {
		return p
	}
	return name
}

// ownerRef makes the Service the slice's controller, so the garbage
// collector deletes the slices with the Service, and a foreground
// deletion of the Service waits for them.
func ownerRef(svc *corev1.Service) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion: "v1", Kind: "Service", Name: svc.Name, UID: svc.UID,
		Controller: new(true), BlockOwnerDeletion: new(true),
	}
}

func ownedBy(s *discoveryv1.EndpointSlice, svc *corev1.Service) bool {
	for _, r := range s.OwnerReferences {
		if r.UID == svc.UID && r.Kind == "Service" && r.APIVersion == "v1" {
			return true
		}
	}
	return false
}

// reservedLabel reports the labels this controller sets itself; a Service
// carrying one does not pass it on.
func reservedLabel(k string) bool {
	return k == discoveryv1.LabelServiceName || k == discoveryv1.LabelManagedBy || k == corev1.IsHeadlessService
}

// sliceLabels returns the labels a slice of svc should carry: the
// Service's own labels, the headless marker for a Service without a
// cluster IP, the Service's name and the managed-by value. changed is
// true when the slice's copy of the Service's labels is out of date.
func sliceLabels(s *discoveryv1.EndpointSlice, svc *corev1.Service) (labels map[string]string, changed bool) {
	have := map[string]string{}
	for k, v := range s.Labels {
		if !reservedLabel(k) {
			have[k] = v
		}
	}
	labels = map[string]string{}
	for k, v := range svc.Labels {
		if !reservedLabel(k) {
			labels[k] = v
		}
	}
	changed = !maps.Equal(have, labels)
	if !serviceendpoints.HasClusterIP(svc) {
		labels[corev1.IsHeadlessService] = ""
	}
	labels[discoveryv1.LabelServiceName] = svc.Name
	labels[discoveryv1.LabelManagedBy] = ManagedBy
	return labels, changed
}

// isPlaceholder reports whether s already is the empty slice ph would
// be.
func isPlaceholder(s, ph *discoveryv1.EndpointSlice) bool {
	return s.Namespace == ph.Namespace && s.AddressType == ph.AddressType &&
		len(s.Ports) == 0 && len(s.Endpoints) == 0 &&
		maps.Equal(s.Labels, ph.Labels) &&
		equality.Semantic.DeepEqual(s.OwnerReferences, ph.OwnerReferences)
}

func byName(a, b *discoveryv1.EndpointSlice) int { return cmp.Compare(a.Name, b.Name) }
