package apiserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"math/rand/v2"
	"net/netip"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/clock"

	"github.com/rudder-dev/rudder/internal/storage"
)

// Allocation keys: one etcd key per allocated cluster IP or node port,
// created with compare-and-swap, so two services can never get the same
// one, however many API servers race.
const (
	ipAllocPrefix   = "/registry/ranges/serviceips/"
	portAllocPrefix = "/registry/ranges/servicenodeports/"
)

// ServiceNetwork is where services get their cluster IPs and node ports.
type ServiceNetwork struct {
	CIDR      netip.Prefix
	PortBase  int
	PortCount int
}

// DefaultServiceNetwork is upstream's common layout: 10.96.0.0/12 and node
// ports 30000-32767.
func DefaultServiceNetwork() ServiceNetwork {
	return ServiceNetwork{CIDR: netip.MustParsePrefix("10.96.0.0/12"), PortBase: 30000, PortCount: 2768}
}

// ParseServiceNetwork reads --service-cluster-ip-range and
// --service-node-port-range values ("10.96.0.0/12", "30000-32767").
func ParseServiceNetwork(cidr, ports string) (ServiceNetwork, error) {
	n := DefaultServiceNetwork()
	if cidr != "" {
		p, err := netip.ParsePrefix(cidr)
		if err != nil || !p.Addr().Is4() || p.Bits() > 30 {
			return n, fmt.Errorf("service cluster IP range %q: want an IPv4 CIDR of at least 4 addresses", cidr)
		}
		n.CIDR = p.Masked()
	}
	if ports != "" {
		lo, hi, ok := strings.Cut(ports, "-")
		base, err1 := strconv.Atoi(lo)
		last, err2 := strconv.Atoi(hi)
		if !ok || err1 != nil || err2 != nil || base < 1 || last > 65535 || last < base {
			return n, fmt.Errorf("service node port range %q: want FROM-TO", ports)
		}
		n.PortBase, n.PortCount = base, last-base+1
	}
	return n, nil
}

// size is the number of assignable addresses: the network address is
// excluded, as upstream does, and so is the broadcast address.
func (n ServiceNetwork) size() int64 {
	return int64(1)<<(32-n.CIDR.Bits()) - 2
}

// nth returns the i-th assignable address (0 → the first after the network
// address: what the kubernetes service gets).
func (n ServiceNetwork) nth(i int64) netip.Addr {
	base := new(big.Int).SetBytes(n.CIDR.Addr().AsSlice())
	base.Add(base, big.NewInt(i+1))
	var b [4]byte
	base.FillBytes(b[:])
	return netip.AddrFrom4(b)
}

// FirstIP is the address of the kubernetes service.
func (n ServiceNetwork) FirstIP() string { return n.nth(0).String() }

// DNSIP is the address of the cluster DNS service: the tenth, as kubeadm
// places it (10.96.0.10); "" when the network is too small to have one.
func (n ServiceNetwork) DNSIP() string {
	if n.size() < 10 {
		return ""
	}
	return n.nth(9).String()
}

func (n ServiceNetwork) contains(ip netip.Addr) bool {
	if !n.CIDR.Contains(ip) || ip == n.CIDR.Addr() {
		return false
	}
	return ip != n.nth(n.size())
}

// serviceAllocator gives services their cluster IPs and node ports.
//
// An allocation is freed when the write that took it fails, when its
// service lets it go, and otherwise by repair: a release that fails (etcd
// unreachable, say) is logged and left to the next repair, which frees
// every allocation no stored service holds. repair runs once before the
// server serves and then every repairInterval, as upstream's allocator
// repair controllers do.
type serviceAllocator struct {
	net   ServiceNetwork
	store *storage.Store

	// suspects are the allocations the last periodic repair found no
	// service for. A write in flight allocates before its service is
	// stored, so only allocations found leaked twice in a row are freed.
	suspects map[string]bool
}

// repairInterval is how often leaked allocations are looked for
// (upstream's is three minutes too).
const repairInterval = 3 * time.Minute

func serviceOwner(svc *corev1.Service) string { return svc.Namespace + "/" + svc.Name }

