package certificates

import (
	"context"
	"crypto/x509"
	"fmt"

	authorizationv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	certificateslisters "k8s.io/client-go/listers/certificates/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/rudder-dev/rudder/internal/controller"
)

// ApprovingDescriptor is the approver ("csrapproving"), deciding with the
// in-process reviewer: the API server does not serve SubjectAccessReview
// yet.
var ApprovingDescriptor = NewApprovingDescriptor(InProcessReviewer)

// NewApprovingDescriptor returns the approver asking newReviewer's
// AccessReviewer whether a requester may have its node client certificate
// approved. newReviewer runs in the controller's New and may request
// informers there.
func NewApprovingDescriptor(newReviewer func(cx *controller.Context) AccessReviewer) controller.Descriptor {
	return controller.Descriptor{
		Name: "csrapproving",
		New: func(_ context.Context, cx *controller.Context) ([]controller.Runnable, error) {
			inf := cx.Informers.Certificates().V1().CertificateSigningRequests()
			a := &approver{client: cx.Client, csrs: inf.Lister(), reviewer: newReviewer(cx), clock: cx.Clock}
			c := controller.New("csrapproving", 2, a)
			if _, err := inf.Informer().AddEventHandler(c.Handler()); err != nil {
				return nil, err
			}
			c.HasSynced = []cache.InformerSynced{inf.Informer().HasSynced}
			return []controller.Runnable{c}, nil
		},
	}
}

// approver reconciles one CertificateSigningRequest, keyed by name.
type approver struct {
	client   kubernetes.Interface
	csrs     certificateslisters.CertificateSigningRequestLister
	reviewer AccessReviewer
	clock    clock.PassiveClock
}

// recognizer is one kind of request the approver knows, and the
// permission its requester needs for it to be approved: RBAC grants
// "create" on a pseudo-subresource of certificatesigningrequests that no
// API serves, only this check.
type recognizer struct {
	recognize   func(csr *certificatesv1.CertificateSigningRequest, req *x509.CertificateRequest) bool
	subresource string
	message     string
}

// recognizers are tried in order: renewing one's own node certificate
// (selfnodeclient, granted to nodes) before asking for any node's
// (nodeclient, granted to bootstrap tokens).
var recognizers = []recognizer{
	{isSelfNodeClient, "selfnodeclient", "Auto approving self kubelet client certificate after SubjectAccessReview."},
	{isNodeClient, "nodeclient", "Auto approving kubelet client certificate after SubjectAccessReview."},
}

// isNodeClient: a kubelet client certificate request that its signer
// would accept.
func isNodeClient(csr *certificatesv1.CertificateSigningRequest, req *x509.CertificateRequest) bool {
	return csr.Spec.SignerName == certificatesv1.KubeAPIServerClientKubeletSignerName && checkKubeletClient(req, csr.Spec.Usages) == nil
}

// isSelfNodeClient: a node client request by the node it names.
func isSelfNodeClient(csr *certificatesv1.CertificateSigningRequest, req *x509.CertificateRequest) bool {
	return csr.Spec.Username == req.Subject.CommonName && isNodeClient(csr, req)
}

// settled reports that the approver has nothing to do: the request was
// decided, by anyone, or even issued.
func settled(csr *certificatesv1.CertificateSigningRequest) bool {
	return len(csr.Status.Certificate) > 0 || hasCondition(csr, certificatesv1.CertificateApproved) || hasCondition(csr, certificatesv1.CertificateDenied)
}

// candidates returns the recognizers that match an unsettled csr, in the
// order their permissions are checked.
func candidates(csr *certificatesv1.CertificateSigningRequest, req *x509.CertificateRequest) []recognizer {
	var out []recognizer
	for _, r := range recognizers {
		if r.recognize(csr, req) {
			out = append(out, r)
		}
	}
	return out
}

// errNotApproved means a request was recognized but its requester lacks
// the permission. It is returned so the runner retries with backoff: RBAC
// may grant it later, as upstream's approver also retries.
type errNotApproved struct {
	name  string
	tried []string
}

func (e *errNotApproved) Error() string {
	return fmt.Sprintf("recognized csr %q as %v but subject access review was not approved", e.name, e.tried)
}

func (a *approver) Reconcile(ctx context.Context, name string) (controller.Result, error) {
	cached, err := a.csrs.Get(name)
	if apierrors.IsNotFound(err) {
		return controller.Result{}, nil
	}
	if err != nil {
		return controller.Result{}, err
	}
	if settled(cached) {
		return controller.Result{}, nil
	}
	req, err := parseRequest(cached.Spec.Request)
	if err != nil {
		return controller.Result{}, fmt.Errorf("unable to parse csr %q: %w", name, err)
	}
	if cached.Spec.SignerName == certificatesv1.KubeletServingSignerName {
		return a.reconcileServing(ctx, cached, req)
	}
	var tried []string
	for _, r := range candidates(cached, req) {
		tried = append(tried, r.subresource)
		allowed, err := a.reviewer.Review(ctx, reviewFor(cached, r.subresource))
		if err != nil {
			return controller.Result{}, err
		}
		if !allowed {
			continue
		}
		return controller.Result{}, a.approve(ctx, cached, r.message)
	}
	if len(tried) > 0 {
		return controller.Result{}, &errNotApproved{name: name, tried: tried}
	}
	return controller.Result{}, nil
}

// approve adds the Approved condition to csr.
func (a *approver) approve(ctx context.Context, cached *certificatesv1.CertificateSigningRequest, message string) error {
	csr := cached.DeepCopy()
	now := metav1.NewTime(a.clock.Now())
	csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "AutoApproved",
		Message: message, LastUpdateTime: now, LastTransitionTime: now,
	})
	if _, err := a.client.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, csr.Name, csr, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("error updating approval for csr %q: %w", csr.Name, ignoreGone(err))
	}
	return nil
}

// reviewFor asks whether the request's recorded requester may create
// certificatesigningrequests/<subresource>.
func reviewFor(csr *certificatesv1.CertificateSigningRequest, subresource string) authorizationv1.SubjectAccessReviewSpec {
	var extra map[string]authorizationv1.ExtraValue
	if len(csr.Spec.Extra) > 0 {
		extra = make(map[string]authorizationv1.ExtraValue, len(csr.Spec.Extra))
		for k, v := range csr.Spec.Extra {
			extra[k] = authorizationv1.ExtraValue(v)
		}
	}
	return authorizationv1.SubjectAccessReviewSpec{
		User: csr.Spec.Username, UID: csr.Spec.UID, Groups: csr.Spec.Groups, Extra: extra,
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Group: certificatesv1.GroupName, Resource: "certificatesigningrequests", Subresource: subresource, Verb: "create",
		},
	}
}
