package dns

import (
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// The index is what the server answers from: a compact copy of the
// Services, the ready endpoints of the EndpointSlices and the namespace
// names. Reflectors write the API's objects straight into it (each
// resource's store below is a cache.ReflectorStore), and each object is
// cut down to the few fields DNS needs as it arrives, so the full objects
// are never kept: memory grows with the records served, not with what the
// objects carry.

// port is one port of a Service or an EndpointSlice; num is -1 when the
// object lists no ports (CoreDNS's convention: such a name has A records
// but no SRV).
type port struct {
	name, proto string
	num         int32
}

type service struct {
	name, namespace string
	clusterIPs      []netip.Addr
	headless        bool
	externalName    string // set for type ExternalName
	ports           []port
}

// endpoint is one ready address of an EndpointSlice.
type endpoint struct {
	ip       netip.Addr
	hostname string
}

type slice struct {
	key       string // namespace/name of the slice
	namespace string
	service   string // name.namespace of its Service
	endpoints []endpoint
	ports     []port
}

type index struct {
	mu          sync.RWMutex
	namespaces  map[string]struct{}
	services    map[string]*service // name.namespace
	serviceByIP map[netip.Addr]*service
	slices      map[string]*slice   // namespace/name
	byService   map[string][]*slice // name.namespace → its slices, by key
	byIP        map[netip.Addr][]*slice

	// modified is the Unix time of the last change: the SOA serial.
	modified atomic.Int64
	// synced counts the resources whose first list arrived.
	synced atomic.Int32
	once   [3]sync.Once
}

func newIndex() *index {
	ix := &index{
		namespaces:  map[string]struct{}{},
		services:    map[string]*service{},
		serviceByIP: map[netip.Addr]*service{},
		slices:      map[string]*slice{},
		byService:   map[string][]*slice{},
		byIP:        map[netip.Addr][]*slice{},
	}
	ix.touch()
	return ix
}

func (ix *index) touch() { ix.modified.Store(time.Now().Unix()) }

// hasSynced: every resource has been listed once.
func (ix *index) hasSynced() bool { return ix.synced.Load() == int32(len(ix.once)) }

func (ix *index) markSynced(i int) { ix.once[i].Do(func() { ix.synced.Add(1) }) }

func serviceKey(name, namespace string) string { return name + "." + namespace }

func toService(s *corev1.Service) *service {
	out := &service{name: s.Name, namespace: s.Namespace}
	if s.Spec.Type == corev1.ServiceTypeExternalName {
		out.externalName = s.Spec.ExternalName
	}
	ips := s.Spec.ClusterIPs
	if len(ips) == 0 && s.Spec.ClusterIP != "" {
		ips = []string{s.Spec.ClusterIP}
	}
	if len(ips) > 0 && ips[0] == corev1.ClusterIPNone {
		out.headless = true
	} else {
		for _, ip := range ips {
			if a, err := netip.ParseAddr(ip); err == nil {
				out.clusterIPs = append(out.clusterIPs, a)
			}
		}
	}
	for _, p := range s.Spec.Ports {
		out.ports = append(out.ports, port{name: p.Name, proto: string(p.Protocol), num: p.Port})
	}
	if len(out.ports) == 0 {
		out.ports = []port{{num: -1}}
	}
	return out
}

// toSlice keeps the ready endpoints (a missing condition is ready) of an
// IP slice that names its Service; nil for any other.
func toSlice(s *discoveryv1.EndpointSlice) *slice {
	svc := s.Labels[discoveryv1.LabelServiceName]
	if svc == "" || s.AddressType == discoveryv1.AddressTypeFQDN {
		return nil
	}
	out := &slice{key: s.Namespace + "/" + s.Name, namespace: s.Namespace, service: serviceKey(svc, s.Namespace)}
	for _, p := range s.Ports {
		q := port{num: -1}
		if p.Port != nil {
			q.num = *p.Port
		}
		if p.Name != nil {
			q.name = *p.Name
		}
		if p.Protocol != nil {
			q.proto = string(*p.Protocol)
		}
		out.ports = append(out.ports, q)
	}
	if len(out.ports) == 0 {
		out.ports = []port{{num: -1}}
	}
	for _, e := range s.Endpoints {
		if e.Conditions.Ready != nil && !*e.Conditions.Ready {
			continue
		}
		host := ""
		if e.Hostname != nil {
			host = *e.Hostname
		}
		for _, a := range e.Addresses {
			if ip, err := netip.ParseAddr(a); err == nil {
				out.endpoints = append(out.endpoints, endpoint{ip: ip, hostname: host})
			}
		}
	}
	return out
}

// hostname is the endpoint's name label: its hostname, else its address
// with dashes (CoreDNS's form; an IPv6 address ending in "::" gets a 0).
func (e endpoint) name() string {
	if e.hostname != "" {
		return e.hostname
	}
	if e.ip.Is4() {
		return strings.ReplaceAll(e.ip.String(), ".", "-")
	}
	h := strings.ReplaceAll(e.ip.String(), ":", "-")
	if strings.HasSuffix(h, "-") {
		h += "0"
	}
	return h
}

// Writers, under ix.mu.

func (ix *index) putService(s *service) {
	key := serviceKey(s.name, s.namespace)
	if old := ix.services[key]; old != nil {
		ix.dropServiceIPs(old)
	}
	ix.services[key] = s
	for _, ip := range s.clusterIPs {
		ix.serviceByIP[ip] = s
	}
}

func (ix *index) deleteService(name, namespace string) {
	key := serviceKey(name, namespace)
	if old := ix.services[key]; old != nil {
		ix.dropServiceIPs(old)
		delete(ix.services, key)
	}
}

func (ix *index) dropServiceIPs(s *service) {
	for _, ip := range s.clusterIPs {
		if ix.serviceByIP[ip] == s {
			delete(ix.serviceByIP, ip)
		}
	}
}

func (ix *index) putSlice(key string, s *slice) {
	ix.deleteSlice(key)
	if s == nil {
		return
	}
	ix.slices[key] = s
	list := append(ix.byService[s.service], s)
	slices.SortFunc(list, func(a, b *slice) int { return strings.Compare(a.key, b.key) })
	ix.byService[s.service] = list
	for _, e := range s.endpoints {
		if l := ix.byIP[e.ip]; !slices.Contains(l, s) {
			ix.byIP[e.ip] = append(l, s)
		}
	}
}

func (ix *index) deleteSlice(key string) {
	old := ix.slices[key]
	if old == nil {
		return
	}
	delete(ix.slices, key)
	if l := slices.DeleteFunc(ix.byService[old.service], func(s *slice) bool { return s == old }); len(l) > 0 {
		ix.byService[old.service] = l
	} else {
		delete(ix.byService, old.service)
	}
	for _, e := range old.endpoints {
		if l := slices.DeleteFunc(ix.byIP[e.ip], func(s *slice) bool { return s == old }); len(l) > 0 {
			ix.byIP[e.ip] = l
		} else {
			delete(ix.byIP, e.ip)
		}
	}
}

// The reflector stores, one per resource. Replace (a relist) rebuilds
// that resource's part of the index.

type serviceStore struct{ *index }

func (st serviceStore) Add(obj any) error { return st.Update(obj) }
func (st serviceStore) Resync() error     { return nil }
func (st serviceStore) Update(obj any) error {
	if s, ok := obj.(*corev1.Service); ok {
		st.mu.Lock()
		st.putService(toService(s))
		st.mu.Unlock()
		st.touch()
	}
	return nil
}
func (st serviceStore) Delete(obj any) error {
	if s, ok := obj.(*corev1.Service); ok {
		st.mu.Lock()
		st.deleteService(s.Name, s.Namespace)
		st.mu.Unlock()
		st.touch()
	}
	return nil
}
func (st serviceStore) Replace(objs []any, _ string) error {
	st.mu.Lock()
	st.services = map[string]*service{}
	st.serviceByIP = map[netip.Addr]*service{}
	for _, o := range objs {
		if s, ok := o.(*corev1.Service); ok {
			st.putService(toService(s))
		}
	}
	st.mu.Unlock()
	st.touch()
	st.markSynced(0)
	return nil
}

type sliceStore struct{ *index }

func (st sliceStore) Add(obj any) error { return st.Update(obj) }
func (st sliceStore) Resync() error     { return nil }
func (st sliceStore) Update(obj any) error {
	if s, ok := obj.(*discoveryv1.EndpointSlice); ok {
		st.mu.Lock()
		st.putSlice(s.Namespace+"/"+s.Name, toSlice(s))
		st.mu.Unlock()
		st.touch()
	}
	return nil
}
func (st sliceStore) Delete(obj any) error {
	if s, ok := obj.(*discoveryv1.EndpointSlice); ok {
		st.mu.Lock()
		st.deleteSlice(s.Namespace + "/" + s.Name)
		st.mu.Unlock()
		st.touch()
	}
	return nil
}
func (st sliceStore) Replace(objs []any, _ string) error {
	st.mu.Lock()
	st.slices = map[string]*slice{}
	st.byService = map[string][]*slice{}
	st.byIP = map[netip.Addr][]*slice{}
	for _, o := range objs {
		if s, ok := o.(*discoveryv1.EndpointSlice); ok {
			st.putSlice(s.Namespace+"/"+s.Name, toSlice(s))
		}
	}
	st.mu.Unlock()
	st.touch()
	st.markSynced(1)
	return nil
}

type namespaceStore struct{ *index }

func (st namespaceStore) Add(obj any) error { return st.Update(obj) }
func (st namespaceStore) Resync() error     { return nil }
func (st namespaceStore) Update(obj any) error {
	if n, ok := obj.(*corev1.Namespace); ok {
		st.mu.Lock()
		st.namespaces[n.Name] = struct{}{}
		st.mu.Unlock()
	}
	return nil
}
func (st namespaceStore) Delete(obj any) error {
	if n, ok := obj.(*corev1.Namespace); ok {
		st.mu.Lock()
		delete(st.namespaces, n.Name)
		st.mu.Unlock()
	}
	return nil
}
func (st namespaceStore) Replace(objs []any, _ string) error {
	st.mu.Lock()
	st.namespaces = map[string]struct{}{}
	for _, o := range objs {
		if n, ok := o.(*corev1.Namespace); ok {
			st.namespaces[n.Name] = struct{}{}
		}
	}
	st.mu.Unlock()
	st.markSynced(2)
	return nil
}