// allocate fills in what a new or changed service needs, returning a
// function that releases what it took (for when the write fails).
func (a *serviceAllocator) allocate(ctx context.Context, svc, old *corev1.Service) (release func(), err error) {
	var taken []string
	owner := serviceOwner(svc)
	release = func() {
		// The request's context may be what failed; the release must
		// still reach etcd.
		ctx := context.WithoutCancel(ctx)
		for _, key := range taken {
			a.free(ctx, key, owner)
		}
	}
	defer func() {
		if err != nil {
			release()
		}
	}()
	needsIP := svc.Spec.Type != corev1.ServiceTypeExternalName && svc.Spec.ClusterIP != corev1.ClusterIPNone
	if needsIP && (old == nil || old.Spec.ClusterIP == "" || old.Spec.Type == corev1.ServiceTypeExternalName) {
		if svc.Spec.ClusterIP == "" && len(svc.Spec.ClusterIPs) > 0 {
			svc.Spec.ClusterIP = svc.Spec.ClusterIPs[0]
		}
		key, ip, err := a.allocateIP(ctx, svc.Spec.ClusterIP, svc.Name, owner)
		if err != nil {
			return release, err
		}
		taken = append(taken, key)
		svc.Spec.ClusterIP = ip
		svc.Spec.ClusterIPs = []string{ip}
		single := corev1.IPFamilyPolicySingleStack
		svc.Spec.IPFamilyPolicy = &single
		svc.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol}
	}
	if svc.Spec.ClusterIP == corev1.ClusterIPNone {
		svc.Spec.ClusterIPs = []string{corev1.ClusterIPNone}
		if svc.Spec.IPFamilyPolicy == nil {
			single := corev1.IPFamilyPolicySingleStack
			svc.Spec.IPFamilyPolicy = &single
			svc.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol}
		}
	}
	if svc.Spec.Type == corev1.ServiceTypeNodePort || svc.Spec.Type == corev1.ServiceTypeLoadBalancer {
		held := map[int32]bool{}
		if old != nil {
			for _, p := range old.Spec.Ports {
				held[p.NodePort] = p.NodePort != 0
			}
		}
		for i := range svc.Spec.Ports {
			p := &svc.Spec.Ports[i]
			if p.NodePort != 0 && held[p.NodePort] {
				continue
			}
			key, port, err := a.allocatePort(ctx, p.NodePort, svc.Name, owner, field.NewPath("spec", "ports").Index(i).Child("nodePort"))
			if err != nil {
				return release, err
			}
			taken = append(taken, key)
			p.NodePort = port
		}
	}
	return release, nil
}

func (a *serviceAllocator) allocateIP(ctx context.Context, want, name, owner string) (string, string, error) {
	if want != "" {
		ip, err := netip.ParseAddr(want)
		path := field.NewPath("spec", "clusterIPs").Index(0)
		if err != nil {
			return "", "", apierrors.NewInvalid(serviceKind, name, field.ErrorList{field.Invalid(path, want, "must be a valid IP address")})
		}
		if !a.net.contains(ip) {
			return "", "", apierrors.NewInvalid(serviceKind, name, field.ErrorList{field.Invalid(path, want,
				fmt.Sprintf("failed to allocate IP %s: the provided IP (%s) is not in the valid range. The range of valid IPs is %s", want, want, a.net.CIDR))})
		}
		key := ipAllocPrefix + ip.String()
		if _, err := a.store.Create(ctx, key, []byte(owner)); errors.Is(err, storage.ErrExists) {
			return "", "", apierrors.NewInvalid(serviceKind, name, field.ErrorList{field.Invalid(path, want,
				fmt.Sprintf("failed to allocate IP %s: provided IP is already allocated", want))})
		} else if err != nil {
			return "", "", err
		}
		return key, ip.String(), nil
	}
	// Random probing, skipping the first address (kept for the kubernetes
	// service); a linear scan would crowd services at the start.
	size := a.net.size()
	start := rand.Int64N(size)
	for i := int64(0); i < size; i++ {
		off := (start + i) % size
		if off == 0 {
			continue
		}
		ip := a.net.nth(off).String()
		key := ipAllocPrefix + ip
		if _, err := a.store.Create(ctx, key, []byte(owner)); errors.Is(err, storage.ErrExists) {
			continue
		} else if err != nil {
			return "", "", err
		}
		return key, ip, nil
	}
	return "", "", apierrors.NewInternalError(fmt.Errorf("failed to allocate a serviceIP: range is full"))
}

var serviceKind = corev1.SchemeGroupVersion.WithKind("Service").GroupKind()

func (a *serviceAllocator) allocatePort(ctx context.Context, want int32, name, owner string, path *field.Path) (string, int32, error) {
	if want != 0 {
		if int(want) < a.net.PortBase || int(want) >= a.net.PortBase+a.net.PortCount {
			return "", 0, apierrors.NewInvalid(serviceKind, name, field.ErrorList{field.Invalid(path, want,
				fmt.Sprintf("provided port is not in the valid range. The range of valid ports is %d-%d", a.net.PortBase, a.net.PortBase+a.net.PortCount-1))})
		}
		key := portAllocPrefix + strconv.Itoa(int(want))
		if _, err := a.store.Create(ctx, key, []byte(owner)); errors.Is(err, storage.ErrExists) {
			return "", 0, apierrors.NewInvalid(serviceKind, name, field.ErrorList{field.Invalid(path, want, "provided port is already allocated")})
		} else if err != nil {
			return "", 0, err
		}
		return key, want, nil
	}
	start := rand.IntN(a.net.PortCount)
	for i := 0; i < a.net.PortCount; i++ {
		port := int32(a.net.PortBase + (start+i)%a.net.PortCount)
		key := portAllocPrefix + strconv.Itoa(int(port))
		if _, err := a.store.Create(ctx, key, []byte(owner)); errors.Is(err, storage.ErrExists) {
			continue
		} else if err != nil {
			return "", 0, err
		}
		return key, port, nil
	}
	return "", 0, apierrors.NewInternalError(fmt.Errorf("failed to allocate a nodePort: range is full"))
}

