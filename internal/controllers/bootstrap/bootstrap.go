// Package bootstrap runs the two controllers of bootstrap tokens, as
// upstream's kube-controller-manager does:
//
//   - bootstrapsigner keeps kube-public/cluster-info signed: for every
//     bootstrap token marked usage-bootstrap-signing and not expired, a
//     key jws-kubeconfig-<id> holding the detached JWS of the published
//     kubeconfig keyed with that token's secret (nodeidentity.SignClusterInfo), so
//     that a node holding only a token can check the CA it discovers;
//     signatures of tokens that went away or expired are removed.
//   - tokencleaner deletes bootstrap token Secrets once they expire.
//
// Both read only kube-system's Secrets of type
// bootstrap.kubernetes.io/token and the one ConfigMap, through informers
// of their own narrowed by field selectors, so the controller manager
// keeps no copy of the cluster's other Secrets for them. Both requeue
// themselves for the next expiration instead of polling.
package bootstrap

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/rudder-dev/rudder/internal/auth"
	"github.com/rudder-dev/rudder/internal/controller"
	"github.com/rudder-dev/rudder/internal/nodeidentity"
)

// SignerDescriptor is the bootstrapsigner controller.
var SignerDescriptor = controller.Descriptor{
	Name: "bootstrapsigner",
	New: func(_ context.Context, cx *controller.Context) ([]controller.Runnable, error) {
		tokens, tokenFactory := tokenInformer(cx.Client)
		cmFactory := informers.NewSharedInformerFactoryWithOptions(cx.Client, 0,
			informers.WithNamespace(nodeidentity.ClusterInfoNamespace),
			informers.WithTweakListOptions(func(o *metav1.ListOptions) {
				o.FieldSelector = fields.OneTermEqualSelector("metadata.name", nodeidentity.ClusterInfoName).String()
			}))
		cms := cmFactory.Core().V1().ConfigMaps()
		s := &signer{client: cx.Client, tokens: tokens.Lister(), configMaps: cms.Lister(), clock: cx.Clock}
		c := controller.New("bootstrap_signer", 1, s)
		// One key: whatever changed, the one ConfigMap is re-signed.
		enqueue := func(any) { c.EnqueueKey(nodeidentity.ClusterInfoName) }
		handler := cache.ResourceEventHandlerFuncs{AddFunc: enqueue, UpdateFunc: func(_, n any) { enqueue(n) }, DeleteFunc: enqueue}
		if _, err := tokens.Informer().AddEventHandler(handler); err != nil {
			return nil, err
		}
		if _, err := cms.Informer().AddEventHandler(handler); err != nil {
			return nil, err
		}
		c.HasSynced = []cache.InformerSynced{tokens.Informer().HasSynced, cms.Informer().HasSynced}
		return []controller.Runnable{startFactories(tokenFactory, cmFactory), c}, nil
	},
}

// CleanerDescriptor is the tokencleaner controller.
var CleanerDescriptor = controller.Descriptor{
	Name: "tokencleaner",
	New: func(_ context.Context, cx *controller.Context) ([]controller.Runnable, error) {
		tokens, factory := tokenInformer(cx.Client)
		cl := &cleaner{client: cx.Client, tokens: tokens.Lister(), clock: cx.Clock}
		c := controller.New("token_cleaner", 1, cl)
		if _, err := tokens.Informer().AddEventHandler(c.Handler()); err != nil {
			return nil, err
		}
		c.HasSynced = []cache.InformerSynced{tokens.Informer().HasSynced}
		return []controller.Runnable{startFactories(factory), c}, nil
	},
}

// tokenInformer watches kube-system's bootstrap token Secrets only.
func tokenInformer(client kubernetes.Interface) (interface {
	Informer() cache.SharedIndexInformer
	Lister() corelisters.SecretLister
}, informers.SharedInformerFactory) {
	f := informers.NewSharedInformerFactoryWithOptions(client, 0,
		informers.WithNamespace(auth.BootstrapTokenNamespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("type", string(auth.BootstrapTokenSecretType)).String()
		}))
	return f.Core().V1().Secrets(), f
}

// startFactories runs the controller's own informers for as long as the
// controller runs.
func startFactories(fs ...informers.SharedInformerFactory) controller.Runnable {
	return controller.RunnableFunc(func(ctx context.Context) error {
		for _, f := range fs {
			f.Start(ctx.Done())
		}
		<-ctx.Done()
		for _, f := range fs {
			f.Shutdown()
		}
		return nil
	})
}

// token is a bootstrap token read from its Secret.
type token struct {
	id, secret string
	expires    time.Time // zero: never
	signing    bool
}

