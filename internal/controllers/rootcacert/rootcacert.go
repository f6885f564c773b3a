// Package rootcacert is the root CA certificate publisher: it keeps a
// ConfigMap "kube-root-ca.crt" in every active namespace whose "ca.crt"
// key holds the cluster CA bundle, as kube-controller-manager's
// "root-ca-cert-publisher" does. Pods read it (through projected
// service-account volumes) to verify the API server at
// kubernetes.default.svc.
//
// The work is keyed by namespace name. A namespace added, or updated while
// Active, enqueues itself; so does any update or deletion of a
// kube-root-ca.crt ConfigMap, which is how an edit is undone: the sync
// compares the ConfigMap with the wanted data and description annotation
// and writes it back. Only the "ca.crt" data and the
// "kubernetes.io/description" annotation are owned; other annotations and
// labels a user adds survive. In a terminating namespace the API server
// refuses the create, and that refusal is not an error.
//
// The CA is not in controller.Context, so the descriptor is built with
// it: the server passes its CA bundle (PEM) when it assembles the
// controller registry.
//
//	d := rootcacert.NewDescriptor(pki.CAPEM)
//	runnables, err := d.New(ctx, cx)
package rootcacert

import (
	"context"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/rudder-dev/rudder/internal/controller"
)

const (
	// ConfigMapName is the ConfigMap published in every namespace.
	ConfigMapName = "kube-root-ca.crt"
	// DataKey holds the CA bundle in the ConfigMap.
	DataKey = "ca.crt"
	// DescriptionAnnotation tells readers what the ConfigMap is for.
	DescriptionAnnotation = "kubernetes.io/description"
	// Description is upstream's text, so tools that compare it agree.
	Description = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. " +
		"No other usage is guaranteed across distributions of Kubernetes clusters."
)

// NewDescriptor returns the publisher of caPEM, the cluster CA bundle.
func NewDescriptor(caPEM []byte) controller.Descriptor {
	ca := string(caPEM)
	return controller.Descriptor{
		Name: "root-ca-cert-publisher",
		New: func(_ context.Context, cx *controller.Context) ([]controller.Runnable, error) {
			return newController(cx, ca)
		},
	}
}

type reconciler struct {
	client     kubernetes.Interface
	ca         string
	namespaces corelisters.NamespaceLister
	configMaps corelisters.ConfigMapLister
}

func newController(cx *controller.Context, ca string) ([]controller.Runnable, error) {
	if ca == "" {
		return nil, fmt.Errorf("root-ca-cert-publisher: no CA bundle")
	}
	nsInf := cx.Informers.Core().V1().Namespaces()
	cmInf := cx.Informers.Core().V1().ConfigMaps()
	r := &reconciler{client: cx.Client, ca: ca, namespaces: nsInf.Lister(), configMaps: cmInf.Lister()}
	c := controller.New("root_ca_cert_publisher", 1, r)

	if _, err := nsInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: c.Enqueue,
		UpdateFunc: func(_, n interface{}) {
			if ns, ok := n.(*corev1.Namespace); ok && ns.Status.Phase == corev1.NamespaceActive {
				c.Enqueue(ns)
			}
		},
	}); err != nil {
		return nil, err
	}
	onConfigMap := func(obj interface{}) {
		if cm, ok := controller.ObjectOf[*corev1.ConfigMap](obj); ok && cm.Name == ConfigMapName {
			c.EnqueueKey(cm.Namespace)
		}
	}
	if _, err := cmInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, n interface{}) { onConfigMap(n) },
		DeleteFunc: onConfigMap,
	}); err != nil {
		return nil, err
	}
	c.HasSynced = []cache.InformerSynced{nsInf.Informer().HasSynced, cmInf.Informer().HasSynced}
	return []controller.Runnable{c}, nil
}

// Reconcile publishes the CA in the namespace named key.
func (r *reconciler) Reconcile(ctx context.Context, key string) (controller.Result, error) {
	if active, err := controller.ActiveNamespace(r.namespaces, key); !active {
		return controller.Result{}, err
	}
	cm, err := r.configMaps.ConfigMaps(key).Get(ConfigMapName)
	if apierrors.IsNotFound(err) {
		_, err = r.client.CoreV1().ConfigMaps(key).Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: ConfigMapName, Namespace: key,
				Annotations: map[string]string{DescriptionAnnotation: Description}},
			Data: map[string]string{DataKey: r.ca},
		}, metav1.CreateOptions{})
		// A namespace that went away or started terminating needs nothing;
		// AlreadyExists means our cache lags, and its event will follow.
		if err = controller.IgnoreCreateRace(err); err == nil {
			return controller.Result{}, nil
		}
		return controller.Result{}, fmt.Errorf("create %s/%s: %w", key, ConfigMapName, err)
	}
	if err != nil {
		return controller.Result{}, err
	}
	next, changed := desired(cm, r.ca)
	if !changed {
		return controller.Result{}, nil
	}
	if _, err := r.client.CoreV1().ConfigMaps(key).Update(ctx, next, metav1.UpdateOptions{}); err != nil {
		if apierrors.IsNotFound(err) {
			return controller.Result{}, nil
		}
		return controller.Result{}, fmt.Errorf("update %s/%s: %w", key, ConfigMapName, err)
	}
	return controller.Result{}, nil
}

// desired returns cm corrected to publish ca, and whether it had to
// change. As upstream, the data must be exactly {ca.crt: ca}, and any
// non-empty description is accepted. cm is never modified (it is the
// informer's copy).
func desired(cm *corev1.ConfigMap, ca string) (*corev1.ConfigMap, bool) {
	want := map[string]string{DataKey: ca}
	if maps.Equal(cm.Data, want) && cm.Annotations[DescriptionAnnotation] != "" {
		return cm, false
	}
	next := cm.DeepCopy()
	next.Data = want
	if next.Annotations == nil {
		next.Annotations = map[string]string{}
	}
	next.Annotations[DescriptionAnnotation] = Description
	return next, true
}
