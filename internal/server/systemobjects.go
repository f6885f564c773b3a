package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/rudder-dev/rudder/internal/apiserver/registry"
)

// The system objects are what every cluster relies on being there: the
// system namespaces, the default/kubernetes Service (the API's in-cluster
// address) and its Endpoints and EndpointSlice naming the API server.
// Upstream's API server keeps them with its bootstrap controllers: a
// deleted kube-node-lease or kubernetes Service is back within seconds.
// systemObjects does the same, level-based: each pass makes the objects
// what they must be; passes run on a timer and whenever one of the
// objects is deleted.

// kubernetesService is the name of the API's Service, its Endpoints and
// its EndpointSlice in the default namespace.
const kubernetesService = "kubernetes"

// systemObjects keeps the system objects in place through the API.
type systemObjects struct {
	client     kubernetes.Interface
	namespaces []string
	// service is the kubernetes Service as a new one is created.
	service *corev1.Service
	// dnsService is kube-system/kube-dns, created when missing (nil: the
	// service network has no room for it).
	dnsService *corev1.Service
	// dnsWarned keeps a kube-dns that cannot be created to one warning.
	dnsWarned bool
	// ip and port are the API server's advertised address, which the
	// Endpoints and the EndpointSlice name; with no ip they are not kept
	// (a server on loopback has no address pods could use, and upstream's
	// validation refuses loopback endpoints).
	ip   net.IP
	port int32
	// interval is the time between passes when nothing is deleted.
	interval time.Duration
	// serviceCIDRs is --service-cluster-ip-range, kept as the ServiceCIDR
	// named "kubernetes" with a Ready condition, as upstream's
	// default-servicecidr controller keeps it; nil keeps none.
	serviceCIDRs []string
}

// run keeps the objects until ctx ends. Informers on the namespaces and on
// the default/kubernetes objects wake a pass when one is deleted.
func (o *systemObjects) run(ctx context.Context) {
	wake := make(chan struct{}, 1)
	onDelete := cache.ResourceEventHandlerFuncs{DeleteFunc: func(any) {
		select {
		case wake <- struct{}{}:
		default:
		}
	}}
	all := informers.NewSharedInformerFactory(o.client, 0)
	named := informers.NewSharedInformerFactoryWithOptions(o.client, 0, informers.WithNamespace(metav1.NamespaceDefault),
		informers.WithTweakListOptions(func(lo *metav1.ListOptions) { lo.FieldSelector = "metadata.name=" + kubernetesService }))
	dnsNamed := informers.NewSharedInformerFactoryWithOptions(o.client, 0, informers.WithNamespace(metav1.NamespaceSystem),
		informers.WithTweakListOptions(func(lo *metav1.ListOptions) { lo.FieldSelector = "metadata.name=" + kubeDNSService }))
	for _, inf := range []cache.SharedIndexInformer{
		all.Core().V1().Namespaces().Informer(),
		named.Core().V1().Services().Informer(),
		named.Core().V1().Endpoints().Informer(),
		named.Discovery().V1().EndpointSlices().Informer(),
		dnsNamed.Core().V1().Services().Informer(),
		all.Networking().V1().ServiceCIDRs().Informer(),
		all.Flowcontrol().V1().PriorityLevelConfigurations().Informer(),
	} {
		if _, err := inf.AddEventHandler(onDelete); err != nil {
			slog.Error("system objects: watch", "err", err)
		}
	}
	all.Start(ctx.Done())
	named.Start(ctx.Done())
	dnsNamed.Start(ctx.Done())
	defer all.Shutdown()
	defer named.Shutdown()
	defer dnsNamed.Shutdown()

	timer := time.NewTicker(o.interval)
	defer timer.Stop()
	for {
		var retry <-chan time.Time
		if err := o.reconcile(ctx); err != nil && ctx.Err() == nil {
			slog.Warn("system objects: pass failed, retrying", "err", err)
			retry = time.After(min(time.Second, o.interval))
		}
		select {
		case <-ctx.Done():
			return
		case <-wake:
		case <-timer.C:
		case <-retry:
		}
	}
}

// reconcile is one pass: it creates what is missing and puts back what
// changed in the Service's ports, the Endpoints and the EndpointSlice.
func (o *systemObjects) reconcile(ctx context.Context) error {
	for _, name := range o.namespaces {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if _, err := o.client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("namespace %s: %w", name, err)
		}
	}
	// Each object is its own step: one that fails does not hold the
	// others back until the next pass.
	errs := []error{o.reconcileService(ctx)}
	o.reconcileDNSService(ctx)
	errs = append(errs, o.reconcileServiceCIDR(ctx), o.reconcileFlowSchemaStatus(ctx))
	if o.ip != nil {
		if err := o.reconcileEndpoints(ctx); err != nil {
			errs = append(errs, err)
		} else {
			errs = append(errs, o.reconcileEndpointSlice(ctx))
		}
	}
	return errors.Join(errs...)
}