// readToken parses a token Secret; ok is false for one that is not a
// well-formed token (a name that disagrees with its ID, a malformed
// secret), which neither controller touches.
func readToken(s *corev1.Secret) (token, bool) {
	id, secret := string(s.Data[auth.BootstrapTokenIDKey]), string(s.Data[auth.BootstrapTokenSecretKey])
	if _, _, ok := auth.ParseBootstrapToken(id + "." + secret); !ok || s.Name != auth.BootstrapTokenSecretPrefix+id || s.Type != auth.BootstrapTokenSecretType {
		return token{}, false
	}
	t := token{id: id, secret: secret, signing: string(s.Data[auth.BootstrapTokenUsageSigningKey]) == "true"}
	if raw := string(s.Data[auth.BootstrapTokenExpirationKey]); raw != "" {
		exp, err := time.Parse(time.RFC3339, raw)
		if err != nil {
			exp = time.Unix(0, 0) // unparsable: expired, as the authenticator treats it
		}
		t.expires = exp
	}
	return t, true
}

func (t token) expired(now time.Time) bool { return !t.expires.IsZero() && !now.Before(t.expires) }

type signer struct {
	client     kubernetes.Interface
	tokens     corelisters.SecretLister
	configMaps corelisters.ConfigMapLister
	clock      clock.PassiveClock
}

func (s *signer) Reconcile(ctx context.Context, _ string) (controller.Result, error) {
	cm, err := s.configMaps.ConfigMaps(nodeidentity.ClusterInfoNamespace).Get(nodeidentity.ClusterInfoName)
	if apierrors.IsNotFound(err) {
		return controller.Result{}, nil // the API server publishes it; its event brings us back
	}
	if err != nil {
		return controller.Result{}, err
	}
	content, ok := cm.Data[nodeidentity.ClusterInfoKubeconfigKey]
	if !ok {
		return controller.Result{}, nil
	}
	secrets, err := s.tokens.Secrets(auth.BootstrapTokenNamespace).List(labels.Everything())
	if err != nil {
		return controller.Result{}, err
	}
	now := s.clock.Now()
	want, next, err := signatures(content, secrets, now)
	if err != nil {
		return controller.Result{}, err
	}
	data, changed := withSignatures(cm.Data, want)
	var res controller.Result
	if !next.IsZero() {
		res.RequeueAfter = next.Sub(now)
	}
	if !changed {
		return res, nil
	}
	out := cm.DeepCopy()
	out.Data = data
	if _, err := s.client.CoreV1().ConfigMaps(out.Namespace).Update(ctx, out, metav1.UpdateOptions{}); err != nil {
		return controller.Result{}, fmt.Errorf("signing %s/%s: %w", out.Namespace, out.Name, err)
	}
	return res, nil
}

// signatures computes the signature keys the ConfigMap should hold now,
// and when the next signing token expires (zero: none will).
func signatures(content string, secrets []*corev1.Secret, now time.Time) (map[string]string, time.Time, error) {
	want := map[string]string{}
	var next time.Time
	for _, s := range secrets {
		t, ok := readToken(s)
		if !ok || !t.signing || t.expired(now) || s.DeletionTimestamp != nil {
			continue
		}
		sig, err := nodeidentity.SignClusterInfo(content, t.id, t.secret)
		if err != nil {
			return nil, time.Time{}, err
		}
		want[nodeidentity.ClusterInfoSignaturePrefix+t.id] = sig
		if !t.expires.IsZero() && (next.IsZero() || t.expires.Before(next)) {
			next = t.expires
		}
	}
	return want, next, nil
}

// withSignatures returns data with exactly the signature keys of want
// (other keys kept), and whether that differs from data.
func withSignatures(data, want map[string]string) (map[string]string, bool) {
	out := make(map[string]string, len(data)+len(want))
	for k, v := range data {
		if !strings.HasPrefix(k, nodeidentity.ClusterInfoSignaturePrefix) {
			out[k] = v
		}
	}
	maps.Copy(out, want)
	return out, !maps.Equal(out, data)
}

type cleaner struct {
	client kubernetes.Interface
	tokens corelisters.SecretLister
	clock  clock.PassiveClock
}

func (c *cleaner) Reconcile(ctx context.Context, key string) (controller.Result, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return controller.Result{}, nil
	}
	s, err := c.tokens.Secrets(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return controller.Result{}, nil
	}
	if err != nil {
		return controller.Result{}, err
	}
	t, ok := readToken(s)
	if !ok || t.expires.IsZero() || s.DeletionTimestamp != nil {
		return controller.Result{}, nil
	}
	now := c.clock.Now()
	if !t.expired(now) {
		return controller.Result{RequeueAfter: t.expires.Sub(now)}, nil
	}
	// The UID precondition: a token re-created under the same name since
	// our cache saw this one is not ours to delete.
	err = c.client.CoreV1().Secrets(ns).Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &s.UID}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return controller.Result{}, fmt.Errorf("deleting expired bootstrap token %s/%s: %w", ns, name, err)
	}
	return controller.Result{}, nil
}