// releaseUnused frees what old held and svc no longer does (or everything,
// when svc is nil: the service was deleted).
func (a *serviceAllocator) releaseUnused(ctx context.Context, svc, old *corev1.Service) {
	keep := map[string]bool{}
	if svc != nil {
		if svc.Spec.ClusterIP != "" && svc.Spec.ClusterIP != corev1.ClusterIPNone {
			keep[ipAllocPrefix+svc.Spec.ClusterIP] = true
		}
		for _, p := range svc.Spec.Ports {
			if p.NodePort != 0 {
				keep[portAllocPrefix+strconv.Itoa(int(p.NodePort))] = true
			}
		}
	}
	var keys []string
	if old.Spec.ClusterIP != "" && old.Spec.ClusterIP != corev1.ClusterIPNone {
		keys = append(keys, ipAllocPrefix+old.Spec.ClusterIP)
	}
	for _, p := range old.Spec.Ports {
		if p.NodePort != 0 {
			keys = append(keys, portAllocPrefix+strconv.Itoa(int(p.NodePort)))
		}
	}
	for _, key := range keys {
		if !keep[key] {
			a.free(ctx, key, serviceOwner(old))
		}
	}
}

// free releases key if owner still holds it. A key already gone or
// taken by another service is left alone; any other failure is logged,
// and the next repair frees the key.
func (a *serviceAllocator) free(ctx context.Context, key, owner string) {
	kv, err := a.store.Get(ctx, key)
	if errors.Is(err, storage.ErrNotFound) {
		return
	}
	if err == nil {
		if string(kv.Value) != owner {
			return
		}
		_, _, err = a.store.Delete(ctx, key, kv.ModRevision)
	}
	if err != nil && !errors.Is(err, storage.ErrNotFound) && !errors.Is(err, storage.ErrConflict) {
		slog.Warn("service allocation not released; the next repair frees it", "key", key, "owner", owner, "err", err)
	}
}

// repair frees allocations no service holds, which a failed release or a
// crash between allocating and storing (or deleting) a service leaves
// behind. With settle, only those found leaked by the previous repair as
// well are freed (see suspects); without, all are: for the first run,
// before any write can be in flight.
func (a *serviceAllocator) repair(ctx context.Context, services *watchCache, settle bool) error {
	inUse := map[string]bool{}
	items, _ := services.list(services.prefix, nil)
	for _, o := range items {
		svc := o.obj.(*corev1.Service)
		inUse[ipAllocPrefix+svc.Spec.ClusterIP] = true
		for _, p := range svc.Spec.Ports {
			inUse[portAllocPrefix+strconv.Itoa(int(p.NodePort))] = true
		}
	}
	suspects := map[string]bool{}
	var errs []error
	for _, prefix := range []string{ipAllocPrefix, portAllocPrefix} {
		list, err := a.store.List(ctx, prefix, "", 0, 0)
		if err != nil {
			return err
		}
		for _, kv := range list.KVs {
			if inUse[kv.Key] {
				continue
			}
			if settle && !a.suspects[kv.Key] {
				suspects[kv.Key] = true
				continue
			}
			slog.Info("releasing leaked service allocation", "key", kv.Key, "owner", string(kv.Value))
			if _, _, err := a.store.Delete(ctx, kv.Key, kv.ModRevision); err != nil && !errors.Is(err, storage.ErrNotFound) && !errors.Is(err, storage.ErrConflict) {
				suspects[kv.Key] = true // still leaked: free it next time
				errs = append(errs, err)
			}
		}
	}
	a.suspects = suspects
	return errors.Join(errs...)
}

// runRepair repairs every interval until ctx ends.
func (a *serviceAllocator) runRepair(ctx context.Context, services *watchCache, c clock.Clock, interval time.Duration) {
	for {
		t := c.NewTimer(interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
		if err := a.repair(ctx, services, true); err != nil && ctx.Err() == nil {
			slog.Warn("service allocation repair", "err", err)
		}
	}
}

// writeHooks let a resource take part in its writes beyond the strategy:
// services allocate cluster IPs and node ports through them.
type writeHooks struct {
	// beforeWrite runs after validation, before the object is stored; the
	// returned func undoes it if the write fails.
	beforeWrite func(ctx context.Context, obj, old runtime.Object) (undo func(), err error)
	// afterWrite runs once the object is stored (obj nil: deleted).
	afterWrite func(ctx context.Context, obj, old runtime.Object)
}

func (a *serviceAllocator) hooks() *writeHooks {
	return &writeHooks{
		beforeWrite: func(ctx context.Context, obj, old runtime.Object) (func(), error) {
			svc := obj.(*corev1.Service)
			var prev *corev1.Service
			if old != nil {
				prev = old.(*corev1.Service)
			}
			return a.allocate(ctx, svc, prev)
		},
		afterWrite: func(ctx context.Context, obj, old runtime.Object) {
			if old == nil {
				return
			}
			var svc *corev1.Service
			if obj != nil {
				svc = obj.(*corev1.Service)
			}
			a.releaseUnused(ctx, svc, old.(*corev1.Service))
		},
	}
}