// reconcileService creates the kubernetes Service, or puts its ports back
// as upstream does (a restart on another port moves the target port).
func (o *systemObjects) reconcileService(ctx context.Context) error {
	services := o.client.CoreV1().Services(metav1.NamespaceDefault)
	cur, err := services.Get(ctx, kubernetesService, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = services.Create(ctx, o.service.DeepCopy(), metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
	case err == nil && !equality.Semantic.DeepEqual(cur.Spec.Ports, o.service.Spec.Ports):
		cur.Spec.Ports = o.service.Spec.Ports
		_, err = services.Update(ctx, cur, metav1.UpdateOptions{})
	}
	if err != nil && !apierrors.IsConflict(err) {
		return fmt.Errorf("service %s: %w", kubernetesService, err)
	}
	return nil
}

func (o *systemObjects) reconcileEndpoints(ctx context.Context) error {
	want := []corev1.EndpointSubset{{
		Addresses: []corev1.EndpointAddress{{IP: o.ip.String()}},
		Ports:     []corev1.EndpointPort{{Name: "https", Port: o.port, Protocol: corev1.ProtocolTCP}},
	}}
	endpoints := o.client.CoreV1().Endpoints(metav1.NamespaceDefault)
	cur, err := endpoints.Get(ctx, kubernetesService, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		ep := &corev1.Endpoints{
			ObjectMeta: metav1.ObjectMeta{Name: kubernetesService, Namespace: metav1.NamespaceDefault,
				// The EndpointSlice is written here too: nothing may mirror it.
				Labels: map[string]string{discoveryv1.LabelSkipMirror: "true"}},
			Subsets: want,
		}
		_, err = endpoints.Create(ctx, ep, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
	case err == nil && !equality.Semantic.DeepEqual(cur.Subsets, want):
		cur.Subsets = want
		_, err = endpoints.Update(ctx, cur, metav1.UpdateOptions{})
	}
	if err != nil && !apierrors.IsConflict(err) {
		return fmt.Errorf("endpoints %s: %w", kubernetesService, err)
	}
	return nil
}

func (o *systemObjects) reconcileEndpointSlice(ctx context.Context) error {
	ready := true
	addressType := discoveryv1.AddressTypeIPv4
	if o.ip.To4() == nil {
		addressType = discoveryv1.AddressTypeIPv6
	}
	name, protocol := "https", corev1.ProtocolTCP
	want := discoveryv1.EndpointSlice{
		AddressType: addressType,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{o.ip.String()}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
		Ports:       []discoveryv1.EndpointPort{{Name: &name, Port: &o.port, Protocol: &protocol}},
	}
	slices := o.client.DiscoveryV1().EndpointSlices(metav1.NamespaceDefault)
	cur, err := slices.Get(ctx, kubernetesService, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		s := want.DeepCopy()
		s.ObjectMeta = metav1.ObjectMeta{Name: kubernetesService, Namespace: metav1.NamespaceDefault,
			Labels: map[string]string{discoveryv1.LabelServiceName: kubernetesService}}
		_, err = slices.Create(ctx, s, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
	case err == nil && (cur.AddressType != want.AddressType || !equality.Semantic.DeepEqual(cur.Endpoints, want.Endpoints) ||
		!equality.Semantic.DeepEqual(cur.Ports, want.Ports)):
		// The address type cannot change in place: the slice is replaced.
		if cur.AddressType != want.AddressType {
			if err := slices.Delete(ctx, kubernetesService, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("endpointslice %s: %w", kubernetesService, err)
			}
			return nil // the delete wakes the next pass, which creates it
		}
		cur.Endpoints, cur.Ports = want.Endpoints, want.Ports
		_, err = slices.Update(ctx, cur, metav1.UpdateOptions{})
	}
	if err != nil && !apierrors.IsConflict(err) {
		return fmt.Errorf("endpointslice %s: %w", kubernetesService, err)
	}
	return nil
}

// advertiseAddress is the IP the kubernetes Service's endpoints name:
// the configured one, else the bind address when other hosts can reach
// it, else (bound to every address) the host's first global unicast
// address; nil when the server is on loopback only.
func advertiseAddress(configured, bind string) net.IP {
	if ip := net.ParseIP(configured); ip != nil {
		return ip
	}
	ip := net.ParseIP(bind)
	switch {
	case ip == nil || ip.IsLoopback():
		return nil
	case !ip.IsUnspecified():
		return ip
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.IsGlobalUnicast() && (n.IP.To4() != nil) == (ip.To4() != nil) {
			return n.IP
		}
	}
	return nil
}

// reconcileServiceCIDR creates the default ServiceCIDR and marks it Ready
// (with upstream's message and, as upstream, no reason) when it has no
// Ready condition yet. A default ServiceCIDR whose ranges differ from this
// server's flag is left as it is (upstream warns with an event).
func (o *systemObjects) reconcileServiceCIDR(ctx context.Context) error {
	if len(o.serviceCIDRs) == 0 {
		return nil
	}
	cidrs := o.client.NetworkingV1().ServiceCIDRs()
	cur, err := cidrs.Get(ctx, registry.DefaultServiceCIDRName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		cur, err = cidrs.Create(ctx, &networkingv1.ServiceCIDR{ObjectMeta: metav1.ObjectMeta{Name: registry.DefaultServiceCIDRName},
			Spec: networkingv1.ServiceCIDRSpec{CIDRs: o.serviceCIDRs}}, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
	}
	if err != nil {
		return fmt.Errorf("servicecidr %s: %w", registry.DefaultServiceCIDRName, err)
	}
	if c := apimeta.FindStatusCondition(cur.Status.Conditions, networkingv1.ServiceCIDRConditionReady); c != nil && c.Status != metav1.ConditionUnknown {
		return nil
	}
	if !slices.Equal(cur.Spec.CIDRs, o.serviceCIDRs) {
		return nil
	}
	apimeta.SetStatusCondition(&cur.Status.Conditions, metav1.Condition{Type: networkingv1.ServiceCIDRConditionReady,
		Status: metav1.ConditionTrue, Message: "Kubernetes default Service CIDR is ready"})
	if _, err := cidrs.UpdateStatus(ctx, cur, metav1.UpdateOptions{}); err != nil {
		// A conflict (a write raced this one) is tried again by the next
		// pass, which a failed pass brings forward.
		return fmt.Errorf("servicecidr %s status: %w", registry.DefaultServiceCIDRName, err)
	}
	return nil
}

// reconcileFlowSchemaStatus keeps each FlowSchema's Dangling condition,
// as upstream's API Priority and Fairness configuration controller does
// (kubectl's MISSINGPL column): False when the priority level it names
// exists, True when it does not. Only changed conditions are written.
func (o *systemObjects) reconcileFlowSchemaStatus(ctx context.Context) error {
	fc := o.client.FlowcontrolV1()
	levels, err := fc.PriorityLevelConfigurations().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("prioritylevelconfigurations: %w", err)
	}
	exists := map[string]bool{}
	for _, pl := range levels.Items {
		exists[pl.Name] = true
	}
	schemas, err := fc.FlowSchemas().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("flowschemas: %w", err)
	}
	for i := range schemas.Items {
		fs := &schemas.Items[i]
		level := fs.Spec.PriorityLevelConfiguration.Name
		want := flowcontrolv1.FlowSchemaCondition{Type: flowcontrolv1.FlowSchemaConditionDangling, Status: flowcontrolv1.ConditionFalse,
			Reason: "Found", Message: fmt.Sprintf("This FlowSchema references the PriorityLevelConfiguration object named %q and it exists", level)}
		if !exists[level] {
			want.Status, want.Reason = flowcontrolv1.ConditionTrue, "NotFound"
			want.Message = fmt.Sprintf("This FlowSchema references the PriorityLevelConfiguration object named %q but there is no such object", level)
		}
		idx := slices.IndexFunc(fs.Status.Conditions, func(c flowcontrolv1.FlowSchemaCondition) bool { return c.Type == want.Type })
		if idx >= 0 {
			cur := fs.Status.Conditions[idx]
			if cur.Status == want.Status && cur.Reason == want.Reason && cur.Message == want.Message {
				continue
			}
			want.LastTransitionTime = metav1.Now()
			fs.Status.Conditions[idx] = want
		} else {
			want.LastTransitionTime = metav1.Now()
			fs.Status.Conditions = append(fs.Status.Conditions, want)
		}
		if _, err := fc.FlowSchemas().UpdateStatus(ctx, fs, metav1.UpdateOptions{}); err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
			return fmt.Errorf("flowschema %s status: %w", fs.Name, err)
		}
	}
	return nil
}
